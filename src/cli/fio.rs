//! `plumb fio`: fio's own options and job files, run by plumb's engines.

use super::ticker::Ticker;
use super::{ExitCode, Signals};
use crate::job::cmdline::{CmdlineError, JobArgs};
use crate::job::options;
use crate::job::spec::JobSpec;
use crate::model::document::{job_metrics, RunDocument, ScenarioResult, SCHEMA};
use crate::model::run::RunReport;
use crate::report::{fio_json, fio_normal, fio_terse};
use crate::runner::activity::Activity;
use crate::runner::{prepare, RunError, RunOptions};
use crate::sysinfo;
use sha2::{Digest, Sha256};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Output layouts of `plumb fio`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// fio's human-readable text.
    #[default]
    Normal,
    /// fio's JSON.
    Json,
    /// fio's terse (semicolon-separated) version 3.
    Terse,
}

/// A parsed `plumb fio` command line.
#[derive(Debug)]
pub struct FioInvocation {
    /// The jobs to run.
    pub jobs: Vec<JobSpec>,
    /// How to print results.
    pub format: OutputFormat,
    /// Where to print them (`--output`), else stdout.
    pub output: Option<PathBuf>,
    /// plumb's result document (`--json FILE`).
    pub json: Option<PathBuf>,
    /// Label of the run in the result document.
    pub label: Option<String>,
    /// Allow writes to block devices.
    pub allow_device: bool,
    /// The job description, for the result's checksum.
    pub description: String,
    /// The live /metrics endpoint (`--metrics-listen`, `--metrics-linger`).
    pub metrics: super::metrics::MetricsArgs,
    /// Run, only parse, or show the command line.
    pub mode: Mode,
    /// The progress line.
    pub eta: Eta,
    /// Options accepted without the effect they have in fio, one line
    /// each; with `--warnings-fatal` they are refused instead.
    pub warnings: Vec<String>,
    /// The job files as command lines (`--showcmd` only).
    pub command_lines: String,
}

/// Bad command-line input, with the place it was found.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

const USAGE: &str =
    "usage: plumb fio [--version] [--output-format=normal|json|terse] [--output=FILE] [--json FILE] \
[--label NAME] [--allow-device] [--metrics-listen ADDR:PORT [--metrics-linger DURATION]] \
[--parse-only] [--showcmd] [--section=NAME] [--max-jobs=N] [--warnings-fatal] [--cmdhelp[=OPTION]] [--enghelp[=ENGINE]] \
[--eta=auto|always|never] [--eta-newline=TIME] [--status-interval=TIME] \
[--name=JOB --OPTION=VALUE ...] [JOBFILE ...]";

/// What `plumb fio` does with the jobs it parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Runs them.
    #[default]
    Run,
    /// Parses and checks them, writes nothing (`--parse-only`).
    ParseOnly,
    /// Prints each job file as one command line (`--showcmd`).
    ShowCmd,
}

/// How the progress line is shown (`--eta`, `--eta-newline`, `--status-interval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Eta {
    /// Redrawn in place on a terminal, logged every few seconds otherwise.
    #[default]
    Auto,
    /// Shown even when stderr is not a terminal.
    Always,
    /// Never shown.
    Never,
    /// A plain line at this interval.
    Every(std::time::Duration),
}

/// `plumb fio`'s own switches, as they are read (the job options and
/// files go to [`JobArgs`]).
#[derive(Default)]
struct Switches {
    format: OutputFormat,
    output: Option<PathBuf>,
    json: Option<PathBuf>,
    label: Option<String>,
    allow_device: bool,
    metrics: super::metrics::MetricsArgs,
    mode: Mode,
    eta: Eta,
    warnings_fatal: bool,
}

/// fio's time switches: seconds without a unit, at least 100 ms.
fn interval(name: &str, text: &str) -> Result<std::time::Duration, UsageError> {
    crate::units::parse_duration_at_most(text, options::MAX_JOB_DURATION)
        .ok()
        .filter(|d| *d >= std::time::Duration::from_millis(100))
        .ok_or_else(|| {
            UsageError(format!(
                "--{name}: '{text}' is not a time of at least 100ms (e.g. 5 or 500ms)"
            ))
        })
}

impl Switches {
    /// Takes the switch `name` of `args[*i]`, its value `inline` (after
    /// `=`) or the next argument (`*i` then points at it); false when
    /// `name` is not one of `plumb fio`'s own switches.
    fn take(
        &mut self,
        name: &str,
        inline: Option<&str>,
        args: &[String],
        i: &mut usize,
    ) -> Result<bool, UsageError> {
        let mut value = || -> Result<String, UsageError> {
            if let Some(v) = inline {
                return Ok(v.to_string());
            }
            *i += 1;
            args.get(*i)
                .cloned()
                .ok_or_else(|| UsageError(format!("--{name}: needs a value")))
        };
        match name {
            "output-format" => {
                self.format = match value()?.as_str() {
                    "normal" => OutputFormat::Normal,
                    "json" | "json+" => OutputFormat::Json,
                    "terse" => OutputFormat::Terse,
                    other => {
                        return Err(UsageError(format!(
                            "--output-format: '{other}' is not supported (plumb has: normal, json, terse)"
                        )))
                    }
                };
            }
            "output" => self.output = Some(PathBuf::from(value()?)),
            "json" => self.json = Some(PathBuf::from(value()?)),
            "label" => self.label = Some(value()?),
            "allow-device" => self.allow_device = true,
            "metrics-listen" => self.metrics.metrics_listen = Some(value()?),
            "metrics-linger" => self.metrics.metrics_linger = Some(value()?),
            "minimal" => self.format = OutputFormat::Terse,
            "parse-only" => self.mode = Mode::ParseOnly,
            "showcmd" => self.mode = Mode::ShowCmd,
            "warnings-fatal" => self.warnings_fatal = true,
            "eta" => {
                self.eta = match value()?.as_str() {
                    "auto" => Eta::Auto,
                    "always" => Eta::Always,
                    "never" => Eta::Never,
                    other => {
                        return Err(UsageError(format!(
                            "--eta: '{other}' is not auto, always or never"
                        )))
                    }
                }
            }
            "eta-newline" | "status-interval" => {
                self.eta = Eta::Every(interval(name, &value()?)?);
            }
            // How often fio recomputes its ETA: plumb's line is redrawn as it changes.
            "eta-interval" => {
                interval(name, &value()?)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Parses fio-style arguments.
pub fn parse_args(args: &[String]) -> Result<FioInvocation, UsageError> {
    let usage = |e: CmdlineError| UsageError(e.to_string());
    let mut switches = Switches::default();
    let mut job_args = JobArgs::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        let body = arg
            .strip_prefix("--")
            .or_else(|| arg.strip_prefix('-').filter(|b| b.len() > 1));
        if let Some(body) = body {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            if name == "section" || name == "max-jobs" {
                let value = match inline {
                    Some(v) => v.to_string(),
                    None => {
                        i += 1;
                        args.get(i)
                            .cloned()
                            .ok_or_else(|| UsageError(format!("--{name}: needs a value")))?
                    }
                };
                if name == "section" {
                    job_args.only_section(&value);
                } else {
                    job_args.max_jobs(&value).map_err(usage)?;
                }
            } else if !switches.take(name, inline, args, &mut i)? {
                let next = args.get(i + 1).map(String::as_str);
                if job_args.option(name, inline, next).map_err(usage)? {
                    i += 1;
                }
            }
        } else {
            job_args.file(arg);
        }
        i += 1;
    }
    let mut description = args.join(" ");
    let jobs = job_args.jobs(&mut description).map_err(usage)?;
    let command_lines = if switches.mode == Mode::ShowCmd {
        job_args.command_lines().map_err(usage)?
    } else {
        String::new()
    };
    if jobs.is_empty() {
        return Err(UsageError(format!(
            "no jobs given (start one with --name=NAME)\n{USAGE}"
        )));
    }
    let Switches {
        format,
        output,
        json,
        label,
        allow_device,
        metrics,
        mode,
        eta,
        warnings_fatal,
    } = switches;
    let warnings = without_effect(&jobs);
    if warnings_fatal && !warnings.is_empty() {
        return Err(UsageError(format!(
            "--warnings-fatal: {}",
            warnings.join("; ")
        )));
    }
    if metrics.metrics_linger.is_some() && metrics.metrics_listen.is_none() {
        return Err(UsageError(
            "--metrics-linger: only with --metrics-listen".into(),
        ));
    }
    Ok(FioInvocation {
        jobs,
        format,
        output,
        json,
        label,
        allow_device,
        description,
        metrics,
        mode,
        eta,
        warnings,
        command_lines,
    })
}

/// One line per option, per job, that plumb accepts without the effect
/// it has in fio.
fn without_effect(jobs: &[JobSpec]) -> Vec<String> {
    let mut lines = Vec::new();
    for job in jobs {
        for (name, _) in &job.given {
            if let Some(why) = options::without_effect(name) {
                let line = format!(
                    "job '{}': option '{name}' has no effect in plumb: {why}",
                    job.name
                );
                if !lines.contains(&line) {
                    lines.push(line);
                }
            }
        }
    }
    lines
}

/// Runs `plumb fio ARGS` and returns the process exit code.
pub fn main(args: &[String]) -> ExitCode {
    // As fio: the version alone, whatever else the line holds, no job needed.
    if args.iter().any(|a| a == "--version" || a == "-v") {
        println!("{}", crate::report::fio_version());
        return ExitCode::Ok;
    }
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print_help();
        return ExitCode::Ok;
    }
    // As fio: help on options and engines, whatever else the line holds.
    for a in args {
        if let Some(rest) = a.strip_prefix("--cmdhelp") {
            print!("{}", crate::job::help::options(rest.strip_prefix('=')));
            return ExitCode::Ok;
        }
        if let Some(rest) = a.strip_prefix("--enghelp") {
            print!("{}", crate::job::help::engines(rest.strip_prefix('=')));
            return ExitCode::Ok;
        }
    }
    match parse_args(args) {
        Ok(inv) if inv.mode == Mode::ShowCmd => {
            print!("{}", inv.command_lines);
            ExitCode::Ok
        }
        Ok(inv) if inv.mode == Mode::ParseOnly => {
            for w in &inv.warnings {
                eprintln!("plumb fio: warning: {w}");
            }
            ExitCode::Ok
        }
        Ok(inv) => {
            for w in &inv.warnings {
                eprintln!("plumb fio: warning: {w}");
            }
            run(&inv)
        }
        Err(e) => {
            eprintln!("plumb fio: error: {e}");
            ExitCode::BadInput
        }
    }
}

/// The usage and every supported option.
fn print_help() {
    println!("{USAGE}\n\nSupported job options:");
    for o in options::all_options() {
        println!("  --{:<22} {}", o.name, o.help);
    }
    println!(
        "\nAccepted without effect (fio bookkeeping): {}",
        options::BOOKKEEPING_ONLY.join(", ")
    );
}

/// Runs the jobs, prints or saves their report, and says which failed.
fn run(inv: &FioInvocation) -> ExitCode {
    let metrics = match inv.metrics.start(
        inv.label.as_deref().unwrap_or(""),
        crate::metrics::Steps::Jobs,
    ) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("plumb fio: error: {e}");
            return ExitCode::BadInput;
        }
    };
    if let Some(m) = &metrics {
        // The jobs that run (a create_only job only lays out its files).
        m.board()
            .plan(inv.jobs.iter().filter(|j| !j.create_only).count() as u64);
    }
    let signals = Signals::install();
    let stop = signals.stop.clone();
    // On a terminal the live line is drawn in place by a ticker; otherwise
    // the runner logs it every two seconds.
    let shown = match inv.eta {
        Eta::Auto => std::io::stderr().is_terminal(),
        Eta::Always | Eta::Every(_) => true,
        Eta::Never => false,
    };
    let activity = shown.then(|| Arc::new(Activity::default()));
    let opts = RunOptions {
        allow_device: inv.allow_device,
        progress: inv.eta != Eta::Never,
        stop: stop.clone(),
        activity: activity.clone(),
        // As in the result document: the scenario "fio", no pack.
        metrics: metrics.as_ref().map(|m| m.board().scope("", "fio")),
        ..RunOptions::default()
    };
    let file_error = |e: crate::files::FileError| {
        eprintln!("plumb fio: error: {e}");
        match e {
            crate::files::FileError::Option { .. } => ExitCode::BadInput,
            crate::files::FileError::Interrupted => signals.exit_code(),
            _ => ExitCode::Failed,
        }
    };
    let prepared = match prepare(&inv.jobs, inv.allow_device) {
        Ok(p) => p,
        Err(RunError::Files(e)) => return file_error(e),
    };
    // On the terminal the header comes first; a file gets it with the report.
    if inv.format == OutputFormat::Normal && inv.output.is_none() {
        print!("{}", fio_normal::header(&inv.jobs));
    }
    let ticker = activity.map(|a| match inv.eta {
        Eta::Every(every) => Ticker::start_lines("plumb fio".into(), a, every),
        _ => Ticker::start("plumb fio".into(), a, None),
    });
    let report = prepared.run(&opts);
    drop(ticker);
    let report = match report {
        Ok(r) => r,
        Err(RunError::Files(e)) => return file_error(e),
    };
    if let Some(m) = &metrics {
        m.board().finish();
    }
    let mut saved = print_or_write(inv, &render(inv, &report));
    if let Some(path) = &inv.json {
        if let Err(e) = write_document(path, inv, &report) {
            eprintln!("plumb fio: error: --json {e}");
            saved = false;
        }
    }
    say_failures(&report);
    if let Some(m) = metrics {
        m.finish(&stop);
    }
    if report.interrupted || stop.load(Ordering::Relaxed) {
        return signals.exit_code();
    }
    if report.failed() || !saved {
        ExitCode::Failed
    } else {
        ExitCode::Ok
    }
}

/// The report in the format asked for.
fn render(inv: &FioInvocation, report: &RunReport) -> String {
    match inv.format {
        OutputFormat::Normal if inv.output.is_some() => {
            fio_normal::header(&inv.jobs) + fio_normal::render(report).as_str()
        }
        OutputFormat::Normal => fio_normal::render(report),
        OutputFormat::Terse => fio_terse::render(report),
        OutputFormat::Json => {
            serde_json::to_string_pretty(&fio_json::render(report)).unwrap_or_default() + "\n"
        }
    }
}

/// One line per job and error, however many of its clones share it.
fn say_failures(report: &RunReport) {
    let mut failures: Vec<(&str, &str, usize)> = Vec::new();
    for r in report.results() {
        if let Some(e) = &r.error {
            match failures
                .iter_mut()
                .find(|(n, m, _)| *n == r.name && *m == e.as_str())
            {
                Some((_, _, count)) => *count += 1,
                None => failures.push((&r.name, e, 1)),
            }
        }
    }
    for (name, e, count) in failures {
        let clones = if count > 1 {
            format!(" ({count} of its clones)")
        } else {
            String::new()
        };
        eprintln!("plumb fio: job '{name}' failed{clones}: {e}");
    }
}

/// Prints `text`, or saves it (all or nothing) to `--output`; false when saving failed.
fn print_or_write(inv: &FioInvocation, text: &str) -> bool {
    match &inv.output {
        None => {
            print!("{text}");
            true
        }
        Some(path) => match crate::save::write_atomic(path, text.as_bytes()) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("plumb fio: error: --output {e}");
                false
            }
        },
    }
}

fn write_document(
    path: &Path,
    inv: &FioInvocation,
    report: &RunReport,
) -> Result<(), crate::save::SaveError> {
    let target_dir = inv
        .jobs
        .first()
        .and_then(|j| j.directory.clone())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let jobs: Vec<_> = report.results().cloned().collect();
    let doc = RunDocument {
        schema: SCHEMA.into(),
        plumb_version: env!("CARGO_PKG_VERSION").into(),
        label: inv.label.clone(),
        labels: Vec::new(),
        started: chrono::DateTime::<chrono::Local>::from(report.started).to_rfc3339(),
        finished: chrono::DateTime::<chrono::Local>::from(report.finished).to_rfc3339(),
        host: sysinfo::host_info(),
        target: sysinfo::target_info(&target_dir).ok(),
        scenarios: vec![ScenarioResult {
            name: "fio".into(),
            pack: None,
            pack_sha256: None,
            pack_version: None,
            pack_origin: None,
            pack_signer: None,
            source_sha256: Some(format!("{:x}", Sha256::digest(inv.description.as_bytes()))),
            params: Default::default(),
            params_read: None,
            repeat: 1,
            metrics: jobs.iter().flat_map(job_metrics).collect(),
            error: jobs.iter().find_map(|j| j.error.clone()),
            error_kind: jobs
                .iter()
                .any(|j| j.error.is_some())
                .then(|| "host/failed".to_string()),
            jobs,
            tables: Vec::new(),
            notes: Vec::new(),
            series: Vec::new(),
            phases: Vec::new(),
        }],
    };
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
    crate::save::write_atomic(path, text.as_bytes())
}
