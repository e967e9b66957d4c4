//! `prime`: sysbench cpu's event — count the primes up to `cpu_max_prime` by
//! trial division up to the square root, so events/s compare with `sysbench cpu`.

use super::{Kernel, Work};

/// Registry entry (sysbench's default `--cpu-max-prime=10000`).
pub const KERNEL: Kernel = Kernel {
    name: "prime",
    about: "count primes up to cpu_max_prime by trial division (sysbench cpu's event)",
    unit: "events/s",
    scale: 1.0,
    param: "cpu_max_prime",
    default_param: 10000,
    param_range: (3, 250_000),
    memory: |_| 0,
    prepare: |max| Box::new(Primes(max)),
};

struct Primes(u64);

impl Work for Primes {
    fn event(&mut self) -> u64 {
        count_primes(self.0)
    }
    fn work_per_event(&self) -> f64 {
        1.0
    }
}

/// Counts primes in 3..=max the way sysbench's cpu test does.
pub fn count_primes(max: u64) -> u64 {
    let mut n = 0;
    for c in 3..=max {
        let t = (c as f64).sqrt() as u64;
        let mut l = 2;
        while l <= t {
            if c % l == 0 {
                break;
            }
            l += 1;
        }
        if l > t {
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_primes() {
        // Primes from 3 to 100: 24 (2 is not counted, as in sysbench).
        assert_eq!(super::count_primes(100), 24);
        assert_eq!(super::count_primes(10000), 1228);
    }
}
