//! Helpers shared by the integration tests: run the real `plumb` binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// Where the tests keep compiled WebAssembly components (not the user's cache).
pub fn test_cache() -> PathBuf {
    std::env::temp_dir().join("plumb-test-wasm-cache")
}

/// Runs `plumb ARGS` in `dir`.
pub fn plumb(dir: &Path, args: &[&str]) -> Run {
    plumb_cached(dir, &test_cache(), args)
}

/// Runs `plumb ARGS` in `dir` with its compiled-component cache in `cache`.
pub fn plumb_cached(dir: &Path, cache: &Path, args: &[&str]) -> Run {
    to_run(
        Command::new(plumb_bin())
            .args(args)
            .env("PLUMB_CACHE_DIR", cache)
            .current_dir(dir)
            .output()
            .expect("run plumb"),
    )
}

/// Starts `plumb ARGS` in `dir`, sends it `signal` (`-INT`, `-TERM`) after
/// `after_ms`, and returns what it printed and its exit status.
pub fn plumb_signalled(dir: &Path, args: &[&str], after_ms: u64, signal: &str) -> Output {
    let child = Command::new(plumb_bin())
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start plumb");
    std::thread::sleep(std::time::Duration::from_millis(after_ms));
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill {signal} failed");
    child.wait_with_output().expect("wait for plumb")
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
