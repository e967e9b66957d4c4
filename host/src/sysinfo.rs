//! What machine and what storage a run measured: CPU, memory, kernel, and the
//! target's filesystem, device, I/O scheduler and rotational flag.

use serde::{Deserialize, Serialize};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

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

/// Reads the machine's description.
pub fn host_info() -> HostInfo {
    let cpuinfo = read("/proc/cpuinfo");
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    let memory_bytes = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0);
    let os = read("/etc/os-release")
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| "Linux".into());
    // SAFETY: uname fills the zeroed struct.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    unsafe { libc::uname(&mut u) };
    let field = |f: &[libc::c_char]| {
        // SAFETY: utsname fields are NUL-terminated.
        unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    HostInfo {
        hostname: field(&u.nodename),
        os,
        kernel: field(&u.release),
        arch: field(&u.machine),
        cpu_model,
        cpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        memory_bytes,
    }
}

/// Describes the storage holding `dir`.
pub fn target_info(dir: &Path) -> std::io::Result<TargetInfo> {
    let path = std::fs::canonicalize(dir)?;
    let meta = std::fs::metadata(&path)?;
    let (mount_point, fs_type, source) = mount_of(&path).unwrap_or_default();
    let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let disk = disk_of(major, minor);
    let queue = |name: &str| {
        disk.as_ref()
            .map(|d| read(&format!("/sys/block/{d}/queue/{name}")))
    };
    let scheduler = queue("scheduler").and_then(|s| {
        let s = s.trim();
        match (s.find('['), s.find(']')) {
            (Some(a), Some(b)) => Some(s[a + 1..b].to_string()),
            _ if !s.is_empty() => Some(s.to_string()),
            _ => None,
        }
    });
    let rotational = queue("rotational")
        .and_then(|s| s.trim().parse::<u8>().ok())
        .map(|v| v == 1);
    let model = disk
        .as_ref()
        .map(|d| {
            read(&format!("/sys/block/{d}/device/model"))
                .trim()
                .to_string()
        })
        .filter(|m| !m.is_empty());
    let free_bytes = crate::files::free_bytes(&path)?;
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(std::io::Error::other)?;
    // SAFETY: statvfs fills the zeroed struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let total_bytes = if unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0 {
        st.f_blocks as u64 * st.f_frsize as u64
    } else {
        0
    };
    Ok(TargetInfo {
        path: path.display().to_string(),
        fs_type,
        mount_point,
        source,
        device: disk,
        model,
        scheduler,
        rotational,
        free_bytes,
        total_bytes,
    })
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The mount (point, type, source) with the longest mount point above `path`.
fn mount_of(path: &Path) -> Option<(String, String, String)> {
    let text = read("/proc/self/mountinfo");
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mount_point = unescape(left.split(' ').nth(4)?);
            let mut r = right.split(' ');
            let fs_type = r.next()?.to_string();
            let source = r.next().unwrap_or("").to_string();
            path.starts_with(&mount_point)
                .then_some((mount_point, fs_type, source))
        })
        .max_by_key(|(m, _, _)| m.len())
}

fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\134", "\\")
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
fn disk_of(major: u32, minor: u32) -> Option<String> {
    let sys = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    let disk: PathBuf = if sys.join("partition").exists() {
        sys.parent()?.to_path_buf()
    } else {
        sys
    };
    Some(disk.file_name()?.to_string_lossy().into_owned())
}

/// The system table as text lines (`key: value`).
pub fn render_text(host: &HostInfo, target: Option<&TargetInfo>) -> String {
    let mut rows = vec![
        ("Host", host.hostname.clone()),
        ("OS", host.os.clone()),
        ("Kernel", format!("{} ({})", host.kernel, host.arch)),
        ("CPU", host.cpu_model.clone()),
        ("CPUs", host.cpus.to_string()),
        (
            "Memory",
            crate::units::format_bytes_binary(host.memory_bytes as f64),
        ),
    ];
    if let Some(t) = target {
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
        rows.extend([
            ("Target", t.path.clone()),
            (
                "Filesystem",
                format!("{} on {} ({})", t.fs_type, t.mount_point, t.source),
            ),
            ("Device", opt(&t.device)),
            ("Model", opt(&t.model)),
            ("Scheduler", opt(&t.scheduler)),
            (
                "Rotational",
                t.rotational
                    .map(|r| if r { "yes" } else { "no" }.to_string())
                    .unwrap_or_else(|| "-".into()),
            ),
            (
                "Free",
                format!(
                    "{} of {}",
                    crate::units::format_bytes_binary(t.free_bytes as f64),
                    crate::units::format_bytes_binary(t.total_bytes as f64)
                ),
            ),
        ]);
    }
    rows.iter().map(|(k, v)| format!("{k:<11} {v}\n")).collect()
}
