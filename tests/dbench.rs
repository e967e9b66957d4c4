//! dbench load files through the real binary: Debian's `client.txt`
//! imported and checked against counts taken from the load file itself,
//! replayed with one and two clients, the pack's own load file and trace
//! kept in step with their generator, and inputs too big to keep in the
//! hostile corpus (a 100 MB line, more operations than a trace may hold).
//!
//! `client.txt` comes with Debian's `dbench` package (`cargo xtask test`
//! installs it): without it these tests fail, saying so.

use plumb::trace::{OpKind, Trace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

const CLIENT_TXT: &str = "/usr/share/dbench/client.txt";
const PACK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/pts-disk");

fn plumb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
}

fn client_txt() -> String {
    std::fs::read_to_string(CLIENT_TXT).unwrap_or_else(|e| {
        panic!("{CLIENT_TXT}: {e}: the dbench package is missing (apt-get install dbench, or cargo xtask test, which installs it)")
    })
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Imports `load` into `out`; requires success.
fn import(load: &Path, out: &Path) -> Trace {
    let o = plumb()
        .args(["trace", "import", "--dbench"])
        .arg(load)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "import of {} failed: {}",
        load.display(),
        text(&o)
    );
    Trace::parse("t", &std::fs::read_to_string(out).unwrap()).unwrap()
}

/// Each dbench operation's lines in the load file, and the sum of its
/// size field (ReadX, WriteX), read from the text alone.
fn load_counts(load: &str) -> (BTreeMap<String, u64>, u64, u64) {
    let (mut ops, mut read, mut written) = (BTreeMap::new(), 0u64, 0u64);
    for l in load.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        let Some(op) = w.first() else { continue };
        *ops.entry(op.to_string()).or_default() += 1;
        match *op {
            "ReadX" => read += w[3].parse::<u64>().unwrap(),
            "WriteX" => written += w[3].parse::<u64>().unwrap(),
            _ => {}
        }
    }
    (ops, read, written)
}

/// The operations of each step as words (`stat=ENOENT`, `open`, ...).
fn steps(t: &Trace) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut marks = t.steps.starts.iter().peekable();
    for (i, op) in t.ops.iter().enumerate() {
        if let Some((_, id)) = marks.next_if(|(at, _)| *at as usize == i) {
            out.push((t.steps.name(*id).to_string(), Vec::new()));
        }
        let word = match op.failed {
            Some(e) => format!("{}=E{e}", op.kind.name()),
            None => op.kind.name().to_string(),
        };
        out.last_mut()
            .expect("the first operation begins a step")
            .1
            .push(word);
    }
    out
}

/// Takes fileio's `resolve_name` off the front: a stat, and after a failed
/// one a read of the directory (an open that fails, or open, fstat,
/// getdents64 calls, close).
fn resolve(w: &[String]) -> Option<&[String]> {
    let (first, rest) = w.split_first()?;
    if first == "stat" {
        return Some(rest);
    }
    if !first.starts_with("stat=") {
        return None;
    }
    scan(rest)
}

fn scan(w: &[String]) -> Option<&[String]> {
    let (first, rest) = w.split_first()?;
    if first.starts_with("open=") {
        return Some(rest);
    }
    if first != "open" || rest.first()? != "fstat" {
        return None;
    }
    let n = rest[1..].iter().take_while(|x| *x == "readdir").count();
    match rest.get(1 + n) {
        Some(c) if c == "close" => Some(&rest[2 + n..]),
        _ => None,
    }
}

/// Whether a step's operations are what fileio does for that operation.
fn fits(step: &str, w: &[String]) -> bool {
    let is = |w: &[String], want: &[&str]| w.iter().map(String::as_str).eq(want.iter().copied());
    match step {
        "ReadX" => is(w, &["pread"]),
        "WriteX" => is(w, &["pwrite"]),
        "Close" => is(w, &["close"]),
        "Flush" => is(w, &["fsync"]),
        "Qfileinfo" => is(w, &["fstat"]),
        "Qfsinfo" => is(w, &["statfs"]),
        "LockX" => is(w, &["lock"]),
        "UnlockX" => is(w, &["unlock"]),
        "Sfileinfo" => w.len() == 2 && w[0] == "fstat" && w[1].starts_with("utimes"),
        "Qpathinfo" => resolve(w).is_some_and(|r| r.is_empty()),
        "Find" => resolve(w).is_some_and(|r| r.is_empty() || scan(r).is_some_and(|r| r.is_empty())),
        "Unlink" => resolve(w).is_some_and(|r| r.len() == 1 && r[0].starts_with("unlink")),
        "Rename" => resolve(w)
            .and_then(resolve)
            .is_some_and(|r| r.len() == 1 && r[0].starts_with("rename")),
        "NTCreateX" => {
            let Some(mut r) = resolve(w) else {
                return false;
            };
            if r.first().is_some_and(|x| x.starts_with("mkdir")) {
                r = &r[1..];
            }
            if r.first().is_some_and(|x| x.starts_with("open=E21")) {
                // EISDIR: opened again as a directory.
                r = &r[1..];
            }
            match r {
                [o] => o.starts_with("open="),
                [o, next] => o == "open" && (next == "fstat" || next == "close"),
                _ => false,
            }
        }
        "Deltree" => w.first().is_some_and(|x| x.starts_with("open")),
        _ => false,
    }
}

/// Per operation name: how many the trace holds.
fn trace_counts(t: &Trace) -> BTreeMap<&'static str, u64> {
    let mut m = BTreeMap::new();
    for op in &t.ops {
        *m.entry(op.kind.name()).or_default() += 1;
    }
    m
}

#[test]
fn client_txt_imports_as_fileio_plays_it() {
    let load = client_txt();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("client.trace");
    let started = Instant::now();
    let t = import(Path::new(CLIENT_TXT), &out);
    eprintln!(
        "imported {CLIENT_TXT} ({} lines) in {:.2} s: {} operations, {} files",
        load.lines().count(),
        started.elapsed().as_secs_f64(),
        t.ops.len(),
        t.files.len()
    );
    let (lines, read, written) = load_counts(&load);
    let ops = trace_counts(&t);
    let line = |op: &str| lines.get(op).copied().unwrap_or(0);
    let op = |name: &str| ops.get(name).copied().unwrap_or(0);
    // The operations that are one system call each.
    for (dbench, call) in [
        ("ReadX", "pread"),
        ("WriteX", "pwrite"),
        ("Flush", "fsync"),
        ("LockX", "lock"),
        ("UnlockX", "unlock"),
        ("Rename", "rename"),
        ("QUERY_FS_INFORMATION", "statfs"),
        ("SET_FILE_INFORMATION", "utimes"),
    ] {
        assert_eq!(op(call), line(dbench), "{call} against {dbench} lines");
    }
    assert_eq!(line("ReadX"), 124_199, "Debian's client.txt");
    let bytes =
        |pick: fn(&OpKind) -> Option<u64>| t.ops.iter().filter_map(|o| pick(&o.kind)).sum::<u64>();
    assert_eq!(
        bytes(|k| matches!(k, OpKind::Read { .. }).then(|| k.bytes())),
        read
    );
    assert_eq!(
        bytes(|k| matches!(k, OpKind::Write { .. }).then(|| k.bytes())),
        written
    );
    // Directories are made by NTCreateX with create option 0x1, except the
    // client's own (the replay makes it).
    let dir_creates = load
        .lines()
        .filter(|l| l.starts_with("NTCreateX ") && l.split_whitespace().nth(2) == Some("0x1"))
        .filter(|l| !l.contains("\"\\clients\\client1\" "))
        .count() as u64;
    assert_eq!(op("mkdir"), dir_creates);
    // An NTCreateX that fails in the load file fails to open in the trace.
    let failed_creates = load
        .lines()
        .filter(|l| l.starts_with("NTCreateX ") && !l.ends_with("NT_STATUS_OK"))
        .count();
    let failed_file_opens = t
        .ops
        .iter()
        .filter(|o| {
            matches!(&o.kind, OpKind::Open { flags, .. } if flags.write) && o.failed.is_some()
        })
        .count();
    assert_eq!(failed_file_opens, failed_creates);
    // Every line but dbench's set-up of \clients is one step, named as
    // dbench's latency table names it, holding what fileio does for it.
    let named = [
        ("NTCreateX", "NTCreateX"),
        ("Close", "Close"),
        ("Rename", "Rename"),
        ("Unlink", "Unlink"),
        ("Deltree", "Deltree"),
        ("QUERY_PATH_INFORMATION", "Qpathinfo"),
        ("QUERY_FILE_INFORMATION", "Qfileinfo"),
        ("QUERY_FS_INFORMATION", "Qfsinfo"),
        ("SET_FILE_INFORMATION", "Sfileinfo"),
        ("FIND_FIRST", "Find"),
        ("WriteX", "WriteX"),
        ("ReadX", "ReadX"),
        ("LockX", "LockX"),
        ("UnlockX", "UnlockX"),
        ("Flush", "Flush"),
    ];
    let s = steps(&t);
    let mut per_step: BTreeMap<&str, u64> = BTreeMap::new();
    for (name, words) in &s {
        assert!(fits(name, words), "a {name} step holds {words:?}");
        *per_step.entry(name.as_str()).or_default() += 1;
    }
    for (dbench, step) in named {
        assert_eq!(
            per_step.get(step).copied().unwrap_or(0),
            line(dbench),
            "{step} steps"
        );
    }
    assert_eq!(line("Mkdir"), 1, "the one Mkdir is of \\clients");
    assert!(!per_step.contains_key("Mkdir"));
    // Nothing exists at first but the client's directory.
    assert!(t
        .files
        .iter()
        .filter(|f| f.size.is_some())
        .all(|f| f.path == "."));
    let show = plumb().args(["trace", "show"]).arg(&out).output().unwrap();
    assert!(show.status.success(), "{}", text(&show));
    assert!(text(&show).contains("lock"), "{}", text(&show));
}

/// The replay's per-operation counts from its JSON.
fn replayed(r: &serde_json::Value, key: &str, name: &str) -> BTreeMap<String, u64> {
    r[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o[name].as_str().unwrap().to_string(),
                o["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_prefix_replays_with_one_and_two_clients() {
    let load: String = client_txt()
        .lines()
        .take(20_000)
        .map(|l| format!("{l}\n"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let load_path = dir.path().join("prefix.txt");
    std::fs::write(&load_path, &load).unwrap();
    let trace_path = dir.path().join("prefix.trace");
    let t = import(&load_path, &trace_path);
    let want = trace_counts(&t);
    let failed = t.ops.iter().filter(|o| o.failed.is_some()).count() as u64;
    let mut steps_want: BTreeMap<String, u64> = BTreeMap::new();
    for (_, id) in &t.steps.starts {
        *steps_want.entry(t.steps.name(*id).to_string()).or_default() += 1;
    }
    for clients in [1u64, 2] {
        let target = dir.path().join(format!("target{clients}"));
        std::fs::create_dir(&target).unwrap();
        let json = dir.path().join(format!("r{clients}.json"));
        let started = Instant::now();
        let o = plumb()
            .args(["trace", "replay"])
            .arg(&trace_path)
            .arg("--target")
            .arg(&target)
            .args([
                "--speed",
                "max",
                "--keep",
                "--clients",
                &clients.to_string(),
                "--json",
            ])
            .arg(&json)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "replay with {clients} client(s): {}",
            text(&o)
        );
        eprintln!(
            "replayed {} operations x {clients} in {:.2} s",
            t.ops.len(),
            started.elapsed().as_secs_f64()
        );
        let r = crate::trace_results::replayed(&json);
        assert_eq!(r["divergences"], 0, "{}", r["first_divergence"]);
        assert_eq!(r["expected_errors"].as_u64(), Some(failed * clients));
        assert_eq!(r["clients"].as_u64(), Some(clients));
        assert_eq!(
            r["client_seconds"].as_array().unwrap().len() as u64,
            clients
        );
        let got = replayed(&r, "ops", "op");
        let want: BTreeMap<String, u64> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v * clients))
            .collect();
        assert_eq!(got, want, "per-operation counts");
        let want_steps: BTreeMap<String, u64> = steps_want
            .iter()
            .map(|(k, v)| (k.clone(), v * clients))
            .collect();
        assert_eq!(replayed(&r, "steps", "step"), want_steps, "per-step counts");
        // Where each client played (the run directory was kept).
        let stderr = String::from_utf8_lossy(&o.stderr);
        let kept = stderr
            .lines()
            .find_map(|l| l.strip_prefix("kept "))
            .map(PathBuf::from)
            .expect("the kept run directory");
        if clients == 1 {
            assert!(kept.join("~dmtmp").is_dir(), "client 1's tree at the top");
            assert!(!kept.join("clients").exists());
        } else {
            for k in 1..=clients {
                let tree = kept.join(format!("clients/client{k}/~dmtmp"));
                assert!(tree.is_dir(), "{} is missing", tree.display());
            }
            assert!(!kept.join("~dmtmp").exists());
        }
        std::fs::remove_dir_all(&kept).unwrap();
    }
}

#[test]
fn all_of_client_txt_replays_without_divergence() {
    client_txt();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("client.trace");
    let t = import(Path::new(CLIENT_TXT), &trace);
    let json = dir.path().join("r.json");
    let started = Instant::now();
    let o = plumb()
        .args(["trace", "replay"])
        .arg(&trace)
        .arg("--target")
        .arg(dir.path())
        .args(["--speed", "max", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    eprintln!(
        "replayed all of client.txt ({} operations) in {:.2} s",
        t.ops.len(),
        started.elapsed().as_secs_f64()
    );
    let r = crate::trace_results::replayed(&json);
    assert_eq!(r["divergences"], 0, "{}", r["first_divergence"]);
    assert_eq!(r["total_ops"].as_u64(), Some(t.ops.len() as u64));
    let failed = t.ops.iter().filter(|o| o.failed.is_some()).count() as u64;
    assert_eq!(r["expected_errors"].as_u64(), Some(failed));
}

#[test]
fn too_large_inputs_are_refused_without_output() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |name: &str, body: &[u8], what: &str| {
        let load = dir.path().join(name);
        std::fs::write(&load, body).unwrap();
        let out = dir.path().join(format!("{name}.trace"));
        let o = plumb()
            .args(["trace", "import", "--dbench"])
            .arg(&load)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
        let msg = text(&o);
        assert!(msg.contains(what), "{name}: {msg}");
        assert!(
            msg.contains(&format!("{name}:")),
            "{name}: the error names the file: {msg}"
        );
        assert!(!out.exists(), "{name}: an output file was written");
    };
    // A 100 MB line.
    let mut line = b"Close ".to_vec();
    line.resize(100 << 20, b'x');
    line.extend_from_slice(b" NT_STATUS_OK\n");
    refused("long.txt", &line, "at most 65536");
    // More operations than a trace may hold: each FIND_FIRST of a missing
    // name is a stat and two directory reads (11 calls).
    let mut many = String::from("NTCreateX \"\\clients\\client1\\d\" 0x1 0x2 1 NT_STATUS_OK\n");
    for _ in 0..190_000 {
        many.push_str(
            "FIND_FIRST \"\\clients\\client1\\d\\*.DOC\" 260 1366 0 NT_STATUS_NO_SUCH_FILE\n",
        );
    }
    refused("many.txt", many.as_bytes(), "more than 2000000 operations");
}

#[test]
fn the_packs_load_file_and_trace_are_what_their_generators_make() {
    let dir = tempfile::tempdir().unwrap();
    let load = Path::new(PACK).join("dbench.load");
    let shipped = std::fs::read_to_string(&load).unwrap();
    // The generator (Python's standard library only) makes the same file.
    let generated = Command::new("python3")
        .arg(Path::new(PACK).join("gen-dbench-load.py"))
        .output()
        .expect("python3");
    assert!(generated.status.success(), "{}", text(&generated));
    assert!(
        String::from_utf8_lossy(&generated.stdout) == shipped,
        "scripts/pts-disk/dbench.load is not what gen-dbench-load.py makes: run python3 scripts/pts-disk/gen-dbench-load.py > scripts/pts-disk/dbench.load"
    );
    // The shipped trace is the import of it.
    let out = dir.path().join("dbench.trace");
    import(&load, &out);
    let trace = std::fs::read_to_string(Path::new(PACK).join("dbench.trace")).unwrap();
    assert!(
        std::fs::read_to_string(&out).unwrap() == trace,
        "scripts/pts-disk/dbench.trace is stale: plumb trace import --dbench scripts/pts-disk/dbench.load -o scripts/pts-disk/dbench.trace"
    );
    // Its mix is an office one: every dbench operation of client.txt is there.
    let (lines, _, _) = load_counts(&shipped);
    for op in [
        "NTCreateX",
        "Close",
        "ReadX",
        "WriteX",
        "QUERY_PATH_INFORMATION",
        "QUERY_FILE_INFORMATION",
        "QUERY_FS_INFORMATION",
        "SET_FILE_INFORMATION",
        "FIND_FIRST",
        "Unlink",
        "Rename",
        "Flush",
        "LockX",
        "UnlockX",
        "Deltree",
    ] {
        assert!(
            lines.get(op).copied().unwrap_or(0) > 0,
            "no {op} in dbench.load"
        );
    }
    let total: u64 = lines.values().sum();
    assert!((40_000..=60_000).contains(&total), "{total} lines");
}

#[test]
fn a_scenario_replays_clients_within_the_packs_threads() {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("pack");
    std::fs::create_dir(&pack).unwrap();
    let load = dir.path().join("l.txt");
    std::fs::write(
        &load,
        "NTCreateX \"\\clients\\client1\\d\" 0x1 0x2 1 NT_STATUS_OK\n\
         NTCreateX \"\\clients\\client1\\d\\f\" 0x40 0x2 2 NT_STATUS_OK\n\
         WriteX 2 0 65536 65536 NT_STATUS_OK\n\
         ReadX 2 0 4096 4096 NT_STATUS_OK\n\
         LockX 2 10 1 NT_STATUS_OK\n\
         UnlockX 2 10 1 NT_STATUS_OK\n\
         Close 2 NT_STATUS_OK\n",
    )
    .unwrap();
    import(&load, &pack.join("t.trace"));
    std::fs::write(
        pack.join("pack.toml"),
        "name = \"c\"\nversion = \"1\"\ndescription = \"clients\"\nscenarios = [\"s.rhai\"]\ndata = [\"t.trace\"]\n\n[params.n]\ndefault = 3\nunit = \"clients\"\ndescription = \"clients\"\n\n[capabilities]\nthreads = 3\nmax_bytes = \"16M\"\n",
    )
    .unwrap();
    std::fs::write(
        pack.join("s.rhai"),
        "let r = trace::replay(\"t.trace\", #{ speed: \"max\", clients: param(\"n\", 3) });\n\
         if r.divergences > 0 { throw r.first_divergence; }\n\
         report::metric(\"clients\", r.client_seconds.len(), \"\", \"higher\");\n\
         let steps = 0; for s in r.steps { steps += s.count; }\n\
         report::metric(\"steps\", steps, \"\", \"higher\");\n\
         for o in r.ops { if o.op == \"lock\" { report::metric(\"locks\", o.count, \"\", \"higher\"); } }\n",
    )
    .unwrap();
    let run = |n: u32| {
        let target = dir.path().join(format!("t{n}"));
        std::fs::create_dir(&target).unwrap();
        let json = dir.path().join(format!("r{n}.json"));
        let o = plumb()
            .arg("run")
            .arg(&pack)
            .arg("--target")
            .arg(&target)
            .args(["-p", &format!("n={n}"), "--json"])
            .arg(&json)
            .output()
            .unwrap();
        (o, json)
    };
    let (o, json) = run(3);
    assert!(o.status.success(), "{}", text(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let metric = |name: &str| {
        r["scenarios"][0]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .and_then(|m| m["value"].as_f64())
    };
    assert_eq!(metric("clients"), Some(3.0));
    assert_eq!(
        metric("steps"),
        Some(21.0),
        "seven lines, seven steps, three clients"
    );
    assert_eq!(metric("locks"), Some(3.0), "one lock per client");
    // Four clients of one thread each are four threads: more than declared.
    let (o, _) = run(4);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("4 threads (the pack declares at most 3)"),
        "{}",
        text(&o)
    );
}
