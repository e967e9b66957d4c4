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

/// Parses an absolute size in bytes with fio's suffixes (k, m, g, t, p; KiB, KB, …).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (value, suffix) = split_number(text, "size")?;
    let mult = size_multiplier(suffix.trim()).ok_or_else(|| {
        format!("'{text}': unknown size suffix '{suffix}' (use k, m, g, t, KiB, MiB, …)")
    })?;
    let bytes = value * mult as f64;
    if bytes > u64::MAX as f64 {
        return Err(format!("'{text}' is too large"));
    }
    Ok(bytes.round() as u64)
}

/// Splits `12.5k` into (12.5, "k"); `what` names the kind of value in errors.
fn split_number<'a>(text: &'a str, what: &str) -> Result<(f64, &'a str), String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let value = num
        .parse::<f64>()
        .map_err(|_| format!("'{text}' is not a {what}"))?;
    Ok((value, suffix))
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
        _ => return None,
    };
    Some(1024u64.pow(pow))
}

/// Parses a duration; a bare number means seconds, as in fio (`10`, `10s`, `2m`, `500ms`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    parse_duration_with_default(text, 1_000_000)
}

/// Parses a duration whose bare number is in `default_unit_us` microseconds.
pub fn parse_duration_with_default(text: &str, default_unit_us: u64) -> Result<Duration, String> {
    let (value, suffix) = split_number(text, "duration")?;
    let unit_us: f64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" => default_unit_us as f64,
        "us" | "usec" => 1.0,
        "ms" | "msec" => 1e3,
        "s" | "sec" => 1e6,
        "m" | "min" => 60e6,
        "h" => 3600e6,
        "d" => 86400e6,
        other => {
            return Err(format!(
                "'{text}': unknown time unit '{other}' (use us, ms, s, m, h)"
            ))
        }
    };
    Ok(Duration::from_nanos(
        (value * unit_us * 1000.0).round() as u64
    ))
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
    fn durations_follow_fio() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("5 weeks").is_err());
    }

    #[test]
    fn formatting_is_short() {
        assert_eq!(format_bytes_binary(4096.0), "4096B");
        assert_eq!(format_bytes_binary(282.0 * 1048576.0), "282MiB");
        assert_eq!(format_count(72_100.0), "72.1k");
        assert_eq!(format_count(950.0), "950");
    }
}
