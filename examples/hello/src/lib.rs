//! The smallest plumb scenario: the template to copy. Build with
//! `cargo build --manifest-path examples/Cargo.toml --target wasm32-wasip2 --release`,
//! run with `plumb run examples/target/wasm32-wasip2/release/hello.wasm`.

wit_bindgen::generate!({ world: "scenario", path: "../../wit" });

use plumb::bench::{fs, report, time};

struct Hello;

impl Guest for Hello {
    fn run() -> Result<(), String> {
        let t0 = time::now();
        let t = fs::write_file("hello.dat", 1 << 20, fs::WriteOptions { bs: Some(1 << 16), direct: None, fsync: Some(true) }).map_err(|e| format!("{e:?}"))?;
        report::metric("write_mib_per_s", t.bw_bytes / 1048576.0, "MiB/s", report::Better::HigherIsBetter, &[]).map_err(|e| format!("{e:?}"))?;
        report::metric("seconds", time::now() - t0, "s", report::Better::LowerIsBetter, &[]).map_err(|e| format!("{e:?}"))?;
        println!("hello from a component: wrote {} bytes", t.bytes);
        Ok(())
    }
}

export!(Hello);
