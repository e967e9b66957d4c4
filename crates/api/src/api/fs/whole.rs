//! Whole-file operations: write a file of a given size, read one to its
//! end, copy one (read/write or copy_file_range).

use super::{
    bs_arg, buf_err, percent, read_some, resident, write_all, OpenOptions, Transfer, MAX_IO,
};
use crate::api::background::{Task, TaskKind};
use crate::api::options::Bytes;
use crate::api::{os_err, ApiError, Capability, Host};
use crate::buffer::AlignedBuf;
use crate::halt::{Halt, Halted};
use crate::meter::Meter;
use crate::sandbox::Held;
use serde::Deserialize;
use std::os::fd::AsRawFd;
use std::time::Instant;

/// The block size of whole-file operations unless told otherwise: 1 MiB.
const DEFAULT_BS: Bytes = Bytes(1 << 20);

/// `fs::write_file`: blocks of `bs` (default 1 MiB), optionally O_DIRECT,
/// optionally an fdatasync at the end (counted in the time).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WriteOptions {
    /// Bytes per write.
    pub bs: Bytes,
    /// Write with O_DIRECT (the page cache bypassed).
    pub direct: bool,
    /// fdatasync before returning.
    pub fsync: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            bs: DEFAULT_BS,
            direct: false,
            fsync: false,
        }
    }
}

/// `fs::read_file`: blocks of `bs` (default 1 MiB), optionally O_DIRECT.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadOptions {
    /// Bytes per read.
    pub bs: Bytes,
    /// Read with O_DIRECT (the page cache bypassed).
    pub direct: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            bs: DEFAULT_BS,
            direct: false,
        }
    }
}

/// How `fs::copy` moves the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum CopyMethod {
    /// read(2) and write(2) through a buffer of `bs` bytes (`"read-write"`).
    #[default]
    #[serde(rename = "read-write")]
    ReadWrite,
    /// copy_file_range(2), in the kernel (`"copy_file_range"`).
    #[serde(rename = "copy_file_range")]
    CopyFileRange,
}

/// `fs::copy`: by read/write in blocks of `bs` (default 1 MiB), or by
/// copy_file_range; optionally an fdatasync of the copy at the end (`cp`
/// then `sync`), counted in the time.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CopyOptions {
    /// How the bytes move.
    pub method: CopyMethod,
    /// Bytes per read/write.
    pub bs: Bytes,
    /// fdatasync the copy before returning.
    pub fsync: bool,
}

impl Default for CopyOptions {
    fn default() -> Self {
        CopyOptions {
            method: CopyMethod::ReadWrite,
            bs: DEFAULT_BS,
            fsync: false,
        }
    }
}

impl Host {
    /// Writes a whole file of `size` bytes in blocks of `bs`, then optionally fsyncs.
    pub fn write_file(
        &mut self,
        path: &str,
        size: u64,
        o: &WriteOptions,
    ) -> Result<Transfer, ApiError> {
        let (direct, fsync) = (o.direct, o.fsync);
        let bs = bs_arg("write_file", o.bs.0)?.max(512);
        let t = Instant::now();
        // Charge first: a refused write leaves the file as it was.
        self.charge("write_file", size)?;
        let opened = self.open(
            path,
            OpenOptions {
                read: false,
                write: true,
                create: true,
                truncate: true,
                direct,
                ..Default::default()
            },
        );
        let mut f = match opened {
            Ok(f) => f,
            Err(e) => {
                // Nothing was written: the reservation goes back.
                self.refund(size);
                return Err(e);
            }
        };
        let fd = f.fd("write_file")?;
        let mut done = 0;
        while done < size {
            self.check()?;
            let n = (size - done).min(bs);
            done += f.write_block(fd, Some(done), done, n)?;
        }
        if fsync {
            f.fdatasync()?;
        }
        Ok(Transfer::measured(done, t, self.clock()))
    }

    /// Reads a whole file in blocks of `bs`.
    pub fn read_file(&mut self, path: &str, o: &ReadOptions) -> Result<Transfer, ApiError> {
        let direct = o.direct;
        let bs = bs_arg("read_file", o.bs.0)?.max(512);
        let t = Instant::now();
        let mut f = self.open(
            path,
            OpenOptions {
                read: true,
                direct,
                ..Default::default()
            },
        )?;
        // A buffered read of a file in the page cache measures memory: it
        // is marked, and noted.
        let cached = if direct {
            None
        } else {
            let fd = f.fd("read_file")?;
            let r = resident::residency(fd, f.size()?)
                .map_err(os_err(format!("read_file '{path}': mincore")))?;
            // Read front to back, as fio hints a sequential job
            // (fadvise_hint): the kernel reads ahead further. A hint the
            // kernel refuses changes nothing but the read-ahead.
            // SAFETY: an open descriptor; the whole file.
            unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_SEQUENTIAL) };
            r.cached().then(|| r.share())
        };
        let mut done = 0u64;
        loop {
            self.check()?;
            let r = f.read_at(done, bs)?;
            if r == 0 {
                break;
            }
            done += r;
        }
        let mut moved = Transfer::measured(done, t, self.clock());
        if let Some(share) = cached {
            moved.cached = true;
            self.note_once("read_file cached", &format!(
                "read_file '{path}': {} of the file was in the page cache before the read, so the figure measures memory, not the device (marked cached; fs::evict the file first, or read it with direct: true)",
                percent(share)
            ))?;
        }
        Ok(moved)
    }

    /// Copies a file with read/write in blocks of `bs`, or with
    /// copy_file_range; at most the source's size when the copy started
    /// (what the budget was charged for) is copied.
    pub fn copy(&mut self, src: &str, dst: &str, o: &CopyOptions) -> Result<Transfer, ApiError> {
        let t = Instant::now();
        let c = self.open_copy("copy", src, dst, o)?;
        let halt = self.halt();
        let (bytes, halted) = c.run(&halt, None)?;
        if let Some(why) = halted {
            return Err(self.halted(why));
        }
        Ok(Transfer::measured(bytes, t, self.clock()))
    }

    /// Starts a copy in the background (`fs::start_copy`): the same copy as
    /// [`Host::copy`], its buffer held against the scenario's buffer budget
    /// while it runs; stopped early, its result is what it copied so far.
    pub fn start_copy(
        &mut self,
        src: &str,
        dst: &str,
        o: &CopyOptions,
    ) -> Result<CopyHandle, ApiError> {
        const OP: &str = "fs::start_copy";
        let name = format!("{src} → {dst}");
        self.task_room(OP, &name, 1)?;
        self.allow(Capability::Threads(1))?;
        // The buffer is held before anything is charged or opened.
        let size = self.run_dir().stat(src)?.size;
        let bs = bs_arg(OP, o.bs.0)?;
        let lease = self.handle_budget().lease(OP, buffer_len(o, bs, size))?;
        let mut c = self.open_copy(OP, src, dst, o)?;
        // A source grown since the stat is copied in the blocks leased.
        c.bs = c.bs.min(block_len(bs, size));
        let kind = TaskKind {
            op: OP,
            on_result: |_, _| {},
            describe: |t: &Transfer| format!("{} bytes in {:.2} s", t.bytes, t.seconds()),
        };
        self.spawn_task(kind, &name, 1, move |ctx| {
            let _lease = lease;
            let t = Instant::now();
            let (bytes, _) = c.run(&ctx.halt(), Some(&ctx.meter))?;
            Ok(Transfer::measured(bytes, t, ctx.clock))
        })
    }

    /// Opens both ends of a copy and charges the source's size; the
    /// destination is emptied, and what it held given back.
    fn open_copy(
        &mut self,
        op: &'static str,
        src: &str,
        dst: &str,
        o: &CopyOptions,
    ) -> Result<Copy, ApiError> {
        let bs = bs_arg(op, o.bs.0)?;
        let from = self.run_dir().open_held(src, libc::O_RDONLY, 0)?;
        let size = from.stat().map_err(os_err(format!("{op} '{src}'")))?.size;
        self.charge(op, size)?;
        let to = self
            .run_dir()
            .open_held(dst, libc::O_WRONLY | libc::O_CREAT, 0o644)
            .map_err(ApiError::from)
            .and_then(|to| self.empty(op, to.as_raw_fd(), dst).map(|()| to));
        let to = match to {
            Ok(to) => to,
            Err(e) => {
                // Nothing was written: the charge goes back.
                self.refund(size);
                return Err(e);
            }
        };
        Ok(Copy {
            from,
            to,
            size,
            method: o.method,
            bs: block_len(bs, size),
            fsync: o.fsync,
            names: (src.to_string(), dst.to_string()),
        })
    }
}

/// Bytes per read/write of a copy of `size` bytes asked in blocks of `bs`:
/// 4 KiB to 64 MiB, and no more than the file (rounded up to 4 KiB).
fn block_len(bs: u64, size: u64) -> usize {
    bs.clamp(4096, MAX_IO).min(size.max(4096)) as usize
}

/// The buffer a copy with options `o` of `size` bytes holds while it runs.
fn buffer_len(o: &CopyOptions, bs: u64, size: u64) -> u64 {
    match o.method {
        CopyMethod::CopyFileRange => 0,
        // The memory the buffer takes (whole huge pages for a big one).
        CopyMethod::ReadWrite => crate::buffer::footprint(block_len(bs, size)) as u64,
    }
}

/// A copy with both ends open, ready to run.
#[derive(Debug)]
struct Copy {
    /// Both ends are held, so removing either while the copy runs gives
    /// its bytes back only when the copy has closed it.
    from: Held,
    to: Held,
    /// Bytes to copy: the source's size when opened.
    size: u64,
    method: CopyMethod,
    /// Bytes per read/write (read-write method).
    bs: usize,
    /// fdatasync the copy at the end.
    fsync: bool,
    names: (String, String),
}

impl Copy {
    /// Copies until the end or until `halt`; the bytes copied, and why it
    /// stopped early if it did. Each block read and written is counted in
    /// `meter` (direction 0 read, 1 written).
    fn run(&self, halt: &Halt, meter: Option<&Meter>) -> Result<(u64, Option<Halted>), ApiError> {
        let (src, dst) = (&self.names.0, &self.names.1);
        let (from_fd, to_fd) = (self.from.as_raw_fd(), self.to.as_raw_fd());
        let size = self.size;
        let mut done = 0u64;
        let count = |n: u64| {
            if let Some(m) = meter {
                m.add(0, 1, n);
                m.add(1, 1, n);
            }
        };
        if self.method == CopyMethod::CopyFileRange {
            while done < size {
                if let Err(why) = halt.check() {
                    return Ok((done, Some(why)));
                }
                // Chunks of at most 64 MiB, so a stop is seen between them.
                // SAFETY: valid descriptors; null offsets use the file positions.
                let r = unsafe {
                    libc::copy_file_range(
                        from_fd,
                        std::ptr::null_mut(),
                        to_fd,
                        std::ptr::null_mut(),
                        (size - done).min(MAX_IO) as usize,
                        0,
                    )
                };
                if r < 0 {
                    return Err(os_err(format!("copy '{src}' to '{dst}'"))(
                        std::io::Error::last_os_error(),
                    ));
                }
                if r == 0 {
                    break;
                }
                done += r as u64;
                count(r as u64);
            }
        } else {
            let mut buf = AlignedBuf::zeroed(self.bs).map_err(buf_err("copy"))?;
            while done < size {
                if let Err(why) = halt.check() {
                    return Ok((done, Some(why)));
                }
                let want = (size - done).min(self.bs as u64) as usize;
                let chunk = buf.prefix_mut(want).map_err(buf_err("copy"))?;
                let r = read_some(from_fd, chunk, None, &format!("copy: read '{src}'"))?;
                if r == 0 {
                    break;
                }
                // r <= chunk.len().
                let data = &chunk[..r as usize];
                write_all(to_fd, data, None, &format!("copy: write '{dst}'"))?;
                done += r;
                count(r);
            }
        }
        if self.fsync {
            if let Err(why) = halt.check() {
                return Ok((done, Some(why)));
            }
            // SAFETY: a valid descriptor.
            if unsafe { libc::fdatasync(to_fd) } != 0 {
                return Err(os_err(format!("copy: fdatasync '{dst}'"))(
                    std::io::Error::last_os_error(),
                ));
            }
        }
        Ok((done, None))
    }
}

/// A copy running in the background, as scripts and guests hold it.
pub type CopyHandle = Task<Transfer>;
