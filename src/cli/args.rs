//! The command line's grammar: every subcommand and option of `plumb`, in
//! one definition that the binary parses with, and that shell completions
//! (`plumb completions SHELL`) and man pages (`cargo xtask man`) are made
//! from.

use super::run::RunArgs;
use super::{fleet, pack, report, serve, show, trace};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// `plumb`: the command line.
#[derive(Parser)]
#[command(
    name = "plumb",
    version = super::version::LONG,
    about = "A benchmark workbench for storage, CPU and network"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// plumb's subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Run scenarios and packs (default: the built-in `quick` pack) in a sandboxed run directory.
    Run(RunArgs),
    /// Compare result files side by side (the first is the baseline); one
    /// file gets its suite's own layout.
    Compare {
        /// Result files written with --json.
        #[arg(required = true, num_args = 1..)]
        files: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = crate::report::run_table::Format::Table)]
        format: crate::report::run_table::Format,
        /// Exit 1 when any metric is worse than the baseline by more than this (e.g. 10%).
        #[arg(long, value_name = "PCT")]
        fail_if_slower: Option<String>,
        /// Let --fail-if-slower count metrics that are not comparable (other
        /// parameters, scenario or pack version).
        #[arg(long)]
        allow_mismatch: bool,
        /// Write SVG charts into this directory.
        #[arg(long, value_name = "DIR")]
        svg: Option<PathBuf>,
        /// Lay the comparison out with this template: a `.rhai` or `.wasm`
        /// file, or a pack (folder, bundle, git+URL#REV, built-in name)
        /// that ships one. By default, the template of the pack every run
        /// came from, when it has one.
        #[arg(long, value_name = "FILE|PACK", conflicts_with = "no_template")]
        template: Option<String>,
        /// Print the generic table even when the runs' pack has a template.
        #[arg(long)]
        no_template: bool,
        /// The many-run layout.
        #[command(flatten)]
        many: super::compare::ManyArgs,
    },
    /// Print a saved result: its metrics, every scenario's tables, its suite's own layout.
    Show(show::ShowArgs),
    /// Write result files as one page to publish: a self-contained HTML
    /// file (charts inline) or Markdown with its charts beside it.
    Report(report::ReportArgs),
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
    Serve(serve::ServeArgs),
    /// Record, import, show and replay application I/O traces.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    /// Make, bundle, inspect, sign and verify scenario packs.
    #[command(subcommand)]
    Pack(pack::PackCommand),
    /// Run packs on many machines over ssh, test the network between them, wait for them to answer.
    #[command(subcommand)]
    Fleet(fleet::FleetCommand),
    /// Describe this machine and the storage under a directory.
    Sysinfo {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Directory whose storage to describe.
        #[arg(long, default_value = ".")]
        target: PathBuf,
    },
    /// Print a shell completion script for bash, zsh, fish, elvish or PowerShell (see README).
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Write plumb's man pages (plumb.1, plumb-run.1, ...) into DIR (`cargo xtask man`).
    #[command(hide = true)]
    Manpages {
        /// The directory to write them to (created if missing).
        dir: PathBuf,
    },
}
