//! Medians and a bootstrap confidence interval of the ratio of medians.

use rand::{rngs::SmallRng, Rng, SeedableRng};

/// Median of a non-empty slice.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

const RESAMPLES: usize = 4000;

/// 95% bootstrap interval of median(b)/median(a); `None` with fewer than two
/// samples on either side (no significance can be claimed).
pub fn bootstrap_ratio_ci(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    // A fixed seed: the same files always give the same table.
    let mut rng = SmallRng::seed_from_u64(0x5eed_c0de);
    let mut ratios = Vec::with_capacity(RESAMPLES);
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    for _ in 0..RESAMPLES {
        for x in ra.iter_mut() {
            *x = a[rng.random_range(0..a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[rng.random_range(0..b.len())];
        }
        let ma = median(&ra);
        if ma != 0.0 {
            ratios.push(median(&rb) / ma);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    Some((at(0.025), at(0.975)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separated_samples_exclude_one() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let b = [120.0, 121.0, 119.0, 120.5, 119.5];
        let (lo, hi) = bootstrap_ratio_ci(&a, &b).unwrap();
        assert!(lo > 1.1 && hi < 1.3, "{lo} {hi}");
    }

    #[test]
    fn overlapping_spreads_include_one() {
        // Medians differ (100 vs 104) but the spreads overlap widely.
        let a = [80.0, 100.0, 120.0, 90.0, 110.0];
        let b = [84.0, 104.0, 124.0, 94.0, 114.0];
        let (lo, hi) = bootstrap_ratio_ci(&a, &b).unwrap();
        assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
    }

    #[test]
    fn one_sample_claims_nothing() {
        assert_eq!(bootstrap_ratio_ci(&[1.0], &[2.0, 3.0]), None);
    }
}
