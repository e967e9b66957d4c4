//! Medians and a confidence interval of the ratio of medians: a bootstrap
//! for small sample sets, the order-statistics interval of each median
//! (combined on the log scale) once a bootstrap would cost too much.

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

/// Median of a scratch slice, reordering it (linear time, no copy).
fn median_in_place(v: &mut [f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let (left, mid, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    let mid = *mid;
    if n % 2 == 1 {
        mid
    } else {
        let below = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (below + mid) / 2.0
    }
}

const RESAMPLES: usize = 4000;
/// The most samples (both sides together) the bootstrap draws in all its
/// resamples; past it the analytic interval is used (about 0.2 s of work).
const BOOTSTRAP_BUDGET: usize = 20_000_000;
/// The most samples the bootstraps of one comparison draw in all (about
/// 2 s of work): each cell's interval costs [`RESAMPLES`] times its
/// samples, so a file of thousands of metrics with thousands of samples
/// each would otherwise take an hour. Past it, every further interval is
/// the analytic one.
pub const COMPARISON_BUDGET: usize = 200_000_000;
/// The normal quantile of a two-sided 95% interval.
const Z95: f64 = 1.959_964;

/// What is left of a comparison's [`COMPARISON_BUDGET`].
#[derive(Debug, Clone)]
pub struct Budget {
    left: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            left: COMPARISON_BUDGET,
        }
    }
}

impl Budget {
    /// Takes `drawn` samples from the budget, if they fit in it and in one
    /// bootstrap's [`BOOTSTRAP_BUDGET`].
    fn take(&mut self, drawn: usize) -> bool {
        let fits = drawn <= BOOTSTRAP_BUDGET && drawn <= self.left;
        if fits {
            self.left -= drawn;
        }
        fits
    }
}

/// 95% interval of median(b)/median(a); `None` with fewer than two
/// samples on either side (no significance can be claimed). A bootstrap
/// while `RESAMPLES × (|a| + |b|)` stays within [`BOOTSTRAP_BUDGET`], else
/// the order-statistics interval, so the cost is bounded whatever the sizes.
pub fn ratio_ci(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    ratio_ci_within(a, b, &mut Budget::default())
}

/// [`ratio_ci`] of one cell of a comparison whose bootstraps share
/// `budget`: a bootstrap only while it fits in what is left, else the
/// analytic interval (and none when a median is not above zero and not
/// even a thinned bootstrap fits).
pub fn ratio_ci_within(a: &[f64], b: &[f64], budget: &mut Budget) -> Option<(f64, f64)> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let drawn = |a: usize, b: usize| a.saturating_add(b).saturating_mul(RESAMPLES);
    if budget.take(drawn(a.len(), b.len())) {
        return bootstrap_ratio_ci(a, b);
    }
    analytic_ratio_ci(a, b).or_else(|| {
        // Medians at or below zero: bootstrap every k-th sample (a wider,
        // conservative interval) rather than spend unbounded time.
        let keep = BOOTSTRAP_BUDGET / RESAMPLES / 2;
        let (a, b) = (strided(a, keep), strided(b, keep));
        budget
            .take(drawn(a.len(), b.len()))
            .then(|| bootstrap_ratio_ci(&a, &b))
            .flatten()
    })
}

/// At most `keep` samples of `v`, evenly spaced.
fn strided(v: &[f64], keep: usize) -> Vec<f64> {
    let step = v.len().div_ceil(keep.max(1)).max(1);
    v.iter().step_by(step).copied().collect()
}

/// The median of `v` and the standard error of the median estimated from
/// the distribution-free order-statistics 95% interval.
fn median_and_se(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    let half = Z95 * n.sqrt() / 2.0;
    let lo = ((n / 2.0 - half).floor().max(0.0) as usize).min(s.len() - 1);
    let hi = ((n / 2.0 + half).ceil() as usize).min(s.len() - 1);
    ((median(&s)), (s[hi] - s[lo]) / (2.0 * Z95))
}

/// Interval of the ratio from each median's order-statistics interval,
/// combined on the log scale; `None` when a median is not positive.
fn analytic_ratio_ci(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let (ma, sa) = median_and_se(a);
    let (mb, sb) = median_and_se(b);
    if !(ma > 0.0 && mb > 0.0) {
        return None;
    }
    let se_log = ((sa / ma).powi(2) + (sb / mb).powi(2)).sqrt();
    let r = mb / ma;
    Some((r * (-Z95 * se_log).exp(), r * (Z95 * se_log).exp()))
}

/// 95% bootstrap interval of median(b)/median(a) ([`RESAMPLES`] resamples).
fn bootstrap_ratio_ci(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
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
        let ma = median_in_place(&mut ra);
        if ma != 0.0 {
            ratios.push(median_in_place(&mut rb) / ma);
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
        let (lo, hi) = ratio_ci(&a, &b).unwrap();
        assert!(lo > 1.1 && hi < 1.3, "{lo} {hi}");
    }

    #[test]
    fn overlapping_spreads_include_one() {
        // Medians differ (100 vs 104) but the spreads overlap widely.
        let a = [80.0, 100.0, 120.0, 90.0, 110.0];
        let b = [84.0, 104.0, 124.0, 94.0, 114.0];
        let (lo, hi) = ratio_ci(&a, &b).unwrap();
        assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
    }

    #[test]
    fn one_sample_claims_nothing() {
        assert_eq!(ratio_ci(&[1.0], &[2.0, 3.0]), None);
    }

    #[test]
    fn median_in_place_matches_the_sorted_median() {
        for v in [
            vec![3.0, 1.0, 2.0],
            vec![4.0, 1.0, 3.0, 2.0],
            vec![5.0, 5.0],
        ] {
            assert_eq!(median_in_place(&mut v.clone()), median(&v));
        }
    }

    /// Deterministic noisy samples around `centre` (±10%).
    fn noisy(n: usize, centre: f64, seed: u64) -> Vec<f64> {
        let mut rng = SmallRng::seed_from_u64(seed);
        (0..n)
            .map(|_| centre * rng.random_range(0.9..1.1))
            .collect()
    }

    #[test]
    fn large_sets_take_the_analytic_interval_quickly_and_agree_with_the_bootstrap() {
        // Just inside the budget the bootstrap runs; the analytic interval
        // on the same data must be close to it.
        let (a, b) = (noisy(2000, 100.0, 1), noisy(2000, 102.0, 2));
        let (blo, bhi) = ratio_ci(&a, &b).unwrap();
        let (alo, ahi) = analytic_ratio_ci(&a, &b).unwrap();
        assert!(
            (blo - alo).abs() < 0.004 && (bhi - ahi).abs() < 0.004,
            "{blo}-{bhi} vs {alo}-{ahi}"
        );
        // A million samples a side: analytic, well under a second even unoptimised.
        let (a, b) = (noisy(1_000_000, 100.0, 3), noisy(1_000_000, 100.5, 4));
        let t = std::time::Instant::now();
        let (lo, hi) = ratio_ci(&a, &b).unwrap();
        assert!(t.elapsed().as_secs_f64() < 5.0, "{:?}", t.elapsed());
        assert!(
            lo > 1.0 && hi < 1.01 && lo < 1.005 && hi > 1.005,
            "{lo} {hi}"
        );
    }

    #[test]
    fn a_comparison_draws_at_most_its_budget_then_takes_analytic_intervals() {
        let (a, b) = (noisy(2000, 100.0, 1), noisy(2000, 102.0, 2));
        let mut budget = Budget::default();
        let first = ratio_ci_within(&a, &b, &mut budget);
        assert_eq!(first, ratio_ci(&a, &b));
        // 4000 resamples of 4000 samples: twelve such cells fit, then
        // every interval is the analytic one.
        let t = std::time::Instant::now();
        for _ in 0..500 {
            ratio_ci_within(&a, &b, &mut budget).unwrap();
        }
        assert_eq!(
            ratio_ci_within(&a, &b, &mut budget),
            analytic_ratio_ci(&a, &b)
        );
        assert!(t.elapsed().as_secs_f64() < 30.0, "{:?}", t.elapsed());
        assert!(budget.left < 4000 * 4000);
        // A zero median past the budget: no interval, at once.
        assert_eq!(ratio_ci_within(&[0.0; 10], &b, &mut budget), None);
    }

    #[test]
    fn large_sets_with_zero_medians_fall_back_to_a_bounded_bootstrap() {
        let a = vec![0.0; 20_000];
        let b = noisy(20_000, 1.0, 5);
        let t = std::time::Instant::now();
        assert_eq!(ratio_ci(&a, &b), None);
        assert!(t.elapsed().as_secs_f64() < 10.0, "{:?}", t.elapsed());
    }
}
