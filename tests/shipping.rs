//! What ships beside the binary: `--version` naming the build, shell
//! completions that load in a real shell, man pages that a real `man`
//! renders.

use crate::util::{plumb, plumb_bin, require_tool, workdir};
use std::process::Command;

#[test]
fn version_names_the_commit_and_the_build_profile() {
    require_tool("git", "--version", "git");
    let dir = workdir();
    let r = plumb(dir.path(), &["--version"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git rev-parse");
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    assert_eq!(head.len(), 12, "git rev-parse HEAD: {head:?}");
    let want = format!("plumb {} (commit {head}", env!("CARGO_PKG_VERSION"));
    assert!(
        r.stdout.starts_with(&want),
        "{} does not start with {want}",
        r.stdout
    );
    // The tests run the dev profile's binary.
    assert!(
        r.stdout.trim_end().ends_with(", debug build)"),
        "{}",
        r.stdout
    );
}

#[test]
fn bash_completion_loads_and_completes_subcommands_and_options() {
    require_tool("bash", "--version", "bash");
    let script = format!(
        r#"source <("{bin}" completions bash) || exit 3
complete -p plumb || exit 4
COMP_WORDS=(plumb tr); COMP_CWORD=1; _plumb plumb tr plumb
echo "words: ${{COMPREPLY[*]}}"
COMP_WORDS=(plumb trace replay --sp); COMP_CWORD=3; _plumb plumb --sp replay
echo "options: ${{COMPREPLY[*]}}""#,
        bin = plumb_bin().display()
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .output()
        .expect("bash");
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}{err}");
    assert!(text.contains("-F _plumb plumb"), "{text}{err}");
    assert!(text.contains("words: trace"), "{text}{err}");
    assert!(text.contains("options: --speed"), "{text}{err}");
}

#[test]
fn completions_refuse_an_unknown_shell() {
    let dir = workdir();
    let r = plumb(dir.path(), &["completions", "tcsh"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("possible values: bash"), "{}", r.stderr);
    assert!(r.stdout.is_empty());
}

#[test]
fn man_pages_cover_every_subcommand_and_render() {
    require_tool("man", "--version", "man-db");
    let dir = workdir();
    let out = dir.path().join("man");
    let r = plumb(dir.path(), &["manpages", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for page in [
        "plumb.1",
        "plumb-run.1",
        "plumb-fleet-run.1",
        "plumb-trace-replay.1",
        "plumb-completions.1",
    ] {
        assert!(out.join(page).is_file(), "{page} missing: {}", r.stdout);
    }
    // The hidden command that writes them has no page of its own.
    assert!(!out.join("plumb-manpages.1").exists());
    let rendered = Command::new("man")
        .args(["-P", "cat", "-l"])
        .arg(out.join("plumb-trace-replay.1"))
        .env("MANWIDTH", "100")
        .output()
        .expect("man");
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(
        rendered.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    assert!(
        text.contains("plumb-trace-replay - Replay a trace"),
        "{text}"
    );
    assert!(text.contains("--speed"), "{text}");
}
