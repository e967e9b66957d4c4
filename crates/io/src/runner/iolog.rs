//! fio's iolog version 2 written as a job runs (`write_iolog=`), the file
//! `plumb trace import` and fio's `read_iolog=` read back.

use std::fs::File;
use std::io::{BufWriter, Write};

/// Creates (or empties) a file the runner writes by a name the job gives
/// (an iolog, a log, a verify dump), as fio replaces it, but never through
/// a symlink in its place (the current directory may be one others can
/// write).
pub(super) fn create_replacing(path: &str) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Writes fio's iolog v2 for one job clone (`write_iolog=`): the files
/// added and opened first, then one line per I/O issued or sync made, then
/// the closes.
pub struct IologWriter {
    out: BufWriter<File>,
}

impl IologWriter {
    /// Creates the log at `path` (clone 0) or `path.N` (clone N, so clones
    /// never share a file) and writes the header, an `add` and an `open`
    /// line per file.
    pub fn create(path: &str, clone: u32, files: &[String]) -> std::io::Result<IologWriter> {
        let path = if clone == 0 {
            path.to_string()
        } else {
            format!("{path}.{clone}")
        };
        let file = create_replacing(&path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("write_iolog '{path}': {e}")))?;
        let mut out = BufWriter::new(file);
        writeln!(out, "fio version 2 iolog")?;
        for f in files {
            writeln!(out, "{f} add")?;
        }
        for f in files {
            writeln!(out, "{f} open")?;
        }
        Ok(IologWriter { out })
    }

    /// One `file action offset length` line (`read`, `write`, `sync`,
    /// `datasync`); a failed write is dropped, as the log is only a record.
    pub fn log(&mut self, file: &str, action: &str, offset: u64, len: u64) {
        let _ = writeln!(self.out, "{file} {action} {offset} {len}");
    }

    /// Writes a `close` line per file and flushes the log.
    pub fn close(mut self, files: &[String]) -> std::io::Result<()> {
        for f in files {
            writeln!(self.out, "{f} close")?;
        }
        self.out.flush()
    }
}
