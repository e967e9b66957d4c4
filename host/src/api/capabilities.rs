//! What a pack declares it needs beyond its run directory (bytes, network
//! endpoints, threads, direct I/O, root), and the check every host operation
//! makes against that declaration before it runs.

use super::{ApiError, Host};
use crate::units::parse_size;
use serde::Deserialize;

/// What a pack needs beyond its run directory.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// The most bytes it will write (`"2G"`).
    pub max_bytes: Option<String>,
    /// The most inodes (files, directories, symlinks) it will have made at
    /// once.
    pub max_inodes: Option<u64>,
    /// Network endpoints (`host:port`).
    #[serde(default)]
    pub net: Vec<String>,
    /// Threads it will use at most.
    pub threads: Option<u32>,
    /// Whether it uses O_DIRECT.
    #[serde(default)]
    pub direct_io: bool,
    /// Whether it needs root (dropping caches).
    #[serde(default)]
    pub root: bool,
}

/// Most threads a pack may declare: the same bound as a job's `numjobs`.
pub const MAX_THREADS: u32 = 4096;
/// Most inodes a pack may declare (ext4's own limit is 2^32): what a run
/// grants is checked against `--max-inodes` and the free inodes.
pub const MAX_INODES: u64 = 1 << 32;
/// Most network endpoints a pack may declare.
pub const MAX_NET_ENDPOINTS: usize = 256;
/// Longest endpoint (`host:port`): a DNS name is at most 253 bytes.
const MAX_ENDPOINT_LEN: usize = 261;

impl Capabilities {
    /// Checks every declared field against its bounds, naming the field:
    /// a byte budget that parses, 1..=[`MAX_THREADS`] threads, and at most
    /// [`MAX_NET_ENDPOINTS`] non-empty `host:port` endpoints of sane length.
    pub fn validate(&self) -> Result<(), String> {
        self.max_bytes()
            .map_err(|e| format!("capabilities.max_bytes: {e}"))?;
        if let Some(n) = self.max_inodes {
            if !(1..=MAX_INODES).contains(&n) {
                return Err(format!(
                    "capabilities.max_inodes: {n} is out of range (1..={MAX_INODES})"
                ));
            }
        }
        if let Some(t) = self.threads {
            if !(1..=MAX_THREADS).contains(&t) {
                return Err(format!(
                    "capabilities.threads: {t} is out of range (1..={MAX_THREADS})"
                ));
            }
        }
        if self.net.len() > MAX_NET_ENDPOINTS {
            return Err(format!(
                "capabilities.net: {} endpoints, at most {MAX_NET_ENDPOINTS}",
                self.net.len()
            ));
        }
        if let Some(bad) = self
            .net
            .iter()
            .find(|n| n.trim().is_empty() || n.len() > MAX_ENDPOINT_LEN)
        {
            let shown: String = bad.chars().take(40).collect();
            return Err(format!(
                "capabilities.net: '{shown}' is not an endpoint (host:port, at most {MAX_ENDPOINT_LEN} bytes)"
            ));
        }
        Ok(())
    }

    /// The declared byte budget in bytes.
    pub fn max_bytes(&self) -> Result<Option<u64>, String> {
        self.max_bytes.as_deref().map(parse_size).transpose()
    }

    /// One line per capability, for display before running.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(b) = &self.max_bytes {
            out.push(format!("writes up to {b}"));
        }
        if let Some(n) = self.max_inodes {
            out.push(format!("makes up to {n} files and directories"));
        }
        if !self.net.is_empty() {
            out.push(format!("network: {}", self.net.join(", ")));
        }
        if let Some(t) = self.threads {
            out.push(format!("up to {t} threads"));
        }
        if self.direct_io {
            out.push("direct I/O".into());
        }
        if self.root {
            out.push("root (drops the page cache)".into());
        }
        out
    }
}

/// A capability checked against the pack's declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// Opening files with O_DIRECT (`direct_io = true`).
    DirectIo,
    /// This many threads at once.
    Threads(u32),
    /// Operations that need root (dropping the page cache).
    Root,
}

impl Host {
    /// Refuses what the pack did not declare: direct I/O, more threads, root;
    /// and threads past the run's cap ([`crate::gate`]), declared or not.
    pub fn allow(&self, what: Capability) -> Result<(), ApiError> {
        if let Capability::Threads(n) = what {
            crate::gate::room(n).map_err(|e| ApiError::Denied(e.to_string()))?;
        }
        let Some(c) = &self.space.declared else {
            return Ok(());
        };
        let refused = match what {
            Capability::DirectIo => {
                (!c.direct_io).then(|| "direct I/O (declare direct_io = true)".to_string())
            }
            Capability::Threads(n) => {
                // Background tasks still running hold theirs.
                let busy = self.background_threads();
                let total = n.saturating_add(busy);
                c.threads.filter(|t| total > *t).map(|t| {
                    if busy > 0 {
                        format!("{n} threads beside the {busy} its background tasks hold (the pack declares at most {t})")
                    } else {
                        format!("{n} threads (the pack declares at most {t})")
                    }
                })
            }
            Capability::Root => {
                (!c.root).then(|| "root-only operations (declare root = true)".to_string())
            }
        };
        match refused {
            Some(msg) => Err(ApiError::Denied(format!(
                "this scenario uses {msg}, which its pack did not declare (rule: capabilities in pack.toml)"
            ))),
            None => Ok(()),
        }
    }
}
