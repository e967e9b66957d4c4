//! The parameters given on the command line (`-p KEY=VALUE`): each one
//! checked as hostile input and declared by some pack of the run — the one
//! rule `plumb run` and `plumb fleet run` share, before anything runs.

use crate::scenario::pack::Pack;
use crate::terminal::clean;
use std::collections::BTreeMap;

/// The longest parameter name accepted on the command line.
pub const MAX_PARAM_KEY: usize = 64;
/// The longest parameter value accepted on the command line.
pub const MAX_PARAM_VALUE: usize = 4096;

/// A `-p` argument refused, naming it (as given, made safe to print).
#[derive(Debug, thiserror::Error)]
pub enum ParamError {
    /// No `=` in the argument.
    #[error("-p {}: expected KEY=VALUE", clean(.0))]
    NotKeyValue(String),
    /// The key or value breaks a rule of [`check`].
    #[error("-p {}: {problem}", clean(.arg))]
    Malformed {
        /// The argument as given.
        arg: String,
        /// Which rule it breaks.
        problem: ParamProblem,
    },
    /// No pack of the run declares the key.
    #[error("-p {key}: no pack has this parameter (known: {})", clean(&format!("{known:?}")))]
    Undeclared {
        /// The key given.
        key: String,
        /// Every key the run's packs declare.
        known: Vec<String>,
    },
}

/// What is wrong with one `KEY=VALUE`.
#[derive(Debug, thiserror::Error)]
pub enum ParamProblem {
    /// `=VALUE` alone.
    #[error("the parameter name is empty")]
    EmptyName,
    /// The key or the value is too long.
    #[error("longer than {MAX_PARAM_KEY} bytes (name) or {MAX_PARAM_VALUE} bytes (value)")]
    TooLong,
    /// The key has characters a parameter name may not have.
    #[error(
        "'{}' is not a parameter name (letters, digits, _ - . starting with a letter or _)",
        clean(.0)
    )]
    BadName(String),
    /// The value has control characters.
    #[error("the value has control characters")]
    ControlInValue,
}

/// `-p KEY=VALUE` arguments into a map; each key must be declared by some
/// pack of `packs` (a lone script, declaring none, takes any).
pub fn parse(raw: &[String], packs: &[Pack]) -> Result<BTreeMap<String, String>, ParamError> {
    let mut out = BTreeMap::new();
    for r in raw {
        let (k, v) = r
            .split_once('=')
            .ok_or_else(|| ParamError::NotKeyValue(r.clone()))?;
        check(k, v).map_err(|problem| ParamError::Malformed {
            arg: r.clone(),
            problem,
        })?;
        let declared = packs
            .iter()
            .any(|p| p.params.is_empty() || p.params.contains_key(k));
        if !declared {
            return Err(ParamError::Undeclared {
                key: k.to_string(),
                known: packs
                    .iter()
                    .flat_map(|p| p.params.keys().cloned())
                    .collect(),
            });
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

/// A `-p` key is a non-empty word of letters, digits, `_`, `-` and `.`
/// (starting with a letter or `_`); a value has no control characters.
pub fn check(k: &str, v: &str) -> Result<(), ParamProblem> {
    if k.is_empty() {
        return Err(ParamProblem::EmptyName);
    }
    if k.len() > MAX_PARAM_KEY || v.len() > MAX_PARAM_VALUE {
        return Err(ParamProblem::TooLong);
    }
    let first_ok = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    if !first_ok
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(ParamProblem::BadName(k.to_string()));
    }
    if v.chars().any(char::is_control) {
        return Err(ParamProblem::ControlInValue);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_are_checked_and_messages_name_the_argument() {
        assert!(check("size", "1G").is_ok());
        assert!(check("_a.b-c", "").is_ok());
        for bad in ["", "1size", "si ze", "a/b", "\u{1b}x"] {
            assert!(check(bad, "1").is_err(), "{bad:?}");
        }
        assert!(matches!(
            check("k", "a\nb"),
            Err(ParamProblem::ControlInValue)
        ));
        assert!(matches!(
            check(&"k".repeat(MAX_PARAM_KEY + 1), "1"),
            Err(ParamProblem::TooLong)
        ));
        let e = parse(&["novalue".into()], &[]).unwrap_err();
        assert_eq!(e.to_string(), "-p novalue: expected KEY=VALUE");
        let e = parse(&["9x=1".into()], &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "-p 9x=1: '9x' is not a parameter name (letters, digits, _ - . starting with a letter or _)"
        );
    }

    #[test]
    fn a_key_must_be_declared_by_some_pack_unless_one_declares_none() {
        let quick = crate::scenario::pack::builtin("quick").unwrap().unwrap();
        let e = parse(&["nosuch=1".into()], std::slice::from_ref(&quick)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("-p nosuch: no pack has this parameter (known: ["),
            "{e}"
        );
        let key = quick.params.keys().next().unwrap().clone();
        let got = parse(&[format!("{key}=1")], std::slice::from_ref(&quick)).unwrap();
        assert_eq!(got.get(&key).map(String::as_str), Some("1"));
    }
}
