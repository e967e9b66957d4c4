//! Parsers for option values: booleans, counts, block sizes, bssplit,
//! distributions, and fio's per-direction `read,write[,trim]` syntax.

use super::spec::{BlockSize, Distribution};
use crate::units::parse_size;

pub(super) fn parse_bool(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("'{v}' is not a boolean (use 0 or 1)")),
    }
}

pub(super) fn parse_count(v: &str, min: u64) -> Result<u64, String> {
    let n = match v.parse::<u64>() {
        Ok(n) => n,
        Err(_) => parse_size(v).map_err(|_| format!("'{v}' is not a number"))?,
    };
    if n < min {
        return Err(format!("must be at least {min}"));
    }
    Ok(n)
}

/// Parses a count that must lie in `min..=max` (the option's documented
/// bounds), so an out-of-range value is an error instead of wrapping when it is
/// narrowed to the field's type.
pub(super) fn parse_count_in(v: &str, min: u64, max: u64) -> Result<u32, String> {
    let n = match v.parse::<u64>() {
        Ok(n) => n,
        Err(_) => parse_size(v).map_err(|_| format!("'{v}' is not a number"))?,
    };
    if n < min || n > max {
        return Err(format!("{n} is out of range ({min}..={max})"));
    }
    u32::try_from(n).map_err(|_| format!("{n} is out of range ({min}..={max})"))
}

pub(super) fn parse_percent(v: &str) -> Result<u32, String> {
    let n = parse_count(v, 0)?;
    if n > 100 {
        return Err(format!("'{v}' is not a percentage (0-100)"));
    }
    Ok(n as u32)
}

pub(super) fn parse_block(s: &str) -> Result<u64, String> {
    let b = parse_size(s)?;
    if b == 0 {
        return Err("a block size must be above 0".into());
    }
    if b > (1 << 30) {
        return Err(format!("block size '{s}' is larger than 1GiB"));
    }
    Ok(b)
}

pub(super) fn parse_bsrange(s: &str) -> Result<BlockSize, String> {
    let (lo, hi) = s
        .split_once('-')
        .or_else(|| s.split_once(':'))
        .ok_or_else(|| format!("'{s}' is not a range (lo-hi)"))?;
    let (lo, hi) = (parse_block(lo)?, parse_block(hi)?);
    if lo > hi {
        return Err(format!("'{s}': the low end is above the high end"));
    }
    Ok(if lo == hi {
        BlockSize::Fixed(lo)
    } else {
        BlockSize::Range(lo, hi)
    })
}

pub(super) fn parse_bssplit(s: &str) -> Result<BlockSize, String> {
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
        return Err("bssplit needs at least one size/percent".into());
    }
    if total > 100 {
        return Err(format!("percentages add up to {total}, above 100"));
    }
    let rest = 100 - total;
    if blanks == 0 && rest != 0 {
        return Err(format!("percentages add up to {total}, not 100"));
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

pub(super) fn parse_distribution(v: &str) -> Result<Distribution, String> {
    let (kind, param) = v.split_once(':').unwrap_or((v, ""));
    let num = |what: &str| -> Result<f64, String> {
        param
            .parse::<f64>()
            .map_err(|_| format!("'{v}': {kind} needs a number, e.g. {kind}:{what}"))
    };
    match kind {
        "random" => Ok(Distribution::Uniform),
        "zipf" => {
            let t = num("1.2")?;
            if !(t > 0.0 && t <= MAX_ZIPF_THETA) || t == 1.0 {
                return Err(format!(
                    "'{v}': zipf θ must be above 0, at most {MAX_ZIPF_THETA}, and not 1"
                ));
            }
            Ok(Distribution::Zipf(t))
        }
        "pareto" => {
            let h = num("0.2")?;
            if !(h > 0.0 && h < 1.0) {
                return Err(format!("'{v}': pareto h must be between 0 and 1"));
            }
            Ok(Distribution::Pareto(h))
        }
        "normal" | "gauss" => {
            let s = num("10")?;
            if !(s > 0.0 && s <= 100.0) {
                return Err(format!("'{v}': normal σ is a percentage in (0, 100]"));
            }
            Ok(Distribution::Normal(s))
        }
        _ => Err(format!(
            "distribution '{kind}' is not supported (random, zipf:θ, pareto:h, normal:σ)"
        )),
    }
}

/// Applies fio's `read,write[,trim]` syntax: one value sets both directions.
pub(super) fn set_per_dir<T: Clone>(
    slots: &mut [T; 2],
    v: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<(), String> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() == 1 {
        let x = parse(parts[0])?;
        slots[0] = x.clone();
        slots[1] = x;
        return Ok(());
    }
    if parts.len() > 3 {
        return Err(format!("'{v}': at most read,write,trim values"));
    }
    for (i, p) in parts.iter().take(2).enumerate() {
        if !p.trim().is_empty() {
            slots[i] = parse(p.trim())?;
        }
    }
    Ok(())
}

pub(super) fn set_opt_per_dir(
    slots: &mut [Option<u64>; 2],
    v: &str,
    parse: impl Fn(&str) -> Result<u64, String>,
) -> Result<(), String> {
    set_per_dir(slots, v, |s| parse(s).map(Some))
}
