//! fio's own example job files (Debian's `fio-examples`), read by
//! `plumb fio` as fio reads them: the local-file and CPU-engine ones that
//! need no special hardware.

use crate::util::{plumb, require_tool, workdir};
use std::path::Path;

/// Where Debian's `fio-examples` puts fio's example job files.
const EXAMPLES: &str = "/usr/share/doc/fio/examples";

/// The 41 example job files of fio 3.33 whose engines are local-file or
/// CPU engines and that need no zoned, SCSI, persistent-memory or
/// network-storage hardware.
const LOCAL: &[&str] = &[
    "1mbs_clients",
    "aio-read",
    "backwards-read",
    "basic-verify",
    "butterfly",
    "cmdprio-bssplit",
    "cmdprio-percentage",
    "cpuio",
    "cross-stripe-verify",
    "dedupe-global",
    "disk-zone-profile",
    "enospc-pressure",
    "exitwhat",
    "falloc",
    "filecreate-ioengine",
    "filedelete-ioengine",
    "filestat-ioengine",
    "fio-rand-RW",
    "fio-rand-read",
    "fio-rand-write",
    "fio-seq-RW",
    "fio-seq-read",
    "fio-seq-write",
    "fixed-rate-submission",
    "flow",
    "fsx",
    "ftruncate",
    "iometer-file-access-server",
    "jesd219",
    "latency-profile",
    "null",
    "numa",
    "poisson-rate-submission",
    "rand-zones",
    "ssd-steadystate",
    "ssd-test",
    "steadystate",
    "surface-scan",
    "tiobench-example",
    "waitfor",
    "zipf",
];

/// The path of an example, failing with what to install when it is missing.
fn example(name: &str) -> String {
    let path = format!("{EXAMPLES}/{name}.fio");
    assert!(
        Path::new(&path).is_file(),
        "{path} is missing: apt-get install fio-examples (or run `cargo xtask test`)"
    );
    path
}

/// `plumb fio --parse-only` accepts the example files fio accepts, writes
/// nothing, and names the option of each it refuses.
#[test]
fn parse_only_accepts_fios_examples() {
    require_tool("fio", "--version", "fio");
    let dir = workdir();
    let mut refused = Vec::new();
    for name in LOCAL {
        let path = example(name);
        let fio = std::process::Command::new("fio")
            .args(["--parse-only", &path])
            .current_dir(dir.path())
            .output()
            .expect("run fio");
        assert!(fio.status.success(), "fio 3.33 itself refuses {name}");
        let r = plumb(dir.path(), &["fio", "--parse-only", &path]);
        if r.code != 0 {
            assert!(
                r.stderr.contains("option '") || r.stderr.contains("engine '"),
                "{name}: the refusal names no option: {}",
                r.stderr
            );
            refused.push(format!("{name}: {}", r.stderr.trim()));
        }
    }
    let entries = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(entries, 0, "--parse-only wrote files");
    let accepted = LOCAL.len() - refused.len();
    assert!(
        accepted >= 39,
        "plumb fio accepts {accepted} of {} of fio's examples; refused:\n{}",
        LOCAL.len(),
        refused.join("\n")
    );
}
