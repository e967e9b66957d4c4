//! `plumb sysinfo`: the machine and the storage under a directory, as a
//! table or JSON.

use super::ExitCode;
use crate::sysinfo;
use std::path::Path;

/// Prints the description; exit 2 when `target` cannot be examined.
pub fn sysinfo_main(json: bool, target: &Path) -> ExitCode {
    let host = sysinfo::host_info();
    let t = match sysinfo::target_info(target) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("plumb sysinfo: error: --target {}: {e}", target.display());
            return ExitCode::BadInput;
        }
    };
    if json {
        let v = serde_json::json!({ "host": host, "target": t });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).expect("serialisable")
        );
    } else {
        print!("{}", sysinfo::render_text(&host, Some(&t)));
    }
    ExitCode::Ok
}
