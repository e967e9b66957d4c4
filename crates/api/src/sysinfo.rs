//! What machine and what storage a run measured: CPU, memory, kernel, and the
//! target's filesystem, device, I/O scheduler and rotational flag.

pub use crate::model::machine::{HostInfo, TargetInfo};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

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
    let disk = crate::stats::disk::disk_of(major, minor);
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
