//! Host-call costs for bench/wasm-vs-rhai: `-p mode=` picks the loop.
//!   noop    `n` calls of time::now (the cheapest host call)
//!   cached  `n` 4 KiB read-at calls on a file in the page cache
//!   qd1     4 KiB random direct reads at queue depth 1 for `secs` seconds
//!           on `file` (or a new file of `size` bytes), as io.job's QD1 psync job

wit_bindgen::generate!({ world: "scenario", path: "../../wit" });

use plumb::bench::fs::{self, OpenOptions};
use plumb::bench::{params, report, time};

fn num(name: &str, default: u64) -> u64 {
    params::get(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn e(err: plumb::bench::types::Error) -> String {
    format!("{err:?}")
}

struct BenchCalls;

impl Guest for BenchCalls {
    fn run() -> Result<(), String> {
        let n = num("n", 1_000_000);
        let read = OpenOptions { read: true, write: false, create: false, truncate: false, append: false, direct: false, zero: false };
        match params::get("mode").as_deref().unwrap_or("noop") {
            "noop" => {
                let t0 = time::now();
                let mut sink = 0.0;
                for _ in 0..n {
                    sink += time::now();
                }
                let ns = (time::now() - t0) * 1e9 / n as f64;
                std::hint::black_box(sink);
                report::metric("ns_per_call", ns, "ns", "lower").map_err(e)?;
            }
            "cached" => {
                fs::write_file("c.dat", 1 << 20, 1 << 20, false, false).map_err(e)?;
                let f = fs::open("c.dat", read).map_err(e)?;
                let t0 = time::now();
                for _ in 0..n {
                    f.read_at(0, 4096).map_err(e)?;
                }
                let ns = (time::now() - t0) * 1e9 / n as f64;
                report::metric("ns_per_call", ns, "ns", "lower").map_err(e)?;
            }
            _ => {
                let size = num("size", 1 << 30);
                let secs = num("secs", 10) as f64;
                // An existing file (`-p file=`, e.g. laid out by an earlier
                // scenario of the pack) or a new one.
                let name = match params::get("file") {
                    Some(name) => name,
                    None => {
                        fs::write_file("d.dat", size, 1 << 20, false, true).map_err(e)?;
                        "d.dat".to_string()
                    }
                };
                let f = fs::open(&name, OpenOptions { direct: true, ..read }).map_err(e)?;
                let blocks = f.size().map_err(e)? / 4096;
                let mut x: u64 = 12345;
                let mut ios = 0u64;
                let t0 = time::now();
                let end = t0 + secs;
                loop {
                    for _ in 0..64 {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        f.read_at(((x >> 33) % blocks) * 4096, 4096).map_err(e)?;
                    }
                    ios += 64;
                    if time::now() >= end {
                        break;
                    }
                }
                report::metric("iops", ios as f64 / (time::now() - t0), "IOPS", "higher").map_err(e)?;
            }
        }
        Ok(())
    }
}

export!(BenchCalls);
