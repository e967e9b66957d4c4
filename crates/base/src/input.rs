//! Files the user names on the command line (result files, packs, bundles,
//! inventories, traces), opened or read with the same two guards: a
//! regular file (a FIFO would block the read), and a size bound checked
//! when opened and again while reading, however the file grows.

use std::path::Path;

/// A file named on the command line, opened to be read: followed like any
/// path the user gives, but it must be a regular file (a FIFO would block)
/// of at most `max` bytes when opened.
pub fn open_file(path: &Path, max: u64) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > max {
        return Err(format!(
            "{} bytes, larger than the limit of {max} bytes",
            meta.len()
        ));
    }
    Ok(f)
}

/// A file named on the command line (see [`open_file`]), read whole: at
/// most `max` bytes, however it grows while read.
pub fn read_file(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f = open_file(path, max)?;
    let mut bytes = Vec::new();
    f.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(format!("larger than the limit of {max} bytes"));
    }
    Ok(bytes)
}
