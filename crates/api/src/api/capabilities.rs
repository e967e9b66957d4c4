//! What a pack declares it needs beyond its run directory (bytes, network
//! endpoints, threads, direct I/O, root), and the check every host operation
//! makes against that declaration before it runs.

use super::{ApiError, Host};
use crate::units::parse_size;
use serde::Deserialize;
use std::collections::BTreeMap;

/// What a pack needs beyond its run directory.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// The most bytes it will write: a size (`"2G"`) or a sum over the
    /// pack's size parameters (`"3 * size + 1G"`, see [`ByteBudget`]).
    pub max_bytes: Option<String>,
    /// The most inodes (files, directories, symlinks) it will have made at
    /// once.
    pub max_inodes: Option<u64>,
    /// Network endpoints (`host:port`).
    #[serde(default)]
    pub net: Vec<String>,
    /// Threads it will use at most.
    pub threads: Option<u32>,
    /// Whether it uses O_DIRECT.
    #[serde(default)]
    pub direct_io: bool,
    /// Whether it needs root (dropping caches).
    #[serde(default)]
    pub root: bool,
}

/// Most threads a pack may declare: the same bound as a job's `numjobs`.
pub const MAX_THREADS: u32 = 4096;
/// Most inodes a pack may declare (ext4's own limit is 2^32): what a run
/// grants is checked against `--max-inodes` and the free inodes.
pub const MAX_INODES: u64 = 1 << 32;
/// Most network endpoints a pack may declare.
pub const MAX_NET_ENDPOINTS: usize = 256;
/// Longest endpoint (`host:port`): a DNS name is at most 253 bytes.
const MAX_ENDPOINT_LEN: usize = 261;

/// Why a pack's `[capabilities]` are refused, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapabilityError {
    /// `max_bytes` does not parse.
    #[error("capabilities.max_bytes: {0}")]
    MaxBytes(Box<BudgetError>),
    /// `max_bytes` cannot be reckoned with the run's parameters.
    #[error("capabilities.max_bytes = {text}: {error}")]
    MaxBytesValue {
        /// The declared text.
        text: String,
        /// Why.
        error: Box<BudgetError>,
    },
    /// `max_inodes` out of range.
    #[error("capabilities.max_inodes: {0} is out of range (1..={MAX_INODES})")]
    MaxInodes(u64),
    /// `threads` out of range.
    #[error("capabilities.threads: {0} is out of range (1..={MAX_THREADS})")]
    Threads(u32),
    /// Too many `net` endpoints.
    #[error("capabilities.net: {0} endpoints, at most {MAX_NET_ENDPOINTS}")]
    TooManyEndpoints(usize),
    /// A `net` entry that is empty or too long (its first 40 characters).
    #[error(
        "capabilities.net: '{0}' is not an endpoint (host:port, at most {MAX_ENDPOINT_LEN} bytes)"
    )]
    Endpoint(String),
}

/// Why a byte budget's text (`2 * size + 64M`) does not parse, or cannot
/// be reckoned; texts are quoted cut to 40 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    /// Longer than [`MAX_BUDGET_TEXT`].
    #[error("{0} bytes long, at most {MAX_BUDGET_TEXT}")]
    TooLong(usize),
    /// Nothing at all.
    #[error("empty: a size (\"8G\") or a sum like \"3 * size + 1G\"")]
    Empty,
    /// `a + + b`.
    #[error("'{0}': a '+' with no term beside it")]
    EmptyTerm(String),
    /// More than [`MAX_BUDGET_TERMS`] terms.
    #[error("more than {MAX_BUDGET_TERMS} terms")]
    TooManyTerms,
    /// `a * b * c`.
    #[error("'{0}': one '*' per term (N * parameter)")]
    TwoFactors(String),
    /// The factor of `N * name` is not a number.
    #[error("'{term}': the factor before '*' must be a number or a size ({error})")]
    Factor {
        /// The term.
        term: String,
        /// Why.
        error: crate::units::UnitError,
    },
    /// A name the pack has no parameter of.
    #[error("unknown parameter '{name}' (the pack's parameters: {known})")]
    UnknownParameter {
        /// The name.
        name: String,
        /// The pack's parameters, or `none`.
        known: String,
    },
    /// A term that is neither.
    #[error("'{term}' is not a size or a parameter ({error})")]
    NotASize {
        /// The term.
        term: String,
        /// Why.
        error: crate::units::UnitError,
    },
    /// A parameter without a value in this run.
    #[error("parameter '{0}' has no value")]
    NoValue(String),
    /// A parameter whose value is not a size.
    #[error("{name}={value} is not a size ({error})")]
    ValueNotASize {
        /// The parameter.
        name: String,
        /// Its value.
        value: String,
        /// Why.
        error: crate::units::UnitError,
    },
    /// The sum passes `u64`.
    #[error("more than 16 EiB (the sum overflows)")]
    Overflow,
}

impl Capabilities {
    /// Checks every declared field against its bounds, naming the field:
    /// a byte budget that parses over the pack's parameter names `params`,
    /// 1..=[`MAX_THREADS`] threads, and at most [`MAX_NET_ENDPOINTS`]
    /// non-empty `host:port` endpoints of sane length.
    pub fn validate(&self, params: &[&str]) -> Result<(), CapabilityError> {
        self.byte_budget(params)?;
        if let Some(n) = self.max_inodes {
            if !(1..=MAX_INODES).contains(&n) {
                return Err(CapabilityError::MaxInodes(n));
            }
        }
        if let Some(t) = self.threads {
            if !(1..=MAX_THREADS).contains(&t) {
                return Err(CapabilityError::Threads(t));
            }
        }
        if self.net.len() > MAX_NET_ENDPOINTS {
            return Err(CapabilityError::TooManyEndpoints(self.net.len()));
        }
        if let Some(bad) = self
            .net
            .iter()
            .find(|n| n.trim().is_empty() || n.len() > MAX_ENDPOINT_LEN)
        {
            return Err(CapabilityError::Endpoint(bad.chars().take(40).collect()));
        }
        Ok(())
    }

    /// The declared byte budget, parsed over the pack's parameter names
    /// `params`; errors name `capabilities.max_bytes`.
    pub fn byte_budget(&self, params: &[&str]) -> Result<Option<ByteBudget>, CapabilityError> {
        self.max_bytes
            .as_deref()
            .map(|t| {
                ByteBudget::parse(t, params).map_err(|e| CapabilityError::MaxBytes(Box::new(e)))
            })
            .transpose()
    }

    /// The declared byte budget in bytes for a run with the parameter
    /// values `values` (the pack's defaults overridden by `-p`), and what
    /// it was reckoned from; None when the pack declares none.
    pub fn max_bytes(
        &self,
        values: &BTreeMap<String, String>,
    ) -> Result<Option<ByteNeed>, CapabilityError> {
        let names: Vec<&str> = values.keys().map(String::as_str).collect();
        let Some(budget) = self.byte_budget(&names)? else {
            return Ok(None);
        };
        budget
            .eval(values)
            .map(Some)
            .map_err(|error| CapabilityError::MaxBytesValue {
                text: budget.text.clone(),
                error: Box::new(error),
            })
    }

    /// One line per capability, for display before running.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(b) = &self.max_bytes {
            out.push(format!("writes up to {b}"));
        }
        if let Some(n) = self.max_inodes {
            out.push(format!("makes up to {n} files and directories"));
        }
        if !self.net.is_empty() {
            out.push(format!("network: {}", self.net.join(", ")));
        }
        if let Some(t) = self.threads {
            out.push(format!("up to {t} threads"));
        }
        if self.direct_io {
            out.push("direct I/O".into());
        }
        if self.root {
            out.push("root (drops the page cache)".into());
        }
        out
    }
}

/// A capability checked against the pack's declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// Opening files with O_DIRECT (`direct_io = true`).
    DirectIo,
    /// This many threads at once.
    Threads(u32),
    /// Operations that need root (dropping the page cache).
    Root,
}

impl Host {
    /// Refuses what the pack did not declare: direct I/O, more threads, root;
    /// and threads past the run's cap ([`crate::gate`]), declared or not.
    pub fn allow(&self, what: Capability) -> Result<(), ApiError> {
        if let Capability::Threads(n) = what {
            crate::gate::room(n).map_err(|e| ApiError::Denied(e.to_string()))?;
        }
        let Some(c) = &self.space.declared else {
            return Ok(());
        };
        let refused = match what {
            Capability::DirectIo => {
                (!c.direct_io).then(|| "direct I/O (declare direct_io = true)".to_string())
            }
            Capability::Threads(n) => {
                // Background tasks still running hold theirs.
                let busy = self.background_threads();
                let total = n.saturating_add(busy);
                c.threads.filter(|t| total > *t).map(|t| {
                    if busy > 0 {
                        format!("{n} threads beside the {busy} its background tasks hold (the pack declares at most {t})")
                    } else {
                        format!("{n} threads (the pack declares at most {t})")
                    }
                })
            }
            Capability::Root => {
                (!c.root).then(|| "root-only operations (declare root = true)".to_string())
            }
        };
        match refused {
            Some(msg) => Err(ApiError::Denied(format!(
                "this scenario uses {msg}, which its pack did not declare (rule: capabilities in pack.toml)"
            ))),
            None => Ok(()),
        }
    }
}

/// The longest `max_bytes` a pack may declare.
pub const MAX_BUDGET_TEXT: usize = 256;
/// The most terms in a `max_bytes` sum.
pub const MAX_BUDGET_TERMS: usize = 16;

/// One term of a `max_bytes` sum.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    /// A size literal (`1G`).
    Bytes(u64),
    /// `times * name` (`name` alone is `1 * name`; a count parameter
    /// reads as that many bytes, so `240M * trees`).
    Param { times: u64, name: String },
}

/// A pack's `max_bytes` as declared: a sum of terms, each a size literal
/// (`1G`), a parameter (`size`), or a number or size times a parameter
/// (`3 * size`, `240M * trees` for a count) — no other operators. Bounded ([`MAX_BUDGET_TEXT`] bytes,
/// [`MAX_BUDGET_TERMS`] terms) and evaluated with checked arithmetic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteBudget {
    /// The declaration as written.
    pub text: String,
    terms: Vec<Term>,
}

/// What a pack may write with a run's parameters, and why: its budget's
/// text and the values of the parameters in it, for a refusal to name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteNeed {
    /// The bytes.
    pub bytes: u64,
    /// The declaration it was reckoned from.
    pub text: String,
    /// The parameters in it with the run's values, in order of appearance.
    pub params: Vec<(String, String)>,
}

impl ByteNeed {
    /// The refusal when `granted` bytes are all the run may have: names the
    /// need, the declaration with the values that drive it, `grant` (what
    /// granted it: `--max-bytes grants`), and the remedies — a smaller
    /// value of each parameter, or `more` (`a larger --max-bytes`).
    pub fn refusal(&self, pack: &str, grant: &str, granted: u64, more: &str) -> String {
        let show = |b: u64| crate::units::format_value(b as f64, "bytes");
        let with = if self.params.is_empty() {
            String::new()
        } else {
            let values: Vec<String> = self
                .params
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!(" with {}", values.join(", "))
        };
        let smaller: Vec<String> = self
            .params
            .iter()
            .map(|(k, _)| format!("-p {k}=…"))
            .collect();
        let remedy = if smaller.is_empty() {
            more.to_string()
        } else {
            format!("a smaller {} or {more}", smaller.join(" or "))
        };
        format!(
            "{pack} needs {} (max_bytes = {}{with}) but {grant} {}: pass {remedy}",
            show(self.bytes),
            self.text,
            show(granted)
        )
    }
}

impl ByteBudget {
    /// Parses `text` over the parameter names `params`; an unknown name, an
    /// empty term, a malformed number or too long a text is an error that
    /// quotes it.
    pub fn parse(text: &str, params: &[&str]) -> Result<ByteBudget, BudgetError> {
        if text.len() > MAX_BUDGET_TEXT {
            return Err(BudgetError::TooLong(text.len()));
        }
        if text.trim().is_empty() {
            return Err(BudgetError::Empty);
        }
        let mut terms = Vec::new();
        for raw in text.split('+') {
            let t = raw.trim();
            if t.is_empty() {
                return Err(BudgetError::EmptyTerm(text.to_string()));
            }
            if terms.len() == MAX_BUDGET_TERMS {
                return Err(BudgetError::TooManyTerms);
            }
            terms.push(term(t, params)?);
        }
        Ok(ByteBudget {
            text: text.trim().to_string(),
            terms,
        })
    }

    /// The bytes with the parameter values `values`: each parameter's value
    /// read as a size; an overflow past `u64` is an error.
    pub fn eval(&self, values: &BTreeMap<String, String>) -> Result<ByteNeed, BudgetError> {
        let overflow = || BudgetError::Overflow;
        let mut bytes = 0u64;
        let mut used: Vec<(String, String)> = Vec::new();
        for t in &self.terms {
            let b = match t {
                Term::Bytes(b) => *b,
                Term::Param { times, name } => {
                    let v = values
                        .get(name)
                        .ok_or_else(|| BudgetError::NoValue(name.clone()))?;
                    if !used.iter().any(|(k, _)| k == name) {
                        used.push((name.clone(), v.clone()));
                    }
                    let size = parse_size(v).map_err(|error| BudgetError::ValueNotASize {
                        name: name.clone(),
                        value: v.clone(),
                        error,
                    })?;
                    times.checked_mul(size).ok_or_else(overflow)?
                }
            };
            bytes = bytes.checked_add(b).ok_or_else(overflow)?;
        }
        Ok(ByteNeed {
            bytes,
            text: self.text.clone(),
            params: used,
        })
    }
}

/// One term: `N * name`, `name`, or a size literal.
fn term(t: &str, params: &[&str]) -> Result<Term, BudgetError> {
    let shown: String = t.chars().take(40).collect();
    let unknown = |name: &str| BudgetError::UnknownParameter {
        name: name.chars().take(40).collect(),
        known: if params.is_empty() {
            "none".to_string()
        } else {
            params.join(", ")
        },
    };
    let param = |name: &str| {
        if params.contains(&name) {
            Ok(name.to_string())
        } else {
            Err(unknown(name))
        }
    };
    if let Some((n, name)) = t.split_once('*') {
        let (n, name) = (n.trim(), name.trim());
        if name.contains('*') {
            return Err(BudgetError::TwoFactors(shown));
        }
        let times = parse_size(n).map_err(|error| BudgetError::Factor {
            term: shown.clone(),
            error,
        })?;
        return Ok(Term::Param {
            times,
            name: param(name)?,
        });
    }
    if params.contains(&t) {
        return Ok(Term::Param {
            times: 1,
            name: t.to_string(),
        });
    }
    if t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return Err(unknown(t));
    }
    parse_size(t)
        .map(Term::Bytes)
        .map_err(|error| BudgetError::NotASize { term: shown, error })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn budgets_sum_sizes_and_parameters_with_checked_arithmetic() {
        let trees = ByteBudget::parse("240M * trees", &["trees"]).unwrap();
        assert_eq!(
            trees.eval(&values(&[("trees", "2")])).unwrap().bytes,
            480 << 20
        );
        let b = ByteBudget::parse(" 3 * size + 1G + dd ", &["size", "dd"]).unwrap();
        let n = b.eval(&values(&[("size", "2G"), ("dd", "512M")])).unwrap();
        assert_eq!(n.bytes, (7 << 30) + (512 << 20));
        assert_eq!(
            n.params,
            [("size".into(), "2G".into()), ("dd".into(), "512M".into())]
        );
        assert_eq!(
            ByteBudget::parse("8G", &[])
                .unwrap()
                .eval(&values(&[]))
                .unwrap()
                .bytes,
            8 << 30
        );
        let big = ByteBudget::parse("99999999999 * size", &["size"]).unwrap();
        assert!(big
            .eval(&values(&[("size", "4G")]))
            .unwrap_err()
            .to_string()
            .contains("overflows"));
        let sum = ByteBudget::parse("8E + 8E", &[]).unwrap();
        assert!(sum
            .eval(&values(&[]))
            .unwrap_err()
            .to_string()
            .contains("overflows"));
        let e = ByteBudget::parse("size", &["size"])
            .unwrap()
            .eval(&values(&[("size", "lots")]));
        assert!(e
            .unwrap_err()
            .to_string()
            .starts_with("size=lots is not a size"));
    }

    #[test]
    fn malformed_budgets_are_refused_naming_what_is_wrong() {
        let err = |t: &str| ByteBudget::parse(t, &["size"]).unwrap_err().to_string();
        assert!(err("").starts_with("empty"));
        assert!(
            err("3 * sise").starts_with("unknown parameter 'sise' (the pack's parameters: size)")
        );
        assert!(err("sise").starts_with("unknown parameter 'sise'"));
        assert!(err("1G +").contains("a '+' with no term"));
        assert!(err("2 * 3 * size").contains("one '*' per term"));
        assert!(err("size * 3").contains("must be a number or a size"));
        assert!(err("99999999999999999999999 * size").contains("must be a number or a size"));
        assert!(err("* size").contains("must be a number or a size"));
        assert!(err("1G - size").contains("is not a size or a parameter"));
        assert!(err("99999999999999999999999G").contains("is not a size"));
        let long = vec!["1G"; 10_000].join(" + ");
        assert!(err(&long).contains("at most 256"));
        let many = vec!["1"; 17].join("+");
        assert!(err(&many).contains("more than 16 terms"));
    }
}
