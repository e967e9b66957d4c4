//! Files the user names on the command line (result files, packs, bundles,
//! inventories, traces), opened or read with the same two guards: a
//! regular file (a FIFO would block the read), and a size bound checked
//! when opened and again while reading, however the file grows.

use std::path::Path;

/// Why a file named on the command line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The system refused to open or read it.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A FIFO, a device, a directory.
    #[error("not a regular file")]
    NotRegular,
    /// Bigger than the bound when opened.
    #[error("{size} bytes, larger than the limit of {max} bytes")]
    TooBig {
        /// Its size when opened.
        size: u64,
        /// The bound.
        max: u64,
    },
    /// It grew past the bound while read.
    #[error("larger than the limit of {max} bytes")]
    Grew {
        /// The bound.
        max: u64,
    },
}

impl From<InputError> for String {
    /// The message, for callers whose errors are still text.
    fn from(e: InputError) -> String {
        e.to_string()
    }
}

/// A file named on the command line, opened to be read: followed like any
/// path the user gives, but it must be a regular file (a FIFO would block)
/// of at most `max` bytes when opened.
pub fn open_file(path: &Path, max: u64) -> Result<std::fs::File, InputError> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(InputError::NotRegular);
    }
    if meta.len() > max {
        return Err(InputError::TooBig {
            size: meta.len(),
            max,
        });
    }
    Ok(f)
}

/// A file named on the command line (see [`open_file`]), read whole: at
/// most `max` bytes, however it grows while read.
pub fn read_file(path: &Path, max: u64) -> Result<Vec<u8>, InputError> {
    use std::io::Read;
    let f = open_file(path, max)?;
    let mut bytes = Vec::new();
    f.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(InputError::Grew { max });
    }
    Ok(bytes)
}
