//! The throughput kernels: hashing, compression, sorting, matrix multiply and
//! JSON. Each prepares its input once per thread; one event processes it once.

use super::{corpus, Kernel, Work};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

const MIB: u64 = 1 << 20;

fn random_bytes(n: u64) -> Vec<u8> {
    let mut v = vec![0u8; n as usize];
    SmallRng::seed_from_u64(n).fill_bytes(&mut v);
    v
}

/// A work item over a buffer: `f` processes it once, `per_event` is the work.
struct Over<T: Send> {
    data: T,
    per_event: f64,
    f: fn(&mut T) -> u64,
}

impl<T: Send> Work for Over<T> {
    fn event(&mut self) -> u64 {
        (self.f)(&mut self.data)
    }
    fn work_per_event(&self) -> f64 {
        self.per_event
    }
}

fn over<T: Send + 'static>(data: T, per_event: f64, f: fn(&mut T) -> u64) -> Box<dyn Work> {
    Box::new(Over { data, per_event, f })
}

/// SHA-256 over a random buffer.
pub const SHA256: Kernel = Kernel {
    name: "sha256",
    about: "SHA-256 of a random buffer (MB/s hashed)",
    unit: "MB/s",
    scale: 1e6,
    param: "buffer",
    default_param: MIB,
    param_range: (64, 64 * MIB),
    memory: |n| n,
    prepare: |n| {
        over(random_bytes(n), n as f64, |b| {
            use sha2::Digest;
            let d = sha2::Sha256::digest(b.as_slice());
            u64::from(d[0])
        })
    },
};

/// BLAKE3 over a random buffer (single-threaded hasher).
pub const BLAKE3: Kernel = Kernel {
    name: "blake3",
    about: "BLAKE3 of a random buffer (MB/s hashed)",
    unit: "MB/s",
    scale: 1e6,
    param: "buffer",
    default_param: MIB,
    param_range: (64, 64 * MIB),
    memory: |n| n,
    prepare: |n| {
        over(random_bytes(n), n as f64, |b| {
            u64::from(blake3::hash(b).as_bytes()[0])
        })
    },
};

/// LZ4 (lz4_flex, block format) compression of the JSON log corpus.
pub const LZ4_COMPRESS: Kernel = Kernel {
    name: "lz4-compress",
    about: "LZ4 compression of a generated JSON log corpus (MB/s of input)",
    unit: "MB/s",
    scale: 1e6,
    param: "buffer",
    default_param: MIB,
    param_range: (1024, 64 * MIB),
    memory: |n| n.saturating_mul(2),
    prepare: |n| {
        let text = corpus::text(n);
        let len = text.len() as f64;
        over(text, len, |t| lz4_flex::compress(t).len() as u64)
    },
};

/// LZ4 decompression of the compressed corpus.
pub const LZ4_DECOMPRESS: Kernel = Kernel {
    name: "lz4-decompress",
    about: "LZ4 decompression of the compressed JSON log corpus (MB/s of output)",
    unit: "MB/s",
    scale: 1e6,
    param: "buffer",
    default_param: MIB,
    param_range: (1024, 64 * MIB),
    memory: |n| n.saturating_mul(3),
    prepare: |n| {
        let text = corpus::text(n);
        let len = text.len();
        let packed = lz4_flex::compress(&text);
        over((packed, len), len as f64, |(p, len)| {
            lz4_flex::decompress(p, *len).map_or(0, |v| v[v.len() / 2] as u64)
        })
    },
};

/// Sorting random u64s (pattern-defeating quicksort of std).
pub const SORT_U64: Kernel = Kernel {
    name: "sort-u64",
    about: "sort_unstable of random u64s (million elements/s)",
    unit: "Melem/s",
    scale: 1e6,
    param: "items",
    default_param: 1_000_000,
    param_range: (16, 1 << 22),
    memory: |n| n.saturating_mul(16),
    prepare: |n| {
        let mut rng = SmallRng::seed_from_u64(n);
        let src: Vec<u64> = (0..n).map(|_| rng.random()).collect();
        let work = src.clone();
        over((src, work), n as f64, |(src, work)| {
            work.copy_from_slice(src);
            work.sort_unstable();
            work[work.len() / 2]
        })
    },
};

/// Sorting short random strings (std's stable merge sort).
pub const SORT_STRING: Kernel = Kernel {
    name: "sort-string",
    about: "sort of random 8–24 byte strings (million elements/s)",
    unit: "Melem/s",
    scale: 1e6,
    param: "items",
    default_param: 100_000,
    param_range: (16, 1 << 19),
    memory: |n| n.saturating_mul(112),
    prepare: |n| {
        let mut rng = SmallRng::seed_from_u64(n);
        let src: Vec<String> = (0..n)
            .map(|_| {
                let len = rng.random_range(8..=24);
                (0..len)
                    .map(|_| char::from(rng.random_range(b'a'..=b'z')))
                    .collect()
            })
            .collect();
        let work = src.clone();
        over((src, work), n as f64, |(src, work)| {
            work.clone_from_slice(src);
            work.sort();
            work[work.len() / 2].len() as u64
        })
    },
};

/// Dense f64 matrix multiply (matrixmultiply's dgemm).
pub const MATMUL: Kernel = Kernel {
    name: "matmul",
    about: "n×n f64 matrix multiply, 2n³ floating-point operations (GFLOP/s)",
    unit: "GFLOP/s",
    scale: 1e9,
    param: "n",
    default_param: 256,
    param_range: (4, 1024),
    memory: |n| n.saturating_mul(n).saturating_mul(24),
    prepare: |n| {
        let n = n as usize;
        let mut rng = SmallRng::seed_from_u64(n as u64);
        let a: Vec<f64> = (0..n * n).map(|_| rng.random()).collect();
        let b: Vec<f64> = (0..n * n).map(|_| rng.random()).collect();
        let c = vec![0.0; n * n];
        over((n, a, b, c), 2.0 * (n as f64).powi(3), |(n, a, b, c)| {
            let n = *n;
            // SAFETY: a, b and c are n×n row-major matrices of exactly n*n elements.
            unsafe {
                matrixmultiply::dgemm(
                    n,
                    n,
                    n,
                    1.0,
                    a.as_ptr(),
                    n as isize,
                    1,
                    b.as_ptr(),
                    n as isize,
                    1,
                    0.0,
                    c.as_mut_ptr(),
                    n as isize,
                    1,
                );
            }
            c[n * n / 2].to_bits()
        })
    },
};

fn json_corpus(n: u64) -> Vec<u8> {
    serde_json::to_vec(&corpus::records(n)).expect("serialize to memory")
}

/// serde_json parsing of the JSON corpus into a generic value.
pub const JSON_PARSE: Kernel = Kernel {
    name: "json-parse",
    about: "serde_json parse of a JSON log array into a Value (MB/s of text)",
    unit: "MB/s",
    scale: 1e6,
    param: "buffer",
    default_param: MIB,
    param_range: (1024, 16 * MIB),
    memory: |n| n.saturating_mul(12),
    prepare: |n| {
        let text = json_corpus(n);
        let len = text.len() as f64;
        over(text, len, |t| {
            serde_json::from_slice::<serde_json::Value>(t)
                .map_or(0, |v| v.as_array().map_or(0, |a| a.len() as u64))
        })
    },
};

/// serde_json serialisation of the parsed corpus.
pub const JSON_SERIALIZE: Kernel = Kernel {
    name: "json-serialize",
    about: "serde_json serialisation of the parsed JSON log array (MB/s of text)",
    unit: "MB/s",
    scale: 1e6,
    param: "buffer",
    default_param: MIB,
    param_range: (1024, 16 * MIB),
    memory: |n| n.saturating_mul(14),
    prepare: |n| {
        let text = json_corpus(n);
        let len = text.len();
        let value: serde_json::Value = serde_json::from_slice(&text).expect("own corpus parses");
        over((value, Vec::with_capacity(len)), len as f64, |(v, out)| {
            out.clear();
            serde_json::to_writer(&mut *out, v).expect("serialize to memory");
            out.len() as u64
        })
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_does_its_work_at_a_small_size() {
        for k in crate::cpu::KERNELS {
            let mut w = (k.prepare)(k.param_range.0.max(1024).min(k.param_range.1));
            assert!(w.work_per_event() > 0.0, "{}", k.name);
            let _ = w.event();
        }
    }

    #[test]
    fn the_corpus_compresses_like_text_and_round_trips() {
        let text = corpus::text(256 * 1024);
        let packed = lz4_flex::compress(&text);
        let ratio = text.len() as f64 / packed.len() as f64;
        assert!((2.0..12.0).contains(&ratio), "ratio {ratio}");
        assert_eq!(lz4_flex::decompress(&packed, text.len()).unwrap(), text);
    }

    #[test]
    fn sort_u64_returns_the_median_of_its_sorted_input() {
        // The kernel sorts a copy of SmallRng(n)'s first n values and returns
        // the middle element: compute the known answer independently. An
        // unsorted (or partly sorted) buffer has another value in the middle.
        for n in [16u64, 1000, 4097] {
            let mut rng = SmallRng::seed_from_u64(n);
            let mut want: Vec<u64> = (0..n).map(|_| rng.random()).collect();
            let unsorted_middle = want[want.len() / 2];
            want.sort();
            let median = want[want.len() / 2];
            assert_ne!(
                unsorted_middle, median,
                "n={n}: the input is not sorted already"
            );
            let mut w = (SORT_U64.prepare)(n);
            assert_eq!(w.event(), median, "n={n}");
            // Each event sorts a fresh copy, so the answer does not drift.
            assert_eq!(w.event(), median, "n={n}, second event");
        }
    }

    #[test]
    fn sort_string_returns_the_length_of_its_sorted_middle_string() {
        let n = 1000u64;
        let mut rng = SmallRng::seed_from_u64(n);
        let mut want: Vec<String> = (0..n)
            .map(|_| {
                let len = rng.random_range(8..=24);
                (0..len)
                    .map(|_| char::from(rng.random_range(b'a'..=b'z')))
                    .collect()
            })
            .collect();
        let unsorted_middle = want[want.len() / 2].len();
        want.sort();
        let middle = want[want.len() / 2].len();
        assert_ne!(
            unsorted_middle, middle,
            "the test tells sorted from unsorted"
        );
        let mut w = (SORT_STRING.prepare)(n);
        assert_eq!(w.event(), middle as u64);
    }
}
