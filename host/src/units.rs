//! Parsing and formatting of sizes and durations with fio's suffixes.
//!
//! fio reads `4k` as 4096 (its `kb_base=1024` default), accepts `KiB`/`KB`
//! alike, `%` for a share of a file, and durations in seconds unless a unit
//! (`us`, `ms`, `s`, `m`, `h`, `d`) is given.

use std::time::Duration;

/// A size as written in a job: bytes, or a percentage of the file or device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeSpec {
    /// An absolute number of bytes.
    Bytes(u64),
    /// A share (0–100] of the file or device size.
    Percent(f64),
}

impl SizeSpec {
    /// Resolves the size against the full size of the file or device.
    pub fn resolve(self, full: u64) -> u64 {
        match self {
            SizeSpec::Bytes(b) => b,
            SizeSpec::Percent(p) => ((full as f64) * p / 100.0) as u64,
        }
    }
}

/// Parses a size such as `4k`, `4KiB`, `1.5g`, `512`, or `50%`.
pub fn parse_size_spec(text: &str) -> Result<SizeSpec, String> {
    let t = text.trim();
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("'{text}' is not a percentage"))?;
        if !(v > 0.0 && v <= 100.0) {
            return Err(format!("'{text}': a percentage must be in (0, 100]"));
        }
        return Ok(SizeSpec::Percent(v));
    }
    parse_size(t).map(SizeSpec::Bytes)
}

/// Parses an absolute size in bytes with fio's suffixes (k, m, g, t, p, e;
/// KiB, KB, …). The integer part is exact (no trip through `f64`); a fraction
/// (`1.5m`) is rounded to the nearest byte; a size beyond `u64` is an error.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (number, suffix) = split_number(text, "size")?;
    let mult = size_multiplier(suffix.trim()).ok_or_else(|| {
        format!("'{text}': unknown size suffix '{suffix}' (use k, m, g, t, KiB, MiB, …)")
    })?;
    number
        .scaled(u128::from(mult))
        .and_then(|b| u64::try_from(b).ok())
        .ok_or_else(|| format!("'{text}' is too large (at most {} bytes)", u64::MAX))
}

/// A decimal number as written: an exact integer part and the digits after
/// the point (at most [`MAX_FRACTION_DIGITS`] of them are kept).
#[derive(Debug, Clone, Copy)]
struct Decimal {
    whole: u128,
    frac: u128,
    frac_scale: u128,
}

/// Digits after the point that count; later ones are below any unit's resolution.
const MAX_FRACTION_DIGITS: usize = 18;

impl Decimal {
    /// `self × mult`, rounded to the nearest integer; `None` on overflow.
    fn scaled(self, mult: u128) -> Option<u128> {
        let whole = self.whole.checked_mul(mult)?;
        let frac = self
            .frac
            .checked_mul(mult)?
            .checked_add(self.frac_scale / 2)?
            / self.frac_scale;
        whole.checked_add(frac)
    }
}

/// Splits `12.5k` into (12.5, "k"); `what` names the kind of value in errors.
fn split_number<'a>(text: &'a str, what: &str) -> Result<(Decimal, &'a str), String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let not_number = || format!("'{text}' is not a {what}");
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if (whole.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(not_number());
    }
    let too_large = || format!("'{text}' is too large");
    let digits = |s: &str| -> Result<u128, String> {
        s.bytes().try_fold(0u128, |acc, d| {
            acc.checked_mul(10)
                .and_then(|a| a.checked_add(u128::from(d - b'0')))
                .ok_or_else(too_large)
        })
    };
    let frac = &frac[..frac.len().min(MAX_FRACTION_DIGITS)];
    Ok((
        Decimal {
            whole: digits(whole)?,
            frac: digits(frac)?,
            frac_scale: 10u128.pow(frac.len() as u32),
        },
        suffix,
    ))
}

fn size_multiplier(suffix: &str) -> Option<u64> {
    let lower = suffix.to_ascii_lowercase();
    let s = lower.trim_end_matches("ib").trim_end_matches('b');
    let pow = match s {
        "" => 0,
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        "e" => 6,
        _ => return None,
    };
    Some(1024u64.pow(pow))
}

/// The longest duration any parser accepts (`u64` nanoseconds, ~584 years);
/// options bound themselves further where they are defined.
pub const MAX_DURATION: Duration = Duration::from_nanos(u64::MAX);

/// Parses a duration; a bare number means seconds, as in fio (`10`, `10s`, `2m`, `500ms`).
/// A duration beyond [`MAX_DURATION`] is an error, never saturated.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    parse_duration_with_default(text, 1_000_000)
}

/// Parses a duration whose bare number is in `default_unit_us` microseconds.
pub fn parse_duration_with_default(text: &str, default_unit_us: u64) -> Result<Duration, String> {
    let (value, suffix) = split_number(text, "duration")?;
    let unit_us: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" => default_unit_us,
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" | "sec" => 1_000_000,
        "m" | "min" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        other => {
            return Err(format!(
                "'{text}': unknown time unit '{other}' (use us, ms, s, m, h)"
            ))
        }
    };
    value
        .scaled(u128::from(unit_us) * 1000)
        .and_then(|ns| u64::try_from(ns).ok())
        .map(Duration::from_nanos)
        .ok_or_else(|| format!("'{text}' is too long (at most ~584 years)"))
}

/// Parses a duration and refuses one longer than `max` (an option's own bound).
pub fn parse_duration_at_most(text: &str, max: Duration) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d > max {
        return Err(format!("'{text}' is too long (at most {}s)", max.as_secs()));
    }
    Ok(d)
}

/// Formats bytes in binary units the way fio prints them (`4096B`, `4KiB`, `1024MiB`).
pub fn format_bytes_binary(bytes: f64) -> String {
    scale_number(bytes, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB", "PiB"])
}

/// Formats bytes in decimal units (`4MB`, `1.1GB`).
pub fn format_bytes_decimal(bytes: f64) -> String {
    scale_number(bytes, 1000.0, &["B", "kB", "MB", "GB", "TB", "PB"])
}

/// Formats a count with fio's short suffixes (`72.1k`, `1234`).
pub fn format_count(v: f64) -> String {
    if v < 10_000.0 {
        return format!("{}", v.round() as u64);
    }
    scale_number(v, 1000.0, &["", "k", "M", "G", "T"])
}

/// A figure with its unit scaled for reading: bytes and bytes/s to
/// KiB…TiB, ns/µs/ms up to seconds, anything else as given; three or four
/// significant digits (`1.23 GiB/s`, `850 µs`, `31.4 IOPS`).
pub fn format_value(value: f64, unit: &str) -> String {
    let steps = |v: f64, base: f64, units: &[&str]| {
        let mut v = v;
        let mut i = 0;
        while v.abs() >= base && i + 1 < units.len() {
            v /= base;
            i += 1;
        }
        (v, units[i].to_string())
    };
    let (v, unit) = match unit {
        "bytes/s" | "B/s" => steps(value, 1024.0, &["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"]),
        "KiB/s" => steps(value, 1024.0, &["KiB/s", "MiB/s", "GiB/s", "TiB/s"]),
        "MiB/s" => steps(value, 1024.0, &["MiB/s", "GiB/s", "TiB/s"]),
        "bytes" | "B" => steps(value, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB"]),
        "ns" => steps(value, 1000.0, &["ns", "µs", "ms", "s"]),
        "us" | "µs" => steps(value, 1000.0, &["µs", "ms", "s"]),
        "ms" => steps(value, 1000.0, &["ms", "s"]),
        // Seconds shorter than one are shown in ms or µs.
        "s" if value != 0.0 && value.abs() < 1e-3 => (value * 1e6, "µs".to_string()),
        "s" if value.abs() < 1.0 && value != 0.0 => (value * 1e3, "ms".to_string()),
        _ => (value, unit.to_string()),
    };
    let digits = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else {
        2
    };
    if unit.is_empty() {
        format!("{v:.digits$}")
    } else {
        format!("{v:.digits$} {unit}")
    }
}

fn scale_number(mut v: f64, base: f64, units: &[&str]) -> String {
    let mut i = 0;
    while v >= 10_000.0 && i + 1 < units.len() {
        v /= base;
        i += 1;
    }
    // Keep three or four significant digits, like fio.
    if v >= 1000.0 || v.fract() == 0.0 {
        format!("{}{}", v.round() as u64, units[i])
    } else if v >= 100.0 {
        format!("{:.0}{}", v, units[i])
    } else if v >= 10.0 {
        format!("{:.1}{}", v, units[i])
    } else {
        format!("{:.2}{}", v, units[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_fio() {
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("4KB").unwrap(), 4096);
        assert_eq!(parse_size("4G").unwrap(), 4 << 30);
        assert_eq!(parse_size("4GiB").unwrap(), 4 << 30);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("1.5m").unwrap(), 1536 * 1024);
        assert!(parse_size("4x").is_err());
        assert!(parse_size("k").is_err());
        assert_eq!(parse_size_spec("50%").unwrap(), SizeSpec::Percent(50.0));
        assert!(parse_size_spec("150%").is_err());
    }

    #[test]
    fn sizes_are_exact_or_refused() {
        assert_eq!(parse_size("18446744073709551615").unwrap(), u64::MAX);
        assert!(parse_size("18446744073709551616").is_err());
        assert_eq!(parse_size("9007199254740993").unwrap(), (1 << 53) + 1);
        assert_eq!(
            parse_size("9126155400507155k").unwrap(),
            9126155400507155 << 10
        );
        assert_eq!(parse_size("15e").unwrap(), 15 << 60);
        assert!(parse_size("16e").is_err());
        assert!(parse_size("16384P").is_err());
        assert_eq!(parse_size(".5k").unwrap(), 512);
        assert_eq!(parse_size("0.0001k").unwrap(), 0);
        assert!(parse_size(".").is_err());
        assert!(parse_size("1.2.3").is_err());
        assert!(parse_size("99999999999999999999999999999999999999999999").is_err());
    }

    #[test]
    fn durations_follow_fio() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("5 weeks").is_err());
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("99999999999999999999999h").is_err());
        assert!(parse_duration("99999999999999999999h").is_err());
        assert!(parse_duration_at_most("2d", Duration::from_secs(86400)).is_err());
        assert!(parse_duration_at_most("1d", Duration::from_secs(86400)).is_ok());
    }

    #[test]
    fn formatting_is_short() {
        assert_eq!(format_bytes_binary(4096.0), "4096B");
        assert_eq!(format_bytes_binary(282.0 * 1048576.0), "282MiB");
        assert_eq!(format_count(72_100.0), "72.1k");
        assert_eq!(format_count(950.0), "950");
    }
}
