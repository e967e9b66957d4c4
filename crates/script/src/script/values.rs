//! Converting Rhai values to the host API's arguments.

use crate::api::options::{Bytes, Seconds};
use crate::units::parse_size;
use rhai::{Dynamic, EvalAltResult, Map, Position};

/// A runtime error scripts can catch with `try { } catch (e) { }`.
pub fn err(message: impl Into<String>) -> Box<EvalAltResult> {
    Box::new(EvalAltResult::ErrorRuntime(
        Dynamic::from(message.into()),
        Position::NONE,
    ))
}

/// A size: an integer of bytes or a string with fio's suffixes (`"4k"`,
/// `"1G"`), read by the API's one definition ([`Bytes`]); the error names
/// `what`.
pub fn to_bytes(what: &str, v: &Dynamic) -> Result<u64, Box<EvalAltResult>> {
    rhai::serde::from_dynamic::<Bytes>(v)
        .map(|b| b.0)
        .map_err(|e| err(format!("{what}: {}", serde_message(*e))))
}

/// Seconds: a number, or a string with a unit (`"10s"`, `"500ms"`), read
/// by the API's one definition ([`Seconds`]); the error names `what`.
pub fn to_seconds(what: &str, v: &Dynamic) -> Result<f64, Box<EvalAltResult>> {
    rhai::serde::from_dynamic::<Seconds>(v)
        .map(|s| s.0)
        .map_err(|e| err(format!("{what}: {}", serde_message(*e))))
}

/// serde's own message from a failed conversion of a Rhai value, without
/// Rhai's wrapping ("Syntax error: …").
pub fn serde_message(e: EvalAltResult) -> String {
    match e {
        EvalAltResult::ErrorParsing(
            rhai::ParseErrorType::BadInput(rhai::LexError::ImproperSymbol(_, message)),
            _,
        ) => message,
        EvalAltResult::ErrorMismatchOutputType(wanted, got, _) => {
            format!("expected {wanted}, got {got}")
        }
        other => other.to_string(),
    }
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
            .ok()
            .or_else(|| parse_size(text).ok().and_then(|b| i64::try_from(b).ok()))
            .map(Dynamic::from)
            .ok_or(())
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
