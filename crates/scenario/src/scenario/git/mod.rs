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
//!   local shortcuts;
//! - each git command runs with a time limit (600 s) and a memory limit
//!   ([`crate::child`]: 512 MiB of data memory), so a server that sends
//!   without end, or a repository built to take memory, ends in an error
//!   naming the limit.
//!
//! Fills are atomic and safe to race: a clone is made in `.clone-KEY-PID`
//! and renamed into place under the key's lock (`KEY.lock`, a `flock`),
//! which the [`Checkout`] holds until it is dropped; a `.clone-*` folder left
//! by a killed run is removed by the next run that can take its key's lock.

mod clone;
mod error;

pub use error::{CloneProblem, GitError};

use clone::{fill, git, lock_waiting, output, sweep, KEY_LEN};
use std::fs::File;
use std::path::PathBuf;
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
pub fn parse(arg: &str) -> Option<Result<GitSpec, GitError>> {
    let rest = arg.strip_prefix("git+")?;
    let Some((url, tail)) = rest.split_once('#') else {
        return Some(Err(GitError::NoRevision(arg.to_string())));
    };
    let (rev, subdir) = tail.split_once(':').unwrap_or((tail, ""));
    let subdir = subdir.trim_matches('/');
    let bad_rev = rev.is_empty()
        || rev.starts_with('-')
        || !rev
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._/-".contains(&b));
    if url.is_empty() || url.starts_with('-') || url.contains("::") {
        return Some(Err(GitError::NotAUrl(url.to_string())));
    }
    if bad_rev {
        return Some(Err(GitError::NotARevision(rev.to_string())));
    }
    if subdir
        .split('/')
        .any(|c| c == ".." || c == "." || (c.is_empty() && !subdir.is_empty()))
    {
        return Some(Err(GitError::NotAFolder(subdir.to_string())));
    }
    Some(Ok(GitSpec {
        url: url.to_string(),
        rev: rev.to_string(),
        subdir: subdir.to_string(),
    }))
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
    pub fn open(spec: &GitSpec) -> Result<Checkout, GitError> {
        let cache = crate::cache::open("git")?;
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
        .map_err(|e| GitError::NoSuchRevision(Box::new(e)))?;
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
    pub fn read(&self, name: &str, max: u64) -> Result<Vec<u8>, GitError> {
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
            return Err(GitError::NotRegular {
                path,
                commit: self.commit.clone(),
            });
        }
        let size: u64 = size.and_then(|s| s.parse().ok()).unwrap_or(u64::MAX);
        if size > max {
            return Err(GitError::TooBig { path, size, max });
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
