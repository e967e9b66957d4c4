//! Files plumb keeps for a while outside a run directory (the fleet
//! agent's log of `plumb serve`, strace's log while recording) are never
//! created by a guessable name in a directory others can write: a symlink
//! planted under the name they used to have is not written through.

use crate::util::{plumb_bin, require_tool, workdir};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const VICTIM: &str = "a file of someone else's: must not change\n";

/// Starts `plumb ARGS` (in `cwd`, with `TMPDIR=tmp`) paused in a shell
/// until [`go`], so that its PID, which names the old temporary files, is
/// known before it runs: plumb is exec'd in the shell's place.
fn paused(cwd: &Path, tmp: &Path, args: &[&str]) -> Child {
    Command::new("sh")
        .arg("-c")
        .arg("read go && exec \"$0\" \"$@\"")
        .arg(plumb_bin())
        .args(args)
        .current_dir(cwd)
        .env("TMPDIR", tmp)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn go(child: &mut Child) {
    let stdin = child.stdin.as_mut().unwrap();
    stdin.write_all(b"go\n").unwrap();
    stdin.flush().unwrap();
}

/// Plants `link` pointing to a fresh victim file in `d`; returns the victim.
fn plant(d: &Path, link: &Path) -> std::path::PathBuf {
    let victim = d.join("victim.txt");
    std::fs::write(&victim, VICTIM).unwrap();
    std::os::unix::fs::symlink(&victim, link).unwrap();
    victim
}

#[test]
fn the_fleet_agents_serve_log_is_not_written_through_a_planted_symlink() {
    let dir = workdir();
    let d = dir.path();
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = paused(
        d,
        &tmp,
        &[
            "fleet",
            "agent",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--max-duration",
            "30s",
        ],
    );
    let link = tmp.join(format!("plumb-fleet-serve-{}.log", child.id()));
    let victim = plant(d, &link);
    go(&mut child);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut ready = false;
    for _ in 0..4 {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if line.starts_with("plumb-fleet-ready ") {
            ready = true;
            break;
        }
    }
    // Its lifeline cut, the agent stops serve and ends.
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(ready, "serve never said it listens: {status}: {err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), VICTIM);
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(
        crate::util::entries(&tmp),
        vec![link.file_name().unwrap().to_string_lossy().into_owned()],
        "the agent's private directory is removed"
    );
}

#[test]
fn trace_records_strace_log_is_not_written_through_a_planted_symlink() {
    require_tool("strace", "-V", "strace");
    let dir = workdir();
    let d = dir.path();
    let mut child = paused(d, d, &["trace", "record", "-o", "out.trace", "--", "true"]);
    let link = d.join(format!(".out.trace.strace-{}", child.id()));
    let victim = plant(d, &link);
    go(&mut child);
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), VICTIM);
    assert!(d.join("out.trace").exists());
    let mut left = crate::util::entries(d);
    left.retain(|n| n.contains("strace"));
    assert_eq!(
        left,
        vec![link.file_name().unwrap().to_string_lossy().into_owned()]
    );
}
