//! fio's way of writing a quantity with a unit prefix (its `num2str` with
//! the default `sig_figs=4`): at most four digits before the prefix, the
//! remainder of the last division as decimals where room is left, so
//! 131072 bytes read `128KiB`, 65536 `64.0KiB`, 4096 `4096B` and
//! 16 MiB `16.0MiB`. Scripts that parse fio's normal output expect exactly
//! these strings.

/// fio's default `sig_figs`: the most digits a number keeps.
const MAX_DIGITS: usize = 4;

/// Prefixes after each division: binary (IEC) and decimal (SI).
const BINARY_PREFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
const DECIMAL_PREFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];

/// Which family of prefixes to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// Powers of 1024: `KiB`, `MiB`.
    Binary,
    /// Powers of 1000: `kB`, `MB`, and `k` for counts.
    Decimal,
}

impl Base {
    fn divisor(self) -> u64 {
        match self {
            Base::Binary => 1024,
            Base::Decimal => 1000,
        }
    }

    fn prefixes(self) -> &'static [&'static str; 7] {
        match self {
            Base::Binary => &BINARY_PREFIXES,
            Base::Decimal => &DECIMAL_PREFIXES,
        }
    }
}

/// `num` written as fio writes it, followed by `unit` (`"B"`, `"B/s"`, or
/// `""` for counts such as IOPS).
pub fn fio_num(num: u64, base: Base, unit: &str) -> String {
    let divisor = base.divisor();
    let mut whole = num;
    let mut prefix = 0;
    // The remainder of the last division, when there was one.
    let mut remainder: Option<u64> = None;
    while prefix + 1 < BINARY_PREFIXES.len() && digits(whole) > MAX_DIGITS {
        remainder = Some(whole % divisor);
        whole /= divisor;
        prefix += 1;
    }
    let prefix_text = base.prefixes()[prefix];
    let Some(remainder) = remainder else {
        return format!("{whole}{prefix_text}{unit}");
    };
    // Room for decimals: the digits left after the whole part and the point.
    let decimals = MAX_DIGITS.saturating_sub(digits(whole) + 1);
    if decimals == 0 {
        let carry = u64::from(remainder >= divisor / 2);
        return format!("{}{prefix_text}{unit}", whole.saturating_add(carry));
    }
    let fraction = format!("{:.*}", decimals, remainder as f64 / divisor as f64);
    // "0.97" rounded to one decimal is "1.0": the whole part goes up.
    let (whole, fraction_digits) = match fraction.split_once('.') {
        Some(("1", digits)) => (whole.saturating_add(1), digits.to_string()),
        Some((_, digits)) => (whole, digits.to_string()),
        None => (whole, "0".repeat(decimals)),
    };
    format!("{whole}.{fraction_digits}{prefix_text}{unit}")
}

/// How many decimal digits `n` has.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sizes_read_as_in_fios_header() {
        // Taken from fio 3.33's `bs=(R) ...` header for each bs.
        for (bs, fio) in [
            (512, "512B"),
            (4096, "4096B"),
            (8192, "8192B"),
            (1536, "1536B"),
            (65536, "64.0KiB"),
            (32768, "32.0KiB"),
            (131072, "128KiB"),
            (102400, "100KiB"),
            (1 << 20, "1024KiB"),
            (3 << 20, "3072KiB"),
            (4 << 20, "4096KiB"),
            (10000, "9.77KiB"),
            (999999, "977KiB"),
        ] {
            assert_eq!(fio_num(bs, Base::Binary, "B"), fio, "bs={bs}");
        }
    }

    #[test]
    fn sizes_rates_and_counts_read_as_in_fios_run_status() {
        assert_eq!(fio_num(16 << 20, Base::Binary, "B"), "16.0MiB");
        assert_eq!(fio_num(16_777_216, Base::Decimal, "B"), "16.8MB");
        assert_eq!(fio_num(2_097_152_000, Base::Binary, "B/s"), "2000MiB/s");
        assert_eq!(fio_num(2_097_152_000, Base::Decimal, "B/s"), "2097MB/s");
        assert_eq!(fio_num(16_000, Base::Decimal, ""), "16.0k");
        assert_eq!(fio_num(0, Base::Binary, "B/s"), "0B/s");
        assert_eq!(fio_num(9_999, Base::Decimal, ""), "9999");
        // 1023.6 KiB has no room for decimals and rounds up.
        assert_eq!(fio_num(1_048_200, Base::Binary, "B"), "1024KiB");
    }

    #[test]
    fn the_largest_numbers_do_not_overflow() {
        assert_eq!(fio_num(u64::MAX, Base::Binary, "B"), "16.0EiB");
        assert_eq!(fio_num(u64::MAX, Base::Decimal, "B"), "18.4EB");
    }
}
