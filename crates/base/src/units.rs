//! Parsing and formatting of sizes and durations with fio's suffixes.
//!
//! fio reads `4k` as 4096 (its `kb_base=1024` default), accepts `KiB`/`KB`
//! alike, `%` for a share of a file, and durations in seconds unless a unit
//! (`us`, `ms`, `s`, `m`, `h`, `d`) is given.

use std::time::Duration;

/// Why a size or a duration could not be read; each names the text as
/// written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// `N%` whose `N` is not a number.
    #[error("'{text}' is not a percentage")]
    NotPercentage {
        /// The text as written.
        text: String,
    },
    /// A percentage outside (0, 100].
    #[error("'{text}': a percentage must be in (0, 100]")]
    PercentOutOfRange {
        /// The text as written.
        text: String,
    },
    /// No number where one was expected.
    #[error("'{text}' is not a {what}")]
    NotANumber {
        /// The text as written.
        text: String,
        /// The kind of value (`size`, `duration`).
        what: &'static str,
    },
    /// More digits than any value holds.
    #[error("'{text}' is too large")]
    TooManyDigits {
        /// The text as written.
        text: String,
    },
    /// A size suffix fio does not know.
    #[error("'{text}': unknown size suffix '{suffix}' (use k, m, g, t, KiB, MiB, …)")]
    SizeSuffix {
        /// The text as written.
        text: String,
        /// The suffix.
        suffix: String,
    },
    /// A size beyond `u64`.
    #[error("'{text}' is too large (at most {} bytes)", u64::MAX)]
    SizeTooLarge {
        /// The text as written.
        text: String,
    },
    /// A time unit fio does not know.
    #[error("'{text}': unknown time unit '{unit}' (use us, ms, s, m, h)")]
    TimeUnit {
        /// The text as written.
        text: String,
        /// The unit, in lower case.
        unit: String,
    },
    /// A duration beyond [`MAX_DURATION`].
    #[error("'{text}' is too long (at most ~584 years)")]
    DurationTooLong {
        /// The text as written.
        text: String,
    },
    /// A duration beyond an option's own bound.
    #[error("'{text}' is too long (at most {max_secs}s)")]
    AboveBound {
        /// The text as written.
        text: String,
        /// The bound in seconds.
        max_secs: u64,
    },
}

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
pub fn parse_size_spec(text: &str) -> Result<SizeSpec, UnitError> {
    let t = text.trim();
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p
            .trim()
            .parse()
            .map_err(|_| UnitError::NotPercentage { text: text.into() })?;
        if !(v > 0.0 && v <= 100.0) {
            return Err(UnitError::PercentOutOfRange { text: text.into() });
        }
        return Ok(SizeSpec::Percent(v));
    }
    parse_size(t).map(SizeSpec::Bytes)
}

/// Parses an absolute size in bytes with fio's suffixes (k, m, g, t, p, e;
/// KiB, KB, …). The integer part is exact (no trip through `f64`); a fraction
/// (`1.5m`) is rounded to the nearest byte; a size beyond `u64` is an error.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (number, suffix) = split_number(text, "size")?;
    let mult = size_multiplier(suffix.trim()).ok_or_else(|| UnitError::SizeSuffix {
        text: text.into(),
        suffix: suffix.into(),
    })?;
    number
        .scaled(u128::from(mult))
        .and_then(|b| u64::try_from(b).ok())
        .ok_or_else(|| UnitError::SizeTooLarge { text: text.into() })
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
fn split_number<'a>(text: &'a str, what: &'static str) -> Result<(Decimal, &'a str), UnitError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let not_number = || UnitError::NotANumber {
        text: text.into(),
        what,
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if (whole.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(not_number());
    }
    let too_large = || UnitError::TooManyDigits { text: text.into() };
    let digits = |s: &str| -> Result<u128, UnitError> {
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
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    parse_duration_with_default(text, 1_000_000)
}

/// Parses a duration whose bare number is in `default_unit_us` microseconds.
pub fn parse_duration_with_default(
    text: &str,
    default_unit_us: u64,
) -> Result<Duration, UnitError> {
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
            return Err(UnitError::TimeUnit {
                text: text.into(),
                unit: other.into(),
            })
        }
    };
    value
        .scaled(u128::from(unit_us) * 1000)
        .and_then(|ns| u64::try_from(ns).ok())
        .map(Duration::from_nanos)
        .ok_or_else(|| UnitError::DurationTooLong { text: text.into() })
}

/// Parses a duration and refuses one longer than `max` (an option's own bound).
pub fn parse_duration_at_most(text: &str, max: Duration) -> Result<Duration, UnitError> {
    let d = parse_duration(text)?;
    if d > max {
        return Err(UnitError::AboveBound {
            text: text.into(),
            max_secs: max.as_secs(),
        });
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

/// A figure with its unit scaled for reading (`1.23 GiB/s`, `850 µs`,
/// `72.1k IOPS`): [`Scale::of`] and [`Scale::show`].
pub fn format_value(value: f64, unit: &str) -> String {
    Scale::of(value, unit).show(value)
}

/// How a row of figures in one unit is shown: the unit a reader gets
/// (bytes in IEC steps — KiB, MiB/s —, decimal byte and bit rates in
/// steps of 1000 — MB/s, Gbit/s —, times from ns to s, other counts with
/// k, M, G, T), and the divisor that takes a raw figure there. Chosen once
/// per row ([`Scale::of`] its headline figure), so that every figure of the
/// row is in one unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Scale {
    /// What a raw figure is divided by.
    divisor: f64,
    /// The step of a count (`k`, `M`), written after the number.
    prefix: &'static str,
    /// The unit written after the number (and its prefix).
    unit: String,
    /// A count shown as it is (no step, not a ratio): whole numbers are
    /// written without decimals (`3` segments, not `3.00`).
    whole: bool,
}

/// The units scaled along a ladder, smallest first, and the step between
/// rungs: bytes in IEC steps by default, the decimal units a scenario
/// names (MB/s) in steps of 1000, times from ns to s.
const LADDERS: [(&[&str], f64); 8] = [
    (&["B", "KiB", "MiB", "GiB", "TiB", "PiB"], 1024.0),
    (
        &["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s", "PiB/s"],
        1024.0,
    ),
    (&["kB", "MB", "GB", "TB", "PB"], 1000.0),
    (&["kB/s", "MB/s", "GB/s", "TB/s", "PB/s"], 1000.0),
    (&["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"], 1000.0),
    (
        &["elem/s", "kelem/s", "Melem/s", "Gelem/s", "Telem/s"],
        1000.0,
    ),
    (
        &["FLOP/s", "kFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s"],
        1000.0,
    ),
    (&["ns", "µs", "ms", "s"], 1000.0),
];
/// Steps of a count.
const COUNT_PREFIXES: [&str; 5] = ["", "k", "M", "G", "T"];
/// Units whose figures are ratios or shares, never given a count's step.
const UNSCALED: [&str; 5] = ["%", "x", "×", "ratio", "percent"];

impl Scale {
    /// The scale for a row whose headline figure is `value` in `unit`:
    /// the largest rung under which `value` is at least 1; a time below 1
    /// steps down (0.06 s is 60 ms) to ns.
    pub fn of(value: f64, unit: &str) -> Scale {
        let name = match unit {
            "bytes" => "B",
            "bytes/s" => "B/s",
            "us" => "µs",
            "bits/s" | "bps" => "bit/s",
            u => u,
        };
        let found = LADDERS.iter().find_map(|(names, base)| {
            let at = names.iter().position(|n| *n == name)?;
            Some((*names, *base, at))
        });
        let Some((names, base, at)) = found else {
            return Scale::count(value, unit);
        };
        let (up, _) = steps(value, base, names.len() - 1 - at);
        let mut rung = at + up;
        let mut divisor = base.powi(up as i32);
        if names[0] == "ns" {
            while rung > 0 && value != 0.0 && (value / divisor).abs() < 1.0 {
                rung -= 1;
                divisor /= base;
            }
        }
        Scale {
            divisor,
            prefix: "",
            unit: names[rung].to_string(),
            whole: false,
        }
    }

    /// A count (IOPS, files/s, a bare number): k, M, G, T from 1000 up;
    /// ratios and shares as they are.
    fn count(value: f64, unit: &str) -> Scale {
        let up = if UNSCALED.contains(&unit) {
            0
        } else {
            steps(value, 1000.0, COUNT_PREFIXES.len() - 1).0
        };
        Scale {
            divisor: 1000f64.powi(up as i32),
            prefix: COUNT_PREFIXES[up],
            unit: unit.to_string(),
            whole: up == 0 && !UNSCALED.contains(&unit),
        }
    }

    /// `value` in this scale, with three significant digits and the
    /// count's step (`1.23`, `72.1k`), without the unit.
    pub fn number(&self, value: f64) -> String {
        let v = value / self.divisor;
        if self.whole && v.fract() == 0.0 && v.abs() < 1e5 {
            return format!("{v:.0}");
        }
        format!("{}{}", significant(v), self.prefix)
    }

    /// What a raw figure is divided by to be shown in this scale.
    pub fn divisor(&self) -> f64 {
        self.divisor
    }

    /// The count's step written after a number (`k`, `M`), or nothing.
    pub fn prefix(&self) -> &str {
        self.prefix
    }

    /// The unit of the row as a column shows it (`MiB/s`, `IOPS`; a
    /// count's step is on its numbers).
    pub fn unit(&self) -> &str {
        &self.unit
    }

    /// `value` with its unit: `1.23 GiB/s`, `72.1k IOPS`, `850 µs`.
    pub fn show(&self, value: f64) -> String {
        let n = self.number(value);
        if self.unit.is_empty() {
            n
        } else {
            format!("{n} {}", self.unit)
        }
    }
}

/// How many steps of `base` (at most `max`) bring `value` under `base`,
/// and the value there.
fn steps(value: f64, base: f64, max: usize) -> (usize, f64) {
    let mut v = value.abs();
    let mut i = 0;
    while v >= base && i < max {
        v /= base;
        i += 1;
    }
    (i, v)
}

/// `v` with three significant digits (`1.23`, `12.3`, `123`, `1023`, `0.0456`);
/// past five integer digits or below 0.001, in exponent form (`1.23e9`).
pub fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else {
            format!("{v:.0}")
        };
    }
    // The exponent of the value as rounded to three digits (9.996 is 10.0).
    let rounded = format!("{v:.2e}");
    let exp: i32 = rounded
        .rsplit_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    if !(-3..5).contains(&exp) {
        return rounded;
    }
    let decimals = (2 - exp).max(0) as usize;
    format!("{v:.decimals$}")
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

    #[test]
    fn values_have_three_significant_digits_in_a_scaled_unit() {
        assert_eq!(format_value(17_074_595_695.0, "bytes/s"), "15.9 GiB/s");
        assert_eq!(format_value(1_157_884_138.0, "bytes/s"), "1.08 GiB/s");
        assert_eq!(format_value(0.000060, "s"), "60.0 µs");
        assert_eq!(format_value(0.25, "s"), "250 ms");
        assert_eq!(format_value(4014.0, "us"), "4.01 ms");
        assert_eq!(format_value(61_234.0, "ns"), "61.2 µs");
        assert_eq!(format_value(3600.0, "s"), "3600 s");
        assert_eq!(format_value(72_100.0, "iops"), "72.1k iops");
        assert_eq!(format_value(207_313.0, "seeks/s"), "207k seeks/s");
        assert_eq!(format_value(2_500_000.0, ""), "2.50M");
        assert_eq!(format_value(950.0, "IOPS"), "950 IOPS");
        assert_eq!(format_value(3.0, "segments"), "3 segments");
        assert_eq!(format_value(2.5, ""), "2.50");
        assert_eq!(format_value(2.0, "x"), "2.00 x");
        assert_eq!(format_value(1534.0, "MB/s"), "1.53 GB/s");
        assert_eq!(format_value(14_470.0, "Mbit/s"), "14.5 Gbit/s");
        assert_eq!(format_value(1023.0, "bytes"), "1023 B");
        assert_eq!(format_value(0.5, "x"), "0.500 x");
        assert_eq!(format_value(123_456.0, "%"), "1.23e5 %");
        assert_eq!(format_value(0.0, "ms"), "0 ms");
        assert_eq!(format_value(9.996, "ms"), "10.0 ms");
        assert_eq!(format_value(-2048.0, "bytes"), "-2.00 KiB");
        assert_eq!(format_value(1e300, "bytes"), "8.88e284 PiB");
    }

    #[test]
    fn a_row_keeps_one_unit() {
        let s = Scale::of(2.0 * 1024.0 * 1024.0 * 1024.0, "bytes/s");
        assert_eq!(s.unit(), "GiB/s");
        assert_eq!(s.number(512.0 * 1024.0 * 1024.0), "0.500");
        let c = Scale::of(72_100.0, "IOPS");
        assert_eq!((c.number(70_000.0).as_str(), c.unit()), ("70.0k", "IOPS"));
        assert_eq!(Scale::of(5e6, "").number(5e6), "5.00M");
    }
}
