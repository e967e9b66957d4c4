//! `plumb run`, `plumb check` and `plumb list`: load packs and scenarios,
//! check what they ask for, run them in sandboxed run directories, gather
//! and save results, print them (the metric table, every scenario's tables,
//! the packs' own layouts), and clean up — also after Ctrl-C.

use super::{ExitCode, Signals};
use crate::api::report::DocumentRoom;
use crate::api::scenario_error::ScenarioErrorKind;
use crate::api::{Host, Limits, Workspace};
use crate::model::document::{Metric, Phase, RunDocument, ScenarioResult, Series, SCHEMA};
use crate::model::result::JobResult;
use crate::report::results;
use crate::report::run_table::Format;
use crate::runner::activity::{Activity, Ticker};
use crate::sandbox::{Account, RunDir};
use crate::scenario;
use crate::scenario::assertions;
use crate::scenario::pack::{self, Pack};
use crate::terminal::{clean, clean_text};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

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
    /// Run each scenario this many times.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
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

fn bad(msg: impl Into<String>) -> (ExitCode, String) {
    (ExitCode::BadInput, msg.into())
}

fn run(args: RunArgs) -> Result<ExitCode, (ExitCode, String)> {
    if let Some(n) = args.max_threads {
        crate::gate::set_max_threads(n);
    }
    let targets = if args.scenarios.is_empty() {
        vec!["quick".to_string()]
    } else {
        args.scenarios.clone()
    };
    let trusted = args.trust.keys().map_err(bad)?;
    let packs: Vec<Pack> = targets
        .iter()
        .map(|t| pack::resolve_selection(t, &trusted).map_err(|e| bad(e.to_string())))
        .collect::<Result<_, _>>()?;
    for p in &packs {
        args.trust.check(p).map_err(bad)?;
    }
    let memory = crate::units::parse_size(&args.scenario_memory)
        .map_err(|e| bad(format!("--scenario-memory: {e}")))?;
    let memory = usize::try_from(memory).unwrap_or(usize::MAX);
    // Compile everything before running anything.
    let mut compiled = Vec::new();
    for p in &packs {
        for s in &p.scenarios {
            compiled.push(scenario::compile(s).map_err(bad)?);
        }
    }
    let cli_params = parse_params(&args.params, &packs)?;
    let asserts = args
        .asserts
        .iter()
        .chain(packs.iter().flat_map(|p| p.asserts.iter()))
        .map(|a| assertions::parse(a).map_err(bad))
        .collect::<Result<Vec<_>, _>>()?;
    let timeout =
        crate::units::parse_duration(&args.timeout).map_err(|e| bad(format!("--timeout: {e}")))?;
    if timeout.is_zero() {
        return Err(bad(format!("--timeout '{}': must be > 0", args.timeout)));
    }
    let started = chrono::Local::now().to_rfc3339();
    // Before anything is made: a leftover journal may refuse the run.
    let mut saved = Saved::open(&args, started)?;
    saved.check_covers(&packs)?;
    std::fs::create_dir_all(&args.target)
        .map_err(|e| bad(format!("--target {}: {e}", args.target.display())))?;
    crate::sandbox::sweep_stale(&args.target);
    let free = crate::files::free_bytes(&args.target)
        .map_err(|e| bad(format!("--target {}: {e}", args.target.display())))?;
    let granted_bytes = match &args.max_bytes {
        Some(s) => crate::units::parse_size(s).map_err(|e| bad(format!("--max-bytes: {e}")))?,
        None => free,
    };
    let granted_inodes = args
        .max_inodes
        .unwrap_or_else(|| crate::sandbox::default_inodes(&args.target));
    let room = Room {
        granted: granted_bytes,
        by_flag: args.max_bytes.is_some(),
        free,
        target: &args.target,
    };
    for p in &packs {
        grant(p, &cli_params, &room, granted_inodes, &args.allow_net)?;
    }
    // One account for the whole run, whatever the number of scenario
    // arguments: each pack's is within it.
    let run_account = Account::new(granted_bytes, granted_inodes);

    let metrics = args
        .metrics
        .start(
            args.label.as_deref().unwrap_or(""),
            crate::metrics::Steps::Scenarios,
        )
        .map_err(bad)?;
    if let Some(m) = &metrics {
        for p in &packs {
            m.board().add_pack(&p.name, &p.sha256);
            m.board()
                .plan((p.scenarios.len() as u64).saturating_mul(u64::from(args.repeat)));
        }
    }
    let signals = Signals::install();
    let stop = signals.stop.clone();

    let root = RunDir::create(&args.target, run_account.clone()).map_err(|e| {
        (
            ExitCode::Failed,
            format!("--target {}: {e}", args.target.display()),
        )
    })?;
    let mut gathered: Vec<ScenarioResult> = Vec::new();
    let total: usize = packs.iter().map(|p| p.scenarios.len()).sum();
    let mut index = 0;
    let mut compiled = compiled.into_iter();
    let run_start = Instant::now();
    'packs: for p in &packs {
        let account = Account::within(
            &run_account,
            p.capabilities
                .max_bytes(&p.params_for(&cli_params))
                .ok()
                .flatten()
                .map_or(granted_bytes, |n| n.bytes.min(granted_bytes)),
            p.capabilities
                .max_inodes
                .map_or(granted_inodes, |n| n.min(granted_inodes)),
        );
        let params = p.params_for(&cli_params);
        let space = Arc::new(
            Workspace::new(
                RunDir::create(root.path(), account.clone())
                    .map_err(|e| (ExitCode::Failed, format!("run directory: {e}")))?,
                p.declared.then(|| p.capabilities.clone()),
                args.allow_net.clone(),
            )
            .with_data(p.data.clone()),
        );
        for s in &p.scenarios {
            index += 1;
            let Some(code) = compiled.next() else {
                break 'packs;
            };
            let mut g = ScenarioResult {
                name: s.name.clone(),
                pack: Some(p.name.clone()),
                pack_sha256: Some(p.sha256.clone()),
                pack_version: Some(p.version.clone()).filter(|v| !v.is_empty()),
                pack_origin: Some(p.origin.describe()),
                pack_signer: p.origin.signer(),
                source_sha256: Some(s.sha256()),
                params: params.clone(),
                params_read: Some(Default::default()),
                repeat: 0,
                metrics: Vec::new(),
                jobs: Vec::new(),
                tables: Vec::new(),
                notes: Vec::new(),
                series: Vec::new(),
                phases: Vec::new(),
                error: None,
                error_kind: None,
            };
            if let Some(done) = saved.finished(&g).map_err(bad)? {
                eprintln!(
                    "[{index}/{total}] {}/{}: finished before, kept from {}",
                    clean(&p.name),
                    clean(&s.name),
                    saved.journal_name()
                );
                gathered.push(done);
                continue;
            }
            // How long the last repeat took: the next one's expected length.
            let mut last_took = None;
            for rep in 0..args.repeat {
                let title = format!(
                    "[{index}/{total}] {}/{}{}",
                    clean(&p.name),
                    clean(&s.name),
                    if args.repeat > 1 {
                        format!(" run {}/{}", rep + 1, args.repeat)
                    } else {
                        String::new()
                    },
                );
                eprintln!("{title} (run elapsed {} s)", run_start.elapsed().as_secs());
                let activity = Arc::new(Activity::default());
                let host = Host::new(
                    space.clone(),
                    params.clone(),
                    Limits { timeout },
                    stop.clone(),
                )
                .with_activity(activity.clone())
                .with_metrics(metrics.as_ref().map(|m| m.board().scope(&p.name, &s.name)))
                .within(DocumentRoom::beside(&gathered, &g));
                let began = Instant::now();
                let ticker = Ticker::start(title, activity, last_took);
                let (report, outcome) = scenario::run(s, &code, host, memory);
                drop(ticker);
                if let Some(m) = &metrics {
                    m.board().step_done(crate::metrics::Steps::Scenarios, 1);
                }
                last_took = Some(began.elapsed());
                merge_samples(&mut g.metrics, report.metrics);
                // Each run of the scenario has its own clock: its jobs,
                // series and phases say which run they belong to.
                let run = Some(rep + 1);
                g.jobs.extend(
                    report
                        .jobs
                        .into_iter()
                        .map(|j| JobResult { repeat: run, ..j }),
                );
                g.phases.extend(
                    report
                        .phases
                        .into_iter()
                        .map(|p| Phase { repeat: run, ..p }),
                );
                g.tables.extend(report.tables);
                // A note an earlier run (--repeat) already wrote (a
                // loopback peer, a cached read) is shown once.
                let earlier = g.notes.len();
                for n in report.notes {
                    if !g.notes[..earlier].contains(&n) {
                        g.notes.push(n);
                    }
                }
                g.series.extend(
                    report
                        .series
                        .into_iter()
                        .map(|x| Series { repeat: run, ..x }),
                );
                if let Some(read) = &mut g.params_read {
                    read.extend(report.params_read);
                }
                g.repeat += 1;
                if let Err(e) = outcome {
                    g.error_kind = Some(e.kind.name());
                    // A stop is not the script's fault: no script place.
                    let e = match e.kind {
                        ScenarioErrorKind::Interrupted => {
                            format!("interrupted after {:.1} s", began.elapsed().as_secs_f64())
                        }
                        _ => e.to_string(),
                    };
                    eprintln!(
                        "[{index}/{total}] {}/{}: {}",
                        clean(&p.name),
                        clean(&s.name),
                        clean_text(&e)
                    );
                    g.error = Some(e);
                    // The stop flag, not the message, says whether the run was
                    // interrupted: an interrupted scenario is not journalled.
                    if stop.load(Ordering::Relaxed) {
                        gathered.push(g);
                        break 'packs;
                    }
                    break;
                }
            }
            if stop.load(Ordering::Relaxed) {
                gathered.push(g);
                break 'packs;
            }
            saved.journal(&g, args.verbose);
            gathered.push(g);
        }
        if let Ok(space) = Arc::try_unwrap(space) {
            let dir = space.into_dir();
            if args.keep {
                // Kept files stay charged to the run.
                eprintln!("kept {}", clean(&dir.path().display().to_string()));
            } else if dir.delete().is_ok() {
                account.close();
            }
        }
    }
    let finished = chrono::Local::now().to_rfc3339();
    if !args.keep {
        let _ = root.delete();
    }
    if let Some(m) = &metrics {
        m.board().finish();
    }
    let interrupted = stop.load(Ordering::Relaxed);
    let doc = document(&args, gathered, saved.started.clone(), finished);
    let save_failed = saved.save(&doc, interrupted).is_err();
    let layouts = if args.format == Format::Json {
        Vec::new()
    } else {
        super::layout::for_one_run(&doc, "run")
    };
    print!("{}", results::run(&doc, &layouts, args.format));
    let mut charts_failed = false;
    if let Some(dir) = &args.svg {
        let docs = std::slice::from_ref(&doc);
        match crate::report::charts::write_all(dir, docs, &crate::compare::compare(docs)) {
            Ok(files) => eprintln!("wrote {} chart(s) to {}", files.len(), dir.display()),
            Err(e) => {
                eprintln!("plumb run: error: charts: {}", clean(&e.to_string()));
                charts_failed = true;
            }
        }
    }
    let failed: Vec<String> = if interrupted {
        Vec::new()
    } else {
        asserts
            .iter()
            .flat_map(|a| assertions::check(&doc, a))
            .collect()
    };
    for f in &failed {
        eprintln!("assertion failed: {}", clean(f));
    }
    if let Some(m) = metrics {
        m.finish(&stop);
    }
    Ok(if interrupted {
        signals.exit_code()
    } else if doc.scenarios.iter().any(|g| g.error.is_some())
        || !failed.is_empty()
        || save_failed
        || charts_failed
    {
        ExitCode::Failed
    } else {
        ExitCode::Ok
    })
}

/// The bytes a run may write: what `--max-bytes` (or, without it, the
/// free space) grants, and the free space under the target.
struct Room<'a> {
    granted: u64,
    /// True when `granted` came from `--max-bytes`.
    by_flag: bool,
    free: u64,
    target: &'a Path,
}

/// Refuses a pack that asks for more than was granted; its byte budget
/// reckoned with the run's parameters (`cli` over the pack's defaults).
fn grant(
    p: &Pack,
    cli: &BTreeMap<String, String>,
    room: &Room,
    granted_inodes: u64,
    allow_net: &[String],
) -> Result<(), (ExitCode, String)> {
    let caps = p.capabilities.describe();
    if !caps.is_empty() {
        eprintln!("pack {} needs: {}", clean(&p.name), clean(&caps.join("; ")));
    }
    if let Some(need) = p
        .capabilities
        .max_bytes(&p.params_for(cli))
        .map_err(|e| bad(format!("{}: {e}", p.name)))?
    {
        if need.bytes > room.granted.min(room.free) {
            let target = format!("the target {} has", room.target.display());
            let (grant, more) = if room.by_flag && room.granted <= room.free {
                ("--max-bytes grants", "a larger --max-bytes")
            } else {
                (target.as_str(), "more free space under --target")
            };
            let granted = room.granted.min(room.free);
            return Err(bad(need.refusal(&p.name, grant, granted, more)));
        }
    }
    if let Some(n) = p.capabilities.max_inodes.filter(|n| *n > granted_inodes) {
        return Err(bad(format!(
            "pack {} may make {n} files and directories but only {granted_inodes} are granted (--max-inodes, or half the free inodes)",
            p.name
        )));
    }
    if let Some(missing) = p.capabilities.net.iter().find(|n| !allow_net.contains(n)) {
        return Err(bad(format!(
            "pack {} needs network access to {missing}: grant it with --allow-net {missing}",
            p.name
        )));
    }
    // SAFETY: geteuid has no preconditions.
    if p.capabilities.root && unsafe { libc::geteuid() } != 0 {
        return Err(bad(format!(
            "pack {} needs root (it drops the page cache)",
            p.name
        )));
    }
    Ok(())
}

/// `-p KEY=VALUE` into a map (also checked by `plumb fleet run` before it
/// reaches any host); keys must be declared by some pack (unless a lone script).
pub(crate) fn parse_params(
    raw: &[String],
    packs: &[Pack],
) -> Result<BTreeMap<String, String>, (ExitCode, String)> {
    let mut out = BTreeMap::new();
    for r in raw {
        let (k, v) = r
            .split_once('=')
            .ok_or_else(|| bad(format!("-p {}: expected KEY=VALUE", clean(r))))?;
        check_param(k, v).map_err(|e| bad(format!("-p {}: {e}", clean(r))))?;
        let declared = packs
            .iter()
            .any(|p| p.params.is_empty() || p.params.contains_key(k));
        if !declared {
            let known: Vec<&String> = packs.iter().flat_map(|p| p.params.keys()).collect();
            return Err(bad(format!(
                "-p {k}: no pack has this parameter (known: {})",
                clean(&format!("{known:?}"))
            )));
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

/// The longest parameter name and value accepted on the command line.
const MAX_PARAM_KEY: usize = 64;
const MAX_PARAM_VALUE: usize = 4096;

/// A `-p` key is a non-empty word of letters, digits, `_`, `-` and `.`
/// (starting with a letter or `_`); a value has no control characters.
fn check_param(k: &str, v: &str) -> Result<(), String> {
    if k.is_empty() {
        return Err("the parameter name is empty".into());
    }
    if k.len() > MAX_PARAM_KEY || v.len() > MAX_PARAM_VALUE {
        return Err(format!(
            "longer than {MAX_PARAM_KEY} bytes (name) or {MAX_PARAM_VALUE} bytes (value)"
        ));
    }
    let first_ok = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    if !first_ok
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(format!(
            "'{}' is not a parameter name (letters, digits, _ - . starting with a letter or _)",
            clean(k)
        ));
    }
    if v.chars().any(char::is_control) {
        return Err("the value has control characters".into());
    }
    Ok(())
}

/// Adds a run's metrics as samples of the same-named metrics.
fn merge_samples(into: &mut Vec<Metric>, new: Vec<Metric>) {
    for m in new {
        match into.iter_mut().find(|x| x.name == m.name) {
            Some(x) => {
                x.samples.extend(m.samples);
                x.marks.extend(m.marks);
            }
            None => into.push(m),
        }
    }
    for m in into.iter_mut() {
        if m.samples.is_empty() {
            continue;
        }
        let mut s = m.samples.clone();
        s.sort_by(f64::total_cmp);
        m.value = s[s.len() / 2];
        if s.len() % 2 == 0 {
            m.value = (s[s.len() / 2 - 1] + s[s.len() / 2]) / 2.0;
        }
    }
}

fn document(
    args: &RunArgs,
    scenarios: Vec<ScenarioResult>,
    started: String,
    finished: String,
) -> RunDocument {
    RunDocument {
        schema: SCHEMA.into(),
        plumb_version: env!("CARGO_PKG_VERSION").into(),
        label: args.label.clone(),
        started,
        finished,
        host: crate::sysinfo::host_info(),
        target: crate::sysinfo::target_info(&args.target).ok(),
        scenarios,
    }
}

/// Refuses, before anything runs, a `--json` path that can never be saved:
/// no file name, a directory, or a parent directory that does not exist.
fn check_json_path(json: &Path) -> Result<(), (ExitCode, String)> {
    let shown = json.display();
    if json.file_name().is_none() || json.is_dir() {
        return Err(bad(format!("--json {shown}: not a file name")));
    }
    let parent = match json.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(bad(format!(
            "--json {shown}: the directory {} does not exist",
            parent.display()
        )));
    }
    Ok(())
}

/// What a journalled result of scenario `s` of pack `p` must carry to be
/// kept by `--resume`, named for messages, in the order of the fields of
/// [`ScenarioResult`] it is compared with: source, pack hash, version,
/// origin, signer.
fn journal_identity(p: &Pack, s: &pack::ScenarioSource) -> [(&'static str, Option<String>); 5] {
    [
        ("scenario source", Some(s.sha256())),
        ("pack hash", Some(p.sha256.clone())),
        (
            "pack version",
            Some(p.version.clone()).filter(|v| !v.is_empty()),
        ),
        ("pack origin", Some(p.origin.describe())),
        ("signer", p.origin.signer()),
    ]
}

/// Where the results go: the `--json` file and its journal of finished
/// scenarios (read back with `--resume`).
struct Saved {
    /// The `--json` file.
    json: Option<PathBuf>,
    /// Start time of the run (the first attempt's, when resumed).
    started: String,
    /// Scenarios finished by an earlier attempt (`--resume`).
    earlier: Vec<ScenarioResult>,
    /// The journal path (with `--json`), and its writer once opened.
    journal: Option<(PathBuf, Option<crate::report::journal::Writer>)>,
    /// Writing the journal failed once: no more attempts.
    journal_failed: bool,
    label: Option<String>,
}

impl Saved {
    /// Prepares saving for `args`: with `--resume`, reads the journal;
    /// without it, refuses to run over a journal a killed run left.
    fn open(args: &RunArgs, started: String) -> Result<Saved, (ExitCode, String)> {
        use crate::report::journal;
        let Some(json) = &args.json else {
            return Ok(Saved {
                json: None,
                started,
                earlier: Vec::new(),
                journal: None,
                journal_failed: false,
                label: args.label.clone(),
            });
        };
        check_json_path(json)?;
        // A device or pipe (`/dev/stdout`) gets the document, but no journal beside it.
        if matches!(std::fs::metadata(json), Ok(m) if !m.is_file()) {
            if args.resume {
                return Err(bad(format!(
                    "--resume: {} is not a regular file, so no run journalled beside it",
                    json.display()
                )));
            }
            return Ok(Saved {
                json: Some(json.clone()),
                started,
                earlier: Vec::new(),
                journal: None,
                journal_failed: false,
                label: args.label.clone(),
            });
        }
        let path = journal::path_for(json);
        let exists = path.symlink_metadata().is_ok();
        if !args.resume {
            if exists {
                return Err(bad(format!(
                    "{} holds the finished scenarios of a run that did not end: add --resume to continue it, or remove the file to start afresh",
                    path.display()
                )));
            }
            return Ok(Saved {
                json: Some(json.clone()),
                started,
                earlier: Vec::new(),
                journal: Some((path, None)),
                journal_failed: false,
                label: args.label.clone(),
            });
        }
        if !exists {
            return Err(bad(format!(
                "--resume: {} does not exist: nothing to resume (run without --resume)",
                path.display()
            )));
        }
        let (j, writer) = journal::resume(&path).map_err(|e| match e {
            journal::JournalError::Refused(e) => bad(format!("--resume: {}", clean(&e))),
            journal::JournalError::Repair(e) => (ExitCode::Failed, format!("--resume: {e}")),
        })?;
        if j.header.label != args.label {
            return Err(bad(format!(
                "--resume: {} belongs to a run labelled {:?}, not {:?}",
                path.display(),
                j.header.label.as_deref().map(clean),
                args.label.as_deref().map(clean)
            )));
        }
        if j.torn_tail {
            eprintln!(
                "plumb run: note: {}: the last line was cut short by the kill and is cut off",
                path.display()
            );
        }
        Ok(Saved {
            json: Some(json.clone()),
            started: j.header.started,
            earlier: j.entries,
            journal: Some((path, Some(writer))),
            journal_failed: false,
            label: args.label.clone(),
        })
    }

    /// Refuses, before anything runs, a journal holding scenarios this run
    /// does not have (they would be dropped from the document and lost with
    /// the journal), or has from another pack or source: an entry's
    /// [`journal_identity`] must be the run's, or the document would claim
    /// what was not run (a journal is as easy to edit as any file).
    fn check_covers(&self, packs: &[Pack]) -> Result<(), (ExitCode, String)> {
        for e in &self.earlier {
            let place = format!(
                "{}/{}",
                clean(e.pack.as_deref().unwrap_or("")),
                clean(&e.name)
            );
            let planned: Vec<_> = packs
                .iter()
                .filter(|p| e.pack.as_deref() == Some(p.name.as_str()))
                .flat_map(|p| {
                    p.scenarios
                        .iter()
                        .filter(|s| s.name == e.name)
                        .map(move |s| (p, s))
                })
                .collect();
            if planned.is_empty() {
                return Err(bad(format!(
                    "--resume: {} has {place}, which this run does not include: give the same scenarios as the interrupted run",
                    self.journal_name(),
                )));
            }
            let theirs = [
                &e.source_sha256,
                &e.pack_sha256,
                &e.pack_version,
                &e.pack_origin,
                &e.pack_signer,
            ];
            let mismatch = |&(p, s): &(&Pack, &pack::ScenarioSource)| {
                journal_identity(p, s)
                    .into_iter()
                    .zip(theirs)
                    .find(|((_, ours), theirs)| ours != *theirs)
            };
            // Kept when it is the same as one planned scenario of its name;
            // else the first difference from the first one is named.
            let Some(differences) = planned.iter().map(mismatch).collect::<Option<Vec<_>>>() else {
                continue;
            };
            let ((what, ours), theirs) = &differences[0];
            let shown = |v: &Option<String>| {
                v.as_deref()
                    .map_or("none".into(), |v| clean(v).into_owned())
            };
            return Err(bad(format!(
                "--resume: {} has {place} run with another {what} ({}, not {}): not mixing results (remove the journal to start afresh)",
                self.journal_name(),
                shown(theirs),
                shown(ours),
            )));
        }
        Ok(())
    }

    /// The journal's name for messages.
    fn journal_name(&self) -> String {
        self.journal
            .as_ref()
            .map(|(p, _)| p.display().to_string())
            .unwrap_or_default()
    }

    /// The earlier result of the scenario `planned` describes (same pack,
    /// name, source and parameters; [`Saved::check_covers`] checked the
    /// rest); an error when the journal has the scenario with other
    /// parameters (results not to be mixed).
    fn finished(&self, planned: &ScenarioResult) -> Result<Option<ScenarioResult>, String> {
        let same = |e: &&ScenarioResult| {
            e.pack == planned.pack
                && e.name == planned.name
                && e.source_sha256 == planned.source_sha256
                && e.pack_sha256 == planned.pack_sha256
        };
        let Some(e) = self.earlier.iter().find(same) else {
            return Ok(None);
        };
        if e.params != planned.params {
            return Err(format!(
                "--resume: {} has {}/{} run with another set of parameters: not mixing results (remove the journal to start afresh)",
                self.journal_name(),
                clean(planned.pack.as_deref().unwrap_or("")),
                clean(&planned.name),
            ));
        }
        Ok(Some(e.clone()))
    }

    /// Appends a finished scenario to the journal; a failure is reported
    /// once and journalling stops (the run goes on, results stay in memory).
    fn journal(&mut self, g: &ScenarioResult, verbose: bool) {
        use crate::report::journal;
        let Some((path, writer)) = &mut self.journal else {
            return;
        };
        if self.journal_failed {
            return;
        }
        let outcome = match writer {
            Some(w) => w.append(g),
            None => journal::Writer::create(
                path,
                &journal::Header {
                    journal: journal::JOURNAL_SCHEMA.into(),
                    started: self.started.clone(),
                    label: self.label.clone(),
                },
            )
            .and_then(|mut w| {
                w.append(g)?;
                *writer = Some(w);
                Ok(())
            }),
        };
        match outcome {
            // Bookkeeping (a marker tests wait for): shown on request.
            Ok(()) => {
                if verbose {
                    eprintln!("journalled {} in {}", clean(&g.name), path.display());
                }
            }
            Err(e) => {
                eprintln!(
                    "plumb run: warning: journal {}: {e}; results are kept only in memory until the end",
                    path.display()
                );
                // No more appends; the file (if any) is still removed once saved.
                *writer = None;
                self.journal_failed = true;
            }
        }
    }

    /// Saves the document (all or nothing) and then removes the journal —
    /// unless the run was `interrupted`, when the journal stays for
    /// `--resume`. When saving fails, says so, keeps the journal and
    /// returns the error.
    fn save(&mut self, doc: &RunDocument, interrupted: bool) -> Result<(), ()> {
        let Some(path) = &self.json else {
            return Ok(());
        };
        let mut text = serde_json::to_vec_pretty(doc).map_err(|e| {
            eprintln!("plumb run: error: --json {}: {e}", path.display());
        })?;
        text.push(b'\n');
        if let Err(e) = crate::save::write_atomic(path, &text) {
            eprintln!("plumb run: error: --json {e}");
            if let Some((journal, Some(_))) = &self.journal {
                eprintln!(
                    "plumb run: the finished scenarios are kept in {}: `plumb run --resume --json {} ...` saves them once the problem is fixed",
                    journal.display(),
                    path.display()
                );
            }
            return Err(());
        }
        eprintln!("saved {}", path.display());
        if interrupted {
            if let Some((journal, Some(_))) = &self.journal {
                eprintln!(
                    "plumb run: interrupted: `plumb run --resume --json {} ...` runs what is left ({} keeps what finished)",
                    path.display(),
                    journal.display()
                );
            }
            return Ok(());
        }
        if let Some((journal, writer)) = self.journal.take() {
            drop(writer);
            match std::fs::remove_file(&journal) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => eprintln!("plumb run: warning: {}: {e}", journal.display()),
            }
        }
        Ok(())
    }
}
