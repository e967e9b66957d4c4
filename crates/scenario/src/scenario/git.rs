//! Packs from git: `git+URL#REV[:SUBDIR]`. The system `git` keeps a bare
//! clone per URL in plumb's cache (fetched again on each use), the revision
//! is resolved to a commit, and the pack's files are read out of that
//! commit as blobs — no work tree, so nothing of the repository but the
//! files `pack.toml` names is ever read, and never through a symlink.
//!
//! git obeys a repository's configuration, and some of it runs programs
//! (`core.sshCommand`, `url.*.insteadOf` sending a fetch elsewhere,
//! credential helpers, hooks, fsmonitor, `include.path` bringing in more),
//! so nothing in the cache is taken on trust:
//! - the cache folder passes the rule of every cache ([`crate::cache::open`]:
//!   private to this user), or the run is refused;
//! - a cached clone is used only when it is the one plumb made for this URL:
//!   a private directory, no `commondir` (which would send git to another
//!   repository's configuration), and a `config` holding only the keys
//!   `git clone --bare` writes, its `remote.origin.url` the URL asked for.
//!   Anything else is moved aside and cloned again;
//! - git runs from the cache folder, without the system's or the user's
//!   configuration, with hooks, fsmonitor, credential helpers, prompts, the
//!   ext transport and automatic gc off, and clones with no template and no
//!   local shortcuts.
//!
//! Fills are atomic and safe to race: a clone is made in `.clone-KEY-PID`
//! and renamed into place under the key's lock (`KEY.lock`, a `flock`),
//! which the [`Checkout`] holds until it is dropped; a `.clone-*` folder left
//! by a killed run is removed by the next run that can take its key's lock.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
/// A parsed `git+URL#REV[:SUBDIR]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSpec {
    /// The repository URL (`file:///…`, `https://…`, `ssh://…`).
    pub url: String,
    /// The revision as given (a commit, tag or branch).
    pub rev: String,
    /// The pack's folder inside the repository ("" for the top).
    pub subdir: String,
}

/// Parses `git+URL#REV[:SUBDIR]`; None when `arg` does not start with `git+`.
pub fn parse(arg: &str) -> Option<Result<GitSpec, String>> {
    let rest = arg.strip_prefix("git+")?;
    let Some((url, tail)) = rest.split_once('#') else {
        return Some(Err(format!(
            "'{arg}' has no revision: write git+URL#REV[:SUBDIR]"
        )));
    };
    let (rev, subdir) = tail.split_once(':').unwrap_or((tail, ""));
    let subdir = subdir.trim_matches('/');
    let bad_rev = rev.is_empty()
        || rev.starts_with('-')
        || !rev
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._/-".contains(&b));
    if url.is_empty() || url.starts_with('-') || url.contains("::") {
        return Some(Err(format!("'{url}' is not a repository URL")));
    }
    if bad_rev {
        return Some(Err(format!(
            "'{rev}' is not a revision (a commit, tag or branch)"
        )));
    }
    if subdir
        .split('/')
        .any(|c| c == ".." || c == "." || (c.is_empty() && !subdir.is_empty()))
    {
        return Some(Err(format!(
            "'{subdir}' is not a folder inside the repository"
        )));
    }
    Some(Ok(GitSpec {
        url: url.to_string(),
        rev: rev.to_string(),
        subdir: subdir.to_string(),
    }))
}

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
fn git(cache: &Path, repo: Option<&Path>) -> Command {
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

fn output(c: &mut Command, what: &str) -> Result<Vec<u8>, String> {
    let out = c
        .output()
        .map_err(|e| format!("{what}: running git: {e} (install git)"))?;
    if !out.status.success() {
        let err: String = String::from_utf8_lossy(&out.stderr)
            .chars()
            .filter(|c| !c.is_control() || *c == '\n')
            .take(300)
            .collect();
        return Err(format!("{what}: {}", err.trim()));
    }
    Ok(out.stdout)
}

/// A repository checked out at a commit, to read a pack's files from.
pub struct Checkout {
    cache: PathBuf,
    repo: PathBuf,
    /// The commit the revision resolved to.
    pub commit: String,
    subdir: String,
    /// The clone's lock, held while its files are read (so no other run
    /// replaces it meanwhile).
    _lock: File,
}

impl Checkout {
    /// Clones (or fetches) `spec.url` into the cache and resolves the revision.
    pub fn open(spec: &GitSpec) -> Result<Checkout, String> {
        let cache = crate::cache::open("git").map_err(|e| e.to_string())?;
        let key = super::bundle::sha256_hex(spec.url.as_bytes())[..KEY_LEN].to_string();
        let lock = lock_waiting(&cache, &key, &spec.url)?;
        sweep(&cache, &key);
        let repo = fill(&cache, &key, &spec.url)?;
        let commit = output(
            git(&cache, Some(&repo))
                .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
                .arg(format!("{}^{{commit}}", spec.rev)),
            &format!("revision {} of {}", spec.rev, spec.url),
        )
        .map_err(|e| format!("{e} (no such commit, tag or branch?)"))?;
        let commit = String::from_utf8_lossy(&commit).trim().to_string();
        Ok(Checkout {
            cache,
            repo,
            commit,
            subdir: spec.subdir.clone(),
            _lock: lock,
        })
    }

    /// The file `name` of the pack folder at the commit: a regular file
    /// (not a symlink or submodule) of at most `max` bytes.
    pub fn read(&self, name: &str, max: u64) -> Result<Vec<u8>, String> {
        let path = if self.subdir.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.subdir)
        };
        let listing = output(
            git(&self.cache, Some(&self.repo)).args(["ls-tree", "-l", &self.commit, "--", &path]),
            &format!("{path} at {}", self.commit),
        )?;
        let listing = String::from_utf8_lossy(&listing);
        let mut words = listing.split_whitespace();
        let (mode, kind, _, size) = (words.next(), words.next(), words.next(), words.next());
        if kind != Some("blob") || !matches!(mode, Some("100644") | Some("100755")) {
            return Err(format!(
                "{path} is not a regular file at commit {}",
                self.commit
            ));
        }
        let size: u64 = size.and_then(|s| s.parse().ok()).unwrap_or(u64::MAX);
        if size > max {
            return Err(format!(
                "{path} is {size} bytes; a pack file may have at most {max}"
            ));
        }
        output(
            git(&self.cache, Some(&self.repo)).args([
                "cat-file",
                "blob",
                &format!("{}:{path}", self.commit),
            ]),
            &path,
        )
    }
}

/// Hex digits of a clone's key (from the SHA-256 of its URL).
const KEY_LEN: usize = 24;

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
fn lock_waiting(cache: &Path, key: &str, url: &str) -> Result<File, String> {
    let at = |e: std::io::Error| format!("{}: {e}", cache.join(format!("{key}.lock")).display());
    if let Some(f) = lock(cache, key, false).map_err(at)? {
        return Ok(f);
    }
    eprintln!("plumb: waiting for another plumb fetching {url}");
    lock(cache, key, true)
        .map_err(at)?
        .ok_or_else(|| "lock not taken".to_string())
}

/// Removes the `.clone-*` folders no fill is writing: those of `held` (the
/// key whose lock this process holds), those of any key whose lock is
/// free, and those of earlier plumbs (`.clone-PID`) whose process is gone.
fn sweep(cache: &Path, held: &str) {
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
            eprintln!(
                "plumb: removed {}, left by a git fetch that was killed",
                entry.path().display()
            );
        }
    }
}

/// Makes the cached clone of `url` (its lock held) current: fetched when
/// it is plumb's own clone of `url`, else cloned afresh and put in place.
/// Returns its path.
fn fill(cache: &Path, key: &str, url: &str) -> Result<PathBuf, String> {
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
                Err(e) => eprintln!("plumb: {e}; cloning it afresh"),
            }
        }
        Ok(false) => {}
        Err(why) => eprintln!(
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
fn put_in_place(cache: &Path, key: &str, tmp: &Path, repo: &Path) -> Result<(), String> {
    let at = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
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
fn made_by_plumb(cache: &Path, repo: &Path, url: &str) -> Result<bool, String> {
    let m = match std::fs::symlink_metadata(repo) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e.to_string()),
    };
    crate::cache::check_private(&m)?;
    if std::fs::symlink_metadata(repo.join("commondir")).is_ok() {
        return Err("it has a commondir file (another repository's configuration)".into());
    }
    let config = repo.join("config");
    if !std::fs::symlink_metadata(&config).is_ok_and(|m| m.is_file()) {
        return Err("its config is not a regular file".into());
    }
    // `--file` reads that file alone, without following its includes.
    let listing = output(
        git(cache, None)
            .args(["config", "--null", "--list", "--file"])
            .arg(&config),
        "reading its config",
    )?;
    let mut origin = false;
    for entry in listing.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        let (key, value) = entry.split_once('\n').unwrap_or((&entry, ""));
        if key == "remote.origin.url" {
            if value != url {
                return Err(format!(
                    "it is a clone of {}",
                    crate::terminal::clean(value)
                ));
            }
            origin = true;
        } else if !CLONE_CONFIG_KEYS.contains(&key) {
            return Err(format!(
                "its config sets {}, which plumb never does",
                crate::terminal::clean(key)
            ));
        }
    }
    if !origin {
        return Err("its config names no remote".into());
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_hostile_ones_are_refused() {
        let s = parse("git+file:///srv/packs.git#v1.2:disk/quick")
            .unwrap()
            .unwrap();
        assert_eq!(
            (s.url.as_str(), s.rev.as_str(), s.subdir.as_str()),
            ("file:///srv/packs.git", "v1.2", "disk/quick")
        );
        assert!(parse("quick").is_none());
        for bad in [
            "git+file:///x",
            "git+#abc",
            "git+-uupload-pack=touch /tmp/x#main",
            "git+ext::sh -c touch% /tmp/pwned#main",
            "git+file:///x#--output=/tmp/x",
            "git+file:///x#main:../../etc",
            "git+file:///x#ma in",
        ] {
            assert!(parse(bad).unwrap().is_err(), "{bad}");
        }
    }
}
