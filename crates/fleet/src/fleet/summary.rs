//! What a fleet command reports per host, and `OUT/fleet.json`, the
//! record of the whole fleet run (`plumb.fleet.v1`).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The schema name of `fleet.json`.
pub const FLEET_SCHEMA: &str = "plumb.fleet.v1";

/// Where a host is in its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Checking it answers and can run the pack.
    Check,
    /// Copying plumb into its cache.
    Copy,
    /// Running the pack.
    Run,
    /// Finished with a result.
    Done,
}

impl Stage {
    /// Its name in messages and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Check => "check",
            Stage::Copy => "copy",
            Stage::Run => "run",
            Stage::Done => "done",
        }
    }
}

/// Whether plumb had to be copied to a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BinaryCopy {
    /// It was copied this time.
    Copied,
    /// It was in the host's cache already.
    Cached,
}

/// How one host's part of a fleet run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostReport {
    /// The host's name.
    pub name: String,
    /// The address ssh used.
    pub address: String,
    /// It ran the pack, `plumb run` there exited 0, and its result arrived.
    pub ok: bool,
    /// The stage it reached (where it failed, or `done`).
    pub stage: Stage,
    /// Why it failed, in one line.
    pub error: Option<String>,
    /// Whether plumb was copied (None when it failed before that).
    pub binary: Option<BinaryCopy>,
    /// Bytes sent to copy plumb there (packed: see `binary_packing`);
    /// None when it was cached or the copy did not start.
    #[serde(default)]
    pub binary_bytes: Option<u64>,
    /// How the copy was packed: `zstd`, `gzip` or `plain`.
    #[serde(default)]
    pub binary_packing: Option<String>,
    /// Seconds from its check to its end.
    pub seconds: f64,
    /// What its check found: `uname -m`, `uname -r`, free bytes in the
    /// target (None when the check failed).
    pub arch: Option<String>,
    /// Its kernel release.
    pub kernel: Option<String>,
    /// Free bytes in its target.
    pub free_bytes: Option<u64>,
    /// Its result file here, when it sent one (partial results included).
    pub result: Option<PathBuf>,
}

impl HostReport {
    /// A host (or pair) that has not got anywhere yet.
    pub fn new(name: &str, address: &str) -> HostReport {
        HostReport {
            name: name.to_string(),
            address: address.to_string(),
            ok: false,
            stage: Stage::Check,
            error: None,
            binary: None,
            binary_bytes: None,
            binary_packing: None,
            seconds: 0.0,
            arch: None,
            kernel: None,
            free_bytes: None,
            result: None,
        }
    }

    /// It failed at `stage` for `error`, `since` it began.
    pub fn failed(
        mut self,
        stage: Stage,
        error: impl std::fmt::Display,
        since: std::time::Instant,
    ) -> HostReport {
        self.stage = stage;
        self.error = Some(error.to_string());
        self.seconds = since.elapsed().as_secs_f64();
        self
    }

    /// It finished with a result, `since` it began.
    pub fn done(mut self, since: std::time::Instant) -> HostReport {
        self.ok = true;
        self.stage = Stage::Done;
        self.seconds = since.elapsed().as_secs_f64();
        self
    }
}

/// `OUT/fleet.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FleetRecord {
    /// Always [`FLEET_SCHEMA`].
    pub schema: String,
    /// The pack as given on the command line.
    pub pack: String,
    /// Its content hash.
    pub pack_sha256: String,
    /// Start and end, RFC 3339.
    pub started: String,
    /// End time.
    pub finished: String,
    /// One entry per host, in the inventory's order.
    pub hosts: Vec<HostReport>,
}

/// `OUT/fleet.json` could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The folder cannot be made.
    #[error("{}: {source}", .dir.display())]
    Folder {
        /// The folder.
        dir: PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The record cannot be encoded.
    #[error(transparent)]
    Encode(#[from] serde_json::Error),
    /// The file cannot be written.
    #[error(transparent)]
    Write(#[from] crate::save::SaveError),
}

impl FleetRecord {
    /// Saves the record as `OUT/fleet.json`, all or nothing.
    pub fn save(&self, out: &std::path::Path) -> Result<(), RecordError> {
        std::fs::create_dir_all(out).map_err(|source| RecordError::Folder {
            dir: out.to_path_buf(),
            source,
        })?;
        let mut text = serde_json::to_vec_pretty(self)?;
        text.push(b'\n');
        crate::save::write_atomic(&out.join("fleet.json"), &text)?;
        Ok(())
    }
}
