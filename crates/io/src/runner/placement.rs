//! Places a job thread as its placement options say (fio's
//! `thread_main` set-up): CPU affinity (`cpus_allowed`, `cpumask`, split
//! per thread with `cpus_allowed_policy=split`), NUMA (`numa_cpu_nodes`,
//! `numa_mem_policy`), I/O priority (`prio`, `prioclass`) and `nice`.
//!
//! plumb's job threads are threads of one process, and every call here
//! acts on the calling thread only (`sched_setaffinity`, `set_mempolicy`,
//! `ioprio_set` and `setpriority` with the thread's id): call [`apply`]
//! first thing in the job's thread, before its buffers are allocated, so
//! the memory policy covers them. NUMA goes through the kernel's own
//! system calls (no libnuma), with nodes and their CPUs read from sysfs.

use crate::job::spec::{CpusPolicy, MemPolicy, Placement};
use std::io;

/// Most CPUs (and NUMA nodes) a set may name: glibc's `CPU_SETSIZE`.
pub const MAX_CPUS: u32 = 1024;

/// `ioprio_set`'s "which" for one thread (the kernel's IOPRIO_WHO_PROCESS).
const IOPRIO_WHO_PROCESS: libc::c_int = 1;
/// Where the class sits in an I/O priority value.
const IOPRIO_CLASS_SHIFT: u32 = 13;
/// The best-effort class, taken when only a level is given (as fio).
const IOPRIO_CLASS_BE: u32 = 2;

/// The CPUs the system is configured with (online or not), at most [`MAX_CPUS`].
pub fn configured_cpus() -> u32 {
    // SAFETY: a plain sysconf query.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    u32::try_from(n).unwrap_or(1).clamp(1, MAX_CPUS)
}

/// The NUMA nodes online (`/sys/devices/system/node/online`); node 0 alone
/// when the kernel has no NUMA support.
pub fn online_nodes() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/node/online")
        .ok()
        .and_then(|t| parse_list(t.trim(), MAX_CPUS).ok())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| vec![0])
}

/// The CPUs of NUMA node `node`, from sysfs (all configured CPUs for node
/// 0 on a kernel without NUMA support).
pub fn node_cpus(node: u32) -> io::Result<Vec<u32>> {
    match std::fs::read_to_string(format!("/sys/devices/system/node/node{node}/cpulist")) {
        Ok(t) => parse_list(t.trim(), MAX_CPUS).map_err(io::Error::other),
        Err(_) if node == 0 && !std::path::Path::new("/sys/devices/system/node").exists() => {
            Ok((0..configured_cpus()).collect())
        }
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("NUMA node {node}: cannot read its CPUs: {e}"),
        )),
    }
}

/// A list like `0-3,6` (fio's CPU and node lists): numbers and ranges
/// separated by commas, each below `limit`; sorted, without repeats.
pub fn parse_list(text: &str, limit: u32) -> Result<Vec<u32>, String> {
    let mut set = vec![false; limit as usize];
    for part in text.split(',').map(str::trim) {
        if part.is_empty() {
            return Err("an empty entry in the list".into());
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let num = |s: &str| -> Result<u32, String> {
            let n: u64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
            if n >= u64::from(limit) {
                return Err(format!("{n} is beyond the last one here ({})", limit - 1));
            }
            Ok(n as u32)
        };
        let (lo, hi) = (num(lo)?, num(hi)?);
        if lo > hi {
            return Err(format!("'{part}': the range runs backwards"));
        }
        for i in lo..=hi {
            set[i as usize] = true;
        }
    }
    Ok((0..limit).filter(|&i| set[i as usize]).collect())
}

/// Places the calling thread, which is thread number `thread` (0-based)
/// of the run, as `p` says. An error names the option whose call failed.
pub fn apply(p: &Placement, thread: u32) -> io::Result<()> {
    if p.is_default() {
        return Ok(());
    }
    let named = |option: &str, e: io::Error| io::Error::new(e.kind(), format!("{option}: {e}"));
    if let Some(cpus) = &p.cpus {
        let mine: Vec<u32> = match p.cpus_policy {
            CpusPolicy::Shared => cpus.clone(),
            CpusPolicy::Split => cpus
                .get(thread as usize % cpus.len().max(1))
                .map(|c| vec![*c])
                .unwrap_or_default(),
        };
        set_affinity(&mine).map_err(|e| named("cpus_allowed", e))?;
    }
    if let Some(nodes) = &p.numa_cpu_nodes {
        nodes_exist(nodes).map_err(|e| named("numa_cpu_nodes", e))?;
        let mut cpus = Vec::new();
        for n in nodes {
            cpus.extend(node_cpus(*n).map_err(|e| named("numa_cpu_nodes", e))?);
        }
        set_affinity(&cpus).map_err(|e| named("numa_cpu_nodes", e))?;
    }
    if let Some(policy) = &p.numa_mem_policy {
        let nodes = match policy {
            MemPolicy::Prefer(n) => std::slice::from_ref(n),
            MemPolicy::Bind(v) | MemPolicy::Interleave(v) => v.as_slice(),
            MemPolicy::Default | MemPolicy::Local => &[],
        };
        nodes_exist(nodes).map_err(|e| named("numa_mem_policy", e))?;
        set_mem_policy(policy).map_err(|e| named("numa_mem_policy", e))?;
    }
    if p.prio.is_some() || p.prioclass.is_some() {
        set_ioprio(p.prioclass.unwrap_or(0), p.prio.unwrap_or(0)).map_err(|e| named("prio", e))?;
    }
    if let Some(inc) = p.nice {
        add_nice(inc).map_err(|e| named("nice", e))?;
    }
    Ok(())
}

/// An error naming the first of `nodes` that is not online.
fn nodes_exist(nodes: &[u32]) -> io::Result<()> {
    let online = online_nodes();
    match nodes.iter().find(|n| !online.contains(n)) {
        None => Ok(()),
        Some(n) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "NUMA node {n} does not exist here (online: {})",
                online
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        )),
    }
}

/// Binds the calling thread to `cpus`.
fn set_affinity(cpus: &[u32]) -> io::Result<()> {
    if cpus.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no CPU to run on",
        ));
    }
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET is given indices
    // below MAX_CPUS (CPU_SETSIZE), and sched_setaffinity reads the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c < MAX_CPUS {
                libc::CPU_SET(c as usize, &mut set);
            }
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Sets the calling thread's NUMA memory policy (`set_mempolicy(2)`).
fn set_mem_policy(policy: &MemPolicy) -> io::Result<()> {
    const WORDS: usize = MAX_CPUS as usize / 64;
    let mut mask = [0u64; WORDS];
    let mut mark = |nodes: &[u32]| {
        for &n in nodes {
            if let Some(w) = mask.get_mut(n as usize / 64) {
                *w |= 1 << (n % 64);
            }
        }
    };
    let mode = match policy {
        MemPolicy::Default => libc::MPOL_DEFAULT,
        MemPolicy::Prefer(n) => {
            mark(&[*n]);
            libc::MPOL_PREFERRED
        }
        MemPolicy::Bind(nodes) => {
            mark(nodes);
            libc::MPOL_BIND
        }
        MemPolicy::Interleave(nodes) => {
            mark(nodes);
            libc::MPOL_INTERLEAVE
        }
        MemPolicy::Local => libc::MPOL_LOCAL,
    };
    let empty = mask.iter().all(|w| *w == 0);
    let (ptr, maxnode) = if empty {
        (std::ptr::null(), 0)
    } else {
        (mask.as_ptr(), (WORDS * 64 + 1) as libc::c_ulong)
    };
    // SAFETY: the mask outlives the call and holds maxnode - 1 bits.
    let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, maxnode) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets the calling thread's I/O priority: `class` (0 means best effort,
/// as fio) and `level`.
fn set_ioprio(class: u32, level: u32) -> io::Result<()> {
    let class = if class == 0 { IOPRIO_CLASS_BE } else { class };
    let value = (class << IOPRIO_CLASS_SHIFT) | level;
    // SAFETY: a plain system call on the calling thread (who = 0).
    let r = unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, value) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Adds `inc` to the calling thread's nice value (fio's `nice(2)`, which
/// on Linux acts on the calling thread), kept within -20..=19.
fn add_nice(inc: i32) -> io::Result<()> {
    // SAFETY: plain priority calls on this thread's id; errno is cleared
    // first because -1 is a valid priority.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if now == -1 && *libc::__errno_location() != 0 {
            return Err(io::Error::last_os_error());
        }
        let want = now.saturating_add(inc).clamp(-20, 19);
        if libc::setpriority(libc::PRIO_PROCESS, tid, want) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_like_fios() {
        assert_eq!(parse_list("0-3,6", 8), Ok(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_list("1,1,0", 8), Ok(vec![0, 1]));
        for bad in ["", "a", "3-1", "0,,1", "8", "0-99999999999", "-1", "1-"] {
            assert!(parse_list(bad, 8).is_err(), "{bad:?}");
        }
    }

    /// Each call acts on its own thread, and reads back as set.
    #[test]
    fn a_thread_is_placed_and_others_are_not() {
        let p = Placement {
            cpus: Some(vec![0, 1]),
            cpus_policy: CpusPolicy::Split,
            numa_mem_policy: Some(MemPolicy::Bind(vec![0])),
            prio: Some(5),
            prioclass: Some(2),
            nice: Some(3),
            ..Placement::default()
        };
        let (cpu, mode, prio, nice) = std::thread::spawn(move || {
            apply(&p, 3).unwrap();
            // SAFETY: plain queries on this thread.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
                let cpus: Vec<usize> = (0..4).filter(|&c| libc::CPU_ISSET(c, &set)).collect();
                let mut mode: libc::c_int = -1;
                let mut mask = [0u64; 16];
                libc::syscall(
                    libc::SYS_get_mempolicy,
                    &mut mode,
                    mask.as_mut_ptr(),
                    1025usize,
                    0usize,
                    0usize,
                );
                let prio = libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);
                let nice = libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t);
                (cpus, mode, prio, nice)
            }
        })
        .join()
        .unwrap();
        // Thread 3 of a split over CPUs 0 and 1 gets CPU 1.
        let want_cpu = if configured_cpus() > 1 {
            vec![1]
        } else {
            vec![]
        };
        if !want_cpu.is_empty() {
            assert_eq!(cpu, want_cpu);
        }
        assert_eq!(mode, libc::MPOL_BIND);
        assert_eq!(prio, (2 << 13) | 5);
        assert_eq!(nice, 3);
        // SAFETY: a plain query on this thread, which was left alone.
        let here = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) };
        assert_ne!(here, (2 << 13) | 5);
    }
}
