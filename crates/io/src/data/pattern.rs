//! fio's byte-pattern syntax (`buffer_pattern=`), read the way fio 3.33's
//! `lib/pattern.c` reads it: pieces written back to back, no separator.
//!
//! - `0x…`: hex bytes in the order written (`0xdeadface` is de ad be ef…);
//!   an odd digit count makes the first digit a byte of its own
//!   (`0xabc` is 0a bc). A `0x` inside the digits starts a new piece
//!   (`0xff0x14` is ff 14).
//! - a decimal number in the range of a 32-bit int: its bytes, least
//!   significant first, without the high zero bytes (`-12` is f4 ff ff ff,
//!   `66` is 42, `0` is one zero byte).
//! - `"text"`: the bytes between the quotes (no escapes).
//! - `'file'`: the contents of a file, cut at [`MAX_PATTERN_BYTES`] (fio cuts
//!   at 128 MiB).
//!
//! `,`, spaces and `%o` (fio's offset format, which fio 3.33 refuses for
//! `buffer_pattern` too) are errors.

use std::io::Read;

/// The longest pattern kept (a file piece is cut there): a pattern longer
/// than a buffer only ever shows its start, and the biggest block is 1 GiB.
pub const MAX_PATTERN_BYTES: usize = 16 << 20;

/// Why a pattern does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// Nothing given.
    #[error("an empty pattern")]
    Empty,
    /// A piece that is none of the forms.
    #[error("cannot read a pattern at '{0}' (pieces are 0xHEX, a decimal number, \"text\" or 'file', written without separators)")]
    Piece(String),
    /// A quote without its end.
    #[error("a quote without its end at '{0}'")]
    Unclosed(String),
    /// A decimal number outside a 32-bit int.
    #[error("'{0}' is outside the range of a 32-bit number")]
    Range(String),
    /// A file piece that cannot be read.
    #[error("cannot read pattern file '{path}': {reason}")]
    File {
        /// The file named.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// Longer than [`MAX_PATTERN_BYTES`].
    #[error("the pattern is longer than {MAX_PATTERN_BYTES} bytes")]
    TooLong,
}

/// The bytes of a fio pattern.
pub fn parse_pattern(text: &str) -> Result<Vec<u8>, PatternError> {
    let mut out = Vec::new();
    let mut rest = text;
    if rest.is_empty() {
        return Err(PatternError::Empty);
    }
    while !rest.is_empty() {
        rest = match rest.as_bytes()[0] {
            b'"' => quoted(
                rest,
                b'"',
                |s, out| {
                    out.extend_from_slice(s.as_bytes());
                    Ok(())
                },
                &mut out,
            )?,
            b'\'' => quoted(rest, b'\'', read_file, &mut out)?,
            _ if is_hex_start(rest) => hex(rest, &mut out)?,
            _ => decimal(rest, &mut out)?,
        };
        if out.len() > MAX_PATTERN_BYTES {
            return Err(PatternError::TooLong);
        }
    }
    Ok(out)
}

/// Copies `pattern` over `buf`, from its start, again and again (fio's
/// `cpy_pattern`): every buffer starts with the pattern's first byte.
pub fn repeat_into(pattern: &[u8], buf: &mut [u8]) {
    if pattern.is_empty() {
        buf.fill(0);
        return;
    }
    let first = pattern.len().min(buf.len());
    buf[..first].copy_from_slice(&pattern[..first]);
    // Doubling copies: log2(len / pattern) memcpys.
    let mut filled = first;
    while filled < buf.len() {
        let n = filled.min(buf.len() - filled);
        buf.copy_within(0..n, filled);
        filled += n;
    }
}

/// True at `0x`/`0X` followed by a hex digit.
fn is_hex_start(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() > 2 && b[0] == b'0' && (b[1] | 0x20) == b'x' && b[2].is_ascii_hexdigit()
}

/// A piece between `quote`s, handed to `take`; returns what follows it.
fn quoted<'a>(
    s: &'a str,
    quote: u8,
    take: impl Fn(&str, &mut Vec<u8>) -> Result<(), PatternError>,
    out: &mut Vec<u8>,
) -> Result<&'a str, PatternError> {
    let inner = &s[1..];
    let end = inner
        .bytes()
        .position(|c| c == quote)
        .ok_or_else(|| PatternError::Unclosed(s.into()))?;
    let piece = &inner[..end];
    if piece.is_empty() {
        return Err(PatternError::Piece(s.into()));
    }
    take(piece, out)?;
    Ok(&inner[end + 1..])
}

/// Appends a file's contents, at most up to the pattern's bound.
fn read_file(path: &str, out: &mut Vec<u8>) -> Result<(), PatternError> {
    let err = |e: std::io::Error| PatternError::File {
        path: path.into(),
        reason: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(err)?;
    // Only a regular file: a FIFO or a device could block or never end.
    if !file.metadata().map_err(err)?.is_file() {
        return Err(PatternError::File {
            path: path.into(),
            reason: "not a regular file".into(),
        });
    }
    // As fio: a file longer than the room left is cut, not refused.
    let room = MAX_PATTERN_BYTES.saturating_sub(out.len()) as u64;
    let before = out.len();
    file.take(room).read_to_end(out).map_err(err)?;
    if out.len() == before {
        return Err(PatternError::File {
            path: path.into(),
            reason: "the file is empty".into(),
        });
    }
    Ok(())
}

/// `0x` and hex digits up to the next non-digit or the next `0x`.
fn hex<'a>(s: &'a str, out: &mut Vec<u8>) -> Result<&'a str, PatternError> {
    let digits = &s[2..];
    let mut n = digits
        .bytes()
        .position(|c| !c.is_ascii_hexdigit())
        .unwrap_or(digits.len());
    // "0xff0x14": the run of digits ends in the 0 of the next "0x".
    if n < digits.len() && n > 1 && (digits.as_bytes()[n] | 0x20) == b'x' {
        n -= 1;
    }
    let run = &digits[..n];
    let (head, pairs) = run.split_at(n % 2);
    let byte = |d: &str| u8::from_str_radix(d, 16).map_err(|_| PatternError::Piece(s.into()));
    if !head.is_empty() {
        out.push(byte(head)?);
    }
    for i in (0..pairs.len()).step_by(2) {
        out.push(byte(&pairs[i..i + 2])?);
    }
    Ok(&digits[n..])
}

/// A decimal number (up to a `0x` that starts a hex piece).
fn decimal<'a>(s: &'a str, out: &mut Vec<u8>) -> Result<&'a str, PatternError> {
    let b = s.as_bytes();
    let sign = usize::from(matches!(b[0], b'-' | b'+'));
    let mut end = sign + b[sign..].iter().take_while(|c| c.is_ascii_digit()).count();
    if end == sign {
        return Err(PatternError::Piece(s.into()));
    }
    // "100xab" is 10 then 0xab.
    if end < b.len() && (b[end] | 0x20) == b'x' && end - sign > 1 && b[end - 1] == b'0' {
        end -= 1;
    }
    let text = &s[..end];
    let v: i64 = text.parse().map_err(|_| PatternError::Range(text.into()))?;
    let v = i32::try_from(v).map_err(|_| PatternError::Range(text.into()))?;
    let mut u = v as u32;
    if u == 0 {
        out.push(0);
    }
    while u != 0 {
        out.push((u & 0xff) as u8);
        u >>= 8;
    }
    Ok(&s[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The examples of fio's `lib/pattern.c` and HOWTO, byte for byte.
    #[test]
    fn fio_examples() {
        let cases: &[(&str, &[u8])] = &[
            ("\"abcd\"", b"abcd"),
            ("-1024", &[0x00, 0xfc, 0xff, 0xff]),
            ("66", &[0x42]),
            ("0xFF0X1", &[0xff, 0x01]),
            ("\"123\"0xFFeeCC", &[0x31, 0x32, 0x33, 0xff, 0xee, 0xcc]),
            ("0xabc", &[0x0a, 0xbc]),
            ("0", &[0]),
            ("-12", &[0xf4, 0xff, 0xff, 0xff]),
            (
                "0xdeadface\"abcd\"-12",
                &[
                    0xde, 0xad, 0xfa, 0xce, b'a', b'b', b'c', b'd', 0xf4, 0xff, 0xff, 0xff,
                ],
            ),
            ("0xff0x14", &[0xff, 0x14]),
            ("-100xab", &[0xf6, 0xff, 0xff, 0xff, 0xab]),
            ("256", &[0x00, 0x01]),
        ];
        for (text, want) in cases {
            assert_eq!(parse_pattern(text).as_deref(), Ok(*want), "{text}");
        }
    }

    #[test]
    fn refusals() {
        for bad in [
            "",
            "0x01,0x02",
            "\"a\" \"b\"",
            "%o",
            "\"abc",
            "''",
            "x",
            "0x",
            "4294967296",
            "2147483648",
            "-",
            "'/nonexistent/plumb-pattern'",
        ] {
            assert!(parse_pattern(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(
            parse_pattern("2147483647"),
            Ok(vec![0xff, 0xff, 0xff, 0x7f])
        );
        assert_eq!(parse_pattern("-2147483648"), Ok(vec![0, 0, 0, 0x80]));
    }

    #[test]
    fn file_pieces_are_read_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pat");
        std::fs::write(&p, b"xyz").unwrap();
        let text = format!("0x01'{}'", p.display());
        assert_eq!(parse_pattern(&text), Ok(vec![1, b'x', b'y', b'z']));
        std::fs::write(&p, vec![7u8; MAX_PATTERN_BYTES + 10]).unwrap();
        let text = format!("'{}'", p.display());
        assert_eq!(parse_pattern(&text).map(|v| v.len()), Ok(MAX_PATTERN_BYTES));
        let text = format!("'{}'0x01", p.display());
        assert_eq!(parse_pattern(&text), Err(PatternError::TooLong));
    }

    #[test]
    fn repeats_from_the_start_of_each_buffer() {
        let mut buf = [0u8; 10];
        repeat_into(b"abc", &mut buf);
        assert_eq!(&buf, b"abcabcabca");
        let mut short = [0u8; 2];
        repeat_into(b"abc", &mut short);
        assert_eq!(&short, b"ab");
    }
}
