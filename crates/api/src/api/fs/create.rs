//! The create storm: many files made at once, the loop of fs_mark. Each
//! file is opened (`O_CREAT | O_TRUNC`), written in calls of `write_size`
//! bytes, optionally fsynced before it is closed (fs_mark's `-S 1`), by
//! `threads` threads sharing the directory (`-t`), spread round robin over
//! `dirs` subdirectories (`-D`, named `00`, `01`, … as fs_mark names them).

use super::{data_buffer, write_all, Storm};
use crate::api::options::Bytes;
use crate::api::{os_err, ApiError, Capability, Host};
use crate::halt::Halted;
use serde::Deserialize;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The default bytes per write call, and the pattern's length: files are
/// the same incompressible pattern repeated.
pub const CREATE_CHUNK: u64 = 1 << 20;

/// Most threads one storm starts.
pub const MAX_CREATE_THREADS: u32 = 256;

/// Most subdirectories one storm spreads its files over.
pub const MAX_CREATE_DIRS: u32 = 10_000;

/// Files between two polls of the deadline and the stop flag.
const POLL_EVERY: u64 = 64;

/// `fs::create_files` options, fs_mark's knobs; the defaults are the plain
/// storm (one thread, 1 MiB writes, no fsync, no subdirectories).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CreateOptions {
    /// Threads creating files at once, the files dealt out among them
    /// (fs_mark `-t`; its `-n` is per thread, `count` here is the total).
    pub threads: u32,
    /// Bytes per write call (fs_mark `-w`, 16 KiB there), 1 to 1 MiB.
    pub write_size: Bytes,
    /// fsync each file before closing it (fs_mark `-S 1`; `-S 0` without).
    pub fsync: bool,
    /// Subdirectories `00`, `01`, … the files go to in turn (fs_mark
    /// `-D`); 0 puts them in `dir` itself. Made before the timing starts.
    pub dirs: u32,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            threads: 1,
            write_size: Bytes(CREATE_CHUNK),
            fsync: false,
            dirs: 0,
        }
    }
}

impl CreateOptions {
    /// Refuses values outside the bounds, naming the option.
    fn validate(&self) -> Result<(), ApiError> {
        let bad = |what: String| Err(ApiError::Invalid(format!("fs::create_files: {what}")));
        if !(1..=MAX_CREATE_THREADS).contains(&self.threads) {
            return bad(format!(
                "threads {} is not from 1 to {MAX_CREATE_THREADS}",
                self.threads
            ));
        }
        if !(1..=CREATE_CHUNK).contains(&self.write_size.0) {
            return bad(format!(
                "write_size {} is not from 1 byte to {CREATE_CHUNK}",
                self.write_size.0
            ));
        }
        if self.dirs > MAX_CREATE_DIRS {
            return bad(format!("dirs {} is more than {MAX_CREATE_DIRS}", self.dirs));
        }
        Ok(())
    }
}

/// Why a worker stopped before its share was done.
enum Stopped {
    Halted(Halted),
    Failed(ApiError),
    /// Another worker failed or stopped first.
    Aborted,
}

impl Host {
    /// Creates `count` files of `size` bytes in `dir` (made if missing),
    /// named `f00000000`, `f00000001`, …; the whole size is charged to the
    /// budget first. The time is from the first open to the last close.
    pub fn create_files(
        &mut self,
        dir: &str,
        count: u64,
        size: u64,
        o: &CreateOptions,
    ) -> Result<Storm, ApiError> {
        o.validate()?;
        let threads = u64::from(o.threads).min(count.max(1));
        self.allow(Capability::Threads(threads as u32))?;
        self.reserve_storm(dir, count, size, o)?;
        self.make_storm_dirs(dir, o.dirs)?;
        let chunk_len = size.clamp(1, o.write_size.0);
        let buf = data_buffer("create_files", chunk_len, false)?;
        let chunk = &buf.as_slice()[..chunk_len as usize];
        let halt = self.halt();
        let abort = AtomicBool::new(false);
        let run_dir = self.run_dir();
        let worker = |first: u64| -> Result<(), Stopped> {
            let mut i = first;
            while i < count {
                if abort.load(Ordering::Relaxed) {
                    return Err(Stopped::Aborted);
                }
                if (i / threads).is_multiple_of(POLL_EVERY) {
                    halt.check().map_err(Stopped::Halted)?;
                }
                let name = match o.dirs {
                    0 => format!("{dir}/f{i:08}"),
                    d => format!("{dir}/{:02}/f{i:08}", i % u64::from(d)),
                };
                create_one(run_dir, &name, size, chunk, o.fsync, &halt)?;
                i += threads;
            }
            Ok(())
        };
        let t = Instant::now();
        let outcomes = run_workers(threads, &worker, &abort);
        let storm = Storm::measured(count, t, self.clock());
        // The first real reason wins over the others' "aborted".
        let mut aborted = false;
        for outcome in outcomes {
            match outcome {
                Ok(()) => {}
                Err(Stopped::Failed(e)) => return Err(e),
                Err(Stopped::Halted(h)) => return Err(self.halted(h)),
                Err(Stopped::Aborted) => aborted = true,
            }
        }
        if aborted {
            return Err(ApiError::Failed {
                op: "fs::create_files",
                message: "a worker stopped without saying why".into(),
            });
        }
        Ok(storm)
    }

    /// Charges a storm's bytes, then checks that its files and directories
    /// fit the byte and inode budgets before the first is made (they are
    /// charged as they are made, by the run directory); refunds the bytes
    /// when they do not.
    fn reserve_storm(
        &mut self,
        dir: &str,
        count: u64,
        size: u64,
        o: &CreateOptions,
    ) -> Result<(), ApiError> {
        let charge = count.checked_mul(size).ok_or_else(|| {
            ApiError::Invalid(format!(
                "create_files '{dir}': {count} files of {size} bytes is more bytes than can be counted"
            ))
        })?;
        self.charge("create_files", charge)?;
        let inodes = count.saturating_add(u64::from(o.dirs));
        let each = crate::sandbox::INODE_BYTES + crate::sandbox::entry_bytes(b"f00000000");
        let meta = inodes.saturating_mul(each);
        if let Err(e) = self
            .workspace()
            .account()
            .fits("create_files", meta, inodes)
        {
            self.refund(charge);
            return Err(e.into());
        }
        Ok(())
    }

    /// Makes `dir` and its `dirs` subdirectories `00`, `01`, … where missing.
    fn make_storm_dirs(&mut self, dir: &str, dirs: u32) -> Result<(), ApiError> {
        if !self.run_dir().exists(dir)? {
            self.mkdir(dir)?;
        }
        for d in 0..dirs {
            let sub = format!("{dir}/{d:02}");
            if !self.run_dir().exists(&sub)? {
                self.mkdir(&sub)?;
            }
        }
        Ok(())
    }
}

/// Runs `worker(k)` on `threads` threads, each under the run's thread cap;
/// one that cannot start or fails sets `abort` so the others stop. Each
/// thread's outcome, in order.
fn run_workers<F>(threads: u64, worker: &F, abort: &AtomicBool) -> Vec<Result<(), Stopped>>
where
    F: Fn(u64) -> Result<(), Stopped> + Sync,
{
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let started =
                    crate::gate::thread(format!("create-{k}")).spawn_scoped(s, move || {
                        let r = worker(k);
                        if r.is_err() {
                            abort.store(true, Ordering::Relaxed);
                        }
                        r
                    });
                if started.is_err() {
                    abort.store(true, Ordering::Relaxed);
                }
                started
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    Err(Stopped::Failed(ApiError::Failed {
                        op: "fs::create_files",
                        message: "a worker thread panicked".into(),
                    }))
                }),
                Err(e) => Err(Stopped::Failed(ApiError::Failed {
                    op: "fs::create_files",
                    message: format!("a worker thread could not start: {e}"),
                })),
            })
            .collect()
    })
}

/// Makes one file: open, write `size` bytes in `chunk`-sized calls,
/// optionally fsync, close.
fn create_one(
    run_dir: &crate::sandbox::RunDir,
    name: &str,
    size: u64,
    chunk: &[u8],
    fsync: bool,
    halt: &crate::halt::Halt,
) -> Result<(), Stopped> {
    let fd = run_dir
        .open(name, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644)
        .map_err(|e| Stopped::Failed(e.into()))?;
    let what = format!("create_files '{name}'");
    let mut done = 0u64;
    let mut calls = 0u64;
    while done < size {
        calls += 1;
        if calls.is_multiple_of(1024) {
            halt.check().map_err(Stopped::Halted)?;
        }
        let n = (size - done).min(chunk.len() as u64) as usize;
        done += write_all(fd.as_raw_fd(), &chunk[..n], None, &what).map_err(Stopped::Failed)?;
    }
    // SAFETY: a plain syscall on a descriptor owned here.
    if fsync && unsafe { libc::fsync(fd.as_raw_fd()) } != 0 {
        return Err(Stopped::Failed(os_err(format!(
            "create_files: fsync '{name}'"
        ))(std::io::Error::last_os_error())));
    }
    Ok(())
}
