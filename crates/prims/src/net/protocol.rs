//! The wire protocol between the client primitives and `plumb serve`: one
//! text line opens each connection, the server answers `OK` or `ERR reason`,
//! then the connection carries the test's bytes.
//!
//! ```text
//! PLUMB/1 <session> sink            client sends until it shuts down writing;
//!                                   server answers the byte count (8 bytes LE)
//! PLUMB/1 <session> source          server sends until the client closes
//! PLUMB/1 <session> echo <size>     server echoes every <size>-byte message
//! ```

use std::io::{self, Read};

/// Protocol name and version at the start of every request line.
pub const MAGIC: &str = "PLUMB/1";
/// The longest request line accepted.
pub const MAX_LINE: usize = 128;
/// The largest echo message.
pub const MAX_ECHO: u64 = 1 << 20;

/// What a connection asks the server to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Receive and count bytes until the client shuts down its side.
    Sink,
    /// Send until the client closes.
    Source,
    /// Echo messages of this size.
    Echo(u64),
}

/// Why a request line is refused (what the server answers after `ERR`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// It does not start with the protocol's magic.
    #[error("not a {MAGIC} request")]
    NotPlumb,
    /// No session id, or not a hexadecimal number.
    #[error("missing or bad session id")]
    Session,
    /// An echo size outside 1..=[`MAX_ECHO`].
    #[error("echo size must be 1..={MAX_ECHO}")]
    EchoSize,
    /// A request the server does not know (cleaned for printing).
    #[error("unknown request '{0}'")]
    Unknown(String),
    /// No request after the session id.
    #[error("missing request")]
    Missing,
    /// Words after the request.
    #[error("trailing words")]
    Trailing,
}

/// A request with the session it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opening {
    /// Client-chosen session id (streams of one test share it).
    pub session: u64,
    /// What to do.
    pub request: Request,
}

impl Opening {
    /// The request line, newline included.
    pub fn line(&self) -> String {
        let verb = match self.request {
            Request::Sink => "sink".to_string(),
            Request::Source => "source".to_string(),
            Request::Echo(n) => format!("echo {n}"),
        };
        format!("{MAGIC} {:x} {verb}\n", self.session)
    }

    /// Parses a request line (without its newline).
    pub fn parse(line: &str) -> Result<Opening, RequestError> {
        let mut words = line.split(' ');
        if words.next() != Some(MAGIC) {
            return Err(RequestError::NotPlumb);
        }
        let session = words
            .next()
            .and_then(|w| u64::from_str_radix(w, 16).ok())
            .ok_or(RequestError::Session)?;
        let request = match (words.next(), words.next()) {
            (Some("sink"), None) => Request::Sink,
            (Some("source"), None) => Request::Source,
            (Some("echo"), Some(n)) => match n.parse::<u64>() {
                Ok(n) if (1..=MAX_ECHO).contains(&n) => Request::Echo(n),
                _ => return Err(RequestError::EchoSize),
            },
            (Some(v), _) => {
                return Err(RequestError::Unknown(
                    crate::terminal::clean(v).into_owned(),
                ))
            }
            (None, _) => return Err(RequestError::Missing),
        };
        if words.next().is_some() {
            return Err(RequestError::Trailing);
        }
        Ok(Opening { session, request })
    }
}

/// Reads one line of at most [`MAX_LINE`] bytes, ended by `\n` or `\r\n`,
/// byte by byte so nothing after the newline is consumed. `Ok(None)` when
/// the peer closed first.
pub fn read_line(r: &mut impl Read) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        if r.read(&mut byte)? == 0 {
            if line.is_empty() {
                return Ok(None);
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "line cut short",
            ));
        }
        if byte[0] == b'\n' {
            // A CRLF line ending (telnet, netcat -C, Windows clients) is accepted.
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return String::from_utf8(line)
                .map(Some)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"));
        }
        line.push(byte[0]);
        if line.len() > MAX_LINE {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "line too long"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_garbage_is_refused() {
        for r in [Request::Sink, Request::Source, Request::Echo(64)] {
            let o = Opening {
                session: 0xabc,
                request: r,
            };
            let line = o.line();
            assert_eq!(Opening::parse(line.trim_end()).unwrap(), o);
        }
        for bad in [
            "",
            "GET / HTTP/1.1",
            "PLUMB/1",
            "PLUMB/1 zz sink",
            "PLUMB/1 1 echo 0",
            "PLUMB/1 1 echo 99999999",
            "PLUMB/1 1 fly",
            "PLUMB/1 1 sink extra",
        ] {
            assert!(Opening::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn read_line_stops_at_the_newline_and_limits_length() {
        let mut r: &[u8] = b"abc\nrest";
        assert_eq!(read_line(&mut r).unwrap().as_deref(), Some("abc"));
        assert_eq!(r, b"rest");
        let mut r: &[u8] = b"PLUMB/1 a sink\r\nrest";
        let line = read_line(&mut r).unwrap().unwrap();
        assert_eq!(Opening::parse(&line).unwrap().request, Request::Sink);
        assert_eq!(r, b"rest");
        let e = Opening::parse("PLUMB/1 1 \x1b]0;x\x07")
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\x1b'), "{e:?}");
        let long = vec![b'x'; 500];
        assert!(read_line(&mut long.as_slice()).is_err());
        assert_eq!(read_line(&mut (&b""[..])).unwrap(), None);
    }
}
