//! Tells `plumb --version` the commit it is built from and the build
//! profile (PLUMB_COMMIT, PLUMB_PROFILE). Outside a git checkout (a source
//! archive) the commit is "unknown"; a tree with changes not committed
//! says so ("1a2b3c4d5e6f+changes").

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    // Run again when HEAD moves (a commit, a checkout) or the index or the
    // sources change (a tree becoming dirty or clean).
    for path in ["HEAD", "index", "logs/HEAD"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    for dir in ["src", "crates", "wit", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={dir}");
    }
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(c) if !c.is_empty() => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{c}+changes")
            } else {
                c
            }
        }
        _ => "unknown".into(),
    };
    println!("cargo:rustc-env=PLUMB_COMMIT={commit}");
    // PROFILE says only "release" or "debug"; the build's own directory
    // (target/PROFILE/build/plumb-HASH/out) names a custom one (shipping).
    let profile = std::env::var("OUT_DIR")
        .ok()
        .and_then(|out| {
            let parts: Vec<&str> = out.split('/').collect();
            let build = parts.iter().rposition(|p| *p == "build")?;
            parts.get(build.checked_sub(1)?).map(|p| p.to_string())
        })
        .or_else(|| std::env::var("PROFILE").ok())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PLUMB_PROFILE={profile}");
}
