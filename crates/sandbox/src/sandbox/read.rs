//! Reading a file of a folder (a pack) without following a symlink out.

use super::open::{openat2, RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS};
use super::sys::cstr;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Why a file of a folder (a pack) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A symlink on the way, or a name leading out of the folder.
    #[error("it must be a file inside the folder, reached without symlinks")]
    NotBeneath,
    /// Not a regular file (a FIFO, a device, a directory).
    #[error("it is not a regular file")]
    NotRegular,
    /// Bigger than the bound.
    #[error("it is larger than the limit of {limit} bytes")]
    TooBig {
        /// The bound in bytes.
        limit: u64,
    },
    /// The operating system refused.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads the regular file `rel` inside the directory `dir` — never through
/// a symlink (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), never blocking on a
/// FIFO, and at most `limit` bytes (checked before reading, and while reading).
pub fn read_beneath(dir: &Path, rel: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let root = std::fs::File::open(dir)?;
    let c = cstr(rel.as_bytes())?;
    let fd = loop {
        match openat2(
            root.as_raw_fd(),
            &c,
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
            0,
            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        ) {
            Ok(fd) => break fd,
            Err(e) => match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => continue,
                Some(libc::EXDEV) | Some(libc::ELOOP) => return Err(ReadError::NotBeneath),
                _ => return Err(e.into()),
            },
        }
    };
    let file = std::fs::File::from(fd);
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular);
    }
    if meta.len() > limit {
        return Err(ReadError::TooBig { limit });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooBig { limit });
    }
    Ok(bytes)
}
