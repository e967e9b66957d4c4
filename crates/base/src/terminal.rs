//! Text from input (labels, host names, scenario, metric and job names,
//! notes, error messages) made safe to print: a result file or a pack must
//! not be able to move the cursor, retitle the window or hide text.
//!
//! [`clean`] is the one function every terminal-facing renderer (tables,
//! Markdown, CSV, progress and error lines) passes such strings through.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach a terminal as is: C0 controls (tab and
/// newline included, they break table cells and log lines), DEL, C1
/// controls, and the bidirectional overrides that reorder what is shown.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every unsafe character replaced by a visible escape
/// (`\x1b`, `\x7f`, `\u{202e}`); unchanged (and not copied) when clean.
pub fn clean(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !is_unsafe(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// [`clean`] for multi-line messages (errors with positions and
/// backtraces): newlines and tabs are kept, every other control escaped.
pub fn clean_text(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for (j, part) in line.split('\t').enumerate() {
            if j > 0 {
                out.push('\t');
            }
            out.push_str(&clean(part));
        }
    }
    Cow::Owned(out)
}

/// JSON text (as serde_json writes it) safe to print: every unsafe
/// character but the newlines between lines becomes a `\uXXXX` escape,
/// which means the same inside a JSON string (serde_json leaves DEL, C1
/// controls and bidirectional overrides raw).
pub fn clean_json(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) && c != '\n') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) && c != '\n' {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`clean`] into an owned string, for table cells.
pub fn cleaned(s: &str) -> String {
    clean(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_visible_escapes() {
        assert_eq!(
            clean("\x1b[2J\x1b]0;pwn\x07ok"),
            "\\x1b[2J\\x1b]0;pwn\\x07ok"
        );
        assert_eq!(clean("a\u{9b}31mb\u{7f}"), "a\\x9b31mb\\x7f");
        assert_eq!(clean("tab\there\nline"), "tab\\x09here\\x0aline");
        assert_eq!(clean("abc\u{202e}def"), "abc\\u{202e}def");
    }

    #[test]
    fn messages_keep_their_lines() {
        assert_eq!(clean_text("a\n\tb\x1b[1m"), "a\n\tb\\x1b[1m");
    }

    #[test]
    fn json_keeps_its_meaning() {
        let text = serde_json::to_string_pretty(&["a\u{9b}b\u{202e}\x7f\x1b"]).unwrap();
        let shown = clean_json(&text);
        assert!(!shown.chars().any(|c| is_unsafe(c) && c != '\n'), "{shown}");
        let back: Vec<String> = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, ["a\u{9b}b\u{202e}\x7f\x1b"]);
    }

    #[test]
    fn clean_text_is_borrowed_unchanged() {
        assert!(matches!(clean("randread.iops µs ×1.2"), Cow::Borrowed(_)));
    }
}
