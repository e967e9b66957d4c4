//! fio's file operation engines: `filecreate` (create each file), `filestat`
//! (stat it: `stat_type=`), `filedelete` (unlink it). The operation happens
//! on the first I/O to a file and is what the engine times
//! ([`IoEngine::op_latency`]); the I/Os themselves move no data and count
//! their length, as fio's `FIO_FAKEIO` engines: a 4 KiB file at `bs=4k`
//! is one operation and one I/O of 4 KiB. fio reports them in the job's
//! direction (reads unless the job only writes), with the operation's
//! latency as completion latency and no total latency.

use super::{Completion, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest};
use crate::files::{FilePlan, FileSpace};
use crate::job::spec::StatType;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::time::Instant;

/// Registry entry of `filecreate`: the files are not laid out before.
pub const FILECREATE: EngineInfo = EngineInfo {
    name: "filecreate",
    caps: EngineCaps {
        is_async: false,
        diskless: true,
        by_path: true,
        own_latency: true,
    },
    create: create::<CREATE>,
};

/// Registry entry of `filestat`.
pub const FILESTAT: EngineInfo = EngineInfo {
    name: "filestat",
    caps: EngineCaps {
        is_async: false,
        diskless: false,
        by_path: true,
        own_latency: true,
    },
    create: create::<STAT>,
};

/// Registry entry of `filedelete`.
pub const FILEDELETE: EngineInfo = EngineInfo {
    name: "filedelete",
    caps: EngineCaps {
        is_async: false,
        diskless: false,
        by_path: true,
        own_latency: true,
    },
    create: create::<DELETE>,
};

/// The operations, as the engine's const parameter.
const CREATE: u8 = 0;
const STAT: u8 = 1;
const DELETE: u8 = 2;

struct FileOps<const OP: u8> {
    plans: Vec<FilePlan>,
    /// Per file: its operation is done.
    done: Vec<bool>,
    /// `filestat`'s call, and each file's name for it.
    stat_type: StatType,
    names: Vec<CString>,
    /// The latency of the last request's operation.
    last: Option<u64>,
}

fn create<const OP: u8>(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    let names = setup
        .paths
        .iter()
        .map(|p| {
            CString::new(p.path.as_os_str().as_bytes()).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("file name {} holds a NUL byte", p.path.display()),
                )
            })
        })
        .collect::<io::Result<Vec<_>>>()?;
    if OP == STAT && setup.paths.iter().any(|p| p.space.is_sandboxed()) {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "ioengine=filestat works on plain paths (plumb fio), not inside a run directory",
        ));
    }
    Ok(Box::new(FileOps::<OP> {
        done: vec![false; setup.paths.len()],
        plans: setup.paths,
        stat_type: setup.options.stat_type,
        names,
        last: None,
    }))
}

impl<const OP: u8> FileOps<OP> {
    /// Performs file `i`'s operation: `Err(errno)` when it fails.
    fn operate(&self, i: usize) -> Result<(), i32> {
        let plan = &self.plans[i];
        let errno = |e: io::Error| e.raw_os_error().unwrap_or(libc::EIO);
        match OP {
            CREATE => plan
                .space
                .open(&plan.path, libc::O_CREAT | libc::O_RDWR, 0o600)
                .map(drop)
                .map_err(|e| space_errno(&e)),
            STAT => stat(&self.names[i], self.stat_type).map_err(errno),
            _ => match &plan.space {
                FileSpace::Host => {
                    // SAFETY: a NUL-terminated path.
                    if unsafe { libc::unlink(self.names[i].as_ptr()) } == 0 {
                        Ok(())
                    } else {
                        Err(errno(io::Error::last_os_error()))
                    }
                }
                FileSpace::Sandboxed(_) => {
                    plan.space.remove(&plan.path).map_err(|e| space_errno(&e))
                }
            },
        }
    }
}

/// The errno behind a file space error (EIO when it has none).
fn space_errno(e: &crate::files::SpaceError) -> i32 {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            if let Some(n) = io.raw_os_error() {
                return n;
            }
        }
        source = s.source();
    }
    libc::EIO
}

/// One `stat`, `lstat` or `statx` of `path`.
fn stat(path: &CString, kind: StatType) -> io::Result<()> {
    // SAFETY: a NUL-terminated path and buffers of the calls' own types.
    let r = unsafe {
        match kind {
            StatType::Stat => {
                let mut st: libc::stat = std::mem::zeroed();
                libc::stat(path.as_ptr(), &mut st)
            }
            StatType::Lstat => {
                let mut st: libc::stat = std::mem::zeroed();
                libc::lstat(path.as_ptr(), &mut st)
            }
            StatType::Statx => {
                let mut st: libc::statx = std::mem::zeroed();
                libc::statx(libc::AT_FDCWD, path.as_ptr(), 0, libc::STATX_ALL, &mut st)
            }
        }
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl<const OP: u8> IoEngine for FileOps<OP> {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        super::request_file(&self.plans, req.file)?;
        let i = req.file as usize;
        self.last = None;
        if self.done[i] {
            return Ok(Some(i64::from(req.len)));
        }
        let t = Instant::now();
        let r = self.operate(i);
        self.last = Some(u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX));
        self.done[i] = true;
        Ok(Some(match r {
            Ok(()) => i64::from(req.len),
            Err(errno) => -i64::from(errno),
        }))
    }

    fn submit(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, _max: u32, _out: &mut Vec<Completion>) -> io::Result<()> {
        Ok(())
    }

    fn op_latency(&mut self) -> Option<u64> {
        self.last
    }
}
