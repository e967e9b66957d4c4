//! Host-call costs for bench/wasm-vs-rhai: `-p mode=` picks the loop.
//!   noop    `n` calls of time::now (the cheapest host call)
//!   cached  `n` 4 KiB read-at calls on a file in the page cache
//!   qd1     4 KiB random direct reads at queue depth 1 for `secs` seconds
//!           on `file` (or a new file of `size` bytes), as io.job's QD1 psync job
//!   turns   `rounds` turns of `secs` seconds each: the QD1 loop above, then
//!           io.job's QD1 psync direct job (norandommap) on the same file;
//!           reports both IOPS (medians) and their ratio

wit_bindgen::generate!({ world: "scenario", path: "../../wit" });

use plumb::bench::fs::{self, OpenOptions};
use plumb::bench::{params, report, time};

fn num(name: &str, default: u64) -> u64 {
    params::get(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn e(err: plumb::bench::types::Error) -> String {
    format!("{err:?}")
}

/// 4 KiB random direct reads, one at a time, for `secs`; returns IOPS.
fn qd1_loop(f: &fs::File, blocks: u64, secs: f64, x: &mut u64) -> Result<f64, String> {
    let mut ios = 0u64;
    let t0 = time::now();
    let end = t0 + secs;
    loop {
        for _ in 0..64 {
            *x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            f.read_at(((*x >> 33) % blocks) * 4096, 4096).map_err(e)?;
        }
        ios += 64;
        if time::now() >= end {
            break;
        }
    }
    Ok(ios as f64 / (time::now() - t0))
}

struct BenchCalls;

impl Guest for BenchCalls {
    fn run() -> Result<(), String> {
        let n = num("n", 1_000_000);
        let read = OpenOptions { read: Some(true), write: None, create: None, truncate: None, append: None, direct: None, pattern: None };
        match params::get("mode").as_deref().unwrap_or("noop") {
            "noop" => {
                let t0 = time::now();
                let mut sink = 0.0;
                for _ in 0..n {
                    sink += time::now();
                }
                let ns = (time::now() - t0) * 1e9 / n as f64;
                std::hint::black_box(sink);
                report::metric("ns_per_call", ns, "ns", report::Better::LowerIsBetter, &[]).map_err(e)?;
            }
            "cached" => {
                fs::write_file("c.dat", 1 << 20, fs::WriteOptions { bs: None, direct: None, fsync: None }).map_err(e)?;
                let f = fs::open("c.dat", read).map_err(e)?;
                let t0 = time::now();
                for _ in 0..n {
                    f.read_at(0, 4096).map_err(e)?;
                }
                let ns = (time::now() - t0) * 1e9 / n as f64;
                report::metric("ns_per_call", ns, "ns", report::Better::LowerIsBetter, &[]).map_err(e)?;
            }
            "turns" => {
                let size = num("size", 1 << 30);
                let secs = num("secs", 2) as f64;
                fs::write_file("d.dat", size, fs::WriteOptions { bs: None, direct: None, fsync: Some(true) }).map_err(e)?;
                // Out of the page cache, as io.job leaves it (invalidate).
                fs::evict("d.dat").map_err(e)?;
                let f = fs::open("d.dat", OpenOptions { direct: Some(true), ..read }).map_err(e)?;
                let (mut mine, mut jobs) = (Vec::new(), Vec::new());
                let mut x: u64 = 12345;
                for _ in 0..num("rounds", 10) {
                    mine.push(qd1_loop(&f, size / 4096, secs, &mut x)?);
                    let options = [
                        ("name", "qd1".to_string()),
                        ("filename", "d.dat".into()),
                        ("rw", "randread".into()),
                        ("bs", "4k".into()),
                        ("iodepth", "1".into()),
                        ("ioengine", "psync".into()),
                        ("direct", "1".into()),
                        ("norandommap", "1".into()),
                        ("size", size.to_string()),
                        ("runtime", format!("{secs}")),
                        ("time_based", "1".into()),
                    ];
                    let job = plumb::bench::io::job(&options.iter().map(|(k, v)| (k.to_string(), v.clone())).collect::<Vec<_>>()).map_err(e)?;
                    jobs.push(job.read.iops);
                }
                let median = |v: &mut Vec<f64>| {
                    v.sort_by(f64::total_cmp);
                    v[v.len() / 2]
                };
                let (m, j) = (median(&mut mine), median(&mut jobs));
                report::metric("wasm_iops", m, "IOPS", report::Better::HigherIsBetter, &[]).map_err(e)?;
                report::metric("job_iops", j, "IOPS", report::Better::HigherIsBetter, &[]).map_err(e)?;
                report::metric("ratio", m / j, "", report::Better::HigherIsBetter, &[]).map_err(e)?;
            }
            _ => {
                let size = num("size", 1 << 30);
                let secs = num("secs", 10) as f64;
                // An existing file (`-p file=`, e.g. laid out by an earlier
                // scenario of the pack) or a new one.
                let name = match params::get("file") {
                    Some(name) => name,
                    None => {
                        fs::write_file("d.dat", size, fs::WriteOptions { bs: None, direct: None, fsync: Some(true) }).map_err(e)?;
                        "d.dat".to_string()
                    }
                };
                let f = fs::open(&name, OpenOptions { direct: Some(true), ..read }).map_err(e)?;
                let blocks = f.size().map_err(e)? / 4096;
                let mut x: u64 = 12345;
                let iops = qd1_loop(&f, blocks, secs, &mut x)?;
                report::metric("iops", iops, "IOPS", report::Better::HigherIsBetter, &[]).map_err(e)?;
            }
        }
        Ok(())
    }
}

export!(BenchCalls);
