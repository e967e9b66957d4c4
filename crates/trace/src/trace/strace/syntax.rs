//! Reading strace's output: the pid and timestamp of a line, a system call
//! with its arguments and result, quoted strings and `fd</path>` decorations.

pub(super) fn split_pid(line: &str) -> (u64, &str) {
    let trimmed = line.trim_start();
    if let Some((first, rest)) = trimmed.split_once(' ') {
        let rest = rest.trim_start();
        // "PID TIMESTAMP ...": the timestamp has a dot, the pid does not.
        if first.bytes().all(|b| b.is_ascii_digit()) {
            return (first.parse().unwrap_or(0), rest);
        }
    }
    (0, trimmed)
}

/// One completed system call.
pub(super) struct Call {
    pub name: String,
    pub args: Vec<String>,
    pub ret: Option<i64>,
    pub ret_path: Option<String>,
    /// The errno name of a failed call (`ENOENT`).
    pub errno: Option<String>,
    pub dur: Option<f64>,
}

pub(super) fn parse_call(s: &str) -> Option<Call> {
    let open = s.find('(')?;
    let name = s[..open].to_string();
    let body = &s[open + 1..];
    let close = matching_paren(body)?;
    let args = split_args(&body[..close]);
    let after = body[close + 1..].trim_start();
    let after = after.strip_prefix('=')?.trim_start();
    let (ret_text, dur) = match after.rfind(" <") {
        Some(i) if after.ends_with('>') => (
            &after[..i],
            after[i + 2..after.len() - 1].parse::<f64>().ok(),
        ),
        _ => (after, None),
    };
    let ret_word = ret_text.split(' ').next().unwrap_or("");
    let (ret_num, ret_path) = decorated(ret_word);
    let ret = ret_num.parse::<i64>().ok().or_else(|| {
        // mmap returns an address.
        ret_num
            .strip_prefix("0x")
            .and_then(|h| i64::from_str_radix(h, 16).ok())
    });
    // A failure reads "-1 ENOENT (No such file or directory)".
    let errno = match ret {
        Some(r) if r < 0 => ret_text
            .split(' ')
            .nth(1)
            .filter(|e| {
                e.len() > 1
                    && e.starts_with('E')
                    && e.bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
            })
            .map(str::to_string),
        _ => None,
    };
    Some(Call {
        name,
        args,
        ret: ret.filter(|r| *r >= 0),
        ret_path,
        errno,
        dur,
    })
}

/// Follows strace's quoted strings (with backslash escapes) character by
/// character, so brackets and commas inside them are not taken for syntax.
#[derive(Default)]
struct Quotes {
    quoted: bool,
    escaped: bool,
}

impl Quotes {
    /// Takes the next character; true when it is part of a quoted string.
    fn inside(&mut self, ch: char) -> bool {
        if !self.quoted {
            self.quoted = ch == '"';
            return self.quoted;
        }
        match (self.escaped, ch) {
            (true, _) => self.escaped = false,
            (false, '\\') => self.escaped = true,
            (false, '"') => self.quoted = false,
            _ => {}
        }
        true
    }
}

/// Where the closing parenthesis of the argument list is.
fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    let mut quotes = Quotes::default();
    for (i, ch) in s.char_indices() {
        if quotes.inside(ch) {
            continue;
        }
        match ch {
            '(' | '{' | '[' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' | '}' | ']' => depth -= 1,
            _ => {}
        }
    }
    None
}

fn split_args(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut depth, mut angle) = (0i32, 0i32);
    let mut quotes = Quotes::default();
    for ch in s.chars() {
        if quotes.inside(ch) {
            cur.push(ch);
            continue;
        }
        match ch {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth -= 1,
            '<' => angle += 1,
            '>' => angle -= 1,
            ',' if depth == 0 && angle <= 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// `3</a/b>` → ("3", Some("/a/b")).
pub(super) fn decorated(s: &str) -> (&str, Option<String>) {
    match s.find('<') {
        Some(i) if s.ends_with('>') => (&s[..i], Some(s[i + 1..s.len() - 1].to_string())),
        _ => (s, None),
    }
}

/// The contents of a quoted string argument, unescaped.
pub(super) fn unquote(s: &str) -> Option<String> {
    let inner = s.strip_prefix('"')?;
    let inner = inner
        .strip_suffix("...")
        .unwrap_or(inner)
        .strip_suffix('"')?;
    let mut out = Vec::new();
    let mut it = inner.bytes().peekable();
    while let Some(b) = it.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match it.next()? {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'x' => {
                let h: String = [it.next()? as char, it.next()? as char].iter().collect();
                out.push(u8::from_str_radix(&h, 16).ok()?);
            }
            d @ b'0'..=b'7' => {
                let mut v = (d - b'0') as u32;
                while let Some(&n @ b'0'..=b'7') = it.peek() {
                    v = v * 8 + (n - b'0') as u32;
                    it.next();
                }
                out.push(v as u8);
            }
            other => out.push(other),
        }
    }
    String::from_utf8(out).ok()
}

/// Lexical normalisation: absolute, no `.`, `..` resolved, no trailing `/`.
pub(super) fn normalise(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

pub(super) fn num(s: Option<&String>) -> Option<u64> {
    let s = s?;
    let s = decorated(s).0;
    s.parse().ok()
}

/// A number strace may print in hex (`0x1000`, an mmap offset) or decimal.
pub(super) fn num_or_hex(s: Option<&String>) -> Option<u64> {
    match s?.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => num(s),
    }
}

/// Whether a flags argument (`PROT_READ|PROT_WRITE`) holds `flag`.
pub(super) fn has_flag(s: Option<&String>, flag: &str) -> bool {
    s.is_some_and(|s| s.split('|').any(|f| f == flag))
}

pub(super) fn stat_field(statbuf: Option<&String>, key: &str) -> Option<u64> {
    let s = statbuf?;
    let i = s.find(key)? + key.len();
    let digits: String = s[i..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Permission bits of a mode argument (`0644`, `S_IRUSR|…` is read as 0644).
pub(super) fn mode(arg: Option<&String>) -> u32 {
    arg.and_then(|m| {
        u32::from_str_radix(m.trim_start_matches('0'), 8)
            .ok()
            .or_else(|| m.parse().ok())
    })
    .unwrap_or(0o644)
        & 0o7777
}
