//! Packs from git: `git+URL#REV[:SUBDIR]`. The system `git` keeps a bare
//! clone per URL in plumb's cache (fetched again on each use), the revision
//! is resolved to a commit, and the pack's files are read out of that
//! commit as blobs — no work tree, so nothing of the repository but the
//! files `pack.toml` names is ever read, and never through a symlink. The
//! ext transport is refused and git never prompts.

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

/// `git` with the safety settings every call uses, on the clone `repo`.
fn git(repo: Option<&Path>) -> Command {
    let mut c = Command::new("git");
    c.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .args([
            "-c",
            "protocol.ext.allow=never",
            "-c",
            "core.hooksPath=/dev/null",
        ]);
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
    repo: PathBuf,
    /// The commit the revision resolved to.
    pub commit: String,
    subdir: String,
}

impl Checkout {
    /// Clones (or fetches) `spec.url` into the cache and resolves the revision.
    pub fn open(spec: &GitSpec) -> Result<Checkout, String> {
        let cache = crate::cache::dir("git").ok_or("no cache directory (set PLUMB_CACHE_DIR)")?;
        std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
        let repo = cache.join(&super::bundle::sha256_hex(spec.url.as_bytes())[..24]);
        if repo.join("HEAD").exists() {
            output(
                git(Some(&repo))
                    .args(["fetch", "--quiet", "--tags", "--", &spec.url])
                    .args(["+refs/heads/*:refs/heads/*"]),
                &format!("fetching {}", spec.url),
            )?;
        } else {
            let tmp = cache.join(format!(".clone-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&tmp);
            let cloned = output(
                git(None)
                    .args(["clone", "--bare", "--quiet", "--", &spec.url])
                    .arg(&tmp),
                &format!("cloning {}", spec.url),
            );
            if let Err(e) = cloned {
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(e);
            }
            std::fs::rename(&tmp, &repo).map_err(|e| format!("{}: {e}", repo.display()))?;
        }
        let commit = output(
            git(Some(&repo))
                .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
                .arg(format!("{}^{{commit}}", spec.rev)),
            &format!("revision {} of {}", spec.rev, spec.url),
        )
        .map_err(|e| format!("{e} (no such commit, tag or branch?)"))?;
        let commit = String::from_utf8_lossy(&commit).trim().to_string();
        Ok(Checkout {
            repo,
            commit,
            subdir: spec.subdir.clone(),
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
            git(Some(&self.repo)).args(["ls-tree", "-l", &self.commit, "--", &path]),
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
            git(Some(&self.repo)).args(["cat-file", "blob", &format!("{}:{path}", self.commit)]),
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
