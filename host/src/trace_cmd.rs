//! `plumb trace`: record a program's file operations, import strace logs and
//! fio iologs, show a summary, and replay a trace in a sandboxed run directory.

use crate::sandbox::RunDir;
use crate::trace::{iolog, replay, show, strace, ReplayOptions, ReplayResult, Speed, Trace};
use crate::ExitCode;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The `plumb trace` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TraceCommand {
    /// Run a command under strace and save its file operations as a plumb trace.
    Record {
        /// The trace to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Keep only paths under this directory (default: the current directory).
        #[arg(long)]
        root: Option<PathBuf>,
        /// The command and its arguments (after --).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Convert an strace log (see README for the options) or a fio iolog.
    Import {
        /// The log to convert.
        log: PathBuf,
        /// The trace to write.
        #[arg(short, long)]
        output: PathBuf,
        /// The log is a fio iolog (version 2 or 3), not an strace log.
        #[arg(long)]
        fio_iolog: bool,
        /// Keep only paths under this directory (strace logs; default: the current directory).
        #[arg(long)]
        root: Option<PathBuf>,
        /// The traced program's starting directory (strace logs; default: the root).
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// Summarise a trace: operations, bytes, files, threads, sizes, sync rate.
    Show {
        /// The trace.
        trace: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Replay a trace inside a fresh run directory.
    Replay {
        /// The trace.
        trace: PathBuf,
        /// Directory under which the run directory is made.
        #[arg(long, default_value = ".")]
        target: PathBuf,
        /// Think time divided by this factor, or `max` for none.
        #[arg(long, default_value = "1")]
        speed: String,
        /// `keep` the recorded threads, or `1` to play everything on one thread.
        #[arg(long, default_value = "keep")]
        threads: String,
        /// Save the result as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Keep the run directory.
        #[arg(long)]
        keep: bool,
    },
}

/// Runs a `plumb trace` subcommand.
pub fn main(cmd: TraceCommand) -> ExitCode {
    let r = match cmd {
        TraceCommand::Record {
            output,
            root,
            command,
        } => record(&output, root, &command),
        TraceCommand::Import {
            log,
            output,
            fio_iolog,
            root,
            cwd,
        } => import(&log, &output, fio_iolog, root, cwd),
        TraceCommand::Show { trace, json } => show_cmd(&trace, json),
        TraceCommand::Replay {
            trace,
            target,
            speed,
            threads,
            json,
            keep,
        } => replay_cmd(&trace, &target, &speed, &threads, json.as_deref(), keep),
    };
    match r {
        Ok(code) => code,
        Err((code, msg)) => {
            eprintln!("plumb trace: error: {msg}");
            code
        }
    }
}

type Outcome = Result<ExitCode, (ExitCode, String)>;

fn bad(msg: String) -> (ExitCode, String) {
    (ExitCode::BadInput, msg)
}

fn absolute(p: &Path) -> Result<String, (ExitCode, String)> {
    std::fs::canonicalize(p)
        .map(|p| p.display().to_string())
        .map_err(|e| bad(format!("{}: {e}", p.display())))
}

fn save(trace: &Trace, output: &Path) -> Result<(), (ExitCode, String)> {
    crate::report::save::write_atomic(output, trace.to_text().as_bytes())
        .map_err(|e| (ExitCode::Failed, format!("-o {e}")))?;
    let s = show::summarize(trace);
    eprintln!(
        "wrote {}: {} operations on {} file(s) by {} thread(s) over {:.3} s",
        output.display(),
        s.ops,
        s.files,
        s.threads,
        s.duration_s
    );
    Ok(())
}

fn record(output: &Path, root: Option<PathBuf>, command: &[String]) -> Outcome {
    if Command::new("strace").arg("-V").output().is_err() {
        return Err(bad(
            "strace is not installed: install it (Debian/Ubuntu: apt-get install strace)".into(),
        ));
    }
    let cwd = absolute(Path::new("."))?;
    let root = match root {
        Some(r) => absolute(&r)?,
        None => cwd.clone(),
    };
    let log = tempfile_path(output);
    let status = Command::new("strace")
        .args(strace::STRACE_OPTIONS)
        .args(["-e", &format!("trace={}", strace::SYSCALLS), "-o"])
        .arg(&log)
        .arg("--")
        .args(command)
        .status()
        .map_err(|e| (ExitCode::Failed, format!("running strace: {e}")))?;
    let text = std::fs::read_to_string(&log);
    let _ = std::fs::remove_file(&log);
    let text = text.map_err(|e| (ExitCode::Failed, format!("reading the strace log: {e}")))?;
    let trace = strace::convert(&log.display().to_string(), &text, &root, &cwd)
        .map_err(|e| (ExitCode::Failed, e.to_string()))?;
    save(&trace, output)?;
    if !status.success() {
        eprintln!("note: {} exited with {status}", command[0]);
    }
    Ok(ExitCode::Ok)
}

fn tempfile_path(output: &Path) -> PathBuf {
    let name = format!(
        ".{}.strace-{}",
        output
            .file_name()
            .map_or("trace".into(), |n| n.to_string_lossy().into_owned()),
        std::process::id()
    );
    output.with_file_name(name)
}

fn import(
    log: &Path,
    output: &Path,
    fio_iolog: bool,
    root: Option<PathBuf>,
    cwd: Option<PathBuf>,
) -> Outcome {
    let text = std::fs::read_to_string(log).map_err(|e| bad(format!("{}: {e}", log.display())))?;
    let name = log.display().to_string();
    let trace = if fio_iolog {
        iolog::convert(&name, &text).map_err(|e| bad(e.to_string()))?
    } else {
        let root = match root {
            Some(r) => absolute(&r)?,
            None => absolute(Path::new("."))?,
        };
        let cwd = match cwd {
            Some(c) => absolute(&c).unwrap_or_else(|_| c.display().to_string()),
            None => root.clone(),
        };
        strace::convert(&name, &text, &root, &cwd).map_err(|e| bad(e.to_string()))?
    };
    save(&trace, output)?;
    Ok(ExitCode::Ok)
}

/// Reads and checks a trace file.
pub fn load(path: &Path) -> Result<Trace, (ExitCode, String)> {
    let text =
        std::fs::read_to_string(path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    Trace::parse(&path.display().to_string(), &text).map_err(|e| bad(e.to_string()))
}

fn show_cmd(path: &Path, json: bool) -> Outcome {
    let s = show::summarize(&load(path)?);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&s).expect("serialisable")
        );
    } else {
        print!("{}", show::render(&s));
    }
    Ok(ExitCode::Ok)
}

fn replay_cmd(
    path: &Path,
    target: &Path,
    speed: &str,
    threads: &str,
    json: Option<&Path>,
    keep: bool,
) -> Outcome {
    let speed: Speed = speed.parse().map_err(|e| bad(format!("--speed: {e}")))?;
    let keep_threads = match threads {
        "keep" => true,
        "1" => false,
        other => return Err(bad(format!("--threads: '{other}' is not 'keep' or '1'"))),
    };
    let trace = load(path)?;
    let need = replay::bytes_needed(&trace);
    let free = crate::files::free_bytes(target)
        .map_err(|e| bad(format!("--target {}: {e}", target.display())))?;
    if need > free {
        return Err(bad(format!(
            "the replay may write {} but only {} are free under {}",
            crate::units::format_bytes_binary(need as f64),
            crate::units::format_bytes_binary(free as f64),
            target.display()
        )));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, stop.clone());
    let _ = signal_hook::flag::register(signal_hook::consts::SIGTERM, stop.clone());
    let dir = RunDir::create(target).map_err(|e| {
        (
            ExitCode::Failed,
            format!("--target {}: {e}", target.display()),
        )
    })?;
    let result = replay::lay_out_and_replay(
        &trace,
        &dir,
        ReplayOptions {
            speed,
            keep_threads,
        },
        &stop,
    );
    if keep {
        eprintln!("kept {}", dir.path().display());
    } else {
        let _ = dir.delete();
    }
    let r = result.map_err(|e| (ExitCode::Failed, e))?;
    if let Some(j) = json {
        let text = serde_json::to_string_pretty(&r).unwrap_or_default() + "\n";
        crate::report::save::write_atomic(j, text.as_bytes())
            .map_err(|e| (ExitCode::Failed, format!("--json {e}")))?;
    }
    print!("{}", render(&r));
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(ExitCode::Interrupted);
    }
    Ok(ExitCode::Ok)
}

/// A replay's result as a table and a summary line.
pub fn render(r: &ReplayResult) -> String {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header([
        "operation",
        "count",
        "bytes",
        "errors",
        "mean µs",
        "p50 µs",
        "p99 µs",
        "max µs",
    ]);
    for o in &r.ops {
        table.add_row([
            o.op.clone(),
            o.count.to_string(),
            crate::units::format_bytes_binary(o.bytes as f64),
            o.errors.to_string(),
            format!("{:.1}", o.mean_us),
            format!("{:.1}", o.p50_us),
            format!("{:.1}", o.p99_us),
            format!("{:.1}", o.max_us),
        ]);
    }
    let mut out = format!("{table}\n");
    out.push_str(&format!(
        "replayed {} operations in {:.3} s (recorded {:.3} s, ratio {:.3}); {} file(s), {} laid out first; {} noted but not replayed (mmap)\n",
        r.total_ops,
        r.seconds,
        r.original_seconds,
        r.time_ratio,
        r.files_created,
        crate::units::format_bytes_binary(r.bytes_laid_out as f64),
        r.skipped
    ));
    if let Some(e) = &r.first_error {
        out.push_str(&format!("first error: {e}\n"));
    }
    out
}
