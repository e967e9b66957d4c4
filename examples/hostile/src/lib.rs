//! A badly behaved scenario, for plumb's tests: `-p mode=` picks the fault.
//!   loop     spins forever (the deadline must stop it)
//!   memory   allocates until something gives (the memory limit must stop it)
//!   trap     panics deep in a call chain (a trap with a backtrace)
//!   escape   tries paths outside the run directory through the host API
//!   ok       reports a metric and returns

wit_bindgen::generate!({ world: "scenario", path: "../../wit" });

use plumb::bench::{fs, params, report};
use plumb::bench::types::Error;

struct Hostile;

#[inline(never)]
fn deep(n: u32) -> u32 {
    if n == 0 {
        panic!("hostile guest: deliberate panic at the bottom of the call chain");
    }
    deep(n - 1) + 1
}

fn refused(r: Result<(), Error>) -> u32 {
    match r {
        Err(Error::Sandbox(_)) | Err(Error::Os(_)) => 1,
        _ => 0,
    }
}

impl Guest for Hostile {
    fn run() -> Result<(), String> {
        match params::get("mode").as_deref().unwrap_or("ok") {
            "loop" => {
                let mut x: u64 = 1;
                loop {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            }
            "memory" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 16 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "trap" => {
                std::hint::black_box(deep(std::hint::black_box(20)));
                Ok(())
            }
            "escape" => {
                let opts = fs::OpenOptions { read: Some(true), write: None, create: None, truncate: None, append: None, direct: None, pattern: None };
                let mut n = 0;
                n += refused(fs::open("/etc/passwd", opts).map(|_| ()));
                n += refused(fs::open("../../../../etc/passwd", opts).map(|_| ()));
                n += refused(fs::write_file("../escaped.dat", 4096, fs::WriteOptions { bs: Some(4096), direct: None, fsync: None }).map(|_| ()));
                n += refused(fs::rename("../x", "y"));
                n += refused(fs::mkdir("/tmp/plumb-escape-dir"));
                report::metric("refused", n as f64, "", report::Better::HigherIsBetter, &[]).map_err(|e| format!("{e:?}"))?;
                Ok(())
            }
            _ => {
                report::metric("ok", 1.0, "", report::Better::HigherIsBetter, &[]).map_err(|e| format!("{e:?}"))?;
                Ok(())
            }
        }
    }
}

export!(Hostile);
