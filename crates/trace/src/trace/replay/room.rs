//! The room a replay may take under its target directory, checked before
//! anything is laid out: the bytes it may write and the inodes it may make,
//! against what the file system has free.

use super::{bytes_needed, metadata_needed, Prepared, ReplayOptions};
use crate::sandbox::{default_inodes, DEFAULT_MAX_INODES};
use crate::units::format_bytes_binary;
use std::path::{Path, PathBuf};

/// What a replay may use under its target: its byte budget (the free bytes)
/// and the inodes it may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    /// Bytes free under the target, the replay's budget.
    pub bytes: u64,
    /// Inodes it may make (half the free ones, at most
    /// [`DEFAULT_MAX_INODES`]).
    pub inodes: u64,
}

/// Why a replay does not fit under its target.
#[derive(Debug, thiserror::Error)]
pub enum RoomError {
    /// The target's free space could not be read.
    #[error("{}: {source}", dir.display())]
    Unreadable {
        /// The target.
        dir: PathBuf,
        /// What reading it said.
        source: std::io::Error,
    },
    /// The replay's estimate exceeds the free bytes.
    #[error(
        "the replay may write {} (of which {} for {inodes} inode(s)) but only {} are free under {}",
        format_bytes_binary(*need as f64),
        format_bytes_binary(*metadata as f64),
        format_bytes_binary(*free as f64),
        dir.display()
    )]
    Bytes {
        /// Bytes it may write, data and metadata.
        need: u64,
        /// Of which for inodes.
        metadata: u64,
        /// Inodes it may make.
        inodes: u64,
        /// Bytes free.
        free: u64,
        /// The target.
        dir: PathBuf,
    },
    /// The replay may make more inodes than it is allowed.
    #[error(
        "the replay may create {need} inodes but at most {allowed} may be made under {} (half the free inodes, at most {DEFAULT_MAX_INODES})",
        dir.display()
    )]
    Inodes {
        /// Inodes it may make.
        need: u64,
        /// Inodes allowed.
        allowed: u64,
        /// The target.
        dir: PathBuf,
    },
}

/// The room the replay of `trace` under `o` may use under `target`;
/// refused when its estimates do not fit.
pub fn room(trace: &Prepared, o: ReplayOptions, target: &Path) -> Result<Room, RoomError> {
    let need = bytes_needed(trace, o);
    let meta = metadata_needed(trace, o);
    let free = plumb_io::files::free_bytes(target).map_err(|source| RoomError::Unreadable {
        dir: target.to_path_buf(),
        source,
    })?;
    let all = need.saturating_add(meta.bytes);
    if all > free {
        return Err(RoomError::Bytes {
            need: all,
            metadata: meta.bytes,
            inodes: meta.inodes,
            free,
            dir: target.to_path_buf(),
        });
    }
    let inodes = default_inodes(target);
    if meta.inodes > inodes {
        return Err(RoomError::Inodes {
            need: meta.inodes,
            allowed: inodes,
            dir: target.to_path_buf(),
        });
    }
    Ok(Room {
        bytes: free,
        inodes,
    })
}
