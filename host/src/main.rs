//! The `plumb` command line.

use clap::{Parser, Subcommand};
use plumb::run_cmd::{self, RunArgs};
use plumb::{fio_cmd, sysinfo, ExitCode};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "plumb",
    version,
    about = "A benchmark workbench for storage, CPU and network"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run scenarios and packs (default: the built-in `quick` pack) in a sandboxed run directory.
    Run(RunArgs),
    /// Compare result files side by side (the first is the baseline).
    Compare {
        /// Result files written with --json.
        #[arg(required = true, num_args = 2..)]
        files: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = plumb::report::run_table::Format::Table)]
        format: plumb::report::run_table::Format,
        /// Exit 1 when any metric is worse than the baseline by more than this (e.g. 10%).
        #[arg(long, value_name = "PCT")]
        fail_if_slower: Option<String>,
        /// Write SVG charts into this directory.
        #[arg(long, value_name = "DIR")]
        svg: Option<PathBuf>,
    },
    /// Compile and validate a scenario or pack without running it.
    Check {
        /// A `.rhai` file, pack folder or built-in pack name.
        scenario: String,
    },
    /// List packs, their scenarios, parameters and needs.
    List {
        /// A pack (default: all built-in packs).
        pack: Option<String>,
    },
    /// Run fio jobs (fio's options and job files) with plumb's engines.
    #[command(disable_help_flag = true)]
    Fio {
        /// fio options (--name=..., --rw=..., ...) and job files.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Answer the network primitives of other machines' scenarios (throughput, RTT).
    Serve(plumb::serve_cmd::ServeArgs),
    /// Record, import, show and replay application I/O traces.
    #[command(subcommand)]
    Trace(plumb::trace_cmd::TraceCommand),
    /// Describe this machine and the storage under a directory.
    Sysinfo {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Directory whose storage to describe.
        #[arg(long, default_value = ".")]
        target: PathBuf,
    },
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                ExitCode::BadInput as i32
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let code = match cli.command {
        Command::Fio { args } => fio_cmd::main(&args),
        Command::Run(args) => run_cmd::run_main(args),
        Command::Serve(args) => plumb::serve_cmd::serve_main(&args),
        Command::Trace(cmd) => plumb::trace_cmd::main(cmd),
        Command::Compare {
            files,
            format,
            fail_if_slower,
            svg,
        } => plumb::compare::main(&files, format, fail_if_slower.as_deref(), svg.as_deref()),
        Command::Check { scenario } => run_cmd::check_main(&scenario),
        Command::List { pack } => run_cmd::list_main(pack.as_deref()),
        Command::Sysinfo { json, target } => sysinfo_main(json, &target),
    };
    std::process::exit(code as i32);
}

fn sysinfo_main(json: bool, target: &std::path::Path) -> ExitCode {
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
