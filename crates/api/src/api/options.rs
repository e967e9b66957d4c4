//! The value types host options are made of, and the rules they share.
//!
//! Every host operation takes one options struct (`CpuOptions`,
//! `RttOptions`, …) that owns its defaults (`Default`) and its rules
//! (`validate`). The Rhai adapter builds one from a map with serde (so an
//! unknown key is refused by the struct itself), the WIT adapter from a
//! record; neither holds a default or a rule. The field types here accept
//! what a script naturally writes: `2`, `0.5` or `"500ms"` for seconds, `4096`
//! or `"4k"` for bytes.

use super::ApiError;
use crate::units::{parse_duration, parse_size};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;
use std::time::Duration;

/// The longest duration any option may ask for (about 31 years): beyond it
/// a number of seconds is a mistake, and `Duration` arithmetic stays safe.
pub const MAX_SECONDS: f64 = 1e9;
/// The longest pause between two probes (`interval`).
pub const MAX_INTERVAL_SECONDS: f64 = 3600.0;

/// Seconds, written as a number (`2`, `0.5`) or a duration text (`"500ms"`).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Seconds(pub f64);

/// Bytes, written as a non-negative integer or a size text (`"4k"`, `"1G"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

/// A number, integer or not (a rate, a baseline).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Number(pub f64);

impl Seconds {
    /// A positive duration of at most [`MAX_SECONDS`]; the error names the
    /// call and the field.
    pub fn positive(self, call: &str, field: &str) -> Result<Duration, ApiError> {
        let s = self.0;
        if !(s > 0.0 && s <= MAX_SECONDS) {
            return Err(ApiError::Invalid(format!(
                "{call}: {field} {s} must be a positive number of seconds (at most {MAX_SECONDS})"
            )));
        }
        Ok(Duration::from_secs_f64(s))
    }

    /// A pause between probes: 0 to [`MAX_INTERVAL_SECONDS`].
    pub fn interval(self, call: &str, field: &str) -> Result<Duration, ApiError> {
        let s = self.0;
        if !(0.0..=MAX_INTERVAL_SECONDS).contains(&s) {
            return Err(ApiError::Invalid(format!(
                "{call}: {field} {s} must be 0 to {MAX_INTERVAL_SECONDS} seconds"
            )));
        }
        Ok(Duration::from_secs_f64(s))
    }
}

/// Refuses a zero count, naming the call and the field.
pub fn positive<T: PartialEq + Default + fmt::Display>(
    call: &str,
    field: &str,
    n: T,
) -> Result<T, ApiError> {
    if n == T::default() {
        return Err(ApiError::Invalid(format!(
            "{call}: {field} must be a positive integer, not {n}"
        )));
    }
    Ok(n)
}

/// Reads a choice by its name (`"read"`, `"both"`, …) through the type's
/// own `FromStr`, so a script's error names the choices as the type does;
/// for `#[serde(deserialize_with = "by_name")]`.
pub fn by_name<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: std::str::FromStr,
    T::Err: fmt::Display,
{
    String::deserialize(d)?.parse().map_err(de::Error::custom)
}

struct SecondsVisitor;

impl Visitor<'_> for SecondsVisitor {
    type Value = Seconds;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("seconds (a number, or a duration like \"500ms\")")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Seconds, E> {
        Ok(Seconds(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Seconds, E> {
        Ok(Seconds(v as f64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Seconds, E> {
        Ok(Seconds(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Seconds, E> {
        parse_duration(v)
            .map(|d| Seconds(d.as_secs_f64()))
            .map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Seconds, D::Error> {
        d.deserialize_any(SecondsVisitor)
    }
}

struct BytesVisitor;

impl Visitor<'_> for BytesVisitor {
    type Value = Bytes;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a size (an integer of bytes, or a string like \"4k\")")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bytes, E> {
        u64::try_from(v)
            .map(Bytes)
            .map_err(|_| E::custom(format!("{v} is negative")))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bytes, E> {
        Ok(Bytes(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Bytes, E> {
        parse_size(v).map(Bytes).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        d.deserialize_any(BytesVisitor)
    }
}

struct NumberVisitor;

impl Visitor<'_> for NumberVisitor {
    type Value = Number;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Number, E> {
        Ok(Number(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Number, E> {
        Ok(Number(v as f64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Number, E> {
        Ok(Number(v))
    }
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Number, D::Error> {
        d.deserialize_any(NumberVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_positive_and_bounded_and_intervals_may_be_zero() {
        assert!(Seconds(0.0).positive("f", "duration").is_err());
        assert!(Seconds(f64::NAN).positive("f", "duration").is_err());
        assert!(Seconds(2e9).positive("f", "duration").is_err());
        assert_eq!(
            Seconds(0.5).positive("f", "duration").unwrap(),
            Duration::from_millis(500)
        );
        assert!(Seconds(0.0).interval("f", "interval").is_ok());
        assert!(Seconds(-1.0).interval("f", "interval").is_err());
        assert!(Seconds(3601.0).interval("f", "interval").is_err());
        let e = positive("net::rtt", "count", 0u64).unwrap_err().to_string();
        assert_eq!(e, "net::rtt: count must be a positive integer, not 0");
    }
}
