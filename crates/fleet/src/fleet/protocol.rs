//! What the driver and the remote agent say to each other over one ssh
//! session: header lines, then counted bytes. stdin carries the payload
//! (then stays open: its end tells the agent to stop); stdout carries the
//! agent's start line, the run's progress line by line, and at the end the
//! result document; stderr is ssh's and the agent's own.
//!
//! Both sides bound everything: line lengths, payload and result sizes.

use std::io::{BufRead, Read, Write};

/// The agent's first line: `plumb-fleet-agent PID DIR`.
pub const AGENT: &str = "plumb-fleet-agent";
/// The payload's header: `plumb-fleet-payload FILE-NAME BYTES`.
pub const PAYLOAD: &str = "plumb-fleet-payload";
/// The result's header: `plumb-fleet-result EXIT-CODE BYTES`, then the bytes.
pub const RESULT: &str = "plumb-fleet-result";
/// A server's readiness: `plumb-fleet-ready ADDRESS`.
pub const READY: &str = "plumb-fleet-ready";
/// A line of the run's progress (its stderr): `plumb-fleet-line TEXT`.
pub const LINE: &str = "plumb-fleet-line";

/// The longest header line read.
pub const MAX_LINE: usize = 4096;

/// Reads one header line of at most [`MAX_LINE`] bytes; None at the end
/// of the stream.
pub fn read_line(r: &mut impl BufRead) -> std::io::Result<Option<String>> {
    let mut line = Vec::new();
    let n = r
        .by_ref()
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a header line longer than {MAX_LINE} bytes or cut short"),
        ));
    }
    line.pop();
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "a header is not UTF-8"))
}

/// Splits `line` as `KIND A B…` when it starts with `kind`.
pub fn fields<'a>(line: &'a str, kind: &str) -> Option<Vec<&'a str>> {
    let rest = line.strip_prefix(kind)?.strip_prefix(' ')?;
    Some(rest.splitn(2, ' ').collect())
}

/// Reads exactly `len` bytes (refusing more than `max`).
pub fn read_counted(r: &mut impl Read, len: u64, max: u64) -> std::io::Result<Vec<u8>> {
    if len > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{len} bytes announced, at most {max} accepted"),
        ));
    }
    let mut bytes = Vec::new();
    r.take(len).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("{} of {len} bytes arrived", bytes.len()),
        ));
    }
    Ok(bytes)
}

/// Copies exactly `len` bytes (refusing more than `max`) to `to`, through a
/// buffer of [`COPY_BUFFER`] bytes: what is copied is never held whole.
pub fn copy_counted(
    r: &mut impl Read,
    len: u64,
    max: u64,
    to: &mut impl Write,
) -> std::io::Result<()> {
    if len > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{len} bytes announced, at most {max} accepted"),
        ));
    }
    let mut buf = vec![0u8; COPY_BUFFER];
    let mut left = len;
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = r.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("{} of {len} bytes arrived", len - left),
            ));
        }
        to.write_all(&buf[..n])?;
        left -= n as u64;
    }
    to.flush()
}

/// The buffer [`copy_counted`] copies through.
pub const COPY_BUFFER: usize = 64 << 10;

/// Writes a header line and counted bytes, then flushes.
pub fn write_counted(
    w: &mut impl Write,
    kind: &str,
    first: &str,
    bytes: &[u8],
) -> std::io::Result<()> {
    writeln!(w, "{kind} {first} {}", bytes.len())?;
    w.write_all(bytes)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_frames_round_trip_and_refuse_lies() {
        let mut out = Vec::new();
        write_counted(&mut out, RESULT, "0", b"{}").unwrap();
        let mut r = std::io::Cursor::new(out);
        let line = read_line(&mut r).unwrap().unwrap();
        let f = fields(&line, RESULT).unwrap();
        assert_eq!(f, ["0", "2"]);
        assert_eq!(read_counted(&mut r, 2, 10).unwrap(), b"{}");
        assert!(read_counted(&mut std::io::Cursor::new(b"ab"), 5, 10).is_err());
        assert!(read_counted(&mut std::io::Cursor::new(b"ab"), 11, 10).is_err());
        let long = vec![b'x'; MAX_LINE + 10];
        assert!(read_line(&mut std::io::Cursor::new(long)).is_err());
    }

    #[test]
    fn counted_copies_stream_whole_and_refuse_short_or_oversized_frames() {
        // More than a buffer's worth, and bytes after the frame left unread.
        let body: Vec<u8> = (0..3 * COPY_BUFFER + 17).map(|i| (i % 251) as u8).collect();
        let mut input = body.clone();
        input.extend_from_slice(b"next");
        let mut r = std::io::Cursor::new(input);
        let mut to = Vec::new();
        copy_counted(&mut r, body.len() as u64, 1 << 30, &mut to).unwrap();
        assert_eq!(to, body);
        assert_eq!(r.position(), body.len() as u64);
        let short = copy_counted(&mut std::io::Cursor::new(b"ab"), 5, 10, &mut Vec::new());
        assert!(short
            .unwrap_err()
            .to_string()
            .contains("2 of 5 bytes arrived"));
        let big = copy_counted(&mut std::io::Cursor::new(b"ab"), 11, 10, &mut Vec::new());
        assert!(big.unwrap_err().to_string().contains("at most 10"));
    }
}
