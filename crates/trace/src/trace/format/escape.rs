//! Paths and symlink targets in a trace's words: percent-encoded where
//! they hold spaces, `%` or control bytes.

use super::error::ParseError;
use std::fmt::Write as _;

/// `path` as a trace writes it.
pub(super) fn encode(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b <= b' ' || b == b'%' || b == 0x7f {
            let _ = write!(out, "%{b:02x}");
        } else {
            out.push(b as char);
        }
    }
    out
}

/// The path a trace's word spells.
pub(super) fn decode(s: &str) -> Result<String, ParseError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or(ParseError::EscapeCut)?;
            out.push(
                u8::from_str_radix(hex, 16).map_err(|_| ParseError::BadEscape(hex.to_string()))?,
            );
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ParseError::NotUtf8)
}
