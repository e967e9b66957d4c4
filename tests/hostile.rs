//! The hostile corpus (`tests/hostile/cases.toml` and `cases-*.toml`): scripts, packs, traces,
//! logs, job files and result documents a stranger could hand plumb, each run
//! by the real binary in a fresh temp directory laid out as
//!
//! ```text
//! TMP/work/     a copy of tests/hostile/ (placeholders filled in); the cwd
//! TMP/target/   the --target (must be left empty: no run directory, nothing else)
//! TMP/outside/  canary.txt, secret.txt, victim.0.0: must not change
//! TMP/logs/     stdout and stderr of the case
//! ```
//!
//! Each case must: exit with one of its codes (default 1 or 2), never by a
//! signal; say what went wrong on stderr when it fails; print no panic or abort
//! text; leave TMP/outside and TMP itself as they were and TMP/target empty;
//! and finish within its deadline plus a grace of 5 s (it is killed otherwise). Every
//! case runs and one table lists all the failures.
//!
//! The child runs under resource limits (address space, file size) so a case
//! that would eat the machine's memory or disk dies instead: a death by signal
//! is reported as the failure it is.
//!
//! Placeholders, in `args` and in every corpus file: `{work}`, `{target}`,
//! `{outside}` (absolute paths).

use crate::util::{plumb_bin, with_rlimits};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/hostile");

/// Text that must never appear in any output: a panic, an abort, a stack overflow.
const CRASH_TEXT: &[&str] = &[
    "panicked",
    "RUST_BACKTRACE",
    "overflowed its stack",
    "memory allocation of",
    "fatal runtime error",
    "core dumped",
];

/// Bytes that betray process memory in a file that should hold only pattern data.
const HEAP_MARKERS: &[&[u8]] = &[
    b"GLIBC_",
    b"libc.so",
    b"__libc_",
    b"RUST_",
    b"/rustc/",
    b"panicked",
    b"plumb",
    b"LD_LIBRARY",
    b"PATH=",
];

#[derive(Deserialize)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Case {
    /// Unique name, shown in the table.
    name: String,
    /// What the case attacks (one line), shown when it fails.
    attack: String,
    /// plumb's arguments; placeholders allowed.
    args: Vec<String>,
    /// A gap known and written down (in the issue's closing note): the case
    /// is run and shown as `KNOWN` while it fails; once it passes, the test
    /// fails until this line is removed, so a fix is never left unnoticed.
    #[serde(default)]
    known_gap: Option<String>,
    /// Accepted exit codes.
    #[serde(default = "default_exit")]
    exit: Vec<i32>,
    /// Seconds the case may take; it is killed at deadline + [`GRACE`].
    #[serde(default = "default_deadline")]
    deadline: f64,
    /// `work` (default) or `target`: where plumb runs.
    #[serde(default)]
    cwd: Option<String>,
    /// On a failing exit, stderr must contain one of these (case-insensitive).
    #[serde(default)]
    stderr_any: Vec<String>,
    /// Text that must appear in no output (a secret read through a symlink).
    #[serde(default)]
    lacks: Vec<String>,
    /// Neither stdout nor stderr may hold an ESC byte (terminal injection).
    #[serde(default)]
    no_esc: bool,
    /// Whether the target must be empty afterwards (false for `plumb fio`, whose
    /// files stay where fio puts them).
    #[serde(default = "yes")]
    target_empty: bool,
    /// The case runs with `--keep`: scan the kept run directory for process
    /// memory and files larger than this many bytes, then remove it.
    #[serde(default)]
    keep_scan_max_file: Option<u64>,
    /// Symlinks made in `work` before the run: [link, points-to].
    #[serde(default)]
    symlinks: Vec<[String; 2]>,
    /// FIFOs made in `work` before the run (a reader of one blocks forever).
    #[serde(default)]
    fifos: Vec<String>,
    /// A corpus file (in `work`) fed to plumb's stdin instead of nothing.
    #[serde(default)]
    stdin: Option<String>,
    /// Commands run before the case (e.g. an import whose output it replays);
    /// they must not crash either, whatever their exit code.
    #[serde(default)]
    before: Vec<Vec<String>>,
    /// Files generated in `work` before the run: [path, generator].
    #[serde(default)]
    generate: Vec<[String; 2]>,
    /// A directory (relative to work) whose `.svg` files must be well-formed XML.
    #[serde(default)]
    svg_xml: Option<String>,
    /// A Markdown file (in `work`; `-` for stdout) the case writes: read as GitHub would
    /// render it, it must hold no link, no raw HTML, no image but its own
    /// charts (`*-charts/*.svg`) and no heading whose text begins with
    /// `PWNED` (the corpus marks a stranger's would-be heading line
    /// `# PWNED …`; a page's own heading may quote it after other text).
    #[serde(default)]
    markdown_inert: Option<String>,
    /// Files (in `work`) the case must write: [path, the most bytes it may take].
    #[serde(default)]
    writes_at_most: Vec<(String, u64)>,
    /// The case runs with `--keep`: the kept run directories may take at
    /// most this many bytes on disk (every inode's blocks), then are removed.
    #[serde(default)]
    keep_max_disk: Option<u64>,
    /// RLIMIT_AS for the child, in GiB.
    #[serde(default = "default_mem_gib")]
    mem_gib: u64,
    /// RLIMIT_FSIZE for the child, in MiB.
    #[serde(default = "default_fsize_mib")]
    fsize_mib: u64,
}

fn default_exit() -> Vec<i32> {
    vec![1, 2]
}
/// Seconds past its deadline a case may take before it counts as hung:
/// the suite runs other disk- and CPU-heavy tests beside it on two cores, so
/// a write can sit in the kernel's dirty-page throttling for a while; the
/// hangs this corpus catches ran tens of seconds past (27 s, 34 s, 60 s+).
const GRACE: f64 = 5.0;

/// Cases run at once: most of a case's time is plumb waiting at a deadline
/// (a loop, a sleep, a blocked read stopped by `--timeout`), so the corpus
/// runs four at a time on two cores; a case doing real work still has its
/// deadline plus [`GRACE`].
const CASES_AT_ONCE: usize = 4;

fn default_deadline() -> f64 {
    5.0
}
fn yes() -> bool {
    true
}
fn default_mem_gib() -> u64 {
    8
}
fn default_fsize_mib() -> u64 {
    512
}

/// A generated input too big or too regular to keep in git.
fn generate(kind: &str) -> Vec<u8> {
    let doc = |label: &str, samples: &str| {
        format!(
            r#"{{"schema":"plumb.result.v1","plumb_version":"0.1.0","label":"{label}","started":"2026-11-30T10:00:00+00:00","finished":"2026-11-30T10:01:00+00:00","host":{{"hostname":"h","os":"Linux","kernel":"6","arch":"x86_64","cpu_model":"c","cpus":1,"memory_bytes":1}},"target":null,"scenarios":[{{"name":"s","pack":"p","source_sha256":null,"params":{{}},"repeat":1,"metrics":[{{"name":"m","unit":"u","better":"higher","value":1.0,"samples":[{samples}]}}],"jobs":[],"tables":[],"error":null}}]}}"#
        )
    };
    match kind {
        "json-deep-arrays" => format!("{}{}", "[".repeat(200_000), "]".repeat(200_000)).into_bytes(),
        "json-deep-in-doc" => {
            let deep = format!("{}1{}", "{\"a\":".repeat(100_000), "}".repeat(100_000));
            doc("deep", "1.0").replace("\"target\":null", &format!("\"target\":{deep}")).into_bytes()
        }
        "json-million-samples-a" | "json-million-samples-b" => {
            let base = if kind.ends_with('a') { 100.0 } else { 110.0 };
            let samples: Vec<String> = (0..1_000_000)
                .map(|i| format!("{}", base + (i % 97) as f64 * 0.01))
                .collect();
            doc(kind, &samples.join(",")).into_bytes()
        }
        "json-64mib-string" => doc(&"A".repeat(64 << 20), "1.0").into_bytes(),
        "json-wide-tables" => {
            // 30 tables of 10,000 rows by 10 cells: 3 M cells to print.
            let row = format!("[{}]", ["\"12345\""; 10].join(","));
            let rows = vec![row; 10_000].join(",");
            let header = format!("[{}]", ["\"h\""; 10].join(","));
            let table = format!(r#"{{"title":"t","header":{header},"rows":[{rows}]}}"#);
            let tables = vec![table; 30].join(",");
            doc("wide", "1.0").replace("\"tables\":[]", &format!("\"tables\":[{tables}]")).into_bytes()
        }
        "json-page-wide-sections" | "json-page-10000-sections" => {
            // A table per scenario, 64 columns wide by empty rows (3 bytes
            // of JSON each, 64 cells on a page): 40 scenarios of 10,000
            // rows, or 10,000 scenarios of 100 rows.
            let (scenarios, rows) = if kind.ends_with("wide-sections") { (40, 10_000) } else { (10_000, 100) };
            let header = format!("[{}]", vec!["\"h\""; 64].join(","));
            let rows = vec!["[]"; rows].join(",");
            let one = |i: usize| {
                format!(
                    r#"{{"name":"s{i}","pack":"p","source_sha256":null,"params":{{}},"repeat":1,"metrics":[],"jobs":[],"tables":[{{"title":"t","header":{header},"rows":[{rows}]}}],"error":null}}"#
                )
            };
            let all: Vec<String> = (0..scenarios).map(one).collect();
            let d = doc("sections", "1.0");
            let at = d.find("\"scenarios\":[").unwrap() + "\"scenarios\":[".len();
            let end = d.rfind(']').unwrap();
            format!("{}{}{}", &d[..at], all.join(","), &d[end..]).into_bytes()
        }
        "strace-long-line" => {
            let mut s = String::from("1234 1700000000.000001 openat(AT_FDCWD, \"");
            s.push_str(&"a".repeat(8 << 20));
            s.push_str("\", O_RDONLY) = 3</x> <0.000010>\n");
            s.into_bytes()
        }
        "rhai-nested-array-source" => {
            // A literal nested 50,000 deep in the source, not built by a loop.
            format!("let a = {}1{};\n", "[".repeat(50_000), "]".repeat(50_000)).into_bytes()
        }
        "trace-2000-threads" => {
            let mut s = String::from("plumb-trace 1\nduration_us 1000\nfile 0 4096 a\n");
            for t in 0..2000 {
                s.push_str(&format!("thread {t} {}\n", 1000 + t));
            }
            let mut ops = 0;
            for t in 0..2000 {
                s.push_str(&format!("op {t} {t} 1 stat 0\n"));
                ops += 1;
            }
            s.push_str(&format!("end {ops}\n"));
            s.into_bytes()
        }
        "trace-open-5000" => {
            let mut s = String::from("plumb-trace 1\nduration_us 100000\nfile 0 4096 a\nthread 0 1\n");
            for h in 0..5000 {
                s.push_str(&format!("op 0 {h} 1 open {h} 0 r\n"));
            }
            s.push_str("end 5000\n");
            s.into_bytes()
        }
        "trace-open-200000" => {
            let mut s = String::from("plumb-trace 1\nduration_us 300000\nfile 0 4096 a\nthread 0 1\n");
            for h in 0..200_000 {
                s.push_str(&format!("op 0 {h} 1 open {h} 0 r\n"));
            }
            s.push_str("end 200000\n");
            s.into_bytes()
        }
        "trace-failed-opens" => {
            // 300,000 opens of a missing file, each failing as recorded:
            // none makes a handle, so nothing is kept for any of them.
            let mut s = String::from("plumb-trace 2\nduration_us 400000\nfile 0 f - missing\nthread 0 1\n");
            for h in 0..300_000 {
                s.push_str(&format!("op 0 {h} 1 open {h} 0 r =ENOENT\n"));
            }
            s.push_str("end 300000\n");
            s.into_bytes()
        }
        "trace-overlap-all" => {
            // 4 threads, 100,000 fstat calls each, every one lasting to the
            // end of the trace: none ends before another begins.
            let ops = 400_000u64;
            let mut s = format!("plumb-trace 2\nduration_us {}\nfile 0 f 4096 a\n", 2 * ops);
            for t in 0..4 {
                s.push_str(&format!("thread {t} {}\n", 100 + t));
            }
            for t in 0..4u64 {
                s.push_str(&format!("op {t} {t} {} open {t} 0 r\n", 2 * ops - t));
            }
            for i in 4..ops {
                let t = i % 4;
                s.push_str(&format!("op {t} {i} {} fstat {t}\n", 2 * ops - i));
            }
            s.push_str(&format!("end {ops}\n"));
            s.into_bytes()
        }
        "trace-mkdir-50000" => {
            let mut s = String::from("plumb-trace 1\nduration_us 100000\n");
            for i in 0..50_000 {
                s.push_str(&format!("file {i} - d{i}\n"));
            }
            s.push_str("thread 0 1\n");
            for i in 0..50_000 {
                s.push_str(&format!("op 0 {i} 1 mkdir {i}\n"));
            }
            s.push_str("end 50000\n");
            s.into_bytes()
        }
        "fleet-huge-inventory" => {
            let mut s = String::from("[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\n");
            while s.len() < (2 << 20) {
                s.push_str("# padding padding padding padding padding padding padding padding\n");
            }
            s.into_bytes()
        }
        "fleet-many-hosts" => (0..300)
            .map(|i| format!("[[host]]\nname = \"h{i}\"\naddress = \"10.0.{}.{}\"\n", i / 250, i % 250 + 1))
            .collect::<String>()
            .into_bytes(),
        "toml-deep-arrays" => format!(
            "name = \"deep\"\nversion = \"1\"\ndescription = \"d\"\nscenarios = [\"a.rhai\"]\nx = {}1{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        )
        .into_bytes(),
        "wasm-sixteen-memories" => sixteen_memories(),
        k if k.starts_with("results-cost-") => results_cost(k),
        other => panic!("unknown generator {other}"),
    }
}

/// A scenario component whose one core module has sixteen memories, each
/// grown to 32 MiB and written on every page, then returns `ok`: 512 MiB
/// touched, where a limit counted per memory would allow each.
fn sixteen_memories() -> Vec<u8> {
    let memories = "(memory 0)".repeat(15);
    let grow_and_touch: String = (0..16)
        .map(|m| {
            format!(
                "(if (i32.lt_s (memory.grow {m} (i32.const 512)) (i32.const 0)) (then unreachable))
                 (local.set 0 (i32.const 0))
                 (loop $l (i32.store8 {m} (local.get 0) (i32.const 1))
                   (local.set 0 (i32.add (local.get 0) (i32.const 65536)))
                   (br_if $l (i32.lt_u (local.get 0) (i32.const 33554432))))"
            )
        })
        .collect();
    wat::parse_str(format!(
        r#"(component
  (core module $m
    (memory (export "memory") 0)
    {memories}
    (func (export "run") (result i32) (local i32) {grow_and_touch} i32.const 0))
  (core instance $i (instantiate $m))
  (alias core export $i "memory" (core memory $mem))
  (alias core export $i "run" (core func $run))
  (func (export "run") (result (result (error string)))
    (canon lift (core func $run) (memory $mem))))"#
    ))
    .expect("the corpus's WAT")
}

/// Size and content hash of every file under `dir`, by relative path.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                out.insert(rel, "dir".into());
                walk(root, &p, out);
            } else if meta.file_type().is_symlink() {
                out.insert(
                    rel,
                    format!("link {}", std::fs::read_link(&p).unwrap().display()),
                );
            } else {
                let data = std::fs::read(&p).unwrap_or_default();
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::hash::Hash::hash(&data, &mut h);
                out.insert(
                    rel,
                    format!(
                        "{} bytes, hash {:x}, mode {:o}",
                        data.len(),
                        std::hash::Hasher::finish(&h),
                        std::os::unix::fs::PermissionsExt::mode(&meta.permissions())
                    ),
                );
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

fn fill(text: &str, work: &Path, target: &Path, outside: &Path) -> String {
    text.replace("{work}", &work.display().to_string())
        .replace("{target}", &target.display().to_string())
        .replace("{outside}", &outside.display().to_string())
}

/// Copies the corpus into `work`, filling placeholders in text files.
fn copy_corpus(from: &Path, to: &Path, work: &Path, target: &Path, outside: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let dst = to.join(e.file_name());
        if p.is_dir() {
            copy_corpus(&p, &dst, work, target, outside);
        } else {
            let data = std::fs::read(&p).unwrap();
            match String::from_utf8(data) {
                Ok(text) => std::fs::write(&dst, fill(&text, work, target, outside)).unwrap(),
                Err(e) => std::fs::write(&dst, e.into_bytes()).unwrap(),
            }
        }
    }
}

/// Every file under `dir` larger than `max`, or holding process memory.
fn scan_for_heap(dir: &Path, max: u64) -> Vec<String> {
    let mut problems = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let len = e.metadata().map(|m| m.len()).unwrap_or(0);
            if len > max {
                problems.push(format!("{} is {len} bytes (> {max} asked)", p.display()));
            }
            let mut f = std::fs::File::open(&p).unwrap();
            let mut buf = vec![0u8; 1 << 20];
            let mut zeros = 0usize;
            let mut carry: Vec<u8> = Vec::new();
            let mut at = 0u64;
            loop {
                let n = f.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    break;
                }
                let mut window = std::mem::take(&mut carry);
                window.extend_from_slice(&buf[..n]);
                for m in HEAP_MARKERS {
                    if let Some(i) = window.windows(m.len()).position(|w| w == *m) {
                        problems.push(format!(
                            "{} holds {:?} near byte {} (process memory written to disk)",
                            p.display(),
                            String::from_utf8_lossy(m),
                            at + i as u64
                        ));
                        return problems;
                    }
                }
                for &b in &buf[..n] {
                    zeros = if b == 0 { zeros + 1 } else { 0 };
                    if zeros == 4096 {
                        problems.push(format!(
                            "{} has 4 KiB of zeros (not pattern data; heap?)",
                            p.display()
                        ));
                        return problems;
                    }
                }
                carry = window[window.len().saturating_sub(16)..].to_vec();
                at += n as u64;
            }
        }
    }
    problems
}

/// What a limited run of plumb did: `status` is None when it was killed for
/// running past its time.
pub struct Limited {
    pub status: Option<std::process::ExitStatus>,
    pub secs: f64,
    pub stdout: String,
    pub stderr: String,
}

/// The bounds of one run: killed after `kill_after` seconds, at most
/// `mem_gib` GiB of address space and `fsize_mib` MiB per file.
#[derive(Clone, Copy)]
pub struct Limits {
    pub kill_after: f64,
    pub mem_gib: u64,
    pub fsize_mib: u64,
}

/// Runs plumb with `args` in `cwd` under an address-space limit of `mem_gib`
/// GiB and a file-size limit of `fsize_mib` MiB, in its own process group,
/// killing the group after `kill_after` seconds. Output goes through files in
/// `logs` (no pipe to fill).
pub fn run_limited(
    args: &[String],
    cwd: &Path,
    cache: &Path,
    logs: &Path,
    limits: Limits,
    stdin: Option<&Path>,
) -> Limited {
    let Limits {
        kill_after,
        mem_gib,
        fsize_mib,
    } = limits;
    let stdout_path = logs.join("stdout");
    let stderr_path = logs.join("stderr");
    let (mem, fsize) = (mem_gib << 30, fsize_mib << 20);
    let mut cmd = Command::new(plumb_bin());
    cmd.args(args)
        .current_dir(cwd)
        .env("PLUMB_CACHE_DIR", cache)
        .env_remove("RUST_BACKTRACE")
        .stdin(match stdin {
            Some(f) => Stdio::from(std::fs::File::open(f).expect("the case's stdin file")),
            None => Stdio::null(),
        })
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .process_group(0);
    with_rlimits(
        &mut cmd,
        vec![
            (libc::RLIMIT_AS, mem, mem),
            (libc::RLIMIT_FSIZE, fsize, fsize),
        ],
    );
    let started = Instant::now();
    let mut child = cmd.spawn().expect("start plumb");
    let limit = Duration::from_secs_f64(kill_after);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > limit {
            // SAFETY: kills the process group this run started.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let secs = started.elapsed().as_secs_f64();
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    Limited {
        status,
        secs,
        stdout: read(&stdout_path),
        stderr: read(&stderr_path),
    }
}

struct Outcome {
    name: String,
    attack: String,
    code: String,
    secs: f64,
    problems: Vec<String>,
}

/// Runs one case; returns what went wrong (nothing when it passed).
fn run_case(c: &Case) -> Outcome {
    let tmp = tempfile::Builder::new()
        .prefix("plumb-hostile-")
        .tempdir_in(
            std::env::var_os("PLUMB_TEST_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(std::env::temp_dir),
        )
        .unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (work, target, outside, logs, cache) = (
        root.join("work"),
        root.join("target"),
        root.join("outside"),
        root.join("logs"),
        root.join("cache"),
    );
    for d in [&target, &outside, &logs, &cache] {
        std::fs::create_dir(d).unwrap();
    }
    copy_corpus(Path::new(CORPUS), &work, &work, &target, &outside);
    std::fs::write(outside.join("canary.txt"), "canary: must never change\n").unwrap();
    std::fs::write(
        outside.join("secret.txt"),
        "TOPSECRET-0xC0FFEE let x = ;\nTOPSECRET line two\n",
    )
    .unwrap();
    std::fs::write(outside.join("victim.0.0"), vec![7u8; 8192]).unwrap();
    std::fs::write(
        outside.join("secret.trace"),
        "plumb-trace 1\nduration_us 10\nfile 0 4096 TOPSECRET-file\nthread 0 1\nop 0 0 1 stat 0\nend 1\n",
    )
    .unwrap();
    for [link, to] in &c.symlinks {
        let link = work.join(link);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(fill(to, &work, &target, &outside), link).unwrap();
    }
    for [path, kind] in &c.generate {
        std::fs::write(work.join(path), generate(kind)).unwrap();
    }
    for f in &c.fifos {
        let p = std::ffi::CString::new(work.join(f).into_os_string().into_encoded_bytes()).unwrap();
        let _ = std::fs::remove_file(work.join(f));
        // SAFETY: mkfifo with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(p.as_ptr(), 0o644) }, 0, "mkfifo {f}");
    }
    let mut early = Vec::new();
    for b in &c.before {
        let args: Vec<String> = b
            .iter()
            .map(|a| fill(a, &work, &target, &outside))
            .collect();
        let out = Command::new(plumb_bin())
            .args(&args)
            .current_dir(&work)
            .env("PLUMB_CACHE_DIR", &cache)
            .stdin(Stdio::null())
            .output()
            .expect("run a before command");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        if out.status.signal().is_some() || CRASH_TEXT.iter().any(|t| text.contains(t)) {
            early.push(format!(
                "before-command {args:?} crashed ({:?}): {}",
                out.status,
                last_line(&text)
            ));
        }
    }
    let before_outside = snapshot(&outside);
    let before_root: Vec<String> = crate::util::entries(&root);

    let args: Vec<String> = c
        .args
        .iter()
        .map(|a| fill(a, &work, &target, &outside))
        .collect();
    let cwd = match c.cwd.as_deref() {
        Some("target") => target.clone(),
        _ => work.clone(),
    };
    let ran = run_limited(
        &args,
        &cwd,
        &cache,
        &logs,
        Limits {
            kill_after: c.deadline + GRACE,
            mem_gib: c.mem_gib,
            fsize_mib: c.fsize_mib,
        },
        c.stdin.as_ref().map(|f| work.join(f)).as_deref(),
    );
    let mut problems = early;
    let (status, secs, stdout, stderr) = (ran.status, ran.secs, ran.stdout, ran.stderr);
    let code = match status {
        None => {
            problems.push(format!(
                "hung: killed after {:.1} s (deadline {} s + {GRACE} s)",
                secs, c.deadline
            ));
            "killed".to_string()
        }
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => {
                if !c.exit.contains(&code) {
                    problems.push(format!("exit {code}, expected one of {:?}", c.exit));
                }
                if code != 0 {
                    let lower = stderr.to_lowercase();
                    if stderr.trim().is_empty() {
                        problems.push("failed with nothing on stderr".into());
                    } else if !c.stderr_any.is_empty()
                        && !c
                            .stderr_any
                            .iter()
                            .any(|w| lower.contains(&w.to_lowercase()))
                    {
                        problems.push(format!(
                            "stderr names none of {:?}: {}",
                            c.stderr_any,
                            last_line(&stderr)
                        ));
                    }
                }
                code.to_string()
            }
            (None, Some(sig)) => {
                problems.push(format!("killed by signal {sig} ({})", signal_name(sig)));
                format!("sig{sig}")
            }
            _ => "?".into(),
        },
    };
    for t in CRASH_TEXT {
        if stdout.contains(t) || stderr.contains(t) {
            problems.push(format!("output contains {t:?}: {}", crash_line(&stderr, t)));
        }
    }
    for t in &c.lacks {
        if stdout.contains(t.as_str()) || stderr.contains(t.as_str()) {
            problems.push(format!("output shows {t:?} (read from outside)"));
        }
    }
    if c.no_esc {
        for (what, text) in [("stdout", &stdout), ("stderr", &stderr)] {
            if text.contains('\x1b') || text.contains('\u{9b}') {
                problems.push(format!("{what} carries a raw ESC/CSI (terminal injection)"));
            }
        }
    }
    if let Some(dir) = &c.svg_xml {
        for e in std::fs::read_dir(work.join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            if let Err(err) = roxmltree::Document::parse(&text) {
                problems.push(format!(
                    "{} is not well-formed XML (markup injection): {err}",
                    e.file_name().to_string_lossy()
                ));
            }
        }
    }
    if let Some(md) = &c.markdown_inert {
        if md == "-" {
            problems.extend(markdown_problems(&stdout));
        } else {
            match std::fs::read_to_string(work.join(md)) {
                Ok(text) => problems.extend(markdown_problems(&text)),
                Err(e) => problems.push(format!("{md}: not written ({e})")),
            }
        }
    }
    for (file, max) in &c.writes_at_most {
        match std::fs::symlink_metadata(work.join(file)) {
            Ok(m) if m.is_file() && m.len() <= *max => {}
            Ok(m) if m.is_file() => {
                problems.push(format!("{file} is {} bytes, more than {max}", m.len()))
            }
            Ok(_) => problems.push(format!("{file} is not a regular file")),
            Err(e) => problems.push(format!("{file}: not written ({e})")),
        }
    }
    // What the case left in the target.
    let left: Vec<String> = crate::util::entries(&target);
    if let Some(max) = c.keep_max_disk {
        let used: u64 = left
            .iter()
            .filter(|n| n.starts_with("plumb-run-"))
            .map(|r| crate::util::disk_usage(&target.join(r)))
            .sum();
        if used > max {
            problems.push(format!(
                "the kept run directories take {used} bytes on disk, more than {max}"
            ));
        }
        for r in left.iter().filter(|n| n.starts_with("plumb-run-")) {
            let _ = std::fs::remove_dir_all(target.join(r));
        }
    } else if let Some(max) = c.keep_scan_max_file {
        let runs: Vec<_> = left
            .iter()
            .filter(|n| n.starts_with("plumb-run-"))
            .collect();
        if runs.is_empty() {
            problems.push("--keep kept no run directory to scan".into());
        }
        for r in runs {
            problems.extend(scan_for_heap(&target.join(r), max));
        }
    } else {
        let runs: Vec<_> = left
            .iter()
            .filter(|n| n.starts_with("plumb-run-"))
            .collect();
        if !runs.is_empty() {
            problems.push(format!("run directory left behind: {runs:?}"));
        } else if c.target_empty && !left.is_empty() {
            problems.push(format!(
                "files left in the target (outside the run dir): {left:?}"
            ));
        }
    }
    let work_runs: Vec<String> = crate::util::entries(&work)
        .into_iter()
        .filter(|n| n.starts_with("plumb-run-"))
        .collect();
    if !work_runs.is_empty() && cwd == work {
        problems.push(format!("run directory left in the cwd: {work_runs:?}"));
    }
    let after_outside = snapshot(&outside);
    if after_outside != before_outside {
        let mut diff = Vec::new();
        for (k, v) in &before_outside {
            match after_outside.get(k) {
                None => diff.push(format!("deleted {k}")),
                Some(w) if w != v => diff.push(format!("changed {k}")),
                _ => {}
            }
        }
        for k in after_outside.keys() {
            if !before_outside.contains_key(k) {
                diff.push(format!("created {k}"));
            }
        }
        problems.push(format!("outside dir touched: {}", diff.join(", ")));
    }
    let after_root = crate::util::entries(&root);
    if after_root != before_root {
        problems.push(format!(
            "created beside the target: {:?}",
            after_root
                .iter()
                .filter(|n| !before_root.contains(n))
                .collect::<Vec<_>>()
        ));
    }
    if std::env::var_os("HOSTILE_VERBOSE").is_some() {
        eprintln!(
            "--- {} ({code}, {secs:.1}s)\nstdout: {}\nstderr: {}",
            c.name,
            stdout.chars().take(2000).collect::<String>(),
            stderr.chars().take(2000).collect::<String>()
        );
    }
    Outcome {
        name: c.name.clone(),
        attack: c.attack.clone(),
        code,
        secs,
        problems,
    }
}

/// What makes `text` active Markdown (see `Case::markdown_inert`), read
/// with GitHub's extensions (tables, strikethrough, footnotes, task lists).
fn markdown_problems(text: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut problems = Vec::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(text, Options::all()) {
        match event {
            Event::Start(Tag::Link { dest_url, .. }) => {
                problems.push(format!("a link to {dest_url:?}"))
            }
            Event::Start(Tag::Image { dest_url, .. })
                if !(dest_url.contains("-charts/")
                    && dest_url.ends_with(".svg")
                    && !dest_url.contains(':')) =>
            {
                problems.push(format!("an image from {dest_url:?}"))
            }
            Event::Html(h) | Event::InlineHtml(h) => problems.push(format!("raw HTML {h:?}")),
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some(h) = heading
                    .take()
                    .filter(|h| h.trim_start().starts_with("PWNED"))
                {
                    problems.push(format!("a heading made of a stranger's text: {h:?}"));
                }
            }
            _ => {}
        }
    }
    problems.truncate(5);
    problems
}

fn last_line(s: &str) -> String {
    let l = s.trim().lines().last().unwrap_or("").to_string();
    l.chars().take(160).collect()
}

fn crash_line(s: &str, t: &str) -> String {
    s.lines()
        .find(|l| l.contains(t))
        .unwrap_or("(in stdout)")
        .chars()
        .take(160)
        .collect()
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGABRT => "SIGABRT: abort, e.g. stack overflow or failed allocation",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGILL => "SIGILL",
        libc::SIGBUS => "SIGBUS",
        libc::SIGKILL => "SIGKILL (OOM?)",
        libc::SIGXFSZ => "SIGXFSZ: wrote a file past the test's size limit",
        _ => "signal",
    }
}

/// Every case of `cases.toml` and of the `cases-*.toml` files beside it (one
/// file per surface attacked), in file-name order.
fn load_cases() -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(CORPUS)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("cases") && name.ends_with(".toml")
        })
        .collect();
    files.sort();
    let mut cases = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let corpus: Corpus =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for c in corpus.case {
            assert!(seen.insert(c.name.clone()), "duplicate case {}", c.name);
            cases.push(c);
        }
    }
    cases
}

/// Runs every corpus case ([`CASES_AT_ONCE`] at a time; `HOSTILE_ONLY=a,b`
/// picks some) and
/// fails with a table of every failing case.
#[test]
fn hostile_corpus() {
    let only: Option<Vec<String>> = std::env::var("HOSTILE_ONLY")
        .ok()
        .map(|s| s.split(',').map(str::to_string).collect());
    let cases: Vec<Case> = load_cases()
        .into_iter()
        .filter(|c| {
            only.as_ref()
                .is_none_or(|o| o.iter().any(|n| c.name.contains(n.as_str())))
        })
        .collect();
    assert!(!cases.is_empty(), "no case selected");
    let queue = std::sync::Mutex::new(cases.clone().into_iter().enumerate());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..CASES_AT_ONCE {
            s.spawn(|| loop {
                let next = queue.lock().unwrap().next();
                let Some((i, c)) = next else { break };
                let o = run_case(&c);
                results.lock().unwrap().push((i, o));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    let known = |i: usize| cases[i].known_gap.is_some();
    for (i, o) in results.iter_mut() {
        if known(*i) && o.problems.is_empty() {
            o.problems.push(format!(
                "passes now: remove its known_gap ({})",
                cases[*i].known_gap.as_deref().unwrap_or_default()
            ));
        }
    }
    let failed: Vec<&Outcome> = results
        .iter()
        .filter(|(i, o)| {
            !o.problems.is_empty() && (!known(*i) || o.problems[0].starts_with("passes now"))
        })
        .map(|(_, o)| o)
        .collect();
    let mut table = String::new();
    for (i, o) in &results {
        let status = match (o.problems.is_empty(), known(*i)) {
            (true, _) => "pass",
            (false, true) if !o.problems[0].starts_with("passes now") => "KNOWN",
            _ => "FAIL",
        };
        table.push_str(&format!(
            "{status} {:<34} exit {:<7} {:>5.1}s  {}\n",
            o.name,
            o.code,
            o.secs,
            o.problems.join("; ")
        ));
    }
    eprintln!("hostile corpus: {} cases\n{table}", results.len());
    assert!(
        failed.is_empty(),
        "{} of {} hostile cases failed:\n{}",
        failed.len(),
        results.len(),
        failed
            .iter()
            .map(|o| format!("  {} ({}): {}", o.name, o.attack, o.problems.join("; ")))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Result documents whose cost to read grows with their contents
/// (`cases-results-cost.toml`): small enough to be read in a second or
/// two, large enough that a reader quadratic or worse in them takes
/// minutes or gigabytes.
fn results_cost(kind: &str) -> Vec<u8> {
    use serde_json::json;
    let doc = |label: &str, scenarios: Vec<serde_json::Value>| {
        json!({"schema": "plumb.result.v1", "plumb_version": "0.1.0", "label": label,
               "started": "2026-11-30T10:00:00+00:00", "finished": "2026-11-30T10:01:00+00:00",
               "host": {"hostname": "h", "os": "Linux", "kernel": "6", "arch": "x86_64",
                        "cpu_model": "c", "cpus": 1, "memory_bytes": 1},
               "target": null, "scenarios": scenarios})
    };
    let scenario = |name: &str, params: serde_json::Value, metrics: usize| {
        let metrics: Vec<serde_json::Value> = (0..metrics)
            .map(|i| json!({"name": format!("m{i}"), "unit": "iops", "better": "higher", "value": 1.0, "samples": [1.0]}))
            .collect();
        json!({"name": name, "pack": "p", "source_sha256": null, "params": params, "repeat": 1,
               "metrics": metrics, "jobs": [], "tables": [], "error": null})
    };
    let value = match kind {
        // 200 parameters of 4,000 bytes that differ, 4,000 metrics: a
        // reason per metric naming them all is 6.4 GB.
        "results-cost-params-a" | "results-cost-params-b" => {
            let v = if kind.ends_with('a') { "A" } else { "B" }.repeat(4000);
            let params: serde_json::Map<String, serde_json::Value> =
                (0..200).map(|i| (format!("k{i:03}"), json!(v))).collect();
            doc(kind, vec![scenario("s", params.into(), 4000)])
        }
        // 4,000 jobs running at once, each of its own name: what each ran
        // beside, found by pairs, is cubic.
        "results-cost-jobs-overlap" => {
            let jobs: Vec<serde_json::Value> = (0..4000)
                .map(|i| {
                    let mut j = serde_json::to_value(plumb::model::result::JobResult {
                        name: format!("j{i}"),
                        rw: "randread".into(),
                        started_s: Some(f64::from(i % 7) * 0.1),
                        ended_s: Some(10.0),
                        ..Default::default()
                    })
                    .unwrap();
                    j["read"]["total_ios"] = 300.into();
                    j["timeline"] = json!([{"t_ms": 0, "duration_ms": 1000, "read_ios": 100, "read_bytes": 409600, "write_ios": 0, "write_bytes": 0}]);
                    j
                })
                .collect();
            let mut s = scenario("s", json!({}), 1);
            s["jobs"] = jobs.into();
            doc("jobs", vec![s])
        }
        // 10,000 scenarios (the limit) whose names share 500 bytes, each
        // with a series and a pack of its own: looked up by comparing
        // names, quadratic.
        "results-cost-scenarios" => {
            let prefix = "x".repeat(500);
            let scenarios = (0..10_000)
                .map(|i| {
                    let mut s = scenario(&format!("{prefix}{i}"), json!({}), 1);
                    s["pack"] = json!(format!("{prefix}p{i}"));
                    s["series"] = json!([{"name": "x", "unit": "u", "points": [[0.0, 1.0]]}]);
                    s
                })
                .collect();
            doc("scenarios", scenarios)
        }
        // 1,000 metrics of 2,000 samples a side: 4,000 resamples of each
        // cell's 4,000 samples are 16 million draws, 0.15 s a cell (`c`:
        // run with another parameter, which --allow-mismatch judges).
        "results-cost-samples-a" | "results-cost-samples-b" | "results-cost-samples-c" => {
            let base = if kind.ends_with('a') { 100 } else { 103 };
            let samples: Vec<serde_json::Value> =
                (0..2000).map(|i| json!(base + (i * 7) % 13)).collect();
            let params = if kind.ends_with('c') {
                json!({"size": "1G"})
            } else {
                json!({})
            };
            let mut s = scenario("s", params, 0);
            s["repeat"] = 2000.into();
            s["metrics"] = (0..1000)
                .map(|i| json!({"name": format!("m{i}"), "unit": "iops", "better": "higher", "value": 1.0, "samples": samples}))
                .collect();
            doc(kind, vec![s])
        }
        // One of 60 runs with 2,000 metrics none of the others has: a cell
        // per metric and run is 7.2 million cells for 11 MB of files.
        k if k.starts_with("results-cost-disjoint-") => {
            let n: usize = k["results-cost-disjoint-".len()..].parse().unwrap();
            let mut s = scenario("s", json!({}), 0);
            s["metrics"] = (n * 2000..(n + 1) * 2000)
                .map(|i| json!({"name": format!("m{i}"), "unit": "iops", "better": "higher", "value": 1.0, "samples": [1.0]}))
                .collect();
            doc(&format!("r{n}"), vec![s])
        }
        other => panic!("unknown generator {other}"),
    };
    serde_json::to_vec(&value).unwrap()
}
