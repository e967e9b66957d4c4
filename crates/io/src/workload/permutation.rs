//! A keyed bijection on `[0, n)`: each block once per pass, in random order,
//! with no memory (fio's random map without the bitmap).

/// A random permutation of `0..n`, evaluated one index at a time.
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    mask: u64,
    keys: [u64; 3],
}

impl Permutation {
    /// A permutation of `0..n` chosen by `seed`.
    pub fn new(n: u64, seed: u64) -> Self {
        let bits = 64 - n.max(2).saturating_sub(1).leading_zeros();
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Permutation {
            n,
            mask: if bits >= 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            },
            keys: [next() | 1, next() | 1, next()],
        }
    }

    /// The number of elements permuted.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// True when the domain is empty.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The image of `i` (which must be below `len()`).
    pub fn get(&self, i: u64) -> u64 {
        // Cycle-walking keeps a bijection on the power-of-two domain inside [0, n).
        let mut x = self.round(i);
        while x >= self.n {
            x = self.round(x);
        }
        x
    }

    fn round(&self, mut x: u64) -> u64 {
        let half = (self.mask.count_ones() / 2).max(1);
        // Odd multiplications, xor-shifts and an added key are all invertible mod 2^bits.
        x = x.wrapping_mul(self.keys[0]) & self.mask;
        x ^= x >> half;
        x = (x.wrapping_add(self.keys[2])) & self.mask;
        x = x.wrapping_mul(self.keys[1]) & self.mask;
        x ^= x >> half;
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_a_bijection() {
        for n in [1u64, 2, 3, 7, 100, 1000, 4096, 5000] {
            let p = Permutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let v = p.get(i);
                assert!(v < n);
                assert!(!seen[v as usize], "n={n}: {v} twice");
                seen[v as usize] = true;
            }
        }
    }

    #[test]
    fn looks_shuffled() {
        let p = Permutation::new(10_000, 7);
        let in_place = (0..10_000).filter(|&i| p.get(i) == i).count();
        assert!(in_place < 50, "{in_place} fixed points");
        let ascending = (1..10_000).filter(|&i| p.get(i) > p.get(i - 1)).count();
        assert!((4000..6000).contains(&ascending), "{ascending}");
    }
}
