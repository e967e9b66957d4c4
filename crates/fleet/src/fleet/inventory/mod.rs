//! The machines of a fleet: a TOML inventory (`[[host]]` tables), a
//! PerfKitBenchmarker static-machine JSON file read as is, an Ansible
//! inventory ([`ansible`]), or `-H` specs on the command line — all
//! checked into [`Host`]s before any ssh runs.
//!
//! Every field is hostile until checked: names become file names
//! (`results/NAME.json`), addresses and users become ssh arguments (a
//! leading `-` would be read as an option), remote paths are quoted into
//! remote shell commands. So each has a character set, a length bound, and
//! the file itself a size bound and a host count bound.

pub mod ansible;

use crate::model::document::label_value;
use crate::report::many::GROUP_FIELDS;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The largest inventory file read.
pub const MAX_INVENTORY_BYTES: u64 = 1 << 20;
/// The most hosts one fleet command drives.
pub const MAX_HOSTS: usize = 256;
/// The longest name, label, user or address.
const MAX_WORD: usize = 253;
/// The longest remote or local path.
const MAX_PATH: usize = 4096;
/// The most labels per host.
const MAX_LABELS: usize = 32;

/// The remote directory of plumb's binary cache when the inventory names
/// none: relative to the login directory, where ssh commands start.
pub const DEFAULT_CACHE: &str = ".cache/plumb/bin";
/// The remote directory runs happen in when the inventory names none: the
/// login directory.
pub const DEFAULT_TARGET: &str = ".";

/// One machine of the fleet, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// Its name in results (`results/NAME.json`, the run's label) and on
    /// the command line (`--pair a:b`, `--baseline`).
    pub name: String,
    /// What ssh connects to: a host name, an address, or an alias of the
    /// user's ssh config.
    pub address: String,
    /// The login user (ssh's own default when absent).
    pub user: Option<String>,
    /// The ssh port (ssh's own default when absent).
    pub port: Option<u16>,
    /// A private key file for ssh's `-i`.
    pub identity: Option<PathBuf>,
    /// The remote directory runs happen in (must exist there).
    pub target: String,
    /// The remote directory of plumb's binary cache.
    pub cache: String,
    /// The address other machines reach this one at (`fleet net`), when it
    /// differs from `address` or `address` is an alias.
    pub net_address: Option<String>,
    /// Tags (`nvme`) and `KEY=VALUE` labels (`zone=eu-west-1a`): `--only
    /// LABEL` selects by them, `--group-by KEY` groups results by a key's
    /// value, and each host's result document carries them.
    pub labels: Vec<String>,
}

/// A bad inventory or host spec: where, and what is wrong.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{place}: {message}")]
pub struct InventoryError {
    /// The file and host (or `-H SPEC`) at fault.
    pub place: String,
    /// What is wrong.
    pub message: String,
}

fn err(place: impl Into<String>, message: impl Into<String>) -> InventoryError {
    InventoryError {
        place: place.into(),
        message: message.into(),
    }
}

/// A plumb inventory: `[[host]]` tables.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlInventory {
    #[serde(default)]
    host: Vec<TomlHost>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlHost {
    name: Option<String>,
    address: String,
    user: Option<String>,
    port: Option<i64>,
    identity: Option<String>,
    target: Option<String>,
    cache: Option<String>,
    net_address: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
}

/// One machine of PerfKitBenchmarker's static-machine JSON
/// (`--static_vm_file`); fields plumb has no use for are ignored.
#[derive(Deserialize)]
struct PkbMachine {
    ip_address: String,
    user_name: Option<String>,
    keyfile_path: Option<String>,
    ssh_port: Option<i64>,
    internal_ip: Option<String>,
    #[serde(default)]
    scratch_disk_mountpoints: Vec<String>,
    #[serde(default)]
    disk_specs: Vec<PkbDisk>,
    zone: Option<String>,
}

#[derive(Deserialize)]
struct PkbDisk {
    mount_point: Option<String>,
}

/// Reads an inventory file: PerfKitBenchmarker's JSON when it ends in
/// `.json`, Ansible's when it ends in `.ini`, `.yml` or `.yaml`, plumb's
/// TOML otherwise.
pub fn load(path: &Path) -> Result<Vec<Host>, InventoryError> {
    let shown = path.display().to_string();
    if ansible::is_ansible(path) {
        return ansible::load(path, &shown);
    }
    let bytes = crate::input::read_file(path, MAX_INVENTORY_BYTES).map_err(|e| err(&shown, e))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| err(&shown, "not UTF-8 text"))?;
    if path.extension().is_some_and(|e| e == "json") {
        parse_pkb(&shown, text)
    } else {
        parse_toml(&shown, text)
    }
}

/// Parses plumb's TOML inventory (`file` names it in errors).
pub fn parse_toml(file: &str, text: &str) -> Result<Vec<Host>, InventoryError> {
    let inv: TomlInventory = toml::from_str(text).map_err(|e| {
        err(
            file,
            format!("not a plumb inventory: {}", e.message().trim_end()),
        )
    })?;
    let hosts = inv
        .host
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            let place = format!("{file}: host #{}", i + 1);
            let port = h.port.map(|p| port_of(&place, p)).transpose()?;
            check(
                &place,
                Raw {
                    name: h.name,
                    address: h.address,
                    user: h.user,
                    port,
                    identity: h.identity,
                    target: h.target,
                    cache: h.cache,
                    net_address: h.net_address,
                    labels: h.labels,
                },
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    finish(file, hosts)
}

/// Parses PerfKitBenchmarker's static-machine JSON (a list of machines).
pub fn parse_pkb(file: &str, text: &str) -> Result<Vec<Host>, InventoryError> {
    let machines: Vec<PkbMachine> = serde_json::from_str(text).map_err(|e| {
        err(
            format!("{file}:{}:{}", e.line(), e.column()),
            format!("not a PerfKitBenchmarker static-machine list: {e}"),
        )
    })?;
    let hosts = machines
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let place = format!("{file}: machine #{}", i + 1);
            let port = m.ssh_port.map(|p| port_of(&place, p)).transpose()?;
            let target = m
                .scratch_disk_mountpoints
                .into_iter()
                .chain(m.disk_specs.into_iter().filter_map(|d| d.mount_point))
                .next();
            check(
                &place,
                Raw {
                    name: None,
                    address: m.ip_address,
                    user: m.user_name,
                    port,
                    identity: m.keyfile_path,
                    target,
                    cache: None,
                    net_address: m.internal_ip,
                    // A zone is free text there: made a tag and a
                    // `zone=` label here.
                    labels: m
                        .zone
                        .map(|z| plain(&z))
                        .filter(|z| !z.is_empty())
                        .map(|z| vec![format!("zone={z}"), z])
                        .unwrap_or_default(),
                },
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut hosts = hosts;
    by_port(&mut hosts);
    finish(file, hosts)
}

/// Parses `-H [user@]host[:port]` specs (`[v6addr]:port` for IPv6).
pub fn parse_specs(specs: &[String]) -> Result<Vec<Host>, InventoryError> {
    let mut hosts = Vec::new();
    for spec in specs {
        let place = format!("-H {}", crate::terminal::clean(spec));
        let (user, rest) = match spec.rsplit_once('@') {
            Some((u, r)) => (Some(u.to_string()), r),
            None => (None, spec.as_str()),
        };
        let (address, port) = if let Some(v6) = rest.strip_prefix('[') {
            let (addr, tail) = v6
                .split_once(']')
                .ok_or_else(|| err(&place, "an IPv6 address in [ ] has no closing ]"))?;
            match tail {
                "" => (addr.to_string(), None),
                t => (addr.to_string(), Some(t.strip_prefix(':').unwrap_or(t))),
            }
        } else {
            match rest.split_once(':') {
                Some((a, p)) => (a.to_string(), Some(p)),
                None => (rest.to_string(), None),
            }
        };
        let port = port
            .map(|p| {
                p.parse::<i64>()
                    .map_err(|_| err(&place, format!("port '{p}' is not a number")))
                    .and_then(|p| port_of(&place, p))
            })
            .transpose()?;
        hosts.push(check(
            &place,
            Raw {
                name: None,
                address,
                user,
                port,
                identity: None,
                target: None,
                cache: None,
                net_address: None,
                labels: Vec::new(),
            },
        )?);
    }
    by_port(&mut hosts);
    finish("-H", hosts)
}

/// The fields of one host as given, before checking.
struct Raw {
    name: Option<String>,
    address: String,
    user: Option<String>,
    port: Option<u16>,
    identity: Option<String>,
    target: Option<String>,
    cache: Option<String>,
    net_address: Option<String>,
    labels: Vec<String>,
}

fn port_of(place: &str, p: i64) -> Result<u16, InventoryError> {
    u16::try_from(p)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| err(place, format!("port {p} is not in 1..65535")))
}

/// Checks every field of one host.
fn check(place: &str, raw: Raw) -> Result<Host, InventoryError> {
    let address = checked_address(place, "address", &raw.address)?;
    let name = match raw.name {
        Some(n) => checked_name(place, "name", &n)?,
        None => checked_name(place, "name", &address.replace([':', '%'], "_")).map_err(|_| {
            err(
                place,
                format!(
                    "'{}' cannot be a host name in results: give the host a name",
                    crate::terminal::clean(&address)
                ),
            )
        })?,
    };
    let place = format!("{place} ({name})");
    let user = raw
        .user
        .map(|u| checked_name(&place, "user", &u))
        .transpose()?;
    let identity = raw
        .identity
        .map(|i| checked_path(&place, "identity", &i).map(|p| expand_home(&p)))
        .transpose()?;
    let target = match raw.target {
        Some(t) => checked_path(&place, "target", &t)?,
        None => DEFAULT_TARGET.to_string(),
    };
    let cache = match raw.cache {
        Some(c) => checked_path(&place, "cache", &c)?,
        None => DEFAULT_CACHE.to_string(),
    };
    let net_address = raw
        .net_address
        .map(|a| checked_address(&place, "net_address", &a))
        .transpose()?;
    if raw.labels.len() > MAX_LABELS {
        return Err(err(&place, format!("more than {MAX_LABELS} labels")));
    }
    let labels = raw
        .labels
        .iter()
        .map(|l| checked_label(&place, l))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, l) in labels.iter().enumerate() {
        if let Some((key, _)) = l.split_once('=') {
            if label_value(&labels[..i], key).is_some() {
                return Err(err(
                    &place,
                    format!("label key '{key}' is given twice: a host has one value per key"),
                ));
            }
        }
    }
    Ok(Host {
        name,
        address,
        user,
        port: raw.port,
        identity,
        target,
        cache,
        net_address,
        labels,
    })
}

/// Refuses a host whose key file is not there.
pub fn check_keys(hosts: &[Host]) -> Result<(), InventoryError> {
    for h in hosts {
        if let Some(p) = h.identity.as_deref().filter(|p| !p.is_file()) {
            return Err(err(
                format!("host {}", h.name),
                format!("identity {}: no such key file here", p.display()),
            ));
        }
    }
    Ok(())
}

/// Tells apart hosts that share an address but not a port (the same
/// machine's containers, a PKB list with port-forwarded VMs) by naming
/// them `ADDRESS-PORT`, when their names came from the address.
fn by_port(hosts: &mut [Host]) {
    let repeated: BTreeSet<String> = hosts
        .iter()
        .filter(|h| hosts.iter().filter(|o| o.name == h.name).count() > 1)
        .map(|h| h.name.clone())
        .collect();
    for h in hosts {
        if let (true, Some(p)) = (repeated.contains(&h.name), h.port) {
            h.name = format!("{}-{p}", h.name);
        }
    }
}

/// Refuses an empty or oversized fleet and names used twice (`file`
/// names where the hosts came from).
pub fn finish(file: &str, hosts: Vec<Host>) -> Result<Vec<Host>, InventoryError> {
    if hosts.is_empty() {
        return Err(err(file, "no hosts"));
    }
    if hosts.len() > MAX_HOSTS {
        return Err(err(
            file,
            format!("{} hosts: at most {MAX_HOSTS}", hosts.len()),
        ));
    }
    let mut seen = BTreeSet::new();
    for h in &hosts {
        if !seen.insert(h.name.as_str()) {
            return Err(err(
                file,
                format!(
                    "two hosts are named '{}': names must differ (they name the result files)",
                    h.name
                ),
            ));
        }
    }
    Ok(hosts)
}

/// A name, user or label: letters, digits, `.`, `_`, `-`, not starting
/// with `.` or `-` (a file name, and never an ssh option).
fn checked_name(place: &str, field: &str, s: &str) -> Result<String, InventoryError> {
    let ok = !s.is_empty()
        && s.len() <= MAX_WORD
        && !s.starts_with(['.', '-'])
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !ok {
        return Err(err(
            place,
            format!(
                "{field} '{}' must be 1-{MAX_WORD} letters, digits, '.', '_' or '-', not starting with '.' or '-'",
                crate::terminal::clean(s)
            ),
        ));
    }
    Ok(s.to_string())
}

/// `text` made a plain name: other characters become `_`, leading `.`
/// and `-` go, cut to [`MAX_WORD`] bytes.
fn plain(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_WORD)
        .collect::<String>()
        .trim_start_matches(['.', '-'])
        .to_string()
}

/// A label: a plain tag (`nvme`) or `KEY=VALUE` (`zone=eu-west-1a`), each
/// part a plain name (so a label never reads as an option or a path), the
/// key not a machine field's name (`--group-by os` means the machine's).
fn checked_label(place: &str, s: &str) -> Result<String, InventoryError> {
    match s.split_once('=') {
        None => checked_name(place, "label", s),
        Some((key, value)) => {
            checked_name(place, "label key", key)?;
            if GROUP_FIELDS.contains(&key) {
                return Err(err(
                    place,
                    format!(
                        "label key '{key}' is a machine field's name (--group-by {key} groups by the machine's): choose another key"
                    ),
                ));
            }
            checked_name(place, "label value", value)?;
            Ok(s.to_string())
        }
    }
}

/// An address: a host name, ssh alias, IPv4 or IPv6 address (with a `%`
/// zone); never starting with `-`.
fn checked_address(place: &str, field: &str, s: &str) -> Result<String, InventoryError> {
    let ok = !s.is_empty()
        && s.len() <= MAX_WORD
        && !s.starts_with(['-', '.'])
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':' | '%'));
    if !ok {
        return Err(err(
            place,
            format!(
                "{field} '{}' is not a host name or address (letters, digits, '.', '_', '-', ':', '%'; not starting with '-')",
                crate::terminal::clean(s)
            ),
        ));
    }
    Ok(s.to_string())
}

/// A path: at most [`MAX_PATH`] bytes, no control characters.
fn checked_path(place: &str, field: &str, s: &str) -> Result<String, InventoryError> {
    if s.is_empty() || s.len() > MAX_PATH || s.chars().any(char::is_control) {
        return Err(err(
            place,
            format!(
                "{field} '{}' must be a path of 1-{MAX_PATH} bytes without control characters",
                crate::terminal::clean(s)
            ),
        ));
    }
    Ok(s.to_string())
}

/// `~/x` of a local path as the user's home directory.
fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(p),
    }
}

/// The hosts with `label` (all of them when `label` is None); an error
/// when none has it.
pub fn select(hosts: Vec<Host>, label: Option<&str>) -> Result<Vec<Host>, InventoryError> {
    let Some(label) = label else {
        return Ok(hosts);
    };
    let chosen: Vec<Host> = hosts
        .into_iter()
        .filter(|h| h.labels.iter().any(|l| l == label))
        .collect();
    if chosen.is_empty() {
        return Err(err("--only", format!("no host has the label '{label}'")));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_hosts_take_defaults_and_refuse_bad_fields() {
        let hosts = parse_toml(
            "inv.toml",
            "[[host]]\nname = \"a\"\naddress = \"10.0.0.2\"\nport = 2222\nlabels = [\"nvme\", \"zone=eu-west-1a\"]\n\n[[host]]\naddress = \"db-1.example\"\nuser = \"bench\"\ntarget = \"/data\"\n",
        )
        .unwrap();
        assert_eq!(hosts[0].name, "a");
        assert_eq!(hosts[0].port, Some(2222));
        assert_eq!(hosts[0].labels, ["nvme", "zone=eu-west-1a"]);
        assert_eq!(label_value(&hosts[0].labels, "zone"), Some("eu-west-1a"));
        assert_eq!(label_value(&hosts[0].labels, "nvme"), None);
        assert_eq!(hosts[0].target, DEFAULT_TARGET);
        assert_eq!(hosts[1].name, "db-1.example");
        assert_eq!(hosts[1].cache, DEFAULT_CACHE);
        for bad in [
            "[[host]]\nname = \"../x\"\naddress = \"a\"\n",
            "[[host]]\naddress = \"-oProxyCommand=x\"\n",
            "[[host]]\naddress = \"a\"\nport = 70000\n",
            "[[host]]\naddress = \"a\"\nuser = \"-l\"\n",
            "[[host]]\naddress = \"a\"\ntarget = \"/x\\ny\"\n",
            "[[host]]\naddress = \"a\"\nsurprise = 1\n",
            "[[host]]\naddress = \"a\"\nlabels = [\"zone=\"]\n",
            "[[host]]\naddress = \"a\"\nlabels = [\"=eu\"]\n",
            "[[host]]\naddress = \"a\"\nlabels = [\"zone=eu=1\"]\n",
            "[[host]]\naddress = \"a\"\nlabels = [\"zone=-oX\"]\n",
            "[[host]]\naddress = \"a\"\nlabels = [\"zone=a\", \"zone=b\"]\n",
            "[[host]]\naddress = \"a\"\nlabels = [\"kernel=6.1\"]\n",
            "[[host]]\naddress = \"a\"\n[[host]]\naddress = \"a\"\n",
            "",
        ] {
            assert!(parse_toml("inv.toml", bad).is_err(), "{bad}");
        }
        let twice = parse_toml(
            "inv.toml",
            "[[host]]\naddress = \"a\"\nlabels = [\"zone=a\", \"zone=b\"]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            twice.contains("host #1") && twice.contains("'zone' is given twice"),
            "{twice}"
        );
    }

    #[test]
    fn pkb_json_is_read_as_is() {
        let hosts = parse_pkb(
            "vms.json",
            r#"[{"ip_address": "10.0.0.5", "user_name": "perfkit", "ssh_port": 22,
                 "internal_ip": "192.168.0.5", "scratch_disk_mountpoints": ["/scratch"],
                 "zone": "rack1", "os_type": "debian", "install_packages": false}]"#,
        )
        .unwrap();
        let h = &hosts[0];
        assert_eq!(h.name, "10.0.0.5");
        assert_eq!(h.user.as_deref(), Some("perfkit"));
        assert_eq!(h.net_address.as_deref(), Some("192.168.0.5"));
        assert_eq!(h.target, "/scratch");
        assert_eq!(h.labels, ["zone=rack1", "rack1"]);
        let twins = parse_pkb(
            "vms.json",
            r#"[{"ip_address": "10.0.0.5", "ssh_port": 2201, "zone": "us east 1"},
                {"ip_address": "10.0.0.5", "ssh_port": 2202}]"#,
        )
        .unwrap();
        assert_eq!(twins[0].name, "10.0.0.5-2201");
        assert_eq!(twins[1].name, "10.0.0.5-2202");
        assert_eq!(twins[0].labels, ["zone=us_east_1", "us_east_1"]);
    }

    #[test]
    fn specs_split_user_host_and_port() {
        let hosts = parse_specs(&[
            "root@10.0.0.2:2222".into(),
            "10.0.0.2:2223".into(),
            "[fe80::1]:22".into(),
        ])
        .unwrap();
        assert_eq!(hosts[0].name, "10.0.0.2-2222");
        assert_eq!(hosts[0].user.as_deref(), Some("root"));
        assert_eq!(hosts[1].name, "10.0.0.2-2223");
        assert_eq!(hosts[2].address, "fe80::1");
        assert_eq!(hosts[2].name, "fe80__1");
        assert!(parse_specs(&["-oProxyCommand=sh".into()]).is_err());
        assert!(parse_specs(&["a:0".into()]).is_err());
    }
}
