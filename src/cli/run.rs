//! `plumb run`: its options, turned into a [`session::Request`] that
//! `plumb-session` prepares and runs; then what the user sees — each
//! scenario's progress, the metric table, every scenario's tables, the
//! packs' own layouts, charts and assertions — and the exit code.

use super::ticker::Ticker;
use super::{ExitCode, Signals};
use crate::report::results;
use crate::report::run_table::Format;
use crate::runner::activity::Activity;
use crate::session::{self, Event, Finished, Live, Prepared, SessionError};
use crate::terminal::{clean, clean_text};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Options of `plumb run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// `.rhai` files, pack folders or built-in pack names (default: quick).
    pub scenarios: Vec<String>,
    /// Directory under which the run directory is made.
    #[arg(long, default_value = ".")]
    pub target: PathBuf,
    /// A parameter, KEY=VALUE (repeatable).
    #[arg(short = 'p', long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Run each scenario this many times (at most 100,000: a result
    /// document's limit).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::model::document::limits::REPEAT)))]
    pub repeat: u32,
    /// Label of this run in results and comparisons.
    #[arg(long)]
    pub label: Option<String>,
    /// Save the result document here (all or nothing; finished scenarios are
    /// journalled in FILE.journal until it is saved).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Continue the run whose journal (FILE.journal, with the same --json) a
    /// kill left behind: finished scenarios are kept, the rest are run.
    #[arg(long, requires = "json")]
    pub resume: bool,
    /// Output format of the end-of-run table.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Grant network access to HOST:PORT (repeatable).
    #[arg(long, value_name = "HOST:PORT")]
    pub allow_net: Vec<String>,
    /// The most bytes the run may write, every scenario argument together;
    /// each file, directory and symlink costs a block besides its data
    /// (default: the free space).
    #[arg(long, value_name = "SIZE")]
    pub max_bytes: Option<String>,
    /// The most files, directories and symlinks the run may have made at
    /// once (default: 1000000, or half the free inodes under --target when
    /// fewer).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_inodes: Option<u64>,
    /// Deadline per scenario.
    #[arg(long, default_value = "30m")]
    pub timeout: String,
    /// Keep the run directory.
    #[arg(long)]
    pub keep: bool,
    /// Write SVG charts of this run into DIR.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Memory each scenario may use: a WebAssembly guest's linear memory,
    /// a Rhai script's data.
    #[arg(
        long,
        alias = "wasm-memory",
        default_value = "256M",
        value_name = "SIZE"
    )]
    pub scenario_memory: String,
    /// The most threads the run may have at once, whatever starts them
    /// (default: 4096, or half the machine's process limits when lower).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_threads: Option<u32>,
    /// A threshold, e.g. 'randrw.read_iops >= 50k' or 'read_lat_p99 <= 2ms' (repeatable); exit 1 when one fails.
    #[arg(long = "assert", value_name = "EXPR")]
    pub asserts: Vec<String>,
    /// How far the pack is trusted.
    #[command(flatten)]
    pub trust: crate::cli::pack::PackTrust,
    /// The live /metrics endpoint.
    #[command(flatten)]
    pub metrics: super::metrics::MetricsArgs,
    /// Also print bookkeeping: each scenario journalled for --resume.
    #[arg(short, long)]
    pub verbose: bool,
}

/// `plumb run`: returns the exit code.
pub fn run_main(args: RunArgs) -> ExitCode {
    match run(args) {
        Ok(code) => code,
        Err((code, msg)) => {
            eprintln!("plumb run: error: {}", clean_text(&msg));
            code
        }
    }
}

impl RunArgs {
    /// The session these options ask for.
    fn request(&self) -> session::Request {
        session::Request {
            scenarios: self.scenarios.clone(),
            target: self.target.clone(),
            params: self.params.clone(),
            repeat: self.repeat,
            label: self.label.clone(),
            json: self.json.clone(),
            resume: self.resume,
            allow_net: self.allow_net.clone(),
            max_bytes: self.max_bytes.clone(),
            max_inodes: self.max_inodes,
            max_threads: self.max_threads,
            timeout: self.timeout.clone(),
            keep: self.keep,
            scenario_memory: self.scenario_memory.clone(),
            asserts: self.asserts.clone(),
            trust: self.trust.policy(),
        }
    }
}

/// A session's error with its exit code.
fn failure(e: SessionError) -> (ExitCode, String) {
    let code = if e.is_bad_input() {
        ExitCode::BadInput
    } else {
        ExitCode::Failed
    };
    (code, e.to_string())
}

fn run(args: RunArgs) -> Result<ExitCode, (ExitCode, String)> {
    let mut shown = Shown {
        verbose: args.verbose,
        ticker: None,
    };
    let prepared = Prepared::new(args.request(), &mut shown).map_err(failure)?;
    let metrics = args
        .metrics
        .start(
            args.label.as_deref().unwrap_or(""),
            crate::metrics::Steps::Scenarios,
        )
        .map_err(|e| (ExitCode::BadInput, e))?;
    let signals = Signals::install();
    let live = Live {
        stop: signals.stop.clone(),
        board: metrics.as_ref().map(|m| m.board().clone()),
    };
    let mut finished = prepared.run(&live, &mut shown).map_err(failure)?;
    let save_failed = match finished.save(&mut shown) {
        Ok(()) => false,
        Err(e) => {
            say_unsaved(&e);
            true
        }
    };
    let doc = &finished.document;
    let layouts = if args.format == Format::Json {
        Vec::new()
    } else {
        super::layout::for_one_run(doc, "run")
    };
    print!("{}", results::run(doc, &layouts, args.format));
    let charts_failed = args.svg.as_deref().is_some_and(|dir| !charts(dir, doc));
    let failed = finished.failed_assertions();
    for f in &failed {
        eprintln!("assertion failed: {}", clean(f));
    }
    if let Some(m) = metrics {
        m.finish(&signals.stop);
    }
    Ok(exit_code(
        &finished,
        &signals,
        !failed.is_empty() || save_failed || charts_failed,
    ))
}

/// The exit code of a session that ran: a signal's, or failed when a
/// scenario failed or `failed` (an assertion, saving, the charts).
fn exit_code(finished: &Finished, signals: &Signals, failed: bool) -> ExitCode {
    if finished.interrupted {
        signals.exit_code()
    } else if finished.scenario_failed() || failed {
        ExitCode::Failed
    } else {
        ExitCode::Ok
    }
}

/// Says why the document was not saved, and where what finished is kept.
fn say_unsaved(e: &session::saved::DocumentError) {
    eprintln!("plumb run: error: {e}");
    if let session::saved::DocumentError::Write {
        json,
        journal: Some(journal),
        ..
    } = e
    {
        eprintln!(
            "plumb run: the finished scenarios are kept in {}: `plumb run --resume --json {} ...` saves them once the problem is fixed",
            journal.display(),
            json.display()
        );
    }
}

/// Writes the run's SVG charts into `dir`; false (and says why) when it could not.
fn charts(dir: &std::path::Path, doc: &crate::model::document::RunDocument) -> bool {
    let docs = std::slice::from_ref(doc);
    let written = crate::compare::compare(docs)
        .map_err(|e| e.to_string())
        .and_then(|c| crate::report::charts::write_all(dir, docs, &c).map_err(|e| e.to_string()));
    match written {
        Ok(files) => {
            eprintln!("wrote {} chart(s) to {}", files.len(), dir.display());
            true
        }
        Err(e) => {
            eprintln!("plumb run: error: charts: {}", clean(&e));
            false
        }
    }
}

/// What the user sees of a session: its events on stderr, and a progress
/// ticker while each scenario runs.
struct Shown {
    /// Also show bookkeeping (each scenario journalled).
    verbose: bool,
    /// The ticker of the run under way.
    ticker: Option<Ticker>,
}

impl session::Observer for Shown {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::PackNeeds { pack, needs } => {
                eprintln!("pack {} needs: {}", clean(pack), clean(&needs.join("; ")));
            }
            Event::TornJournal { journal } => eprintln!(
                "plumb run: note: {}: the last line was cut short by the kill and is cut off",
                journal.display()
            ),
            Event::KeptFromJournal { place, journal } => eprintln!(
                "[{}/{}] {}/{}: finished before, kept from {journal}",
                place.index,
                place.total,
                clean(place.pack),
                clean(place.scenario),
            ),
            Event::ScenarioFailed { place, error } => eprintln!(
                "[{}/{}] {}/{}: {}",
                place.index,
                place.total,
                clean(place.pack),
                clean(place.scenario),
                clean_text(error)
            ),
            // Bookkeeping (a marker tests wait for): shown on request.
            Event::Journalled { scenario, journal } => {
                if self.verbose {
                    eprintln!("journalled {} in {}", clean(scenario), journal.display());
                }
            }
            Event::JournalFailed { journal, error } => eprintln!(
                "plumb run: warning: journal {}: {error}; results are kept only in memory until the end",
                journal.display()
            ),
            Event::KeptDir { dir } => eprintln!("kept {}", clean(&dir.display().to_string())),
            Event::Saved { json } => eprintln!("saved {}", json.display()),
            Event::ResumeLater { json, journal } => eprintln!(
                "plumb run: interrupted: `plumb run --resume --json {} ...` runs what is left ({} keeps what finished)",
                json.display(),
                journal.display()
            ),
            Event::JournalLeft { journal, error } => {
                eprintln!("plumb run: warning: {}: {error}", journal.display());
            }
        }
    }

    fn run_starts(
        &mut self,
        title: &str,
        run_elapsed: Duration,
        activity: Arc<Activity>,
        expected: Option<Duration>,
    ) {
        eprintln!("{title} (run elapsed {} s)", run_elapsed.as_secs());
        self.ticker = Some(Ticker::start(title.to_string(), activity, expected));
    }

    fn run_ends(&mut self) {
        self.ticker = None;
    }
}
