//! Option values as fio reads them before their own parsing: `${VAR}` from
//! the environment, the reserved keywords `$pagesize`, `$mb_memory` and
//! `$ncpus`, and arithmetic in parentheses (`size=(64*1024)k`).
//!
//! Only `plumb fio`'s job files and command line go through here: a
//! scenario's options never read the host's environment.

use crate::units::format_bytes_binary;

/// Longest value after expansion (fio's own line limit is 8 KiB).
pub const MAX_VALUE_LEN: usize = 8192;
/// Deepest nesting of parentheses in an expression.
const MAX_DEPTH: usize = 32;

/// What the reserved keywords stand for on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keywords {
    /// `$pagesize`: the page size in bytes.
    pub pagesize: u64,
    /// `$mb_memory`: megabytes of physical memory.
    pub mb_memory: u64,
    /// `$ncpus`: CPUs configured.
    pub ncpus: u64,
}

impl Keywords {
    /// The values of this machine, as fio reads them (sysconf).
    pub fn of_this_machine() -> Keywords {
        // SAFETY: sysconf reads system values and has no preconditions.
        let (page, pages, cpus) = unsafe {
            (
                libc::sysconf(libc::_SC_PAGESIZE),
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_NPROCESSORS_CONF),
            )
        };
        let page = u64::try_from(page).unwrap_or(4096).max(1);
        let pages = u64::try_from(pages).unwrap_or(0);
        Keywords {
            pagesize: page,
            mb_memory: pages.saturating_mul(page) / (1024 * 1024),
            ncpus: u64::try_from(cpus).unwrap_or(1).max(1),
        }
    }

    fn table(&self) -> [(&'static str, u64); 3] {
        [
            ("$pagesize", self.pagesize),
            ("$mb_memory", self.mb_memory),
            ("$ncpus", self.ncpus),
        ]
    }
}

/// A value that cannot be expanded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExpandError {
    /// The value grew past [`MAX_VALUE_LEN`].
    #[error("the value expands to more than {} bytes", MAX_VALUE_LEN)]
    TooLong,
    /// An arithmetic expression that does not read.
    #[error("'{expr}' is not an arithmetic expression: {reason}")]
    Arithmetic {
        /// The expression as written.
        expr: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Expands one value: environment variables (`${NAME}`, empty when unset, as
/// fio), then the reserved keywords (a value that then reads as arithmetic,
/// `8*$mb_memory`, is computed as fio's `bc` would), then each expression in
/// parentheses that starts the value or one of its `,`/`:`/`/`-separated
/// parts (`(1+2)k,8k`). Numbers inside an expression may carry fio's size or
/// time suffixes; a result with a time suffix inside is written in
/// microseconds (`90000000us`).
pub fn expand(
    value: &str,
    env: &dyn Fn(&str) -> Option<String>,
    keywords: &Keywords,
) -> Result<String, ExpandError> {
    let with_env = substitute_env(value, env)?;
    let (with_keywords, replaced) = substitute_keywords(&with_env, keywords)?;
    if replaced && !with_keywords.contains('(') && has_operator(&with_keywords) {
        if let Ok(v) = evaluate(&with_keywords) {
            return Ok(v.render());
        }
    }
    evaluate_parentheses(&with_keywords)
}

/// True when the text holds an arithmetic operator (not a leading sign).
fn has_operator(text: &str) -> bool {
    text.char_indices()
        .any(|(i, c)| matches!(c, '+' | '*' | '/' | '%' | '^') || (c == '-' && i > 0))
}

fn substitute_env(
    value: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        let Some(close) = rest[at + 2..].find('}') else {
            break;
        };
        let name = &rest[at + 2..at + 2 + close];
        if name.is_empty() {
            // `${}` is not a reference in fio: kept as written.
            out.push_str(&rest[..at + 3]);
            rest = &rest[at + 3..];
            continue;
        }
        out.push_str(&rest[..at]);
        out.push_str(&env(name).unwrap_or_default());
        rest = &rest[at + 3 + close..];
        if out.len() > MAX_VALUE_LEN {
            return Err(ExpandError::TooLong);
        }
    }
    out.push_str(rest);
    if out.len() > MAX_VALUE_LEN {
        return Err(ExpandError::TooLong);
    }
    Ok(out)
}

fn substitute_keywords(value: &str, k: &Keywords) -> Result<(String, bool), ExpandError> {
    let mut out = value.to_string();
    let mut replaced = false;
    for (word, n) in k.table() {
        if out.contains(word) {
            out = out.replace(word, &n.to_string());
            replaced = true;
            if out.len() > MAX_VALUE_LEN {
                return Err(ExpandError::TooLong);
            }
        }
    }
    Ok((out, replaced))
}

/// Replaces each parenthesised expression at the start of the value or of a
/// part (after `,`, `:`, `/`, `-`) by its result.
fn evaluate_parentheses(value: &str) -> Result<String, ExpandError> {
    if !value.contains('(') {
        return Ok(value.to_string());
    }
    let mut out = String::with_capacity(value.len());
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts_part = i == 0 || matches!(bytes[i - 1], b',' | b':' | b'/' | b'-');
        if bytes[i] == b'(' && starts_part {
            let end = matching_paren(value, i).ok_or_else(|| ExpandError::Arithmetic {
                expr: value[i..].to_string(),
                reason: "a '(' without its ')'".into(),
            })?;
            out.push_str(&evaluate(&value[i..=end])?.render());
            i = end + 1;
        } else {
            let c = value[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    Ok(out)
}

fn matching_paren(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The result of an expression: a number, in microseconds when a time
/// suffix was used inside it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Number {
    value: i128,
    time: bool,
}

impl Number {
    fn render(self) -> String {
        if self.time {
            format!("{}us", self.value)
        } else {
            self.value.to_string()
        }
    }
}

/// Evaluates an arithmetic expression with `+ - * / % ^`, parentheses and
/// fio's suffixes on numbers, in checked 128-bit integers; the result must
/// fit a 64-bit value.
fn evaluate(expr: &str) -> Result<Number, ExpandError> {
    let fail = |reason: String| ExpandError::Arithmetic {
        expr: expr.to_string(),
        reason,
    };
    let tokens = tokenize(expr).map_err(fail)?;
    let time = tokens.iter().any(|t| matches!(t, Token::Num(_, true)));
    let mut p = Parser {
        tokens: &tokens,
        at: 0,
        depth: 0,
    };
    let value = p.sum().map_err(fail)?;
    if p.at != tokens.len() {
        return Err(fail("unexpected text after the expression".into()));
    }
    if i64::try_from(value).is_err() {
        return Err(fail(format!(
            "the result is out of range (about {})",
            format_bytes_binary(value as f64)
        )));
    }
    Ok(Number { value, time })
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    /// A number (after its suffix) and whether the suffix was a time.
    Num(i128, bool),
    Op(char),
    Open,
    Close,
}

/// fio's suffixes in expressions: sizes (k, m, g, t, p in 1024s; kib, mib,
/// gib in 1000s as fio's expression lexer has them) and times in µs.
fn suffix(word: &str, time_context: bool) -> Option<(i128, bool)> {
    Some(match word.to_ascii_lowercase().as_str() {
        "" => (1, false),
        "k" | "kb" => (1 << 10, false),
        "mb" => (1 << 20, false),
        "g" | "gb" => (1 << 30, false),
        "t" | "tb" => (1 << 40, false),
        "p" | "pb" => (1 << 50, false),
        "kib" => (1_000, false),
        "mib" => (1_000_000, false),
        "gib" => (1_000_000_000, false),
        "m" if time_context => (60_000_000, true),
        "m" => (1 << 20, false),
        "us" | "usec" => (1, true),
        "ms" | "msec" => (1_000, true),
        "s" | "sec" => (1_000_000, true),
        "h" => (3_600_000_000, true),
        "d" => (86_400_000_000, true),
        _ => return None,
    })
}

fn tokenize(expr: &str) -> Result<Vec<Token>, String> {
    // `m` means minutes when another time suffix is in the expression.
    let lower = expr.to_ascii_lowercase();
    let time_context = ["us", "ms", "s", "h", "d"].iter().any(|u| {
        lower
            .match_indices(u)
            .any(|(i, _)| i > 0 && lower.as_bytes()[i - 1].is_ascii_digit())
    });
    let chars: Vec<char> = expr.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => i += 1,
            '(' => {
                tokens.push(Token::Open);
                i += 1;
            }
            ')' => {
                tokens.push(Token::Close);
                i += 1;
            }
            '+' | '-' | '*' | '/' | '%' | '^' => {
                tokens.push(Token::Op(c));
                i += 1;
            }
            '0'..='9' => {
                let start = i;
                let hex = c == '0' && matches!(chars.get(i + 1), Some('x' | 'X'));
                if hex {
                    i += 2;
                    while i < chars.len() && chars[i].is_ascii_hexdigit() {
                        i += 1;
                    }
                } else {
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                let digits: String = chars[start..i].iter().collect();
                let n = if hex {
                    i128::from_str_radix(&digits[2..], 16)
                } else {
                    digits.parse::<i128>()
                }
                .ok()
                .filter(|n| *n <= i128::from(u64::MAX))
                .ok_or_else(|| format!("'{digits}' is not a number that fits"))?;
                let s = i;
                while i < chars.len() && chars[i].is_ascii_alphabetic() {
                    i += 1;
                }
                let word: String = chars[s..i].iter().collect();
                let (mult, time) =
                    suffix(&word, time_context).ok_or_else(|| format!("'{word}' is not a unit"))?;
                tokens.push(Token::Num(n * mult, time));
            }
            other => return Err(format!("'{other}' is not part of an expression")),
        }
        if tokens.len() > MAX_VALUE_LEN {
            return Err("too long".into());
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.at).copied()
    }

    fn sum(&mut self) -> Result<i128, String> {
        let mut v = self.product()?;
        while let Some(Token::Op(op @ ('+' | '-'))) = self.peek() {
            self.at += 1;
            let r = self.product()?;
            v = if op == '+' {
                v.checked_add(r)
            } else {
                v.checked_sub(r)
            }
            .ok_or("the result overflows")?;
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<i128, String> {
        let mut v = self.power()?;
        while let Some(Token::Op(op @ ('*' | '/' | '%'))) = self.peek() {
            self.at += 1;
            let r = self.power()?;
            v = match op {
                '*' => v.checked_mul(r).ok_or("the result overflows")?,
                _ if r == 0 => return Err("division by zero".into()),
                '/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    fn power(&mut self) -> Result<i128, String> {
        let base = self.unary()?;
        if let Some(Token::Op('^')) = self.peek() {
            self.at += 1;
            let exp = self.power()?;
            let exp = u32::try_from(exp).map_err(|_| "a negative or huge exponent")?;
            return base
                .checked_pow(exp)
                .ok_or_else(|| "the result overflows".into());
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<i128, String> {
        match self.peek() {
            Some(Token::Op('-')) => {
                self.at += 1;
                self.unary()?
                    .checked_neg()
                    .ok_or_else(|| "the result overflows".into())
            }
            Some(Token::Op('+')) => {
                self.at += 1;
                self.unary()
            }
            _ => self.atom(),
        }
    }

    fn atom(&mut self) -> Result<i128, String> {
        match self.peek() {
            Some(Token::Num(n, _)) => {
                self.at += 1;
                Ok(n)
            }
            Some(Token::Open) => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err("parentheses nested too deep".into());
                }
                self.at += 1;
                let v = self.sum()?;
                if self.peek() != Some(Token::Close) {
                    return Err("a '(' without its ')'".into());
                }
                self.at += 1;
                self.depth -= 1;
                Ok(v)
            }
            Some(other) => Err(format!("unexpected {other:?}")),
            None => Err("the expression ends too early".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: Keywords = Keywords {
        pagesize: 4096,
        mb_memory: 24000,
        ncpus: 2,
    };

    fn ex(v: &str) -> Result<String, ExpandError> {
        let env = |name: &str| match name {
            "SIZE" => Some("64m".to_string()),
            "JOBS" => Some("4".to_string()),
            _ => None,
        };
        expand(v, &env, &K)
    }

    #[test]
    fn environment_variables_as_fio() {
        assert_eq!(ex("${SIZE}").unwrap(), "64m");
        assert_eq!(ex("a${JOBS}b${UNSET}c").unwrap(), "a4bc");
        assert_eq!(ex("${unterminated").unwrap(), "${unterminated");
        assert_eq!(ex("${}x").unwrap(), "${}x");
    }

    #[test]
    fn keywords_and_their_math() {
        assert_eq!(ex("$pagesize").unwrap(), "4096");
        assert_eq!(ex("8*$mb_memory").unwrap(), "192000");
        assert_eq!(ex("$ncpus").unwrap(), "2");
        assert_eq!(ex("0-$ncpus").unwrap(), "-2");
    }

    #[test]
    fn arithmetic_in_parentheses() {
        assert_eq!(ex("(1+2)k").unwrap(), "3k");
        assert_eq!(ex("(4*1024)").unwrap(), "4096");
        assert_eq!(ex("(2^10),(1k*8)").unwrap(), "1024,8192");
        assert_eq!(ex("(1m+30s)").unwrap(), "90000000us");
        assert_eq!(ex("(10%3)").unwrap(), "1");
        assert_eq!(ex("4k-(2*4)k").unwrap(), "4k-8k");
        assert_eq!(ex("no math here").unwrap(), "no math here");
    }

    #[test]
    fn hostile_expressions_are_refused() {
        for bad in [
            "(1/0)",
            "(2^200)",
            "(99999999999999999999999999)",
            "((((1)",
            "(1+)",
            "(x)",
            "(2^-1)",
            &format!("{}1{}", "(".repeat(100), ")".repeat(100)),
            "(18446744073709551615*18446744073709551615)",
        ] {
            assert!(
                matches!(ex(bad), Err(ExpandError::Arithmetic { .. })),
                "{bad}"
            );
        }
        let long = "${SIZE}".repeat(3000);
        assert_eq!(ex(&long), Err(ExpandError::TooLong));
    }
}
