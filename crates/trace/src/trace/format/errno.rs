//! Error numbers as a trace writes them: the symbolic name strace prints
//! (`ENOENT`), or `E<number>` for one this table does not name.

use super::error::{shown, ParseError};

/// The errno values applications commonly see from file system calls.
const NAMES: &[(i32, &str)] = &[
    (libc::EPERM, "EPERM"),
    (libc::ENOENT, "ENOENT"),
    (libc::EINTR, "EINTR"),
    (libc::EIO, "EIO"),
    (libc::ENXIO, "ENXIO"),
    (libc::EBADF, "EBADF"),
    (libc::EAGAIN, "EAGAIN"),
    (libc::ENOMEM, "ENOMEM"),
    (libc::EACCES, "EACCES"),
    (libc::EBUSY, "EBUSY"),
    (libc::EEXIST, "EEXIST"),
    (libc::EXDEV, "EXDEV"),
    (libc::ENODEV, "ENODEV"),
    (libc::ENOTDIR, "ENOTDIR"),
    (libc::EISDIR, "EISDIR"),
    (libc::EINVAL, "EINVAL"),
    (libc::ENFILE, "ENFILE"),
    (libc::EMFILE, "EMFILE"),
    (libc::ETXTBSY, "ETXTBSY"),
    (libc::EFBIG, "EFBIG"),
    (libc::ENOSPC, "ENOSPC"),
    (libc::ESPIPE, "ESPIPE"),
    (libc::EROFS, "EROFS"),
    (libc::EMLINK, "EMLINK"),
    (libc::ERANGE, "ERANGE"),
    (libc::ENAMETOOLONG, "ENAMETOOLONG"),
    (libc::ENOSYS, "ENOSYS"),
    (libc::ENOTEMPTY, "ENOTEMPTY"),
    (libc::ELOOP, "ELOOP"),
    (libc::ENODATA, "ENODATA"),
    (libc::EOVERFLOW, "EOVERFLOW"),
    (libc::EOPNOTSUPP, "EOPNOTSUPP"),
    (libc::EDQUOT, "EDQUOT"),
    (libc::ESTALE, "ESTALE"),
];

/// The largest errno a trace may name (Linux's are below 4096).
const MAX_ERRNO: i32 = 4095;

/// The name of `errno` as a trace writes it.
pub fn name(errno: i32) -> String {
    match NAMES.iter().find(|(n, _)| *n == errno) {
        Some((_, s)) => (*s).to_string(),
        None => format!("E{errno}"),
    }
}

/// The errno a trace names: a symbolic name of the table or `E<number>`.
pub fn parse(s: &str) -> Result<i32, ParseError> {
    if let Some((n, _)) = NAMES.iter().find(|(_, name)| *name == s) {
        return Ok(*n);
    }
    match s.strip_prefix('E').map(str::parse::<i32>) {
        Some(Ok(n)) if (1..=MAX_ERRNO).contains(&n) => Ok(n),
        _ => Err(ParseError::Errno(shown(s))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for e in [libc::ENOENT, libc::EEXIST, 200, 1] {
            assert_eq!(parse(&name(e)).unwrap(), e);
        }
        assert_eq!(name(libc::ENOENT), "ENOENT");
        for bad in ["E0", "E4096", "E-1", "ENOPE", "", "E"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
