//! WebAssembly scenarios: the example guests built for wasm32-wasip2 and
//! run by the real binary, hostile guests stopped, the cache, and the
//! es-indexing scenario giving the same figures in WASM and in Rhai.

use crate::util::{doc, entries, metric, pack_folder, plumb, plumb_cached, run_scripts, workdir};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Builds the example guests once per test process; returns where they are.
/// They go under this build's own target directory (`CARGO_TARGET_TMPDIR`,
/// which cargo puts in whatever target directory it uses: `CARGO_TARGET_DIR`,
/// `build.target-dir` or `target/`), never in `examples/target`.
fn guests() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("example-guests");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .args(["build", "--quiet", "--release", "--target", "wasm32-wasip2", "--manifest-path"])
            .arg(root.join("examples/Cargo.toml"))
            .arg("--target-dir")
            .arg(&target_dir)
            .output()
            .expect("run cargo");
        assert!(
            out.status.success(),
            "building the example guests failed (is the target installed? `cargo xtask test` adds it; or rustup target add wasm32-wasip2):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        target_dir.join("wasm32-wasip2/release")
    })
}

pub(crate) fn guest(name: &str) -> String {
    guests().join(format!("{name}.wasm")).display().to_string()
}

#[test]
fn hello_runs_and_its_second_start_comes_from_the_cache() {
    let dir = workdir();
    let cache = dir.path().join("cache");
    let hello = guest("hello");
    let first = plumb_cached(dir.path(), &cache, &["check", &hello]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stdout.contains("ok (compiled in"), "{}", first.stdout);
    assert_eq!(entries(&cache.join("wasm")).len(), 1, "one artifact cached");
    let second = plumb_cached(dir.path(), &cache, &["check", &hello]);
    assert!(
        second.stdout.contains("ok (loaded from the cache in"),
        "{}",
        second.stdout
    );
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let r = plumb_cached(
        dir.path(),
        &cache,
        &["run", &hello, "--target", "target", "--json", "h.json"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("  | hello from a component: wrote 1048576 bytes"),
        "the guest's stdout is the log: {}",
        r.stderr
    );
    let d = doc(&dir.path().join("h.json"));
    assert!(metric(&d, "hello", "write_mib_per_s").unwrap() > 0.0);
    assert!(entries(&dir.path().join("target")).is_empty());
}

/// A pack folder holding the hostile guest, then a Rhai scenario.
fn hostile_pack(dir: &Path) -> PathBuf {
    let pack = dir.join("hostile-pack");
    std::fs::create_dir(&pack).unwrap();
    std::fs::copy(guest("hostile"), pack.join("hostile.wasm")).unwrap();
    std::fs::write(
        pack.join("after.rhai"),
        "report::metric(\"ran\", 1, \"\", \"higher\");\n",
    )
    .unwrap();
    std::fs::write(
        pack.join("pack.toml"),
        "name = \"hostile\"\nscenarios = [\"hostile.wasm\", \"after.rhai\"]\n[params.mode]\ndefault = \"ok\"\n[capabilities]\nmax_bytes = \"1M\"\n",
    )
    .unwrap();
    pack
}

fn run_hostile(dir: &Path, mode: &str, extra: &[&str]) -> (crate::util::Run, serde_json::Value) {
    let pack = hostile_pack(dir);
    let m = format!("mode={mode}");
    let mut args = vec![pack.to_str().unwrap(), "-p", &m, "--json", "x.json"];
    args.extend_from_slice(extra);
    let (r, target) = run_scripts(dir, &args);
    assert!(entries(&target).is_empty(), "nothing left behind");
    let d = doc(&dir.join("x.json"));
    assert_eq!(
        metric(&d, "after", "ran"),
        Some(1.0),
        "the run goes on after the guest: {}",
        r.stderr
    );
    (r, d)
}

#[test]
fn an_endless_loop_is_stopped_at_the_deadline() {
    let dir = workdir();
    let (r, d) = run_hostile(dir.path(), "loop", &["--timeout", "1s"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let err = d["scenarios"][0]["error"].as_str().unwrap();
    assert!(
        err.contains("ran past its deadline") && err.contains("--timeout"),
        "{err}"
    );
    assert_eq!(d["scenarios"][0]["error_kind"], "deadline");
}

#[test]
fn a_memory_bomb_is_stopped_at_the_limit() {
    let dir = workdir();
    let (r, d) = run_hostile(dir.path(), "memory", &["--wasm-memory", "64M"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let err = d["scenarios"][0]["error"].as_str().unwrap();
    assert!(
        err.contains("memory limit of 64MiB") && err.contains("--wasm-memory"),
        "{err}"
    );
    assert_eq!(
        d["scenarios"][0]["error_kind"], "memory_limit",
        "told by plumb's memory limiter, not by the trap's text"
    );
}

#[test]
fn a_trap_is_reported_with_the_guest_backtrace() {
    let dir = workdir();
    let (r, d) = run_hostile(dir.path(), "trap", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let err = d["scenarios"][0]["error"].as_str().unwrap();
    assert!(err.contains("the guest trapped"), "{err}");
    assert_eq!(d["scenarios"][0]["error_kind"], "trap");
    assert!(
        err.contains("deep") && err.contains("hostile/src/lib.rs:"),
        "names the guest's frames: {err}"
    );
    assert!(
        r.stderr.contains("deliberate panic"),
        "the guest's own message is in the log"
    );
}

#[test]
fn paths_outside_are_refused_through_the_host_api() {
    let dir = workdir();
    let (r, d) = run_hostile(dir.path(), "escape", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(metric(&d, "hostile", "refused"), Some(5.0));
    assert!(!dir.path().join("escaped.dat").exists());
    assert!(!Path::new("/tmp/plumb-escape-dir").exists());
}

#[test]
fn a_guest_importing_what_plumb_lacks_is_refused_before_running() {
    let dir = workdir();
    let rogue = guest("rogue");
    let c = plumb(dir.path(), &["check", &rogue]);
    assert_eq!(c.code, 2);
    assert!(
        c.stderr.contains("rogue:scenario/steal") && c.stderr.contains("plumb does not provide"),
        "{}",
        c.stderr
    );
    let hello = guest("hello");
    let (r, target) = run_scripts(dir.path(), &[&hello, &rogue]);
    assert_eq!(r.code, 2, "nothing runs: {}", r.stderr);
    assert!(!r.stderr.contains("hello from a component"));
    assert!(entries(&target).is_empty());
    // Not a component at all.
    std::fs::write(dir.path().join("junk.wasm"), b"\0asm junk").unwrap();
    let j = plumb(dir.path(), &["check", "junk.wasm"]);
    assert_eq!(j.code, 2);
    assert!(
        j.stderr.contains("junk.wasm: not a WebAssembly component"),
        "{}",
        j.stderr
    );
}

#[test]
fn es_indexing_gives_the_same_figures_in_wasm_and_rhai() {
    let dir = workdir();
    let params = [
        "-p",
        "docs=2000",
        "-p",
        "doc_size=512",
        "-p",
        "bulk_size=100",
        "-p",
        // Slow enough that both runtimes keep up with the arrivals (the
        // Rhai one spends about 0.3 ms of CPU per document).
        "docs_per_sec=2000",
        "-p",
        "burst_on=0.4",
        "-p",
        "burst_off=0.2",
        "-p",
        "refresh_every=400",
        "-p",
        "merge_factor=2",
    ];
    let wasm = guest("es_indexing");
    // Three runs of each, alternating: the timed figures compare as means
    // over the pairs (this machine is shared); the counted ones must match
    // in every run.
    let mut runs = Vec::new();
    for round in 0..3 {
        let (w_json, r_json) = (format!("w{round}.json"), format!("r{round}.json"));
        let mut a = vec![wasm.as_str(), "--json", w_json.as_str()];
        a.extend_from_slice(&params);
        let (r, _) = run_scripts(dir.path(), &a);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let mut b = vec!["es-indexing", "--json", r_json.as_str()];
        b.extend_from_slice(&params);
        let (r, _) = run_scripts(dir.path(), &b);
        assert_eq!(r.code, 0, "{}", r.stderr);
        runs.push((
            doc(&dir.path().join(&w_json)),
            doc(&dir.path().join(&r_json)),
        ));
    }
    let pick = |d: &serde_json::Value, scenario: &str, m: &str| {
        metric(d, scenario, m).unwrap_or_else(|| panic!("{scenario} {m}"))
    };
    for (w, h) in &runs {
        for m in [
            "merges",
            "segments",
            "write_amplification",
            "tokens",
            "distinct_terms",
            "shard_skew",
            "searchers",
        ] {
            assert_eq!(pick(w, "es_indexing", m), pick(h, "es-indexing", m), "{m}");
        }
        assert!(
            pick(w, "es_indexing", "merges") >= 2.0,
            "merges happen at these sizes"
        );
        // Searches ran beside the indexing, in both.
        for (d, side) in [(w, "es_indexing"), (h, "es-indexing")] {
            assert!(pick(d, side, "searches") > 10.0, "{side}");
            let (p50, p99) = (pick(d, side, "search_p50"), pick(d, side, "search_p99"));
            assert!(0.0 < p50 && p50 <= p99, "{side}: {p50} {p99}");
        }
        // Per document, the analysis runs natively in the component.
        assert!(
            pick(w, "es_indexing", "cpu_us_per_doc") < pick(h, "es-indexing", "cpu_us_per_doc"),
            "the component uses less CPU per document"
        );
    }
    for m in ["docs_per_sec", "fsyncs_per_sec", "searches"] {
        let mean =
            |side: &str, of: fn(&(serde_json::Value, serde_json::Value)) -> &serde_json::Value| {
                runs.iter().map(|r| pick(of(r), side, m)).sum::<f64>() / runs.len() as f64
            };
        let ratio = mean("es_indexing", |r| &r.0) / mean("es-indexing", |r| &r.1);
        assert!((0.9..=1.1).contains(&ratio), "{m}: wasm/rhai = {ratio}");
    }
}

/// The one cache file whose name is not in `before`.
fn new_artifact(cache: &Path, before: &[String]) -> PathBuf {
    let now = entries(cache);
    let new: Vec<&String> = now.iter().filter(|n| !before.contains(n)).collect();
    assert_eq!(new.len(), 1, "one new artifact: {now:?}");
    cache.join(new[0])
}

#[test]
fn an_artifact_planted_under_another_guests_key_is_not_run() {
    let dir = workdir();
    let cache = dir.path().join("cache");
    let wasm = cache.join("wasm");
    let hello = guest("hello");
    let r = plumb_cached(dir.path(), &cache, &["check", &hello]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let hello_art = new_artifact(&wasm, &[]);
    let r = plumb_cached(dir.path(), &cache, &["check", &guest("hostile")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let hostile_art = new_artifact(
        &wasm,
        &[hello_art.file_name().unwrap().to_string_lossy().into()],
    );
    std::fs::copy(&hostile_art, &hello_art).unwrap();
    let r = plumb_cached(dir.path(), &cache, &["check", &hello]);
    assert!(
        r.stdout.contains("ok (compiled in"),
        "not loaded: {}",
        r.stdout
    );
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let r = plumb_cached(dir.path(), &cache, &["run", &hello, "--target", "target"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("hello from a component"),
        "hello ran: {}",
        r.stderr
    );
}

#[test]
fn a_corrupted_artifact_is_compiled_again_and_replaced() {
    let dir = workdir();
    let cache = dir.path().join("cache");
    let hello = guest("hello");
    assert_eq!(plumb_cached(dir.path(), &cache, &["check", &hello]).code, 0);
    let art = new_artifact(&cache.join("wasm"), &[]);
    let mut bytes = std::fs::read(&art).unwrap();
    for b in bytes.iter_mut().skip(4096).step_by(97) {
        *b ^= 0xff;
    }
    std::fs::write(&art, &bytes).unwrap();
    let r = plumb_cached(dir.path(), &cache, &["check", &hello]);
    assert_eq!(r.code, 0, "no crash: {}", r.stderr);
    assert!(r.stdout.contains("ok (compiled in"), "{}", r.stdout);
    let r = plumb_cached(dir.path(), &cache, &["check", &hello]);
    assert!(
        r.stdout.contains("ok (loaded from the cache in"),
        "replaced by a good one: {}",
        r.stdout
    );
}

#[test]
fn a_cache_directory_others_can_write_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let dir = workdir();
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(cache.join("wasm")).unwrap();
    std::fs::set_permissions(cache.join("wasm"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let hello = guest("hello");
    for _ in 0..2 {
        let r = plumb_cached(dir.path(), &cache, &["check", &hello]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains("ok (compiled in"), "{}", r.stdout);
        assert!(
            r.stderr.contains("not using the compiled-component cache"),
            "says why: {}",
            r.stderr
        );
    }
    assert!(
        entries(&cache.join("wasm")).is_empty(),
        "nothing stored there"
    );
}

#[test]
fn a_new_cache_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = workdir();
    let cache = dir.path().join("cache");
    assert_eq!(
        plumb_cached(dir.path(), &cache, &["check", &guest("hello")]).code,
        0
    );
    let mode = std::fs::metadata(cache.join("wasm"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
}

/// The functions the `plumb:bench/scenario` world imports, as the guest
/// names them (`fs.write-file`, `file.read-at`), read from the WIT.
fn wit_imports() -> std::collections::BTreeSet<String> {
    let wit =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/wit/plumb.wit")).unwrap();
    // The blocks open around the line: interfaces, resources, records,
    // enums, variants; functions sit in an interface or a resource.
    let mut out = std::collections::BTreeSet::new();
    let mut blocks: Vec<(String, String)> = Vec::new();
    for line in wit.lines().map(str::trim) {
        if let Some(head) = line.strip_suffix(" {") {
            let (kind, name) = head.split_once(' ').unwrap_or((head, ""));
            blocks.push((kind.to_string(), name.to_string()));
        } else if line == "}" {
            blocks.pop();
        } else if let (Some((kind, owner)), Some((name, _))) =
            (blocks.last(), line.split_once(": func("))
        {
            if kind == "interface" || kind == "resource" {
                out.insert(format!("{owner}.{}", name.trim_start_matches('%')));
            }
        }
    }
    out
}

#[test]
fn the_api_tour_calls_every_wit_import_and_checks_each_result() {
    let dir = workdir();
    let pack = dir.path().join("tour");
    std::fs::create_dir(&pack).unwrap();
    std::fs::copy(guest("api_tour"), pack.join("api-tour.wasm")).unwrap();
    std::fs::write(
        pack.join("tiny.trace"),
        "plumb-trace 1\nduration_us 10\nfile 0 4096 a\nthread 0 1\nop 0 0 1 open 0 0 r\nop 0 1 1 pread 0 0 4096\nop 0 2 1 close 0\nend 3\n",
    )
    .unwrap();
    std::fs::write(
        pack.join("pack.toml"),
        "name = \"tour\"\nscenarios = [\"api-tour.wasm\"]\ndata = [\"tiny.trace\"]\n\n[params.greeting]\ndefault = \"hi\"\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let r = plumb(
        dir.path(),
        &[
            "run",
            "tour",
            "--target",
            "target",
            "--json",
            "t.json",
            "--timeout",
            "60s",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let called: std::collections::BTreeSet<String> = r
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("  | ok "))
        .map(str::to_string)
        .collect();
    let wit = wit_imports();
    assert!(wit.len() >= 45, "{wit:?}");
    let missed: Vec<_> = wit.difference(&called).collect();
    assert!(
        missed.is_empty(),
        "imports the tour did not exercise: {missed:?}\n{}",
        r.stderr
    );
    let d = doc(&dir.path().join("t.json"));
    assert_eq!(metric(&d, "api-tour", "calls"), Some(called.len() as f64));
}

/// A result document with one metric of pack `p`, labelled `label`.
fn tiny_result(dir: &Path, label: &str, samples: &[f64]) -> String {
    let v = serde_json::json!({
        "schema": "plumb.result.v1", "plumb_version": "0.1.0", "label": label,
        "started": "2026-12-01T10:00:00+00:00", "finished": "2026-12-01T10:01:00+00:00",
        "host": { "hostname": "h", "os": "Linux", "kernel": "6.1", "arch": "x86_64",
                  "cpu_model": "c", "cpus": 2, "memory_bytes": 1u64 << 30 },
        "target": null,
        "scenarios": [{ "name": "s", "pack": "p", "source_sha256": null, "params": {}, "repeat": 3,
                        "metrics": [{ "name": "iops", "unit": "IOPS", "better": "higher",
                                      "value": samples[1], "samples": samples }],
                        "jobs": [], "tables": [], "error": null }]
    });
    let name = format!("{label}.json");
    std::fs::write(dir.join(&name), v.to_string()).unwrap();
    name
}

#[test]
fn a_webassembly_template_lays_out_the_comparison() {
    let dir = workdir();
    let a = tiny_result(dir.path(), "a", &[100.0, 101.0, 99.0]);
    let b = tiny_result(dir.path(), "b", &[300.0, 303.0, 297.0]);
    let template = guest("compare_template");
    let r = plumb(dir.path(), &["compare", &a, &b, "--template", &template]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("2 runs compared (WebAssembly template)"),
        "{}",
        r.stdout
    );
    let row = r.stdout.lines().find(|l| l.contains("s iops")).unwrap();
    assert!(
        row.contains("100 IOPS") && row.contains("300 IOPS *"),
        "{row}"
    );
    assert!(
        row.trim_end_matches(['│', ' ']).ends_with('b'),
        "b wins: {row}"
    );
    // Shipped in a pack as compare.wasm, it travels with the pack.
    let pack = pack_folder(
        dir.path(),
        "wpack",
        "name = \"wpack\"\nscenarios = [\"s.rhai\"]\n",
        &[("s.rhai", "report::metric(\"x\", 1, \"\", \"higher\");\n")],
    );
    std::fs::copy(&template, pack.join("compare.wasm")).unwrap();
    let check = plumb(dir.path(), &["check", "wpack"]);
    assert!(
        check
            .stdout
            .contains("compare.wasm: ok (comparison template)"),
        "{}{}",
        check.stdout,
        check.stderr
    );
    let r = plumb(
        dir.path(),
        &["compare", &a, &b, "--template", "wpack", "--format", "csv"],
    );
    assert!(r.stdout.contains(",winner,b"), "{}", r.stdout);
}

#[test]
fn a_rogue_webassembly_template_falls_back_to_the_generic_table() {
    let dir = workdir();
    let rogue = guest("rogue_template");
    let b = tiny_result(dir.path(), "b", &[300.0, 303.0, 297.0]);
    for (mode, reason) in [
        ("spin", "ran longer than 5 s"),
        ("grow", "memory limit of 64 MiB"),
        ("trap", "trapped"),
        ("fail", "render failed: the rogue template gives up"),
        ("flood", "1000 tables, more than 32"),
    ] {
        let a = tiny_result(dir.path(), mode, &[100.0, 101.0, 99.0]);
        let started = std::time::Instant::now();
        let r = plumb(dir.path(), &["compare", &a, &b, "--template", &rogue]);
        assert_eq!(r.code, 0, "{mode}: {}", r.stderr);
        assert!(
            started.elapsed().as_secs() < 15,
            "{mode}: {:?}",
            started.elapsed()
        );
        assert!(
            r.stderr.contains("the comparison template failed") && r.stderr.contains(reason),
            "{mode}: {}",
            r.stderr
        );
        assert!(
            r.stdout.contains("×3.000"),
            "{mode}: generic table: {}",
            r.stdout
        );
    }
}

/// A component of the scenario world written as text: one core module
/// with `memories` (the WAT of its extra memories) and a `run` whose body
/// is `body`, and `imports` (component-level import declarations) before
/// it. Its `run` returns `ok` once the body is through.
fn wat_scenario(imports: &str, memories: &str, body: &str) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(component
  {imports}
  (core module $m
    (memory (export "memory") 1)
    {memories}
    (func (export "run") (result i32) {body} i32.const 0))
  (core instance $i (instantiate $m))
  (alias core export $i "memory" (core memory $mem))
  (alias core export $i "run" (core func $run))
  (func (export "run") (result (result (error string)))
    (canon lift (core func $run) (memory $mem))))"#
    ))
    .expect("the test's WAT")
}

/// Runs the component `bytes` as x.wasm under `--wasm-memory 64M`; the
/// run's outcome and its result document.
fn run_wat(dir: &Path, bytes: &[u8]) -> (crate::util::Run, serde_json::Value) {
    let file = dir.join("x.wasm");
    std::fs::write(&file, bytes).unwrap();
    let (r, target) = run_scripts(
        dir,
        &[
            file.to_str().unwrap(),
            "--wasm-memory",
            "64M",
            "--json",
            "x.json",
        ],
    );
    assert!(entries(&target).is_empty(), "nothing left behind");
    assert!(dir.join("x.json").exists(), "no result: {}", r.stderr);
    (r, doc(&dir.join("x.json")))
}

#[test]
fn a_guest_s_memories_are_held_to_one_limit_together() {
    let dir = workdir();
    // Eight memories grown to 48 MiB each: within a limit of 64 MiB each,
    // six times it together.
    let memories = (1..8).map(|_| "(memory 0)").collect::<String>();
    let grow = (0..8)
        .map(|m| format!("(if (i32.lt_s (memory.grow {m} (i32.const 768)) (i32.const 0)) (then unreachable))"))
        .collect::<String>();
    let (r, d) = run_wat(dir.path(), &wat_scenario("", &memories, &grow));
    assert_eq!(r.code, 1, "{}", r.stderr);
    let err = d["scenarios"][0]["error"].as_str().unwrap();
    assert!(
        err.contains("memory limit of 64MiB for all its memories together"),
        "{err}"
    );
    assert_eq!(d["scenarios"][0]["error_kind"], "memory_limit");

    // Ten memories of 16 MiB from the start: refused as the instance is made.
    let memories = (0..10).map(|_| "(memory 256)").collect::<String>();
    let (r, d) = run_wat(dir.path(), &wat_scenario("", &memories, ""));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        d["scenarios"][0]["error_kind"], "memory_limit",
        "{}",
        r.stderr
    );

    // Three of 16 MiB and one page: within the limit, the guest runs.
    let memories = (0..3).map(|_| "(memory 256)").collect::<String>();
    let (r, d) = run_wat(dir.path(), &wat_scenario("", &memories, ""));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(d["scenarios"][0]["error"].is_null());
}

#[test]
fn a_guest_with_too_many_memories_is_not_instantiated() {
    let dir = workdir();
    // 50 memories of no pages (a module may declare 100).
    let memories = (0..50).map(|_| "(memory 0)").collect::<String>();
    let (r, d) = run_wat(dir.path(), &wat_scenario("", &memories, ""));
    assert_eq!(r.code, 1, "{}", r.stderr);
    let err = d["scenarios"][0]["error"].as_str().unwrap();
    assert!(
        err.contains("could not be instantiated")
            && err.contains("memory count too high")
            && err.contains("at most 16 linear memories"),
        "{err}"
    );
    assert_eq!(d["scenarios"][0]["error_kind"], "start");

    // 100 instances of a module with one memory each.
    let instances = format!(
        "(core module $one (memory 1)) {}",
        "(core instance (instantiate $one)) ".repeat(100)
    );
    let (r, d) = run_wat(dir.path(), &wat_scenario(&instances, "", ""));
    assert_eq!(r.code, 1, "{}", r.stderr);
    let err = d["scenarios"][0]["error"].as_str().unwrap();
    assert!(err.contains("could not be instantiated"), "{err}");
    assert_eq!(d["scenarios"][0]["error_kind"], "start");
}

#[test]
fn a_guest_built_for_another_wit_version_is_told_both_versions() {
    let dir = workdir();
    let old = wat_scenario(
        r#"(import "plumb:bench/params@0.3.0" (instance (export "get" (func (param "name" string) (result (option string))))))"#,
        "",
        "",
    );
    let unversioned = wat_scenario(
        r#"(import "plumb:bench/params" (instance (export "get" (func (param "name" string) (result (option string))))))"#,
        "",
        "",
    );
    for (bytes, built_for) in [
        (old, "plumb:bench@0.3.0"),
        (unversioned, "plumb:bench@no version"),
    ] {
        std::fs::write(dir.path().join("old.wasm"), &bytes).unwrap();
        let r = plumb(dir.path(), &["check", "old.wasm"]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr.contains(&format!("built for {built_for}"))
                && r.stderr.contains("this plumb provides plumb:bench@0.4.0"),
            "{}",
            r.stderr
        );
        // As a comparison template: the generic table, and the reason.
        let a = tiny_result(dir.path(), "a", &[100.0, 101.0, 99.0]);
        let b = tiny_result(dir.path(), "b", &[300.0, 303.0, 297.0]);
        let r = plumb(dir.path(), &["compare", &a, &b, "--template", "old.wasm"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            r.stderr.contains(&format!("built for {built_for}")),
            "{}",
            r.stderr
        );
    }
}
