//! Ansible inventories (`.ini`, `.yml`, `.yaml`), read through the real
//! `ansible-inventory -i FILE --list` so that its whole syntax (ranges
//! like `web[01:20]`, nested groups, `host_vars/` and `group_vars/` beside
//! the file) means what it means to Ansible.
//!
//! The inventory is hostile like any other: only Ansible's static INI and
//! YAML parsers are enabled (an executable file is not run as a dynamic
//! inventory script, a `plugin:` YAML file loads no plugin), no
//! `ansible.cfg` of the current directory is read (it could load plugins
//! from anywhere), the run has a time limit and a memory limit (a range
//! like `h[0:99999999]` expands to a hundred million hosts: see
//! [`crate::child`]) and its output a size limit, and every host it lists
//! goes through the same checks as a TOML host.
//!
//! What maps to plumb: the inventory name is the host's name, `ansible_host`
//! its address (else the name), `ansible_port`, `ansible_user` and
//! `ansible_ssh_private_key_file` ssh's port, user and key, `plumb_target`
//! and `plumb_cache` the remote run and cache directories,
//! `plumb_net_address` the address other hosts reach it at; its groups
//! (with their parent groups, less `all` and `ungrouped`) are its labels,
//! and `plumb_labels` (a mapping, `{zone: eu-west-1a}`, or a list of
//! `KEY=VALUE` texts; in `group_vars/` too) adds `KEY=VALUE` labels, which
//! `--group-by KEY` groups results by.

use super::{check, err, finish, port_of, Host, InventoryError, Raw, MAX_INVENTORY_BYTES};
use crate::child::Limits;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// How long `ansible-inventory` may take, and the memory it may use.
const LIMITS: Limits = Limits {
    time: Duration::from_secs(60),
    memory: crate::child::MEMORY_LIMIT,
};
/// The most output read from it (its JSON is about 20 times the INI).
const MAX_OUTPUT: u64 = 32 * MAX_INVENTORY_BYTES;
/// The longest error text kept from its stderr.
const MAX_STDERR: usize = 4096;
/// The program, and the Debian package that has it.
const PROGRAM: &str = "ansible-inventory";
const PACKAGE: &str = "ansible";

/// Whether `path` names an Ansible inventory (by its extension).
pub fn is_ansible(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "ini" | "yml" | "yaml"))
}

/// Reads the Ansible inventory at `path` into checked hosts (`shown`
/// names it in errors).
pub fn load(path: &Path, shown: &str) -> Result<Vec<Host>, InventoryError> {
    let meta = std::fs::metadata(path).map_err(|e| err(shown, e.to_string()))?;
    if !meta.is_file() {
        return Err(err(shown, "not a regular file"));
    }
    if meta.len() > MAX_INVENTORY_BYTES {
        return Err(err(
            shown,
            format!("{} bytes: at most {MAX_INVENTORY_BYTES}", meta.len()),
        ));
    }
    let json = list(path, shown)?;
    parse_list(shown, &json)
}

/// Runs `ansible-inventory --list` on `path` with only the static parsers
/// enabled, in an empty directory, under the time, memory and output
/// limits.
fn list(path: &Path, shown: &str) -> Result<Vec<u8>, InventoryError> {
    let path = std::fs::canonicalize(path).map_err(|e| err(shown, e.to_string()))?;
    let work =
        tempfile::tempdir().map_err(|e| err(shown, format!("a temporary directory: {e}")))?;
    let config = work.path().join("ansible.cfg");
    std::fs::write(&config, "").map_err(|e| err(shown, e.to_string()))?;
    let out_path = work.path().join("out.json");
    let err_path = work.path().join("err.txt");
    let file = |p: &Path| std::fs::File::create(p).map_err(|e| err(shown, e.to_string()));
    let mut cmd = Command::new(PROGRAM);
    cmd.arg("-i")
        .arg(&path)
        .arg("--list")
        .current_dir(work.path())
        .env("ANSIBLE_CONFIG", &config)
        .env("ANSIBLE_INVENTORY_ENABLED", "ini,yaml")
        .env("ANSIBLE_INVENTORY_UNPARSED_FAILED", "true")
        .env("ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED", "true")
        .env("ANSIBLE_HOME", work.path())
        .env("ANSIBLE_LOCAL_TEMP", work.path())
        .env("ANSIBLE_NOCOLOR", "1")
        .stdin(Stdio::null())
        .stdout(file(&out_path)?)
        .stderr(file(&err_path)?);
    // A file larger than the output limit ends the program (SIGXFSZ).
    let limit = MAX_OUTPUT + 1;
    // SAFETY: setrlimit is async-signal-safe; the closure touches no
    // memory shared with the parent.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    LIMITS.apply(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            err(
                shown,
                format!("reading an Ansible inventory needs {PROGRAM}, which is not installed (apt-get install {PACKAGE})"),
            )
        } else {
            err(shown, format!("could not run {PROGRAM}: {e}"))
        }
    })?;
    let waited = crate::child::wait_measured(&mut child, LIMITS.time, &AtomicBool::new(false));
    let said = tail(&err_path);
    match waited {
        Ok(e) if e.status.success() => {}
        Ok(e) if e.out_of_memory(&LIMITS, &said) => {
            return Err(err(
                shown,
                format!(
                    "{PROGRAM} ran out of memory: plumb runs it with at most {} of data memory (does a range like [1:100000000] expand to too many hosts?): {}",
                    LIMITS.memory_text(),
                    crate::child::last_line(&said)
                ),
            ))
        }
        Ok(e) => {
            let one_line = said.split_whitespace().collect::<Vec<_>>().join(" ");
            return Err(err(
                shown,
                format!(
                    "{PROGRAM} failed (exit {}): {}",
                    e.status.code().unwrap_or(-1),
                    crate::terminal::clean(&one_line)
                ),
            ));
        }
        Err(_) => {
            return Err(err(
                shown,
                format!(
                    "{PROGRAM} took longer than {} s, its time limit here",
                    LIMITS.time.as_secs()
                ),
            ))
        }
    }
    let mut out = Vec::new();
    std::fs::File::open(&out_path)
        .and_then(|f| f.take(MAX_OUTPUT + 1).read_to_end(&mut out))
        .map_err(|e| err(shown, format!("{PROGRAM}'s output: {e}")))?;
    if out.len() as u64 > MAX_OUTPUT {
        return Err(err(
            shown,
            format!("{PROGRAM} printed more than {MAX_OUTPUT} bytes"),
        ));
    }
    Ok(out)
}

/// The last part of a stderr file, as text.
fn tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let from = text.len().saturating_sub(MAX_STDERR);
    String::from_utf8_lossy(&text[from..]).into_owned()
}

/// `ansible-inventory --list`'s JSON: groups by name, and `_meta.hostvars`.
#[derive(Deserialize)]
struct Listed {
    #[serde(rename = "_meta", default)]
    meta: Meta,
    #[serde(flatten)]
    groups: BTreeMap<String, Group>,
}

#[derive(Deserialize, Default)]
struct Meta {
    #[serde(default)]
    hostvars: BTreeMap<String, Map<String, Value>>,
}

#[derive(Deserialize)]
struct Group {
    #[serde(default)]
    hosts: Vec<String>,
    #[serde(default)]
    children: Vec<String>,
}

/// Groups that are not labels: every host is in them.
const IMPLICIT_GROUPS: [&str; 2] = ["all", "ungrouped"];

/// Turns `ansible-inventory --list` output into checked hosts, in the
/// order the inventory lists them.
pub fn parse_list(file: &str, json: &[u8]) -> Result<Vec<Host>, InventoryError> {
    let listed: Listed = serde_json::from_slice(json).map_err(|e| {
        err(
            file,
            format!("{PROGRAM}'s output is not an inventory listing: {e}"),
        )
    })?;
    let order = host_order(&listed.groups);
    let mut labels: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (group, _) in listed
        .groups
        .iter()
        .filter(|(g, _)| !IMPLICIT_GROUPS.contains(&g.as_str()))
    {
        for host in members(&listed.groups, group) {
            labels.entry(host).or_default().insert(group.as_str());
        }
    }
    let empty = Map::new();
    let hosts = order
        .iter()
        .map(|name| {
            let place = format!("{file}: host {}", crate::terminal::clean(name));
            let vars = listed.meta.hostvars.get(*name).unwrap_or(&empty);
            host(&place, name, vars, labels.remove(*name).unwrap_or_default())
        })
        .collect::<Result<Vec<_>, _>>()?;
    finish(file, hosts)
}

/// Every host once, in the order a walk of the groups from `all` meets
/// them (then any group not under `all`).
fn host_order(groups: &BTreeMap<String, Group>) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    let starts = std::iter::once("all").chain(groups.keys().map(String::as_str));
    for start in starts {
        for host in members(groups, start) {
            if seen.insert(host) {
                order.push(host);
            }
        }
    }
    order
}

/// The hosts of `group` and of its children at every depth (each group
/// visited once, whatever cycles the listing has).
fn members<'a>(groups: &'a BTreeMap<String, Group>, group: &str) -> Vec<&'a str> {
    let mut hosts = Vec::new();
    let mut visited = BTreeSet::new();
    let mut stack = vec![group.to_string()];
    while let Some(g) = stack.pop() {
        let Some((name, found)) = groups.get_key_value(&g) else {
            continue;
        };
        if !visited.insert(name.as_str()) {
            continue;
        }
        hosts.extend(found.hosts.iter().map(String::as_str));
        stack.extend(found.children.iter().rev().cloned());
    }
    hosts
}

/// One host from its inventory name, variables and groups.
fn host(
    place: &str,
    name: &str,
    vars: &Map<String, Value>,
    groups: BTreeSet<&str>,
) -> Result<Host, InventoryError> {
    if let Some(c) = text(place, vars, &["ansible_connection"])? {
        if !matches!(c.as_str(), "ssh" | "smart" | "paramiko") {
            return Err(err(
                place,
                format!(
                    "ansible_connection={} : plumb reaches hosts over ssh only",
                    crate::terminal::clean(&c)
                ),
            ));
        }
    }
    let port = match first(vars, &["ansible_port", "ansible_ssh_port"]) {
        None => None,
        Some((key, Value::Number(n))) => Some(port_of(
            place,
            n.as_i64()
                .ok_or_else(|| err(place, format!("{key} {n} is not a port")))?,
        )?),
        Some((key, Value::String(s))) => Some(port_of(
            place,
            s.trim().parse().map_err(|_| {
                err(
                    place,
                    format!("{key} '{}' is not a port", crate::terminal::clean(s)),
                )
            })?,
        )?),
        Some((key, _)) => return Err(err(place, format!("{key} is not a port number"))),
    };
    check(
        place,
        Raw {
            name: Some(name.to_string()),
            address: text(place, vars, &["ansible_host", "ansible_ssh_host"])?
                .unwrap_or_else(|| name.to_string()),
            user: text(place, vars, &["ansible_user", "ansible_ssh_user"])?,
            port,
            identity: text(
                place,
                vars,
                &["ansible_ssh_private_key_file", "ansible_private_key_file"],
            )?,
            target: text(place, vars, &["plumb_target"])?,
            cache: text(place, vars, &["plumb_cache"])?,
            net_address: text(place, vars, &["plumb_net_address"])?,
            labels: groups
                .into_iter()
                .map(str::to_string)
                .chain(extra_labels(place, vars)?)
                .collect(),
        },
    )
}

/// The `KEY=VALUE` labels of `plumb_labels`: a mapping of keys to texts,
/// numbers or booleans, or a list of `KEY=VALUE` texts (each checked
/// afterwards like a TOML host's labels).
fn extra_labels(place: &str, vars: &Map<String, Value>) -> Result<Vec<String>, InventoryError> {
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let bad = || {
        err(
            place,
            "plumb_labels must be a mapping of keys to texts ({zone: eu-west-1a}) or a list of KEY=VALUE texts",
        )
    };
    match vars.get("plumb_labels") {
        None => Ok(Vec::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| scalar(v).map(|v| format!("{k}={v}")).ok_or_else(bad))
            .collect(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| match v {
                Value::String(s) if s.contains('=') => Ok(s.clone()),
                _ => Err(bad()),
            })
            .collect(),
        Some(_) => Err(bad()),
    }
}

/// The first of `keys` set in `vars`, with its value.
fn first<'a>(vars: &'a Map<String, Value>, keys: &[&'a str]) -> Option<(&'a str, &'a Value)> {
    keys.iter().find_map(|k| vars.get(*k).map(|v| (*k, v)))
}

/// The first of `keys` set in `vars`, which must be text.
fn text(
    place: &str,
    vars: &Map<String, Value>,
    keys: &[&str],
) -> Result<Option<String>, InventoryError> {
    match first(vars, keys) {
        None => Ok(None),
        Some((_, Value::String(s))) => Ok(Some(s.clone())),
        Some((key, _)) => Err(err(place, format!("{key} must be text"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Vec<Host>, InventoryError> {
        parse_list("inv.ini", json.as_bytes())
    }

    #[test]
    fn groups_and_their_parents_become_labels_and_vars_map_to_fields() {
        let hosts = parse(
            r#"{"_meta": {"hostvars": {
                "db1": {"ansible_host": "10.0.0.5", "ansible_port": 2222, "ansible_user": "bench",
                        "plumb_target": "/srv/bench", "ansible_ssh_private_key_file": "/keys/id"},
                "web1": {"ansible_port": "22", "plumb_labels": {"zone": "eu-west-1b", "gen": 3}},
                "lone": {"plumb_labels": ["zone=us-east-1a"]}}},
              "all": {"children": ["ungrouped", "eu"]},
              "eu": {"children": ["db", "web"]},
              "db": {"hosts": ["db1"]},
              "web": {"hosts": ["web1"]},
              "ungrouped": {"hosts": ["lone"]}}"#,
        )
        .unwrap();
        let names: Vec<_> = hosts.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["lone", "db1", "web1"]);
        let db = &hosts[1];
        assert_eq!(db.address, "10.0.0.5");
        assert_eq!(db.port, Some(2222));
        assert_eq!(db.user.as_deref(), Some("bench"));
        assert_eq!(db.target, "/srv/bench");
        assert_eq!(db.identity.as_deref(), Some(Path::new("/keys/id")));
        assert_eq!(db.labels, ["db", "eu"]);
        assert_eq!(hosts[2].address, "web1");
        assert_eq!(hosts[2].port, Some(22));
        assert_eq!(hosts[2].labels, ["eu", "web", "gen=3", "zone=eu-west-1b"]);
        assert_eq!(hosts[0].labels, ["zone=us-east-1a"]);
    }

    #[test]
    fn hostile_listings_are_refused_with_the_place() {
        for (json, want) in [
            (
                r#"{"all": {"hosts": ["-oProxyCommand=x"]}}"#,
                "host -oProxyCommand=x",
            ),
            (
                r#"{"_meta": {"hostvars": {"a": {"ansible_host": "-oProxyCommand=touch /tmp/p"}}}, "all": {"hosts": ["a"]}}"#,
                "address",
            ),
            (
                r#"{"_meta": {"hostvars": {"a": {"ansible_user": "{{ lookup('pipe','id') }}"}}}, "all": {"hosts": ["a"]}}"#,
                "user",
            ),
            (
                r#"{"_meta": {"hostvars": {"a": {"ansible_port": 70000}}}, "all": {"hosts": ["a"]}}"#,
                "port 70000",
            ),
            (
                r#"{"_meta": {"hostvars": {"a": {"ansible_connection": "local"}}}, "all": {"hosts": ["a"]}}"#,
                "ssh only",
            ),
            (
                r#"{"_meta": {"hostvars": {"a": {"ansible_host": ["x"]}}}, "all": {"hosts": ["a"]}}"#,
                "must be text",
            ),
            (
                r#"{"_meta": {"hostvars": {"a": {"plumb_labels": {"zone": "-oProxyCommand=x"}}}}, "all": {"hosts": ["a"]}}"#,
                "label value",
            ),
            (
                r#"{"_meta": {"hostvars": {"a": {"plumb_labels": {"zone": ["x"]}}}}, "all": {"hosts": ["a"]}}"#,
                "plumb_labels must be",
            ),
            (
                r#"{"_meta": {"hostvars": {"a": {"plumb_labels": ["nokey"]}}}, "all": {"hosts": ["a"]}}"#,
                "plumb_labels must be",
            ),
            (
                r#"{"_meta": {"hostvars": {"a": {"plumb_labels": "zone=eu"}}}, "all": {"hosts": ["a"]}}"#,
                "plumb_labels must be",
            ),
            (r#"{"all": {"hosts": []}}"#, "no hosts"),
            (r#"[1, 2]"#, "not an inventory listing"),
        ] {
            let e = parse(json).expect_err(json).to_string();
            assert!(e.contains(want), "{json}: {e}");
            assert!(e.starts_with("inv.ini"), "{e}");
        }
    }

    #[test]
    fn cyclic_groups_end() {
        let hosts = parse(
            r#"{"all": {"children": ["a"]}, "a": {"children": ["b"], "hosts": ["h1"]},
                "b": {"children": ["a"], "hosts": ["h2"]}}"#,
        )
        .unwrap();
        assert_eq!(hosts.len(), 2);
        assert_eq!(hosts[0].labels, ["a", "b"]);
    }
}
