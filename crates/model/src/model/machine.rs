//! The description of a machine and of the storage under a run's target
//! directory, as result documents record it (gathered by the `sysinfo` module).

use serde::{Deserialize, Serialize};

/// The machine.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// Operating system (PRETTY_NAME of os-release).
    pub os: String,
    /// Kernel release.
    pub kernel: String,
    /// Machine architecture.
    pub arch: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Logical CPUs online.
    pub cpus: u32,
    /// Total memory in bytes.
    pub memory_bytes: u64,
}

/// The storage under a directory.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TargetInfo {
    /// The directory examined.
    pub path: String,
    /// Filesystem type (`ext4`, `xfs`, …).
    pub fs_type: String,
    /// Mount point of that filesystem.
    pub mount_point: String,
    /// What is mounted (`/dev/vda`).
    pub source: String,
    /// Block device name (`vda`), when there is one.
    pub device: Option<String>,
    /// Device model, when the kernel reports one.
    pub model: Option<String>,
    /// Active I/O scheduler (`mq-deadline`, `none`, …).
    pub scheduler: Option<String>,
    /// True for spinning disks.
    pub rotational: Option<bool>,
    /// Bytes free to unprivileged users.
    pub free_bytes: u64,
    /// Size of the filesystem in bytes.
    pub total_bytes: u64,
}
