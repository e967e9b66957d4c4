//! Helpers shared by the integration tests: run the real `plumb` binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

/// The path of the built binary.
pub fn plumb_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_plumb"))
}

/// The outcome of one run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Runs a command and requires it to succeed; panics with its stderr.
pub fn succeed(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run the command");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The outcome of a finished process.
pub fn to_run(out: Output) -> Run {
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Where the tests keep compiled WebAssembly components (not the user's
/// cache): a directory private to this test process (mode 0700, a random
/// name, made once), removed when the process exits. A fixed name in the
/// shared temp directory could be made beforehand by anyone, or shared by
/// two test runs at once.
pub fn test_cache() -> PathBuf {
    static CACHE: OnceLock<PathBuf> = OnceLock::new();
    CACHE
        .get_or_init(|| {
            let dir = tempfile::Builder::new()
                .prefix("plumb-test-cache-")
                .permissions(std::fs::Permissions::from_mode(0o700))
                .tempdir()
                .expect("make the test cache directory")
                .keep();
            remove_at_exit(dir.clone());
            dir
        })
        .clone()
}

/// Removes `dir` when the test process exits (libtest ends with
/// `process::exit`, which runs `atexit` handlers but drops no statics).
fn remove_at_exit(dir: PathBuf) {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    extern "C" fn remove() {
        if let Some(dir) = DIR.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    if DIR.set(dir).is_ok() {
        // SAFETY: registers a plain function taking and returning nothing.
        unsafe { libc::atexit(remove) };
    }
}

/// Fails the test, naming the Debian package to install, unless `program`
/// runs (with `--version`-like `arg`) and succeeds. `cargo xtask test`
/// installs every package the tests need.
pub fn require_tool(program: &str, arg: &str, package: &str) {
    let ran = Command::new(program).arg(arg).output();
    match ran {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "`{program} {arg}` failed ({}): this test needs a working {program} (apt-get install {package}, or run `cargo xtask test`)",
            out.status
        ),
        Err(e) => panic!(
            "this test needs {program}, which could not be run ({e}): apt-get install {package}, or run `cargo xtask test`"
        ),
    }
}

/// The environment variable that lets a developer without root skip the
/// tests that need it (network namespaces, device nodes).
pub const SKIP_PRIVILEGED: &str = "PLUMB_TEST_SKIP_PRIVILEGED";

/// Whether a test that needs root may run: true as root. Otherwise the test
/// fails saying so, unless `PLUMB_TEST_SKIP_PRIVILEGED=1` opts out: then it
/// prints `SKIPPED` on the test output (past libtest's capture, so it shows
/// in a passing run) and returns false.
pub fn privileged(test: &str, needs: &str) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var_os(SKIP_PRIVILEGED).is_some_and(|v| v == "1") {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: needs root for {needs} ({SKIP_PRIVILEGED}=1 is set)"
        );
        return false;
    }
    panic!(
        "{test} needs root for {needs}; run the tests as root (CI does), or set {SKIP_PRIVILEGED}=1 to skip it"
    );
}

/// Runs `plumb ARGS` in `dir`.
pub fn plumb(dir: &Path, args: &[&str]) -> Run {
    plumb_cached(dir, &test_cache(), args)
}

/// Runs `plumb ARGS` in `dir` with its compiled-component cache in `cache`.
pub fn plumb_cached(dir: &Path, cache: &Path, args: &[&str]) -> Run {
    plumb_env(dir, cache, &[], args)
}

/// [`plumb_cached`] with more environment variables set.
pub fn plumb_env(dir: &Path, cache: &Path, env: &[(&str, &Path)], args: &[&str]) -> Run {
    to_run(
        Command::new(plumb_bin())
            .args(args)
            .env("PLUMB_CACHE_DIR", cache)
            .envs(env.iter().copied())
            .current_dir(dir)
            .output()
            .expect("run plumb"),
    )
}

/// Starts `plumb ARGS` in `dir`, waits until a line of its stderr contains
/// `marker` (so the signal lands while the scenario is where the test means),
/// sends it `signal` (`libc::SIGINT`, `libc::SIGTERM`), and returns all it
/// printed and its exit status. Fails if the marker does not come within a
/// minute or plumb exits first.
pub fn plumb_signalled(dir: &Path, args: &[&str], marker: &str, signal: i32) -> Output {
    plumb_signalled_timed(dir, args, marker, signal).0
}

/// [`plumb_signalled`], with the time from the signal to plumb's exit.
pub fn plumb_signalled_timed(
    dir: &Path,
    args: &[&str],
    marker: &str,
    signal: i32,
) -> (Output, Duration) {
    let mut child = Command::new(plumb_bin())
        .args(args)
        .env("PLUMB_CACHE_DIR", test_cache())
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start plumb");
    let stdout = child.stdout.take().expect("piped stdout");
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = BufReader::new(stdout).read_to_end(&mut buf);
        buf
    });
    let (lines, seen) = mpsc::channel();
    let stderr = child.stderr.take().expect("piped stderr");
    let err_reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        for line in BufReader::new(stderr).split(b'\n') {
            let Ok(line) = line else { break };
            let _ = lines.send(String::from_utf8_lossy(&line).into_owned());
            all.extend_from_slice(&line);
            all.push(b'\n');
        }
        all
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match seen.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) if line.contains(marker) => break,
            Ok(_) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                let err = err_reader.join().unwrap_or_default();
                panic!(
                    "plumb never printed {marker:?} on stderr ({e:?}):\n{}",
                    String::from_utf8_lossy(&err)
                );
            }
        }
    }
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits pid_t");
    // SAFETY: kill(2) on our own child, which has not been waited for.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill {signal}");
    let signalled = Instant::now();
    let status = child.wait().expect("wait for plumb");
    let took = signalled.elapsed();
    let out = Output {
        status,
        stdout: out_reader.join().expect("stdout reader"),
        stderr: err_reader.join().expect("stderr reader"),
    };
    (out, took)
}

/// Runs `plumb fio ARGS --output-format=json` in `dir` and expects success.
pub fn fio_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["fio"];
    all.extend_from_slice(args);
    all.push("--output-format=json");
    let r = plumb(dir, &all);
    assert_eq!(
        r.code, 0,
        "plumb fio {args:?} failed:\n{}\n{}",
        r.stdout, r.stderr
    );
    r.json()
}

/// A fresh temporary directory on the real disk (not tmpfs, so O_DIRECT works).
pub fn workdir() -> tempfile::TempDir {
    let base = std::env::var_os("PLUMB_TEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    tempfile::Builder::new()
        .prefix("plumb-test-")
        .tempdir_in(base)
        .expect("temp dir")
}

/// Entries of a directory.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Lines of a fio iolog v2 as (file, action, offset, len), skipping file actions.
pub fn iolog(path: &Path) -> Vec<(String, String, u64, u64)> {
    let text = std::fs::read_to_string(path).expect("iolog");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("fio version 2 iolog"));
    lines
        .filter_map(|l| {
            let parts: Vec<&str> = l.rsplitn(4, ' ').collect();
            if parts.len() != 4 {
                return None;
            }
            Some((
                parts[3].to_string(),
                parts[2].to_string(),
                parts[1].parse().ok()?,
                parts[0].parse().ok()?,
            ))
        })
        .collect()
}

/// Makes the pack folder `dir/name`: its `pack.toml` holds `manifest`,
/// and each of `files` (name, text) is written beside it. Returns the folder.
pub fn pack_folder(dir: &Path, name: &str, manifest: &str, files: &[(&str, &str)]) -> PathBuf {
    let pack = dir.join(name);
    std::fs::create_dir(&pack).unwrap();
    std::fs::write(pack.join("pack.toml"), manifest).unwrap();
    for (file, text) in files {
        std::fs::write(pack.join(file), text).unwrap();
    }
    pack
}

/// Writes a scenario file into `dir`; returns its name.
pub fn script(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

/// Runs scripts with a scratch target inside `dir`; returns the run and the target.
pub fn run_scripts(dir: &Path, args: &[&str]) -> (Run, std::path::PathBuf) {
    let target = dir.join("target");
    std::fs::create_dir_all(&target).unwrap();
    let mut all = vec!["run", "--target", target.to_str().unwrap()];
    all.extend_from_slice(args);
    (plumb(dir, &all), target)
}

/// Reads a result document.
pub fn doc(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A scenario's metric value in a result document.
pub fn metric(doc: &serde_json::Value, scenario: &str, name: &str) -> Option<f64> {
    doc["scenarios"]
        .as_array()?
        .iter()
        .find(|s| s["name"] == scenario)?["metrics"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)?["value"]
        .as_f64()
}

/// The address a just-started `plumb serve` (stdout piped) prints on its
/// first line, `plumb serve: listening on ADDR`.
pub fn serve_address(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("plumb serve's stdout is piped"))
        .read_line(&mut line)
        .unwrap();
    line.trim()
        .strip_prefix("plumb serve: listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string()
}

/// `cloud-compare`'s parameters at sizes that run in seconds.
pub const CLOUD_COMPARE_SMALL: [&str; 18] = [
    "-p",
    "size=16M",
    "-p",
    "dd_size=8M",
    "-p",
    "dd_runs=2",
    "-p",
    "ioping_count=3",
    "-p",
    "ioping_interval=0.05",
    "-p",
    "fileio_size=16M",
    "-p",
    "fileio_time=1s",
    "-p",
    "bonnie_size=4M",
    "-p",
    "bonnie_files=100",
];

/// Sets resource limits `(resource, soft, hard)` in the child `cmd` starts,
/// between fork and exec.
pub fn with_rlimits(cmd: &mut Command, limits: Vec<(libc::__rlimit_resource_t, u64, u64)>) {
    // SAFETY: only async-signal-safe setrlimit calls between fork and exec;
    // the limits were built before the fork.
    unsafe {
        cmd.pre_exec(move || {
            for &(resource, soft, hard) in &limits {
                let l = libc::rlimit {
                    rlim_cur: soft,
                    rlim_max: hard,
                };
                if libc::setrlimit(resource, &l) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// The whole-disk device (`MAJ:MIN`) under `dir`, as the blkio controller names it.
pub fn disk_of(dir: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if sys.join("partition").exists() {
        // A partition: its disk is the parent directory in sysfs.
        let parent = std::fs::canonicalize(&sys)
            .unwrap()
            .parent()
            .unwrap()
            .join("dev");
        return std::fs::read_to_string(parent).unwrap().trim().to_string();
    }
    format!("{major}:{minor}")
}

/// A cgroup v1 blkio group of a test's own (root only), removed when
/// dropped: throttles its members' I/O to a disk and counts their requests,
/// whatever the rest of the machine does.
pub struct BlkioGroup(PathBuf);

impl BlkioGroup {
    /// A new group named after `tag` and this process.
    pub fn new(tag: &str) -> BlkioGroup {
        let path = PathBuf::from(format!(
            "/sys/fs/cgroup/blkio/plumb-test-{tag}-{}",
            std::process::id()
        ));
        std::fs::create_dir(&path).unwrap_or_else(|e| {
            panic!(
                "make the blkio cgroup {} (cgroup v1 blkio mounted, as root?): {e}",
                path.display()
            )
        });
        BlkioGroup(path)
    }

    /// Writes `value` into the group's control file `file`
    /// (`blkio.throttle.read_iops_device` with `MAJ:MIN N`, ...).
    pub fn set(&self, file: &str, value: &str) {
        std::fs::write(self.0.join(file), value)
            .unwrap_or_else(|e| panic!("write {value:?} into {file}: {e}"));
    }

    /// The group's `cgroup.procs` file: a child writes its pid there
    /// before exec to run inside the group.
    pub fn procs(&self) -> PathBuf {
        self.0.join("cgroup.procs")
    }

    /// Requests the group's members issued to `disk` (`MAJ:MIN`), by
    /// direction (`Read`, `Write`), from `blkio.throttle.io_serviced`.
    pub fn requests(&self, disk: &str, direction: &str) -> u64 {
        let text = std::fs::read_to_string(self.0.join("blkio.throttle.io_serviced")).unwrap();
        text.lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                (f.next() == Some(disk) && f.next() == Some(direction))
                    .then(|| f.next()?.parse::<u64>().ok())
                    .flatten()
            })
            .sum()
    }

    /// Moves the calling thread into the group until the guard is dropped.
    pub fn enter(&self) -> InGroup {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        std::fs::write(self.0.join("tasks"), tid.to_string()).unwrap();
        InGroup(tid)
    }
}

impl Drop for BlkioGroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A thread inside a [`BlkioGroup`]; dropping it moves the thread back to
/// the root group.
pub struct InGroup(libc::pid_t);

impl Drop for InGroup {
    fn drop(&mut self) {
        let _ = std::fs::write("/sys/fs/cgroup/blkio/tasks", self.0.to_string());
    }
}

/// Bytes the tree at `dir` takes on disk (blocks of every inode, as `du`
/// counts them, directories included).
pub fn disk_usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            total += m.blocks() * 512;
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    total
}

/// The cells of the first terminal table in `stdout` (the run table of
/// `plumb run` and `plumb show`): its header first, then its rows.
pub fn first_table(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with('┌'))
        .take_while(|l| !l.starts_with('└'))
        .filter(|l| l.starts_with('│'))
        .map(|l| {
            l.trim_matches('│')
                .split('┆')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// Checks that the run table in `stdout` is scaled for reading: every
/// figure (value, median, min, max) has at most five integer digits and no
/// exponent, and its unit column is set where the metric has a unit.
/// Returns the table.
pub fn assert_scaled(stdout: &str) -> Vec<Vec<String>> {
    let table = first_table(stdout);
    let header = table
        .first()
        .unwrap_or_else(|| panic!("no table in:\n{stdout}"));
    for row in &table[1..] {
        for (name, cell) in header.iter().zip(row) {
            if !matches!(name.as_str(), "value" | "median" | "min" | "max") || cell.is_empty() {
                continue;
            }
            let number = cell.trim_end_matches(['k', 'M', 'G', 'T']);
            assert!(
                number.parse::<f64>().is_ok() && !number.contains('e'),
                "{name} {cell:?} is not a plain figure in {row:?}:\n{stdout}"
            );
            let digits = number
                .trim_start_matches('-')
                .split('.')
                .next()
                .unwrap_or("")
                .len();
            assert!(
                digits <= 5,
                "{name} {cell:?} has {digits} integer digits in {row:?}:\n{stdout}"
            );
        }
    }
    table
}
