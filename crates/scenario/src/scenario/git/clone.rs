//! The cache of bare clones: git run safely on it, each clone's lock,
//! the sweep of clones a killed run left, and a clone checked to be
//! plumb's own before it is fetched again (see the parent module).

use super::error::{CloneProblem, GitError};
use crate::child::Limits;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The keys of a cached clone's `config`, besides `remote.origin.url`: what
/// `git clone --bare` writes (some only on some filesystems or object
/// formats). None of them runs anything.
const CLONE_CONFIG_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.symlinks",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.logallrefupdates",
    "extensions.objectformat",
    "extensions.refstorage",
];

/// Settings given on git's command line, above every configuration file:
/// nothing that runs a program, asks a question or works in the background.
const SAFE_SETTINGS: &[&str] = &[
    "protocol.ext.allow=never",
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    // An empty helper empties the list of credential helpers.
    "credential.helper=",
    "gc.auto=0",
    "maintenance.auto=false",
];

/// `git` run from the cache folder `cache`, on the clone `repo`, with the
/// settings above and without the system's or the user's configuration.
pub(super) fn git(cache: &Path, repo: Option<&Path>) -> Command {
    let mut c = Command::new("git");
    c.current_dir(cache)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .env("SSH_ASKPASS_REQUIRE", "never")
        .env("GIT_PAGER", "cat")
        .env("GIT_EDITOR", "true");
    // No search for a repository above the cache folder.
    if let Some(above) = cache.parent() {
        c.env("GIT_CEILING_DIRECTORIES", above);
    }
    for s in SAFE_SETTINGS {
        c.args(["-c", s]);
    }
    if let Some(r) = repo {
        c.arg("--git-dir").arg(r);
    }
    c
}

/// What a git command may take: a clone or fetch of a repository named by
/// a URL reads what its server sends (see [`crate::child`]).
const LIMITS: Limits = Limits {
    time: Duration::from_secs(600),
    memory: crate::child::MEMORY_LIMIT,
};

/// The most stdout kept from a git command: a pack file read whole
/// (`cat-file`, whose size is checked against the file's limit first).
const MAX_STDOUT: usize = crate::scenario::bundle::MAX_PACK_BYTES as usize;

/// Runs a git command under [`LIMITS`], `what` naming it in errors; its
/// stdout.
pub(super) fn output(c: &mut Command, what: &str) -> Result<Vec<u8>, GitError> {
    let never = AtomicBool::new(false);
    let out = crate::child::run(c, "git", LIMITS, MAX_STDOUT, &never).map_err(|e| match e {
        crate::child::ChildError::Spawn { source, .. } => GitError::NoGit {
            what: what.to_string(),
            source,
        },
        e => GitError::Failed {
            what: what.to_string(),
            stderr: e.to_string(),
        },
    })?;
    if !out.status.success() {
        let err: String = String::from_utf8_lossy(&out.stderr)
            .chars()
            .filter(|c| !c.is_control() || *c == '\n')
            .take(300)
            .collect();
        return Err(GitError::Failed {
            what: what.to_string(),
            stderr: err.trim().to_string(),
        });
    }
    Ok(out.stdout)
}

/// Hex digits of a clone's key (from the SHA-256 of its URL).
pub(super) const KEY_LEN: usize = 24;

/// Opens the lock file of the clone `key` (made `0600`, never through a
/// symlink) and takes its `flock`: waiting for it when `wait`, else
/// returning None when another process holds it.
fn lock(cache: &Path, key: &str, wait: bool) -> std::io::Result<Option<File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(cache.join(format!("{key}.lock")))?;
    if wait {
        f.lock()?;
        return Ok(Some(f));
    }
    match f.try_lock() {
        Ok(()) => Ok(Some(f)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Takes the lock of the clone `key`, saying so when another plumb holds
/// it (fetching the same repository) and this one waits.
pub(super) fn lock_waiting(cache: &Path, key: &str, url: &str) -> Result<File, GitError> {
    let at = |source| GitError::Io {
        path: cache.join(format!("{key}.lock")),
        source,
    };
    if let Some(f) = lock(cache, key, false).map_err(at)? {
        return Ok(f);
    }
    tracing::warn!("plumb: waiting for another plumb fetching {url}");
    lock(cache, key, true)
        .map_err(at)?
        .ok_or(GitError::LockNotTaken)
}

/// Removes the `.clone-*` folders no fill is writing: those of `held` (the
/// key whose lock this process holds), those of any key whose lock is
/// free, and those of earlier plumbs (`.clone-PID`) whose process is gone.
pub(super) fn sweep(cache: &Path, held: &str) {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(".clone-")) else {
            continue;
        };
        let owner = rest.split('-').next().unwrap_or("");
        let is_key = owner.len() == KEY_LEN
            && owner
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
        let _lock = if owner == held {
            None
        } else if is_key {
            match lock(cache, owner, false) {
                Ok(Some(l)) => Some(l),
                _ => continue,
            }
        } else if rest.bytes().all(|b| b.is_ascii_digit())
            && !Path::new("/proc").join(rest).exists()
        {
            None
        } else {
            continue;
        };
        if std::fs::remove_dir_all(entry.path()).is_ok() {
            tracing::warn!(
                "plumb: removed {}, left by a git fetch that was killed",
                entry.path().display()
            );
        }
    }
}

/// Makes the cached clone of `url` (its lock held) current: fetched when
/// it is plumb's own clone of `url`, else cloned afresh and put in place.
/// Returns its path.
pub(super) fn fill(cache: &Path, key: &str, url: &str) -> Result<PathBuf, GitError> {
    let repo = cache.join(key);
    match made_by_plumb(cache, &repo, url) {
        Ok(true) => {
            let fetched = output(
                git(cache, Some(&repo))
                    .args(["fetch", "--quiet", "--tags", "--", url])
                    .args(["+refs/heads/*:refs/heads/*"]),
                &format!("fetching {url}"),
            );
            match fetched {
                Ok(_) => return Ok(repo),
                // A fetch killed half-way can leave git's own locks behind.
                Err(e) => tracing::warn!("plumb: {e}; cloning it afresh"),
            }
        }
        Ok(false) => {}
        Err(why) => tracing::warn!(
            "plumb: not using the cached clone {}: {why}; cloning it again",
            repo.display()
        ),
    }
    let tmp = cache.join(format!(".clone-{key}-{}", std::process::id()));
    let cloned = output(
        git(cache, None)
            .args(["clone", "--bare", "--quiet", "--no-local", "--template="])
            .args(["--", url])
            .arg(&tmp),
        &format!("cloning {url}"),
    )
    .and_then(|_| put_in_place(cache, key, &tmp, &repo));
    if cloned.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    cloned.map(|()| repo)
}

/// Renames the fresh clone `tmp` to `repo`, moving what was there aside
/// (to a `.clone-` name, so a kill half-way leaves only what a sweep removes).
fn put_in_place(cache: &Path, key: &str, tmp: &Path, repo: &Path) -> Result<(), GitError> {
    let at = |p: &Path, source| GitError::Io {
        path: p.to_path_buf(),
        source,
    };
    if std::fs::symlink_metadata(repo).is_ok() {
        let old = cache.join(format!(".clone-{key}-{}-old", std::process::id()));
        std::fs::rename(repo, &old).map_err(|e| at(repo, e))?;
        std::fs::remove_dir_all(&old).map_err(|e| at(&old, e))?;
    }
    std::fs::rename(tmp, repo).map_err(|e| at(repo, e))
}

/// Whether `repo` is the clone plumb made of `url`: false when there is
/// none, the reason when something else is there (see the module's
/// documentation for what is checked).
fn made_by_plumb(cache: &Path, repo: &Path, url: &str) -> Result<bool, CloneProblem> {
    let m = match std::fs::symlink_metadata(repo) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(CloneProblem::Unreadable(e)),
    };
    crate::cache::check_private(&m).map_err(CloneProblem::NotPrivate)?;
    if std::fs::symlink_metadata(repo.join("commondir")).is_ok() {
        return Err(CloneProblem::CommonDir);
    }
    let config = repo.join("config");
    if !std::fs::symlink_metadata(&config).is_ok_and(|m| m.is_file()) {
        return Err(CloneProblem::ConfigNotAFile);
    }
    // `--file` reads that file alone, without following its includes.
    let listing = output(
        git(cache, None)
            .args(["config", "--null", "--list", "--file"])
            .arg(&config),
        "reading its config",
    )
    .map_err(|e| CloneProblem::Config(Box::new(e)))?;
    let mut origin = false;
    for entry in listing.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        let (key, value) = entry.split_once('\n').unwrap_or((&entry, ""));
        if key == "remote.origin.url" {
            if value != url {
                return Err(CloneProblem::OtherUrl(value.to_string()));
            }
            origin = true;
        } else if !CLONE_CONFIG_KEYS.contains(&key) {
            return Err(CloneProblem::OtherKey(key.to_string()));
        }
    }
    if !origin {
        return Err(CloneProblem::NoRemote);
    }
    Ok(true)
}
