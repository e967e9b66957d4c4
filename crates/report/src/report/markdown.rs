//! Text from a document as Markdown text: the one function every Markdown
//! writer (`--format markdown` of `run`, `show`, `compare`; the Markdown
//! page of `plumb report`) passes a name, label, host, parameter, note or
//! table cell through, so that what a stranger's result file says is shown
//! as written and never becomes an image that loads a remote address, a
//! link, a heading, a table cell of its own or raw HTML.
//!
//! The rule, for CommonMark and GitHub Flavored Markdown:
//! - control characters are made visible ([`clean`]), newlines and tabs
//!   included: a name is one line, never the start of a block of its own;
//! - every character that is active anywhere in a line is escaped with a
//!   backslash (CommonMark renders an escaped ASCII punctuation character
//!   as itself): `\` `` ` `` `*` `_` `~` `[` `]` `<` `>` `&` `#` `!` `|`
//!   `$` `^` (math, superscripts in renderers that have them), and `@`,
//!   whose text GitHub turns into a link (`a@b.c`), as it does `://` and
//!   `www.`: their `:` and `.` are escaped too;
//! - what is active only where a line begins is escaped at the start of
//!   the text, unless a letter or digit follows it (`-1.5`, `12.5` stay
//!   as they are): `-`, `+`, `=` (list items, rules, setext underlines)
//!   and the `.` or `)` after leading digits (an ordered list).

use crate::terminal::clean;

/// Whether `c` has a meaning wherever it stands in a line of Markdown.
fn active(c: char) -> bool {
    matches!(
        c,
        '\\' | '`'
            | '*'
            | '_'
            | '~'
            | '['
            | ']'
            | '<'
            | '>'
            | '&'
            | '#'
            | '!'
            | '|'
            | '$'
            | '^'
            | '@'
    )
}

/// `s` as Markdown text: it reads as written, whatever it holds (see the
/// module comment for the rule).
pub fn text(s: &str) -> String {
    let s = clean(s);
    let mut out = String::with_capacity(s.len() + 8);
    // Leading digits: a `.` or `)` right after them may start a list.
    let digits = s.chars().take_while(char::is_ascii_digit).count();
    let mut chars = s.chars().enumerate().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|(_, n)| *n);
        let word_follows = next.is_some_and(char::is_alphanumeric);
        let scheme = c == ':' && next == Some('/');
        let starts_a_block = !word_follows
            && ((i == 0 && matches!(c, '-' | '+' | '='))
                || (i == digits && digits > 0 && matches!(c, '.' | ')')));
        let www = c == '.'
            && out
                .as_bytes()
                .get(out.len().saturating_sub(3)..)
                .is_some_and(|b| b.eq_ignore_ascii_case(b"www"));
        if active(c) || starts_a_block || scheme || www {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    fn images_links_headings_and_html_stay_text() {
        assert_eq!(
            text("![x](http://evil/p.png)"),
            r"\!\[x\](http\://evil/p.png)"
        );
        assert_eq!(text("# big"), r"\# big");
        assert_eq!(text("a\n# b"), r"a\\x0a\# b");
        assert_eq!(text("<img src=x>"), r"\<img src=x\>");
        assert_eq!(text("&lt;"), r"\&lt;");
        assert_eq!(text("a|b"), r"a\|b");
        assert_eq!(text("see www.evil.io"), r"see www\.evil.io");
        assert_eq!(text("failed: at 10:00"), "failed: at 10:00");
        assert_eq!(text("me@evil.io"), r"me\@evil.io");
    }

    #[test]
    fn block_starts_are_escaped_only_at_the_start() {
        assert_eq!(text("- item"), r"\- item");
        assert_eq!(text("==="), r"\===");
        assert_eq!(text("12. x"), r"12\. x");
        assert_eq!(text("3) x"), r"3\) x");
        assert_eq!(text("---"), r"\---");
        assert_eq!(text("12."), r"12\.");
        for plain in [
            "rand-read 1.08 (p99)",
            "4k-read",
            "-1.5",
            "+inf",
            "12.5",
            "2)x",
        ] {
            assert_eq!(text(plain), plain);
        }
    }
}
