//! `plumb trace`: record a program's file operations, import strace logs,
//! fio iologs and dbench load files, show a summary, and replay a trace in a
//! sandboxed run directory.

use super::{ExitCode, Signals};
use crate::halt::Halted;
use crate::report::replay as replay_report;
use crate::report::replay_result;
use crate::report::run_table::Format;
use crate::sandbox::{Account, RunDir};
use crate::terminal::{clean, clean_text};
use crate::trace::format::stream::Source;
use crate::trace::limits::{read_bounded, MAX_LOG_BYTES};
use crate::trace::profile::PrepareError;
use crate::trace::{dbench, iolog, replay, show, strace, Bounds, Halt, ReplayError, Trace};
use std::path::{Path, PathBuf};
use std::time::Instant;

mod record;

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
        /// Do not run the command again without strace (it then runs once; the replay is measured against the traced run).
        #[arg(long)]
        no_calibrate: bool,
        /// The command and its arguments (after --).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Convert an strace log (see docs/guide/trace.md for the options), a fio iolog or a dbench load file.
    Import {
        /// The log to convert.
        log: PathBuf,
        /// The trace to write.
        #[arg(short, long)]
        output: PathBuf,
        /// The log is a fio iolog (version 2 or 3), not an strace log.
        #[arg(long, conflicts_with = "dbench")]
        fio_iolog: bool,
        /// The log is a dbench load file (NetBench's client.txt format), as dbench's fileio backend plays it.
        #[arg(long)]
        dbench: bool,
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
        /// Play this many copies at once, each in clients/clientK (1 to 128; 1 plays in the run directory).
        #[arg(long, default_value = "1")]
        clients: String,
        /// `touch` each mapped range's pages (an mmap'd file read or written
        /// through once), or `skip` maps (noted, not replayed).
        #[arg(long, default_value = "touch", value_name = "touch|skip")]
        mmap: String,
        /// Save the result here as a plumb result document (`plumb compare` and `plumb show` read it).
        #[arg(long)]
        json: Option<PathBuf>,
        /// A label for this replay in the result document (the machine, the disk).
        #[arg(long)]
        label: Option<String>,
        /// Keep the run directory.
        #[arg(long)]
        keep: bool,
        /// Stop the replay after this long (`30s`, `2m`); the figures so far are kept.
        #[arg(long)]
        timeout: Option<String>,
    },
}

/// Runs a `plumb trace` subcommand.
pub fn main(cmd: TraceCommand) -> ExitCode {
    let r = match cmd {
        TraceCommand::Record {
            output,
            root,
            no_calibrate,
            command,
        } => record::record(&output, root, &command, !no_calibrate),
        TraceCommand::Import {
            log,
            output,
            fio_iolog,
            dbench,
            root,
            cwd,
        } => {
            let format = match (fio_iolog, dbench) {
                (true, _) => LogFormat::FioIolog,
                (_, true) => LogFormat::Dbench,
                _ => LogFormat::Strace,
            };
            import(&log, &output, format, root, cwd)
        }
        TraceCommand::Show { trace, json } => show_cmd(&trace, json),
        TraceCommand::Replay {
            trace,
            target,
            speed,
            threads,
            clients,
            mmap,
            json,
            label,
            keep,
            timeout,
        } => replay_cmd(
            &trace,
            &target,
            &ReplayArgs {
                speed,
                threads,
                clients,
                mmap,
                json,
                label,
                keep,
                timeout,
            },
        ),
    };
    match r {
        Ok(code) => code,
        Err((code, msg)) => {
            crate::cli::print_error("trace", &msg);
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

/// Writes a converted trace; a trace the parser would not read back (a
/// converter let something past the bounds) is not written.
fn save(trace: &Trace, output: &Path) -> Result<(), (ExitCode, String)> {
    let text = trace.to_text();
    Trace::parse(&output.display().to_string(), &text).map_err(|e| {
        (
            ExitCode::Failed,
            format!("the converted trace is not valid: {e}"),
        )
    })?;
    crate::save::write_atomic(output, text.as_bytes())
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
    match (&trace.tracer, trace.untraced_us) {
        (Some(t), Some(u)) => eprintln!(
            "the program ran {:.3} s under {} ({} traced calls) and {:.3} s without it: a replay at --speed 1 keeps {:.3} of the recorded think time",
            t.wall_us as f64 / 1e6,
            clean(&t.name),
            t.calls,
            u as f64 / 1e6,
            trace.think_scale()
        ),
        (Some(t), None) => eprintln!(
            "the program ran {:.3} s under {} ({} traced calls); think time in the trace includes the tracer's slowdown",
            t.wall_us as f64 / 1e6,
            clean(&t.name),
            t.calls
        ),
        _ => {}
    }
    Ok(())
}

/// What `plumb trace import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LogFormat {
    Strace,
    FioIolog,
    Dbench,
}

fn import(
    log: &Path,
    output: &Path,
    format: LogFormat,
    root: Option<PathBuf>,
    cwd: Option<PathBuf>,
) -> Outcome {
    let text =
        read_bounded(log, MAX_LOG_BYTES).map_err(|e| bad(format!("{}: {e}", log.display())))?;
    let name = log.display().to_string();
    let trace = if format == LogFormat::FioIolog {
        iolog::convert(&name, &text).map_err(|e| bad(e.to_string()))?
    } else if format == LogFormat::Dbench {
        let c = dbench::convert(&name, &text).map_err(|e| bad(e.to_string()))?;
        for note in &c.notes {
            eprintln!("{name}: {}", clean(note));
        }
        c.trace
    } else {
        let root = match root {
            Some(r) => absolute(&r)?,
            None => absolute(Path::new("."))?,
        };
        let cwd = match cwd {
            Some(c) => absolute(&c).unwrap_or_else(|_| c.display().to_string()),
            None => root.clone(),
        };
        strace::convert(&name, &text, &root, &cwd, None).map_err(|e| bad(e.to_string()))?
    };
    save(&trace, output)?;
    Ok(ExitCode::Ok)
}

/// The trace file at `path`, to be streamed (a regular file).
fn source(path: &Path) -> Result<Source, (ExitCode, String)> {
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display().to_string();
    // Without blocking: a FIFO is refused, not waited on.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| bad(format!("{shown}: {e}")))?;
    Source::file(&shown, file).map_err(|e| bad(e.to_string()))
}

/// Reads the trace at `path` once through for a replay (every record
/// checked, none held), stopping on a signal or at the deadline.
fn prepare(
    path: &Path,
    signals: &Signals,
    deadline: Option<Instant>,
) -> Result<replay::Prepared, (ExitCode, String)> {
    let halt = crate::halt::Halt::new(signals.stop.clone(), deadline);
    replay::Prepared::read(source(path)?, &halt).map_err(|e| match e {
        PrepareError::Trace(e) => bad(e.to_string()),
        PrepareError::Halted(Halted::Interrupted) => (signals.exit_code(), e.to_string()),
        PrepareError::Halted(Halted::Deadline) => (
            ExitCode::Failed,
            "--timeout passed while reading the trace".to_string(),
        ),
    })
}

fn show_cmd(path: &Path, json: bool) -> Outcome {
    let s = show::summarize_source(&source(path)?).map_err(|e| bad(e.to_string()))?;
    if json {
        let text =
            serde_json::to_string_pretty(&s).map_err(|e| (ExitCode::Failed, e.to_string()))?;
        println!("{}", crate::terminal::clean_json(&text));
    } else {
        print!("{}", clean_text(&show::render(&s)));
    }
    Ok(ExitCode::Ok)
}

/// The options of `plumb trace replay` besides the trace and the target.
struct ReplayArgs {
    speed: String,
    threads: String,
    clients: String,
    mmap: String,
    json: Option<PathBuf>,
    label: Option<String>,
    keep: bool,
    timeout: Option<String>,
}

impl ReplayArgs {
    /// The options a result document names as its parameters.
    fn params(&self) -> std::collections::BTreeMap<String, String> {
        [
            ("speed", &self.speed),
            ("threads", &self.threads),
            ("clients", &self.clients),
            ("mmap", &self.mmap),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
    }
}

/// Writes replay `r` to `file` as a result document (`--json`).
fn save_result(
    file: &Path,
    r: &replay::ReplayResult,
    id: replay_result::Identity,
) -> Result<(), (ExitCode, String)> {
    let doc = replay_result::document(r, id);
    let text = serde_json::to_string_pretty(&doc).map_err(|e| (ExitCode::Failed, e.to_string()))?;
    crate::save::write_atomic(file, (text + "\n").as_bytes())
        .map_err(|e| (ExitCode::Failed, format!("--json {e}")))
}

fn replay_cmd(path: &Path, target: &Path, a: &ReplayArgs) -> Outcome {
    // The same options, defaults and rules as a scenario's trace::replay.
    let o = crate::api::ReplayOptions {
        speed: a.speed.parse().map_err(|e| bad(format!("--speed: {e}")))?,
        threads: a
            .threads
            .parse()
            .map_err(|e| bad(format!("--threads: {e}")))?,
        clients: a.clients.parse().map_err(|_| {
            let shown: String = a.clients.chars().take(40).collect();
            bad(format!("--clients: '{shown}' is not a number"))
        })?,
        mmap: a.mmap.parse().map_err(|e| bad(format!("--mmap: {e}")))?,
    }
    .validate()
    .map_err(|e| bad(e.to_string()))?;
    let deadline = match &a.timeout {
        None => None,
        Some(t) => {
            let d = crate::units::parse_duration(t).map_err(|e| bad(format!("--timeout: {e}")))?;
            Some(
                Instant::now()
                    .checked_add(d)
                    .ok_or_else(|| bad(format!("--timeout: {t} is too long")))?,
            )
        }
    };
    let longest = crate::model::document::limits::NAME;
    if a.label.as_ref().is_some_and(|l| l.len() > longest) {
        return Err(bad(format!("--label: at most {longest} bytes")));
    }
    let signals = Signals::install();
    let stop = signals.stop.clone();
    let prepared = prepare(path, &signals, deadline)?;
    let trace = &prepared.head;
    let room = replay::room(&prepared, o, target).map_err(|e| match e {
        replay::RoomError::Unreadable { .. } => bad(format!("--target {e}")),
        e => bad(e.to_string()),
    })?;
    let dir = RunDir::create(target, Account::new(room.bytes, room.inodes)).map_err(|e| {
        (
            ExitCode::Failed,
            format!("--target {}: {e}", target.display()),
        )
    })?;
    let clients = if o.clients > 1 {
        format!(" for each of {} clients (clients/client1 ...)", o.clients)
    } else {
        String::new()
    };
    eprintln!(
        "replaying {}: {} operation(s) on {} thread(s), after laying out {} file(s){clients}",
        path.display(),
        prepared.profile.ops,
        replay::threads_needed(trace, o),
        trace.files.iter().filter(|f| f.size.is_some()).count()
    );
    let bounds = Bounds {
        stop: &stop,
        deadline,
        max_bytes: room.bytes,
    };
    let started = chrono::Local::now().to_rfc3339();
    let result = replay::lay_out_and_replay(&prepared, &dir, o, bounds);
    let finished = chrono::Local::now().to_rfc3339();
    if a.keep {
        eprintln!("kept {}", dir.path().display());
    } else {
        let _ = dir.delete();
    }
    let halt_code = |h: &Halt| match h {
        Halt::Interrupted => signals.exit_code(),
        _ => ExitCode::Failed,
    };
    let r = match result {
        Ok(r) => r,
        Err(ReplayError::Refused(m)) => return Err(bad(m.to_string())),
        Err(ReplayError::Layout(h)) => {
            return Err((halt_code(&h), replay_report::halt_message(&h)))
        }
    };
    if let Some(j) = &a.json {
        let id = replay_result::Identity {
            trace: path,
            sha256: prepared.sha256.clone(),
            label: a.label.clone(),
            host: crate::sysinfo::host_info(),
            target: crate::sysinfo::target_info(target).ok(),
            params: a.params(),
            started,
            finished,
        };
        save_result(j, &r, id)?;
    }
    // Step names, errno names and divergences quote the trace.
    print!("{}", crate::report::replay::render(&r, Format::Table));
    match &r.halted {
        None => Ok(ExitCode::Ok),
        Some(h) => Err((halt_code(h), replay_report::halt_message(h))),
    }
}
