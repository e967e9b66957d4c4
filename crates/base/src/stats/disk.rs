//! Disk utilisation over a run, from `/sys/block/DEV/stat` (fio's "Disk stats").

use serde::{Deserialize, Serialize};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Counters of a block device at one moment.
#[derive(Debug, Clone)]
pub struct DiskSnapshot {
    name: String,
    fields: [u64; 11],
    at: Instant,
}

impl DiskSnapshot {
    /// Reads the counters of block device `name` (e.g. `vda`).
    pub fn take(name: &str) -> Option<DiskSnapshot> {
        let text = std::fs::read_to_string(format!("/sys/block/{name}/stat")).ok()?;
        let mut fields = [0u64; 11];
        for (slot, v) in fields.iter_mut().zip(text.split_whitespace()) {
            *slot = v.parse().ok()?;
        }
        Some(DiskSnapshot {
            name: name.to_string(),
            fields,
            at: Instant::now(),
        })
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the device did between `earlier` and this snapshot.
    pub fn since(&self, earlier: &DiskSnapshot) -> DiskUtil {
        let d = |i: usize| self.fields[i].saturating_sub(earlier.fields[i]);
        let elapsed_ms = (self.at - earlier.at).as_millis().max(1) as f64;
        DiskUtil {
            name: self.name.clone(),
            read_ios: d(0),
            read_merges: d(1),
            read_ticks: d(3),
            write_ios: d(4),
            write_merges: d(5),
            write_ticks: d(7),
            in_queue: d(10),
            util: (d(9) as f64 / elapsed_ms * 100.0).min(100.0),
        }
    }
}

/// Device-level figures of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DiskUtil {
    /// Device name.
    pub name: String,
    /// Reads completed by the device.
    pub read_ios: u64,
    /// Writes completed by the device.
    pub write_ios: u64,
    /// Reads merged by the block layer.
    pub read_merges: u64,
    /// Writes merged by the block layer.
    pub write_merges: u64,
    /// Milliseconds spent reading.
    pub read_ticks: u64,
    /// Milliseconds spent writing.
    pub write_ticks: u64,
    /// Weighted milliseconds in queue.
    pub in_queue: u64,
    /// Percent of the time the device was busy.
    pub util: f64,
}

/// The whole-disk block device holding `path` (a file, or the directory it will be in).
pub fn disk_for_path(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path)
        .or_else(|_| {
            std::fs::metadata(
                path.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new(".")),
            )
        })
        .ok()?;
    if meta.file_type().is_block_device() {
        let rdev = meta.rdev();
        return disk_of(libc::major(rdev), libc::minor(rdev));
    }
    disk_of(libc::major(meta.dev()), libc::minor(meta.dev()))
}

/// The whole-disk block device for a device number (partitions map to their disk).
pub fn disk_of(major: u32, minor: u32) -> Option<String> {
    let sys = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    let disk: PathBuf = if sys.join("partition").exists() {
        sys.parent()?.to_path_buf()
    } else {
        sys
    };
    Some(disk.file_name()?.to_string_lossy().into_owned())
}
