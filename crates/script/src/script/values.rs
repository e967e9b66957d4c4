//! Converting Rhai values to the host API's arguments.

use crate::units::{parse_duration, parse_size};
use rhai::{Dynamic, EvalAltResult, Map, Position};

/// A runtime error scripts can catch with `try { } catch (e) { }`.
pub fn err(message: impl Into<String>) -> Box<EvalAltResult> {
    Box::new(EvalAltResult::ErrorRuntime(
        Dynamic::from(message.into()),
        Position::NONE,
    ))
}

/// A size: an integer of bytes or a string with fio's suffixes (`"4k"`, `"1G"`).
pub fn to_bytes(what: &str, v: &Dynamic) -> Result<u64, Box<EvalAltResult>> {
    if let Ok(i) = v.as_int() {
        return u64::try_from(i).map_err(|_| err(format!("{what}: {i} is negative")));
    }
    if let Some(s) = v.read_lock::<rhai::ImmutableString>() {
        return parse_size(&s).map_err(|e| err(format!("{what}: {e}")));
    }
    Err(err(format!(
        "{what}: expected a size (integer or string like \"4k\"), got {}",
        v.type_name()
    )))
}

/// Seconds: a number, or a string with a unit (`"10s"`, `"500ms"`).
pub fn to_seconds(what: &str, v: &Dynamic) -> Result<f64, Box<EvalAltResult>> {
    if let Ok(i) = v.as_int() {
        return Ok(i as f64);
    }
    if let Ok(f) = v.as_float() {
        return Ok(f);
    }
    if let Some(s) = v.read_lock::<rhai::ImmutableString>() {
        return parse_duration(&s)
            .map(|d| d.as_secs_f64())
            .map_err(|e| err(format!("{what}: {e}")));
    }
    Err(err(format!(
        "{what}: expected seconds or a duration string, got {}",
        v.type_name()
    )))
}

/// The options of an `io::job` map as fio would write them (`name=value`).
/// Only scalars are values: a string, a number, a character or a boolean
/// (`true` → `1`); an array, a map or anything else is refused naming the
/// option, so a value is never a rendering of an arbitrarily deep structure.
pub fn option_pairs(opts: &Map) -> Result<Vec<(String, String)>, Box<EvalAltResult>> {
    opts.iter()
        .map(|(k, v)| option_text(k, v).map(|t| (k.to_string(), t)))
        .collect()
}

fn option_text(key: &str, v: &Dynamic) -> Result<String, Box<EvalAltResult>> {
    if let Ok(b) = v.as_bool() {
        return Ok(if b { "1" } else { "0" }.into());
    }
    if v.is_string() || v.is_int() || v.is_float() || v.is_char() {
        return Ok(v.to_string());
    }
    Err(err(format!(
        "option '{key}': expected a string, number or boolean, got {}",
        v.type_name()
    )))
}

/// Converts a typed parameter from its text, following the default's type.
pub fn param_value(
    name: &str,
    text: &str,
    default: &Dynamic,
) -> Result<Dynamic, Box<EvalAltResult>> {
    let bad = |kind: &str| err(format!("parameter '{name}': '{text}' is not {kind}"));
    if default.is_int() {
        return text
            .parse::<i64>()
            .or_else(|_| parse_size(text).map(|b| b as i64))
            .map(Dynamic::from)
            .map_err(|_| bad("an integer or size"));
    }
    if default.is_float() {
        return text
            .parse::<f64>()
            .map(Dynamic::from)
            .map_err(|_| bad("a number"));
    }
    if default.is_bool() {
        return match text {
            "1" | "true" | "yes" => Ok(Dynamic::TRUE),
            "0" | "false" | "no" => Ok(Dynamic::FALSE),
            _ => Err(bad("true or false")),
        };
    }
    Ok(Dynamic::from(text.to_string()))
}
