//! Where a fleet's hosts come from: plumb's TOML inventory refused before
//! any ssh when it is wrong, PerfKitBenchmarker's machine list, and
//! Ansible inventories read through the real `ansible-inventory` (two
//! sshd hosts in network namespaces running `quick`; hostile inventories
//! that would run a program).

use crate::fleet::{
    final_line, fleet, fleet_host, keygen, ran_ok, read_json, run_dirs, shown, toml_str, Lab,
    HOSTS, QUICK_SMALL,
};
use crate::util::{privileged, require_tool, workdir};
use serde_json::json;
use std::net::TcpListener;

#[test]
fn inventory_mistakes_are_refused_before_any_ssh() {
    let dir = workdir();
    let ran = dir.path().join("ssh-ran");
    let proxy = format!("-oProxyCommand=touch {}", ran.display());
    let write = |file: &str, text: &str| {
        std::fs::write(dir.path().join(file), text).unwrap();
        file.to_string()
    };
    let host = |name: &str, address: &str| {
        format!(
            "[[host]]\nname = {}\naddress = {}\n\n",
            toml_str(name),
            toml_str(address)
        )
    };
    let bad_name = write("bad-name.toml", &host("../x", "127.0.0.1"));
    let twice = write(
        "twice.toml",
        &(host("twin", "127.0.0.1") + host("twin", "127.0.0.2").as_str()),
    );
    let option = write("option.toml", &host("p", &proxy));
    let attached = format!("-H{proxy}");
    let with_user = format!("root@{proxy}");
    let long = format!("--host={proxy}");
    let cases: [(&[&str], &str); 7] = [
        (&["--hosts", &bad_name], "../x"),
        (&["--hosts", &twice], "twin"),
        (&["--hosts", &option], ""),
        (&["-H", &proxy], ""),
        (&[&attached], ""),
        (&["-H", &with_user], ""),
        (&[&long], ""),
    ];
    for (hosts, named_in_error) in cases {
        let mut args = vec!["run", "quick", "--connect-timeout", "1s", "--out", "out"];
        args.extend_from_slice(hosts);
        let r = fleet(dir.path(), &args);
        assert_eq!(r.code, 2, "{hosts:?}: {}", shown(&r));
        assert!(r.stderr.contains(named_in_error), "{hosts:?}: {}", r.stderr);
        assert!(!ran.exists(), "{hosts:?} ran ssh's ProxyCommand");
    }
}

#[test]
fn a_perfkitbenchmarker_machine_list_is_read_as_an_inventory() {
    require_tool("ssh", "-V", "openssh-client");
    let dir = workdir();
    let key = dir.path().join("key");
    keygen(&key);
    // 127.0.0.1: a port nobody listens on (refused); 127.0.0.2: one that
    // accepts connections and never says a word.
    let refused = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let silent = TcpListener::bind("127.0.0.2:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let machines = json!([
        {
            "ip_address": "127.0.0.1",
            "user_name": "perfkit",
            "keyfile_path": key,
            "ssh_port": refused,
            "internal_ip": "127.0.0.1",
            "os_type": "ubuntu2204",
            "disk_specs": [{ "mount_point": "/scratch" }]
        },
        {
            "ip_address": "127.0.0.2",
            "user_name": "perfkit",
            "keyfile_path": key,
            "ssh_port": silent_port,
            "zone": "rack1",
            "disk_specs": [{ "mount_point": "/scratch" }]
        }
    ]);
    std::fs::write(dir.path().join("vms.json"), machines.to_string()).unwrap();
    // An empty client config: none of the user's own applies.
    std::fs::write(dir.path().join("ssh_config"), "").unwrap();
    let r = fleet(
        dir.path(),
        &[
            "run",
            "quick",
            "--hosts",
            "vms.json",
            "--ssh-config",
            "ssh_config",
            "--connect-timeout",
            "1s",
            "--out",
            "out",
        ],
    );
    drop(silent);
    assert_eq!(r.code, 1, "{}", shown(&r));
    let f = read_json(&dir.path().join("out/fleet.json"), &shown(&r));
    for name in ["127.0.0.1", "127.0.0.2"] {
        let l = final_line(&r.stderr, name);
        assert!(
            l.starts_with(&format!("{name}: failed at check: ")) && l.contains("unreachable"),
            "{l}\n{}",
            r.stderr
        );
        let e = fleet_host(&f, name);
        assert_eq!(
            (&e["ok"], &e["stage"]),
            (&json!(false), &json!("check")),
            "{e}"
        );
    }
}

/// An INI inventory of the lab's two hosts: `a` in group rack1, `b` in
/// rack2, both under `lab`; ports as text and as a number; zone labels as
/// a mapping and as a list.
fn ansible_ini(lab: &Lab) -> String {
    let mut t = String::new();
    for (i, (name, group)) in [("a", "rack1"), ("b", "rack2")].into_iter().enumerate() {
        t.push_str(&format!(
            "[{group}]\n{name} ansible_host={} ansible_port={} ansible_user=root plumb_target={} plumb_cache={} plumb_labels=\"{}\"\n\n",
            lab.mgmt(i),
            if i == 0 { "22" } else { "'22'" },
            lab.target(i).display(),
            lab.cache(i).display(),
            if i == 0 {
                "{'zone': 'eu-west-1a'}"
            } else {
                "['zone=us-east-1a']"
            }
        ));
    }
    t.push_str("[lab:children]\nrack1\nrack2\n");
    let path = lab.path().join("inventory.ini");
    std::fs::write(&path, t).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn an_ansible_ini_inventory_runs_quick_on_two_sshd_hosts_and_groups_select() {
    if !privileged(
        "an_ansible_ini_inventory_runs_quick_on_two_sshd_hosts_and_groups_select",
        "network namespaces and sshd",
    ) {
        return;
    }
    require_tool("ansible-inventory", "--version", "ansible");
    let mut lab = Lab::new("ansible", 86);
    lab.start();
    let inv = ansible_ini(&lab);
    let cfg = lab.config();
    let out = lab.path().join("out");
    let mut args = vec![
        "run",
        "quick",
        "--hosts",
        &inv,
        "--ssh-config",
        &cfg,
        "--only",
        "lab",
    ];
    // A --group-by that is neither a machine field nor a label key of
    // these hosts is refused before any host is reached.
    let bad = lab.path().join("out-bad");
    let mut refused = args.clone();
    refused.extend(["--group-by", "rack", "--out", bad.to_str().unwrap()]);
    let r = fleet(lab.path(), &refused);
    assert_eq!(r.code, 2, "{}", shown(&r));
    assert!(
        r.stderr.contains("--group-by rack") && r.stderr.contains("(keys: zone)"),
        "{}",
        shown(&r)
    );
    assert!(!bad.exists(), "{}", shown(&r));

    args.extend(["--group-by", "zone", "--out", out.to_str().unwrap()]);
    args.extend(QUICK_SMALL);
    let r = fleet(lab.path(), &args);
    assert_eq!(r.code, 0, "{}", shown(&r));
    let f = read_json(&out.join("fleet.json"), &shown(&r));
    // Each result carries its host's groups and labels from the inventory.
    for (h, zone) in [("a", "zone=eu-west-1a"), ("b", "zone=us-east-1a")] {
        let d = read_json(&out.join(format!("results/{h}.json")), &shown(&r));
        let labels = d["labels"].as_array().cloned().unwrap_or_default();
        assert!(labels.iter().any(|l| l == zone), "{h}: {labels:?}");
        assert!(labels.iter().any(|l| l == "lab"), "{h}: {labels:?}");
    }
    for (i, h) in HOSTS.iter().enumerate() {
        ran_ok(&r, &out, h);
        let e = fleet_host(&f, h);
        assert_eq!(e["address"], lab.mgmt(i), "{e}");
        assert_eq!(e["ok"], true, "{e}");
        assert_eq!(run_dirs(&lab.target(i)), Vec::<String>::new(), "{h}");
    }

    // A group selects its hosts: rack2 is b alone.
    let out = lab.path().join("out-rack2");
    let mut args = vec![
        "run",
        "quick/seqwrite",
        "--hosts",
        &inv,
        "--ssh-config",
        &cfg,
    ];
    args.extend(["--only", "rack2", "--out", out.to_str().unwrap()]);
    args.extend(QUICK_SMALL);
    let r = fleet(lab.path(), &args);
    assert_eq!(r.code, 0, "{}", shown(&r));
    let d = read_json(&out.join("results/b.json"), &shown(&r));
    assert_eq!(d["scenarios"][0]["name"], "seqwrite", "{d}");
    assert!(!out.join("results/a.json").exists(), "{}", shown(&r));
    let f = read_json(&out.join("fleet.json"), &shown(&r));
    assert_eq!(f["hosts"].as_array().map(Vec::len), Some(1), "{f}");
}

#[test]
fn hostile_ansible_inventories_run_nothing_and_name_the_place() {
    require_tool("ansible-inventory", "--version", "ansible");
    let dir = workdir();
    let ran = dir.path().join("ran");
    let write = |file: &str, text: &str| {
        let path = dir.path().join(file);
        std::fs::write(&path, text).unwrap();
        path
    };
    // An executable inventory is a dynamic inventory script to Ansible.
    let script = write(
        "script.ini",
        &format!("#!/bin/sh\ntouch {}\necho '{{}}'\n", ran.display()),
    );
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // A YAML file that asks for an inventory plugin.
    write(
        "plugin.yml",
        "plugin: ansible.builtin.generator\nhosts:\n  name: x\n",
    );
    // An ansible.cfg where plumb runs, loading plugins from anywhere.
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    write(
        "ansible.cfg",
        "[defaults]\ninventory_plugins = ./plugins\n[inventory]\nenable_plugins = script, ini\n",
    );
    // Host variables that would be ssh options, templates or another connection.
    let proxy = format!("-oProxyCommand=touch {}", ran.display());
    write("proxy.ini", &format!("p ansible_host='{proxy}'\n"));
    write(
        "template.ini",
        &format!(
            "t ansible_user=\"{{{{ lookup('pipe', 'touch {}') }}}}\"\n",
            ran.display()
        ),
    );
    write("local.ini", "l ansible_connection=local\n");
    write("port.ini", "q ansible_port=99999\n");
    write("name.ini", "[g]\n-oProxyCommand=x\n");
    for (file, want) in [
        ("script.ini", "script.ini"),
        ("plugin.yml", "plugin.yml"),
        ("proxy.ini", "address"),
        ("template.ini", "user"),
        ("local.ini", "ssh only"),
        ("port.ini", "port"),
        ("name.ini", "name.ini"),
        ("missing.ini", "missing.ini"),
    ] {
        let r = fleet(
            dir.path(),
            &[
                "run",
                "quick",
                "--hosts",
                file,
                "--connect-timeout",
                "1s",
                "--out",
                "out",
            ],
        );
        assert_eq!(r.code, 2, "{file}: {}", shown(&r));
        assert!(r.stderr.contains(want), "{file}: {}", r.stderr);
        assert!(!ran.exists(), "{file} ran a program");
        assert!(!dir.path().join("out").exists(), "{file}: {}", shown(&r));
    }

    // Without ansible-inventory the error names the package.
    write("plain.ini", "h ansible_host=127.0.0.1\n");
    let out = std::process::Command::new(crate::util::plumb_bin())
        .args([
            "fleet",
            "run",
            "quick",
            "--hosts",
            "plain.ini",
            "--out",
            "out",
        ])
        .current_dir(dir.path())
        .env("PATH", dir.path().join("plugins"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ansible-inventory") && err.contains("apt-get install ansible"),
        "{err}"
    );
}
