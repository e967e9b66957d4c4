//! plumb's developer tasks, run as `cargo xtask TASK` (an alias in
//! `.cargo/config.toml`). `cargo xtask test [ARGS]` is the one test command,
//! on a developer's machine and in CI (`.ci/run`): it installs the Debian
//! packages the tests need where their programs are missing, adds the
//! `wasm32-wasip2` target the example guests are built for, then runs
//! `cargo fmt --check`, `cargo clippy --workspace --all-targets -- -D warnings`
//! and the tests: every test but the timing-sensitive ones ([`SERIAL`]) in
//! parallel, then those one at a time (or `cargo test ARGS`, one at a time,
//! when ARGS are given). Any step that fails ends it with that step's status.
//! `cargo xtask man [DIR]` writes plumb's man pages (default `target/man`).
//! `cargo xtask dist [DIR]` makes the binary to ship (default `target/dist`):
//! the release build stripped of symbols and debug information, which go
//! to `plumb.debug` beside it (found by gdb, perf and addr2line through the
//! binary's `.gnu_debuglink`).

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

/// A program the tests run, and the Debian package that provides it. The
/// one list to extend when a test starts calling another program.
struct Tool {
    program: &'static str,
    package: &'static str,
    used_by: &'static str,
}

const TOOLS: &[Tool] = &[
    Tool {
        program: "strace",
        package: "strace",
        used_by: "plumb trace record and the syscall-count tests",
    },
    Tool {
        program: "getfattr",
        package: "attr",
        used_by: "the extended attributes trace record's calibration keeps",
    },
    Tool {
        program: "setfattr",
        package: "attr",
        used_by: "the extended attributes trace record's calibration keeps",
    },
    Tool {
        program: "fio",
        package: "fio",
        used_by: "comparisons with the real fio",
    },
    Tool {
        program: "/usr/share/doc/fio/examples/backwards-read.fio",
        package: "fio-examples",
        used_by: "fio's own example job files, run by plumb fio and by fio",
    },
    Tool {
        program: "ip",
        package: "iproute2",
        used_by: "network namespaces in the net tests",
    },
    Tool {
        program: "tc",
        package: "iproute2",
        used_by: "the token-bucket link in the net tests",
    },
    Tool {
        program: "ethtool",
        package: "ethtool",
        used_by: "offloads off on the veth links of the net tests",
    },
    Tool {
        program: "python3",
        package: "python3",
        used_by: "the traced workloads and the delay relay",
    },
    Tool {
        program: "ps",
        package: "procps",
        used_by: "process checks",
    },
    Tool {
        program: "git",
        package: "git",
        used_by: "the real applications the trace tests record, plumb --version's commit",
    },
    Tool {
        program: "man",
        package: "man-db",
        used_by: "rendering the man pages plumb writes",
    },
    Tool {
        program: "sqlite3",
        package: "sqlite3",
        used_by: "the real applications the trace tests record",
    },
    Tool {
        program: "minisign",
        package: "minisign",
        used_by: "signatures made and checked by the real minisign in the pack tests",
    },
    Tool {
        program: "tar",
        package: "tar",
        used_by: "the real applications the trace tests record",
    },
    Tool {
        program: "ssh",
        package: "openssh-client",
        used_by: "plumb fleet's transport",
    },
    Tool {
        program: "sshd",
        package: "openssh-server",
        used_by: "the real OpenSSH servers the fleet tests start in network namespaces",
    },
    Tool {
        program: "ssh-keygen",
        package: "openssh-client",
        used_by: "the host and user keys the fleet tests make",
    },
    Tool {
        program: "time",
        package: "time",
        used_by: "the peak memory of a streamed replay (GNU time's %M)",
    },
    Tool {
        program: "chromium",
        package: "chromium",
        used_by: "the report tests, which render plumb report's page in a real browser",
    },
    Tool {
        program: "prometheus",
        package: "prometheus",
        used_by: "the real Prometheus that scrapes --metrics-listen in the metrics tests",
    },
    Tool {
        program: "promtool",
        package: "prometheus",
        used_by: "promtool check metrics on a scrape of --metrics-listen",
    },
    Tool {
        program: "zstd",
        package: "zstd",
        used_by: "unpacking plumb's compressed copy on the fleet tests' hosts",
    },
    Tool {
        program: "ansible-inventory",
        package: "ansible",
        used_by: "reading Ansible inventories in the fleet tests",
    },
    Tool {
        program: "dbench",
        package: "dbench",
        used_by: "the dbench importer's test and bench/vs-suites",
    },
];

/// The target the example WebAssembly guests are built for.
const WASM_TARGET: &str = "wasm32-wasip2";

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    match args.next().as_deref().and_then(|a| a.to_str()) {
        Some("test") => match test(args.collect()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("cargo xtask test: {e}");
                ExitCode::FAILURE
            }
        },
        Some("man") => {
            let dir = args.next().unwrap_or_else(|| "target/man".into());
            match man(Path::new(&dir)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("cargo xtask man: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("dist") => {
            let dir = args.next().unwrap_or_else(|| "target/dist".into());
            match dist(Path::new(&dir)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("cargo xtask dist: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => {
            eprintln!(
                "usage: cargo xtask test [ARGS]\n  installs what the tests need, then runs cargo fmt --check, cargo clippy and cargo test ARGS\n       cargo xtask man [DIR]\n  writes plumb's man pages into DIR (default target/man)\n       cargo xtask dist [DIR]\n  writes the stripped shipping build (Cargo.toml profile.shipping) and its plumb.debug into DIR (default target/dist)"
            );
            ExitCode::from(2)
        }
    }
}

/// Tests (name prefixes, as libtest filters match them) whose figures move
/// when a neighbouring test loads the CPU, the disk or the network: they
/// time deadlines, rates, replay think time or the block layer's requests.
/// They run one at a time, after every other test has run in parallel.
/// The hostile corpus is not here: each case has its deadline plus a grace
/// made for sharing the machine, and it runs beside the parallel tests; nor
/// are tests that only bound a time loosely (deeply nested values) or hold
/// their jobs at a fixed rate (the metrics endpoint's).
const SERIAL: &[&str] = &[
    "accuracy::",
    "background::",
    "engines::",
    "fleet::a_host_whose_sshd_dies",
    "fleet::ctrl_c",
    "fleet::fleet_net",
    "fleet::fleet_wait",
    "hangs::a_long_rtt",
    "hangs::a_sleep",
    "hangs::long_memory",
    "hangs::sigterm_",
    "hangs::threads_beyond",
    "honest::a_buffered_read_back",
    "jobs_and_output::the_progress_line",
    "jobs_and_output::timeline",
    "net::links::",
    "net::loopback::loopback_measurements",
    // Its memory-latency curve needs a quiet CPU to show plateaus.
    "net::loopback::the_system_pack",
    "net::robustness::",
    "options::ramp_time",
    "results::compare_of_a_million",
    "results::oversized",
    "run::kernels::",
    "run::signals::",
    "run::containment::limits",
    "safety::fio_on_a_fifo",
    "safety::io_job_layout_stops",
    "safety::sigint",
    "seed_commands::sixteen",
    "serve::",
    "templates::a_failing_template",
    "trace::a_replay_that_fills",
    "trace::record_stops",
    "trace::think_time",
    // Compares the component's and the script's rates (within 10%).
    "wasm::es_indexing_gives_the_same_figures",
];

/// Threads for the tests that may share the machine: they wait on
/// processes, servers and the disk as much as they compute.
const PARALLEL_THREADS: &str = "4";

/// Sets up the machine, then runs every check, stopping at the first failure.
fn test(test_args: Vec<OsString>) -> Result<(), String> {
    install_missing_packages()?;
    add_wasm_target()?;
    let cargo = cargo();
    run(Command::new(&cargo).args(["fmt", "--all", "--check"]))?;
    run(Command::new(&cargo).args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    if !test_args.is_empty() {
        // Tests the developer picked: one at a time, as the serial phase.
        return run(Command::new(&cargo)
            .arg("test")
            .args(test_args)
            .env("RUST_TEST_THREADS", "1"));
    }
    run(Command::new(&cargo).args(["test", "--workspace", "--no-run"]))?;
    let started = Instant::now();
    let mut parallel = Command::new(&cargo);
    parallel
        .args(["test", "--workspace", "--"])
        .args(SERIAL.iter().flat_map(|s| ["--skip", s]))
        .env("RUST_TEST_THREADS", PARALLEL_THREADS);
    run(&mut parallel)?;
    let split = Instant::now();
    let mut serial = Command::new(&cargo);
    serial
        .args(["test", "--workspace", "--"])
        .args(SERIAL)
        .env("RUST_TEST_THREADS", "1");
    run(&mut serial)?;
    eprintln!(
        "cargo xtask: tests took {:.0} s ({:.0} s in parallel, {:.0} s one at a time)",
        started.elapsed().as_secs_f64(),
        (split - started).as_secs_f64(),
        split.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Installs, with apt-get, the packages of the programs in [`TOOLS`] that are
/// not on PATH; fails naming them where that is not possible.
fn install_missing_packages() -> Result<(), String> {
    let mut packages: Vec<&str> = TOOLS
        .iter()
        .filter(|t| !on_path(t.program))
        .map(|t| t.package)
        .collect();
    packages.sort_unstable();
    packages.dedup();
    if packages.is_empty() {
        return Ok(());
    }
    let list = packages.join(" ");
    eprintln!("cargo xtask: installing {list}");
    if !on_path("apt-get") {
        return Err(format!(
            "the tests need the packages {list}, and apt-get is not here to install them"
        ));
    }
    let apt = |args: &[&str]| {
        let mut c = Command::new("apt-get");
        c.args(["-o", "DPkg::Lock::Timeout=300"])
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive");
        run(&mut c).map_err(|e| format!("{e} (installing {list} needs root)"))
    };
    apt(&["update", "-q"])?;
    let mut install = vec!["install", "-y", "-q", "--no-install-recommends"];
    install.extend(&packages);
    apt(&install)?;
    let still: Vec<String> = TOOLS
        .iter()
        .filter(|t| !on_path(t.program))
        .map(|t| format!("{} ({}, for {})", t.program, t.package, t.used_by))
        .collect();
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "still missing after apt-get install: {}",
            still.join(", ")
        ))
    }
}

/// Adds the WebAssembly target with rustup where the toolchain lacks it.
fn add_wasm_target() -> Result<(), String> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map_err(|e| format!("running rustup to check for the {WASM_TARGET} target: {e}"))?;
    if !installed.status.success() {
        return Err(format!(
            "rustup target list --installed failed: {}",
            String::from_utf8_lossy(&installed.stderr)
        ));
    }
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.trim() == WASM_TARGET)
    {
        return Ok(());
    }
    run(Command::new("rustup").args(["target", "add", WASM_TARGET]))
}

/// Whether `program` is an executable file in a directory of PATH.
fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    if program.starts_with('/') {
        // A data file a package provides (fio's example job files).
        return Path::new(program).is_file();
    }
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        Path::new(&dir)
            .join(program)
            .metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Runs `cmd`, echoing it first; an error names it and how it ended.
/// Builds plumb and has it write its man pages (made from its own argument
/// grammar) into `dir`.
fn man(dir: &Path) -> Result<(), String> {
    let cargo = cargo();
    run(Command::new(&cargo)
        .args(["run", "--quiet", "--bin", "plumb", "--", "manpages"])
        .arg(dir))
}

/// The largest binary `dist` ships.
const MAX_DIST_BYTES: u64 = 40_000_000;

/// Builds plumb with the `shipping` profile (Cargo.toml), then writes `dir/plumb.debug` (its debug
/// information and symbols, `objcopy --only-keep-debug`) and `dir/plumb`
/// (stripped, with a `.gnu_debuglink` to the former); fails when the
/// stripped binary is over [`MAX_DIST_BYTES`].
fn dist(dir: &Path) -> Result<(), String> {
    let cargo = cargo();
    run(Command::new(&cargo).args(["build", "--profile", "shipping", "--bin", "plumb"]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR").unwrap_or_else(|| "target".into());
    let built = Path::new(&target).join("shipping").join("plumb");
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let debug = dir.join("plumb.debug");
    let shipped = dir.join("plumb");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&built)
        .arg(&debug))?;
    // The link names the file, not the path: it is looked up beside the
    // binary and under /usr/lib/debug.
    run(Command::new("objcopy")
        .arg("--strip-all")
        .arg("--add-gnu-debuglink")
        .arg(&debug)
        .arg(&built)
        .arg(&shipped))?;
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "cargo xtask dist: {} {} bytes (built: {} bytes), {} {} bytes",
        shipped.display(),
        size(&shipped),
        size(&built),
        debug.display(),
        size(&debug)
    );
    if size(&shipped) > MAX_DIST_BYTES {
        return Err(format!(
            "{} is {} bytes, over {MAX_DIST_BYTES}",
            shipped.display(),
            size(&shipped)
        ));
    }
    Ok(())
}

/// The cargo that runs this task (`CARGO`), else the one on the PATH.
fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

fn run(cmd: &mut Command) -> Result<(), String> {
    eprintln!("cargo xtask: {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("could not run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed ({status})"))
    }
}
