//! Lays out the tree a trace starts from, inside the run directory:
//! directories, and the files that existed when first touched, at their
//! size, with incompressible data. Every path goes through the sandbox
//! (lexically contained first, then resolved beneath the run directory);
//! the writing polls the stop flag and the deadline between chunks.

use super::format::{EntryKind, Trace};
use super::halt::{Guard, Halt};
use super::profile::FileUse;
use crate::sandbox::{RunDir, SandboxError};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use std::collections::HashSet;
use std::os::fd::{AsRawFd, OwnedFd};

/// A path from a trace made safe: relative, `.` and `..` resolved lexically
/// and never above the root. Empty for the root itself.
pub fn contained(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    parts.join("/")
}

/// True for ENOSPC and EDQUOT: the file system has no room left.
pub fn is_disk_full(errno: Option<i32>) -> bool {
    matches!(errno, Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

/// The halt for a failed step of the lay-out.
fn failed(what: String, errno: Option<i32>) -> Halt {
    if is_disk_full(errno) {
        Halt::DiskFull(format!("laying out {what}"))
    } else {
        Halt::Failed(format!("laying out {what}"))
    }
}

fn sandbox(e: SandboxError) -> Halt {
    let errno = e.errno();
    failed(e.to_string(), errno)
}

/// What the lay-out makes of a trace's paths before the replay.
struct Shape {
    /// Directories to make (unless under a made one).
    dirs: HashSet<String>,
    /// Directories the trace makes itself.
    made: HashSet<String>,
    /// Symlinks that existed or that the trace makes.
    links: HashSet<String>,
}

/// True when `p` or a directory above it is in `set`.
fn at_or_under(set: &HashSet<String>, p: &str) -> bool {
    let mut at = p;
    loop {
        if set.contains(at) {
            return true;
        }
        match at.rfind('/') {
            Some(i) => at = &at[..i],
            None => return false,
        }
    }
}

/// True when a directory above `p` is a symlink of `links`: `p` is
/// reached through the link, or not at all.
fn through_link(links: &HashSet<String>, p: &str) -> bool {
    p.rfind('/').is_some_and(|i| at_or_under(links, &p[..i]))
}

/// Directories: those that existed, the parents of every path that
/// existed or that the trace creates (a path only probed — a stat that
/// failed — says nothing of its parents), and whatever the trace mkdirs or
/// rmdirs. A symlink (one that existed or one the trace makes) is never
/// taken for a directory, nor is anything beneath it. `uses` says what the
/// operations do to each file (by file id).
fn shape(t: &Trace, uses: &[FileUse]) -> Shape {
    let mut dirs = HashSet::new();
    let mut made = HashSet::new();
    let use_of = |id: usize| uses.get(id).copied().unwrap_or_default();
    let links: HashSet<String> = t
        .files
        .iter()
        .enumerate()
        .filter(|(id, f)| {
            (f.kind == EntryKind::Symlink && f.size.is_some()) || use_of(*id).symlinked
        })
        .map(|(_, f)| contained(&f.path))
        .collect();
    for (id, f) in t.files.iter().enumerate() {
        if f.size.is_none() && !use_of(id).created {
            continue;
        }
        let p = contained(&f.path);
        if through_link(&links, &p) {
            continue;
        }
        if f.kind == EntryKind::Dir && f.size.is_some() && !p.is_empty() {
            dirs.insert(p.clone());
        }
        let mut at = p.as_str();
        while let Some(i) = at.rfind('/') {
            at = &at[..i];
            dirs.insert(at.to_string());
        }
    }
    for (id, f) in t.files.iter().enumerate() {
        let u = use_of(id);
        if !u.mkdir && !u.rmdir {
            continue;
        }
        let p = contained(&f.path);
        if through_link(&links, &p) {
            continue;
        }
        if u.mkdir {
            made.insert(p.clone());
        }
        dirs.insert(p);
    }
    Shape { dirs, made, links }
}

/// `p` beneath `prefix` (a client's directory, or empty for the run
/// directory itself).
fn beneath(prefix: &str, p: &str) -> String {
    match (prefix.is_empty(), p.is_empty()) {
        (true, _) => p.to_string(),
        (false, true) => prefix.to_string(),
        (false, false) => format!("{prefix}/{p}"),
    }
}

/// Makes `prefix` and each directory above it that is missing (a client's
/// directory, `clients/client3`).
pub fn make_prefix(dir: &RunDir, prefix: &str) -> Result<(), Halt> {
    let mut acc = String::new();
    for part in prefix.split('/').filter(|p| !p.is_empty()) {
        acc = beneath(&acc, part);
        if !dir.exists(&acc).map_err(sandbox)? {
            dir.mkdir(&acc).map_err(sandbox)?;
        }
    }
    Ok(())
}

/// Recreates the tree as first seen beneath `prefix` (a client's directory,
/// or empty for the run directory itself): directories (except those the
/// trace makes itself), and files that existed, at their size, with
/// incompressible data; `uses` says what the operations do to each file
/// (from the trace's [`crate::trace::profile::Profile`]). Returns (files,
/// bytes); stops with the reason when the guard halts or a step fails.
pub fn lay_out(
    t: &Trace,
    uses: &[FileUse],
    dir: &RunDir,
    guard: &Guard,
    prefix: &str,
) -> Result<(u64, u64), Halt> {
    make_prefix(dir, prefix)?;
    let Shape { dirs, made, links } = shape(t, uses);
    let under_made = |p: &str| at_or_under(&made, p);
    let mut sorted: Vec<&String> = dirs.iter().filter(|d| !under_made(d)).collect();
    sorted.sort();
    for d in sorted {
        if guard.halted() {
            return Err(guard.reason().unwrap_or(Halt::Interrupted));
        }
        let d = beneath(prefix, d);
        if !dir.exists(&d).map_err(sandbox)? {
            dir.mkdir(&d).map_err(sandbox)?;
        }
    }
    let mut rng = SmallRng::seed_from_u64(0x7ace);
    let mut chunk = vec![0u8; 1 << 20];
    let (mut files, mut bytes) = (0u64, 0u64);
    for f in &t.files {
        let p = contained(&f.path);
        let Some(size) = f.size else { continue };
        // What is beneath a link is what the link leads to: laid out under
        // its own name when the trace names it.
        if p.is_empty() || dirs.contains(&p) || under_made(&p) || through_link(&links, &p) {
            continue;
        }
        if f.kind == EntryKind::Symlink {
            // Made with its recorded target, whatever it is: the sandbox
            // never follows a link out of the run directory (a use of one
            // leading out then diverges, and says so).
            if let Some(target) = &f.target {
                dir.symlink(target, &beneath(prefix, &p)).map_err(sandbox)?;
            }
            continue;
        }
        let p = beneath(prefix, &p);
        let fd = dir
            .open(&p, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644)
            .map_err(sandbox)?;
        let mut off = 0u64;
        while off < size {
            if guard.halted() {
                return Err(guard.reason().unwrap_or(Halt::Interrupted));
            }
            rng.fill_bytes(&mut chunk);
            let n = usize::try_from(size - off).map_or(chunk.len(), |left| left.min(chunk.len()));
            pwrite_all(&fd, &chunk[..n], off)
                .map_err(|e| failed(format!("{p}: {e}"), e.raw_os_error()))?;
            off += n as u64;
        }
        files += 1;
        bytes = bytes.saturating_add(size);
    }
    Ok((files, bytes))
}

fn pwrite_all(fd: &OwnedFd, mut buf: &[u8], mut off: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        let at = i64::try_from(off).map_err(|_| std::io::Error::from_raw_os_error(libc::EFBIG))?;
        // SAFETY: valid descriptor; the length is the slice's own.
        let n = unsafe { libc::pwrite(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), at) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        }
        let n = n as usize;
        buf = buf.get(n..).unwrap_or_default();
        off += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_never_climb_out() {
        assert_eq!(contained("/etc/passwd"), "etc/passwd");
        assert_eq!(contained("../../x/../y"), "y");
        assert_eq!(contained("a/./b/../c"), "a/c");
        assert_eq!(contained("/.."), "");
    }
}
