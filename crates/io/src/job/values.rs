//! Parsers for option values: booleans, counts, block sizes, bssplit,
//! distributions, and fio's per-direction `read,write[,trim]` syntax.

use super::spec::{AccessZone, BlockSize, Distribution, ZoneSplit};
use crate::units::{parse_size, UnitError};

/// Why an option's value is refused (the option is named by
/// [`super::options::OptionError`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// A size or a duration that does not read.
    #[error(transparent)]
    Unit(#[from] UnitError),
    /// Not `0`/`1`, `true`/`false`, `yes`/`no`, `on`/`off`.
    #[error("'{0}' is not a boolean (use 0 or 1)")]
    NotBoolean(String),
    /// Not a count.
    #[error("'{0}' is not a number")]
    NotNumber(String),
    /// A count below its least.
    #[error("must be at least {0}")]
    Below(u64),
    /// A count outside its bounds.
    #[error("{value} is out of range ({min}..={max})")]
    OutOfRange {
        /// The count.
        value: u64,
        /// The least allowed.
        min: u64,
        /// The most allowed.
        max: u64,
    },
    /// A percentage above 100.
    #[error("'{0}' is not a percentage (0-100)")]
    NotPercentage(String),
    /// A block size of 0.
    #[error("a block size must be above 0")]
    ZeroBlock,
    /// A block size above 1 GiB.
    #[error("block size '{0}' is larger than 1GiB")]
    BlockTooLarge(String),
    /// A `bsrange` without its two ends.
    #[error("'{0}' is not a range (lo-hi)")]
    NotRange(String),
    /// A `bsrange` whose low end is above its high end.
    #[error("'{0}': the low end is above the high end")]
    Reversed(String),
    /// A `bssplit` without an entry.
    #[error("bssplit needs at least one size/percent")]
    EmptySplit,
    /// `bssplit` percentages above 100.
    #[error("percentages add up to {0}, above 100")]
    SplitAbove(u32),
    /// `bssplit` percentages below 100 with no blank to take the rest.
    #[error("percentages add up to {0}, not 100")]
    SplitBelow(u32),
    /// A distribution whose parameter is not a number.
    #[error("'{value}': {kind} needs a number, e.g. {kind}:{example}")]
    DistributionNumber {
        /// The value as given.
        value: String,
        /// The distribution.
        kind: String,
        /// A parameter that would do.
        example: &'static str,
    },
    /// zipf's θ out of bounds.
    #[error("'{0}': zipf θ must be above 0, at most {MAX_ZIPF_THETA}, and not 1")]
    Zipf(String),
    /// pareto's h out of bounds.
    #[error("'{0}': pareto h must be between 0 and 1")]
    Pareto(String),
    /// normal's σ out of bounds.
    #[error("'{0}': normal σ is a percentage in (0, 100]")]
    Normal(String),
    /// A distribution plumb does not have.
    #[error("distribution '{0}' is not supported (random, zipf:θ, pareto:h, normal:σ, zoned:, zoned_abs:)")]
    Distribution(String),
    /// More than `read,write,trim` values.
    #[error("'{0}': at most read,write,trim values")]
    TooManyDirections(String),
    /// An I/O pattern fio does not have.
    #[error("'{0}' is not a pattern (read, write, randread, randwrite, rw, readwrite, randrw)")]
    Pattern(String),
    /// An engine plumb does not have.
    #[error("engine '{name}' is not supported (plumb has: {known})")]
    Engine {
        /// The engine asked for.
        name: String,
        /// The engines there are, comma-separated.
        known: String,
    },
    /// A rate of 0.
    #[error("a rate must be above 0")]
    ZeroRate,
    /// A verify method plumb does not have.
    #[error("verify method '{0}' is not supported (plumb has: crc32c)")]
    Verify(String),
    /// A value that is not one of the forms the option takes.
    #[error("'{value}' is not {expected}")]
    Expected {
        /// The value as given.
        value: String,
        /// What the option takes, in words (`a CPU list like 0-3,6`).
        expected: String,
    },
}

/// A boolean as fio writes them (`1`, `true`, `yes`, `on` and their
/// opposites).
pub(super) fn parse_bool(v: &str) -> Result<bool, ValueError> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(ValueError::NotBoolean(v.into())),
    }
}

/// A count (a plain number or a size: `4k`), at least `min`.
pub(super) fn parse_count(v: &str, min: u64) -> Result<u64, ValueError> {
    let n = match v.parse::<u64>() {
        Ok(n) => n,
        Err(_) => parse_size(v).map_err(|_| ValueError::NotNumber(v.into()))?,
    };
    if n < min {
        return Err(ValueError::Below(min));
    }
    Ok(n)
}

/// Parses a count that must lie in `min..=max` (the option's documented
/// bounds), so an out-of-range value is an error instead of wrapping when it is
/// narrowed to the field's type.
pub(super) fn parse_count_in(v: &str, min: u64, max: u64) -> Result<u32, ValueError> {
    let n = match v.parse::<u64>() {
        Ok(n) => n,
        Err(_) => parse_size(v).map_err(|_| ValueError::NotNumber(v.into()))?,
    };
    let out_of_range = ValueError::OutOfRange { value: n, min, max };
    if n < min || n > max {
        return Err(out_of_range);
    }
    u32::try_from(n).map_err(|_| out_of_range)
}

/// A percentage, 0 to 100.
pub(super) fn parse_percent(v: &str) -> Result<u32, ValueError> {
    let n = parse_count(v, 0)?;
    if n > 100 {
        return Err(ValueError::NotPercentage(v.into()));
    }
    Ok(n as u32)
}

/// A block size: above 0, at most 1 GiB.
pub(super) fn parse_block(s: &str) -> Result<u64, ValueError> {
    let b = parse_size(s)?;
    if b == 0 {
        return Err(ValueError::ZeroBlock);
    }
    if b > (1 << 30) {
        return Err(ValueError::BlockTooLarge(s.into()));
    }
    Ok(b)
}

/// A `bsrange`: `lo-hi` (or `lo:hi`), a fixed size when both ends agree.
pub(super) fn parse_bsrange(s: &str) -> Result<BlockSize, ValueError> {
    let (lo, hi) = s
        .split_once('-')
        .or_else(|| s.split_once(':'))
        .ok_or_else(|| ValueError::NotRange(s.into()))?;
    let (lo, hi) = (parse_block(lo)?, parse_block(hi)?);
    if lo > hi {
        return Err(ValueError::Reversed(s.into()));
    }
    Ok(if lo == hi {
        BlockSize::Fixed(lo)
    } else {
        BlockSize::Range(lo, hi)
    })
}

/// A `bssplit`: `size/percent` entries separated by `:`; blank shares
/// take the rest.
pub(super) fn parse_bssplit(s: &str) -> Result<BlockSize, ValueError> {
    let mut parts = Vec::new();
    let mut blanks = 0;
    let mut total = 0u32;
    for entry in s.split(':').filter(|e| !e.is_empty()) {
        let (bs, pct) = entry.split_once('/').unwrap_or((entry, ""));
        let bs = parse_block(bs)?;
        let pct = if pct.trim().is_empty() {
            blanks += 1;
            None
        } else {
            let p = parse_percent(pct)?;
            total += p;
            Some(p)
        };
        parts.push((bs, pct));
    }
    if parts.is_empty() {
        return Err(ValueError::EmptySplit);
    }
    if total > 100 {
        return Err(ValueError::SplitAbove(total));
    }
    let rest = 100 - total;
    if blanks == 0 && rest != 0 {
        return Err(ValueError::SplitBelow(total));
    }
    let mut out = Vec::new();
    let mut handed = 0;
    let mut seen_blanks = 0;
    for (bs, pct) in parts {
        let p = match pct {
            Some(p) => p,
            None => {
                seen_blanks += 1;
                // The last blank takes the remainder so the total is exactly 100.
                let share = if seen_blanks == blanks {
                    rest - handed
                } else {
                    rest / blanks
                };
                handed += share;
                share
            }
        };
        if p > 0 {
            out.push((bs, p));
        }
    }
    Ok(if out.len() == 1 {
        BlockSize::Fixed(out[0].0)
    } else {
        BlockSize::Split(out)
    })
}

/// The largest zipf θ accepted: beyond it every I/O goes to the first block
/// anyway, and non-finite values (nan, inf) are not distributions at all.
const MAX_ZIPF_THETA: f64 = 100.0;

/// A `random_distribution`: `random`, `zipf:θ`, `pareto:h`, `normal:σ`,
/// `zoned:` or `zoned_abs:` zones (`access%/size` entries separated by
/// `:`, per direction separated by `,`).
pub(super) fn parse_distribution(v: &str) -> Result<Distribution, ValueError> {
    let (kind, param) = v.split_once(':').unwrap_or((v, ""));
    match kind {
        "random" => Ok(Distribution::Uniform),
        "zoned" | "zoned_abs" => parse_zoned(param, kind == "zoned_abs", v),
        _ => parse_distribution_param(kind, param, v),
    }
}

/// A skewed distribution `kind` (`zipf`, `pareto`, `normal`/`gauss`) with
/// its parameter `param`; `v` is the whole value, for messages.
pub(super) fn parse_distribution_param(
    kind: &str,
    param: &str,
    v: &str,
) -> Result<Distribution, ValueError> {
    let num = |example: &'static str| -> Result<f64, ValueError> {
        param
            .parse::<f64>()
            .map_err(|_| ValueError::DistributionNumber {
                value: v.into(),
                kind: kind.into(),
                example,
            })
    };
    match kind {
        "zipf" => {
            let t = num("1.2")?;
            if !(t > 0.0 && t <= MAX_ZIPF_THETA) || t == 1.0 {
                return Err(ValueError::Zipf(v.into()));
            }
            Ok(Distribution::Zipf(t))
        }
        "pareto" => {
            let h = num("0.2")?;
            if !(h > 0.0 && h < 1.0) {
                return Err(ValueError::Pareto(v.into()));
            }
            Ok(Distribution::Pareto(h))
        }
        "normal" | "gauss" => {
            let s = num("10")?;
            if !(s > 0.0 && s <= 100.0) {
                return Err(ValueError::Normal(v.into()));
            }
            Ok(Distribution::Normal(s))
        }
        _ => Err(ValueError::Distribution(kind.into())),
    }
}

/// Most zones of a `zoned` distribution (fio's limit).
const MAX_ACCESS_ZONES: usize = 256;

/// The zones of `zoned:`/`zoned_abs:` (`param` is what follows the `:`):
/// one list for both directions, or `read,write[,trim]` lists.
fn parse_zoned(param: &str, absolute: bool, v: &str) -> Result<Distribution, ValueError> {
    let lists: Vec<&str> = param.split(',').collect();
    if lists.len() > 3 {
        return Err(ValueError::TooManyDirections(v.into()));
    }
    let read = parse_zone_list(lists[0], absolute, v)?;
    let write = match lists.get(1) {
        Some(w) if !w.trim().is_empty() => parse_zone_list(w, absolute, v)?,
        _ => read.clone(),
    };
    Ok(Distribution::Zoned(Box::new(ZoneSplit {
        absolute,
        zones: [read, write],
    })))
}

/// One direction's zones: `access/size` entries; a blank access share
/// (and, for `zoned`, a blank size) takes an equal part of what is left.
fn parse_zone_list(list: &str, absolute: bool, v: &str) -> Result<Vec<AccessZone>, ValueError> {
    let bad = |why: &str| ValueError::Expected {
        value: v.into(),
        expected: format!("a zoned distribution ({why}), e.g. zoned:60/10:30/20:10/"),
    };
    let mut raw: Vec<(Option<u64>, Option<u64>)> = Vec::new();
    for entry in list.split(':').map(str::trim).filter(|e| !e.is_empty()) {
        if raw.len() == MAX_ACCESS_ZONES {
            return Err(bad("at most 256 zones"));
        }
        let (access, size) = entry
            .split_once('/')
            .ok_or_else(|| bad("each zone is access%/size"))?;
        let access = match access.trim() {
            "" => None,
            a => Some(u64::from(parse_percent(a)?)),
        };
        let size = match size.trim() {
            "" => None,
            s if absolute => Some(parse_size(s)?),
            s => Some(u64::from(parse_percent(s)?)),
        };
        raw.push((access, size));
    }
    if raw.is_empty() {
        return Err(bad("no zone given"));
    }
    let access = fill_shares(raw.iter().map(|r| r.0), &bad, true)?;
    let sizes: Vec<u64> = if absolute {
        raw.iter()
            .map(|r| r.1.ok_or_else(|| bad("zoned_abs needs every size")))
            .collect::<Result<_, _>>()?
    } else {
        fill_shares(raw.iter().map(|r| r.1), &bad, false)?
    };
    Ok(access
        .into_iter()
        .zip(sizes)
        .map(|(access_pct, size)| AccessZone {
            access_pct: access_pct as u32,
            size,
        })
        .collect())
}

/// Percent shares with blanks taking equal parts of what is left (the last
/// blank the remainder); they must reach 100 when `exact`, and at most 100
/// otherwise.
fn fill_shares(
    shares: impl Iterator<Item = Option<u64>>,
    bad: &dyn Fn(&str) -> ValueError,
    exact: bool,
) -> Result<Vec<u64>, ValueError> {
    let shares: Vec<Option<u64>> = shares.collect();
    let given: u64 = shares.iter().flatten().sum();
    if given > 100 {
        return Err(bad("percentages add up to more than 100"));
    }
    let blanks = shares.iter().filter(|s| s.is_none()).count() as u64;
    if exact && blanks == 0 && given != 100 {
        return Err(bad("the access percentages must add up to 100"));
    }
    let rest = 100 - given;
    let mut seen = 0;
    Ok(shares
        .into_iter()
        .map(|s| {
            s.unwrap_or_else(|| {
                seen += 1;
                if seen == blanks {
                    rest - rest / blanks * (blanks - 1)
                } else {
                    rest / blanks
                }
            })
        })
        .collect())
}

/// Applies fio's `read,write[,trim]` syntax: one value sets both directions.
pub(super) fn set_per_dir<T: Clone>(
    slots: &mut [T; 2],
    v: &str,
    parse: impl Fn(&str) -> Result<T, ValueError>,
) -> Result<(), ValueError> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() == 1 {
        let x = parse(parts[0])?;
        slots[0] = x.clone();
        slots[1] = x;
        return Ok(());
    }
    if parts.len() > 3 {
        return Err(ValueError::TooManyDirections(v.into()));
    }
    for (i, p) in parts.iter().take(2).enumerate() {
        if !p.trim().is_empty() {
            slots[i] = parse(p.trim())?;
        }
    }
    Ok(())
}

/// [`set_per_dir`] for optional values.
pub(super) fn set_opt_per_dir(
    slots: &mut [Option<u64>; 2],
    v: &str,
    parse: impl Fn(&str) -> Result<u64, ValueError>,
) -> Result<(), ValueError> {
    set_per_dir(slots, v, |s| parse(s).map(Some))
}
