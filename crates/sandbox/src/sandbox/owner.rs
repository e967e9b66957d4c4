//! Owner marks of run directories, and the sweep that removes directories
//! whose owner died without cleaning up (SIGKILL, OOM, power loss).
//!
//! The mark of `plumb-run-X` is the sibling file `plumb-run-X.owner`
//! holding `PID STARTTIME BOOT-ID HOSTNAME` (the start time from
//! `/proc/PID/stat`, in clock ticks since boot), so a PID reused by another
//! process is not mistaken for the owner, and on storage that several
//! machines share (a fleet's hosts over NFS) one machine never judges
//! another's runs: a mark from another host name is left alone; one from
//! this host name but an earlier boot is stale. (Marks of two fields, from
//! earlier plumbs, are judged on this machine.)

use std::io::Write;
use std::path::Path;

/// What a mark's file name ends with.
pub const MARK_SUFFIX: &str = ".owner";

/// The largest mark file read (a PID, a start time, a boot id, a host name).
const MAX_MARK: u64 = 512;

/// A process, told apart from a later one with the same PID (and, on
/// storage several machines share, from another machine's): what a mark
/// holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pid: u32,
    start: u64,
    /// The machine's boot and name, when the mark records them.
    machine: Option<Machine>,
}

/// One boot of one machine: `/proc/sys/kernel/random/boot_id` and the host
/// name (both as short, space-free words).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Machine {
    boot: String,
    host: String,
}

impl Machine {
    /// This machine, now.
    fn here() -> Option<Machine> {
        let word = |s: String| {
            let w: String = s
                .trim()
                .chars()
                .filter(|c| c.is_ascii_graphic())
                .take(64)
                .collect();
            (!w.is_empty()).then_some(w)
        };
        let boot = word(std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?)?;
        let host = word(std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?)?;
        Some(Machine { boot, host })
    }
}

/// The start time of a process (field 22 of `/proc/PID/stat`), if it exists.
fn start_time(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: the
    // fields after it start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

impl Owner {
    /// This process.
    pub fn me() -> std::io::Result<Owner> {
        let start = start_time("self")
            .ok_or_else(|| std::io::Error::other("cannot read /proc/self/stat"))?;
        Ok(Owner {
            pid: std::process::id(),
            start,
            machine: Machine::here(),
        })
    }

    /// Writes the mark; fails with `AlreadyExists` when there is one.
    pub fn write(&self, mark: &Path) -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(mark)?;
        match &self.machine {
            Some(m) => writeln!(f, "{} {} {} {}", self.pid, self.start, m.boot, m.host),
            None => writeln!(f, "{} {}", self.pid, self.start),
        }
    }

    /// The owner a mark names, if the mark is a well-formed regular file.
    pub fn read(mark: &Path) -> Option<Owner> {
        use std::io::Read;
        if !std::fs::symlink_metadata(mark).ok()?.is_file() {
            return None;
        }
        let mut text = String::new();
        std::fs::File::open(mark)
            .ok()?
            .take(MAX_MARK)
            .read_to_string(&mut text)
            .ok()?;
        let mut parts = text.split_whitespace();
        let pid = parts.next()?.parse().ok()?;
        let start = parts.next()?.parse().ok()?;
        let machine = match (parts.next(), parts.next()) {
            (None, _) => None,
            (Some(boot), Some(host)) => Some(Machine {
                boot: boot.to_string(),
                host: host.to_string(),
            }),
            (Some(_), None) => return None,
        };
        parts.next().is_none().then_some(Owner {
            pid,
            start,
            machine,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// True while the process runs (or cannot be ruled out: only a missing
    /// `/proc` entry or a different start time counts as dead).
    pub fn alive(&self) -> bool {
        if let (Some(m), Some(here)) = (&self.machine, Machine::here()) {
            if m.host != here.host {
                // Another machine's run, on shared storage: not ours to judge.
                return true;
            }
            if m.boot != here.boot {
                // This machine, before it rebooted: that process is gone.
                return false;
            }
        }
        let pid = self.pid.to_string();
        match start_time(&pid) {
            Some(start) => start == self.start,
            None => Path::new("/proc").join(&pid).exists(),
        }
    }
}

/// Removes the run directories in `target` whose owner mark names a process
/// that is gone, printing one line per directory removed on stderr.
/// A directory without a valid mark, or whose owner lives, is left alone.
pub fn sweep_stale(target: &Path) {
    let Ok(entries) = std::fs::read_dir(target) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(dir_name) = name
            .to_str()
            .and_then(|n| n.strip_suffix(MARK_SUFFIX))
            .filter(|n| n.starts_with("plumb-run-"))
        else {
            continue;
        };
        let mark = entry.path();
        let Some(owner) = Owner::read(&mark) else {
            continue;
        };
        if owner.alive() {
            continue;
        }
        let dir = target.join(dir_name);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => match std::fs::remove_dir_all(&dir) {
                Ok(()) => tracing::info!(
                    "plumb: removed stale run directory {} (its plumb process {} is gone)",
                    dir.display(),
                    owner.pid
                ),
                Err(e) => {
                    tracing::warn!(
                        "plumb: cannot remove stale run directory {}: {e}",
                        dir.display()
                    );
                    continue;
                }
            },
            // Something else under that name is not ours to remove.
            Ok(_) => continue,
            Err(_) => {}
        }
        let _ = std::fs::remove_file(&mark);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dead_owners_lose_their_directories() {
        let t = tempfile::tempdir().unwrap();
        let me = Owner::me().unwrap();
        let dead = Owner {
            pid: me.pid,
            start: me.start + 1,
            machine: me.machine.clone(),
        };
        for (name, owner) in [
            ("plumb-run-live", Some(me)),
            ("plumb-run-dead", Some(dead)),
            ("plumb-run-unmarked", None),
        ] {
            std::fs::create_dir(t.path().join(name)).unwrap();
            std::fs::write(t.path().join(name).join("f"), b"x").unwrap();
            if let Some(o) = owner {
                o.write(&t.path().join(format!("{name}{MARK_SUFFIX}")))
                    .unwrap();
            }
        }
        std::fs::write(t.path().join("plumb-run-bad.owner"), b"12 x").unwrap();
        std::fs::create_dir(t.path().join("plumb-run-bad")).unwrap();
        sweep_stale(t.path());
        let mut left: Vec<String> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "plumb-run-bad",
                "plumb-run-bad.owner",
                "plumb-run-live",
                "plumb-run-live.owner",
                "plumb-run-unmarked"
            ]
        );
    }

    /// A run directory with a mark holding `text`, under `target`.
    fn marked(target: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let dir = target.join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(target.join(format!("{name}{MARK_SUFFIX}")), text).unwrap();
        dir
    }

    #[test]
    fn sweeps_judge_only_this_machines_marks() {
        let t = tempfile::tempdir().unwrap();
        let here = Machine::here().expect("boot id and host name");
        // A PID that cannot exist (above the kernel's pid_max).
        let gone = "4194305 1";
        let other_host = marked(
            t.path(),
            "plumb-run-1-0",
            &format!("{gone} {} elsewhere-host\n", here.boot),
        );
        let old_boot = marked(
            t.path(),
            "plumb-run-2-0",
            &format!("{gone} not-this-boot {}\n", here.host),
        );
        let old_format = marked(t.path(), "plumb-run-3-0", &format!("{gone}\n"));
        let me = Owner::me().unwrap();
        let mine = t.path().join("plumb-run-4-0");
        std::fs::create_dir(&mine).unwrap();
        me.write(&t.path().join(format!("plumb-run-4-0{MARK_SUFFIX}")))
            .unwrap();
        sweep_stale(t.path());
        assert!(other_host.exists(), "another machine's run was removed");
        assert!(!old_boot.exists(), "a run from before this boot stayed");
        assert!(
            !old_format.exists(),
            "a two-field mark of a dead process stayed"
        );
        assert!(mine.exists(), "a live run was removed");
    }
}
