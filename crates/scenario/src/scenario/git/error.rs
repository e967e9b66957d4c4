//! Why a git pack cannot be read, and why a cached clone is not used.

use crate::terminal::clean;
use std::path::PathBuf;

/// A git spec refused, or a repository that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// `git+URL` without `#REV`.
    #[error("'{0}' has no revision: write git+URL#REV[:SUBDIR]")]
    NoRevision(String),
    /// Not a URL git should be given.
    #[error("'{0}' is not a repository URL")]
    NotAUrl(String),
    /// Not a revision git should be given.
    #[error("'{0}' is not a revision (a commit, tag or branch)")]
    NotARevision(String),
    /// A folder outside the repository.
    #[error("'{0}' is not a folder inside the repository")]
    NotAFolder(String),
    /// The cache folder is refused.
    #[error(transparent)]
    Cache(#[from] crate::cache::CacheError),
    /// A file of the cache cannot be used.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A waited-for lock was not taken.
    #[error("lock not taken")]
    LockNotTaken,
    /// git cannot be run.
    #[error("{what}: running git: {source} (install git)")]
    NoGit {
        /// What git was to do.
        what: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// git failed.
    #[error("{what}: {stderr}")]
    Failed {
        /// What git was to do.
        what: String,
        /// What it said (bounded, without control characters).
        stderr: String,
    },
    /// The revision does not resolve.
    #[error("{0} (no such commit, tag or branch?)")]
    NoSuchRevision(Box<GitError>),
    /// A pack file that is not a regular file at the commit.
    #[error("{path} is not a regular file at commit {commit}")]
    NotRegular {
        /// The file.
        path: String,
        /// The commit.
        commit: String,
    },
    /// A pack file too large.
    #[error("{path} is {size} bytes; a pack file may have at most {max}")]
    TooBig {
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// The most it may have.
        max: u64,
    },
}

/// Why a cached clone is not the one plumb made for a URL.
#[derive(Debug, thiserror::Error)]
pub enum CloneProblem {
    /// It cannot be examined.
    #[error("{0}")]
    Unreadable(std::io::Error),
    /// It is not private to this user.
    #[error("{0}")]
    NotPrivate(crate::cache::PrivateError),
    /// It points at another repository's configuration.
    #[error("it has a commondir file (another repository's configuration)")]
    CommonDir,
    /// Its config is not a regular file.
    #[error("its config is not a regular file")]
    ConfigNotAFile,
    /// Its config cannot be read.
    #[error(transparent)]
    Config(Box<GitError>),
    /// It is a clone of another URL.
    #[error("it is a clone of {}", clean(.0))]
    OtherUrl(String),
    /// Its config sets a key `git clone --bare` does not.
    #[error("its config sets {}, which plumb never does", clean(.0))]
    OtherKey(String),
    /// Its config names no remote.
    #[error("its config names no remote")]
    NoRemote,
}
