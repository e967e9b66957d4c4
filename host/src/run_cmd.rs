//! `plumb run`, `plumb check` and `plumb list`: load packs and scenarios,
//! check what they ask for, run them in sandboxed run directories, gather
//! and save results, print the table, and clean up — also after Ctrl-C.

use crate::api::{Host, Limits, Workspace};
use crate::assertions;
use crate::document::{Metric, RunDocument, ScenarioResult, SCHEMA};
use crate::pack::{self, Pack, PackError};
use crate::report::run_table::{self, Format};
use crate::sandbox::RunDir;
use crate::scenario;
use crate::wasm::WasmLimits;
use crate::ExitCode;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// Save the result document here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Output format of the end-of-run table.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Grant network access to HOST:PORT (repeatable).
    #[arg(long, value_name = "HOST:PORT")]
    pub allow_net: Vec<String>,
    /// The most bytes the run may write (default: the free space).
    #[arg(long, value_name = "SIZE")]
    pub max_bytes: Option<String>,
    /// Deadline per scenario.
    #[arg(long, default_value = "30m")]
    pub timeout: String,
    /// Keep the run directory.
    #[arg(long)]
    pub keep: bool,
    /// Write SVG charts of this run into DIR.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Linear memory each WebAssembly scenario may use.
    #[arg(long, default_value = "256M", value_name = "SIZE")]
    pub wasm_memory: String,
    /// A threshold, e.g. 'randrw.read_iops >= 50k' or 'read_lat_p99 <= 2ms' (repeatable); exit 1 when one fails.
    #[arg(long = "assert", value_name = "EXPR")]
    pub asserts: Vec<String>,
}

/// Resolves a scenario argument: a `.rhai` file, a pack folder, or a built-in pack name.
pub fn load(arg: &str) -> Result<Pack, PackError> {
    let path = Path::new(arg);
    if path.is_dir() {
        return pack::load_dir(path);
    }
    if path.is_file() {
        return pack::single_script(path);
    }
    pack::builtin(arg).unwrap_or_else(|| {
        Err(PackError {
            file: arg.to_string(),
            message: format!(
                "not a scenario file, a pack folder or a built-in pack (built-in: {})",
                pack::builtin_names().join(", ")
            ),
        })
    })
}

/// `plumb check SCENARIO`: compile and validate without running.
pub fn check_main(arg: &str) -> ExitCode {
    let pack = match load(arg) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("plumb check: error: {e}");
            return ExitCode::BadInput;
        }
    };
    let mut code = ExitCode::Ok;
    for s in &pack.scenarios {
        let t = Instant::now();
        match scenario::compile(s) {
            Ok(scenario::Compiled::Wasm(c)) => println!(
                "{}: ok ({} in {:.3} s)",
                s.file,
                if c.cached {
                    "loaded from the cache"
                } else {
                    "compiled"
                },
                t.elapsed().as_secs_f64()
            ),
            Ok(_) => println!("{}: ok", s.file),
            Err(e) => {
                eprintln!("{e}");
                code = ExitCode::BadInput;
            }
        }
    }
    code
}

/// `plumb list [PACK]`: packs, their scenarios and parameters.
pub fn list_main(arg: Option<&str>) -> ExitCode {
    let names: Vec<String> = match arg {
        Some(a) => vec![a.to_string()],
        None => pack::builtin_names()
            .into_iter()
            .map(String::from)
            .collect(),
    };
    for n in names {
        match load(&n) {
            Ok(p) => {
                println!("{} {}: {}", p.name, p.version, p.description);
                for s in &p.scenarios {
                    println!("  scenario {}", s.name);
                }
                for (k, d) in &p.params {
                    println!(
                        "  -p {k}={:<10} {} ({})",
                        d.default_text(),
                        d.description,
                        d.unit
                    );
                }
                for c in p.capabilities.describe() {
                    println!("  needs: {c}");
                }
            }
            Err(e) => {
                eprintln!("plumb list: error: {e}");
                return ExitCode::BadInput;
            }
        }
    }
    ExitCode::Ok
}

/// One scenario's gathered runs.
struct Gathered {
    pack: String,
    pack_sha: String,
    name: String,
    sha: String,
    params: BTreeMap<String, String>,
    runs: u32,
    metrics: Vec<Metric>,
    jobs: Vec<crate::result::JobResult>,
    tables: Vec<crate::document::Table>,
    notes: Vec<String>,
    error: Option<String>,
}

/// `plumb run`: returns the exit code.
pub fn run_main(args: RunArgs) -> ExitCode {
    match run(args) {
        Ok(code) => code,
        Err((code, msg)) => {
            eprintln!("plumb run: error: {msg}");
            code
        }
    }
}

fn bad(msg: impl Into<String>) -> (ExitCode, String) {
    (ExitCode::BadInput, msg.into())
}

fn run(args: RunArgs) -> Result<ExitCode, (ExitCode, String)> {
    let targets = if args.scenarios.is_empty() {
        vec!["quick".to_string()]
    } else {
        args.scenarios.clone()
    };
    let packs: Vec<Pack> = targets
        .iter()
        .map(|t| load(t).map_err(|e| bad(e.to_string())))
        .collect::<Result<_, _>>()?;
    let wasm_memory = crate::units::parse_size(&args.wasm_memory)
        .map_err(|e| bad(format!("--wasm-memory: {e}")))?;
    let wasm_limits = WasmLimits {
        memory: usize::try_from(wasm_memory).unwrap_or(usize::MAX),
    };
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
    std::fs::create_dir_all(&args.target)
        .map_err(|e| bad(format!("--target {}: {e}", args.target.display())))?;
    crate::sandbox::sweep_stale(&args.target);
    let free = crate::files::free_bytes(&args.target)
        .map_err(|e| bad(format!("--target {}: {e}", args.target.display())))?;
    let granted_bytes = match &args.max_bytes {
        Some(s) => crate::units::parse_size(s).map_err(|e| bad(format!("--max-bytes: {e}")))?,
        None => free,
    };
    for p in &packs {
        grant(p, granted_bytes, free, &args.allow_net)?;
    }

    let stop = Arc::new(AtomicBool::new(false));
    let term = Arc::new(AtomicBool::new(false));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, stop.clone());
    let _ = signal_hook::flag::register(signal_hook::consts::SIGTERM, stop.clone());
    let _ = signal_hook::flag::register(signal_hook::consts::SIGTERM, term.clone());

    let root = RunDir::create(&args.target).map_err(|e| {
        (
            ExitCode::Failed,
            format!("--target {}: {e}", args.target.display()),
        )
    })?;
    let started = chrono::Local::now();
    let mut gathered: Vec<Gathered> = Vec::new();
    let total: usize = packs.iter().map(|p| p.scenarios.len()).sum();
    let mut index = 0;
    let mut compiled = compiled.into_iter();
    let run_start = Instant::now();
    'packs: for p in &packs {
        let budget = p
            .capabilities
            .max_bytes()
            .ok()
            .flatten()
            .map_or(granted_bytes, |b| b.min(granted_bytes));
        let params: BTreeMap<String, String> = p
            .params
            .iter()
            .map(|(k, d)| {
                (
                    k.clone(),
                    cli_params
                        .get(k)
                        .cloned()
                        .unwrap_or_else(|| d.default_text()),
                )
            })
            .chain(
                cli_params
                    .iter()
                    .filter(|(k, _)| p.params.is_empty() || p.params.contains_key(*k))
                    .map(|(k, v)| (k.clone(), v.clone())),
            )
            .collect();
        let space = Arc::new(
            Workspace::new(
                RunDir::create(root.path())
                    .map_err(|e| (ExitCode::Failed, format!("run directory: {e}")))?,
                budget,
                p.declared.then(|| p.capabilities.clone()),
                args.allow_net.clone(),
            )
            .with_data(p.data.clone()),
        );
        for s in &p.scenarios {
            index += 1;
            let code = compiled.next().expect("one compiled scenario per scenario");
            let mut g = Gathered {
                pack: p.name.clone(),
                pack_sha: p.sha256.clone(),
                name: s.name.clone(),
                sha: s.sha256(),
                params: params.clone(),
                runs: 0,
                metrics: Vec::new(),
                jobs: Vec::new(),
                tables: Vec::new(),
                notes: Vec::new(),
                error: None,
            };
            for rep in 0..args.repeat {
                eprintln!(
                    "[{index}/{total}] {}/{}{} (elapsed {}s)",
                    p.name,
                    s.name,
                    if args.repeat > 1 {
                        format!(" run {}/{}", rep + 1, args.repeat)
                    } else {
                        String::new()
                    },
                    run_start.elapsed().as_secs()
                );
                let host = Host::new(
                    space.clone(),
                    params.clone(),
                    Limits { timeout },
                    stop.clone(),
                );
                let (report, outcome) = scenario::run(s, &code, host, wasm_limits);
                merge_samples(&mut g.metrics, report.metrics);
                g.jobs.extend(report.jobs);
                g.tables.extend(report.tables);
                g.notes.extend(report.notes);
                g.runs += 1;
                if let Err(e) = outcome {
                    eprintln!("{e}");
                    let interrupted = stop.load(Ordering::Relaxed) || e.contains("interrupted");
                    g.error = Some(e);
                    if interrupted {
                        gathered.push(g);
                        break 'packs;
                    }
                    break;
                }
            }
            gathered.push(g);
        }
        if let Ok(space) = Arc::try_unwrap(space) {
            let dir = space.into_dir();
            if args.keep {
                eprintln!("kept {}", dir.path().display());
            } else {
                let _ = dir.delete();
            }
        }
    }
    let finished = chrono::Local::now();
    if !args.keep {
        let _ = root.delete();
    }
    let interrupted = stop.load(Ordering::Relaxed);
    let doc = document(&args, &gathered, started, finished);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&doc).expect("serialisable") + "\n";
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("plumb run: error: --json {}: {e}", path.display());
        }
    }
    for g in &gathered {
        for n in &g.notes {
            eprintln!("note ({}): {n}", g.name);
        }
    }
    print!("{}", run_table::render(&doc, args.format));
    if let Some(dir) = &args.svg {
        let title = crate::compare::run_title(&doc);
        match crate::report::charts::write_all(dir, std::slice::from_ref(&doc), &[title]) {
            Ok(files) => eprintln!("wrote {} chart(s) to {}", files.len(), dir.display()),
            Err(e) => eprintln!("plumb run: error: charts: {e}"),
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
        eprintln!("assertion failed: {f}");
    }
    Ok(if interrupted {
        if term.load(Ordering::Relaxed) {
            ExitCode::Terminated
        } else {
            ExitCode::Interrupted
        }
    } else if gathered.iter().any(|g| g.error.is_some()) || !failed.is_empty() {
        ExitCode::Failed
    } else {
        ExitCode::Ok
    })
}

/// Refuses a pack that asks for more than was granted.
fn grant(
    p: &Pack,
    granted_bytes: u64,
    free: u64,
    allow_net: &[String],
) -> Result<(), (ExitCode, String)> {
    let caps = p.capabilities.describe();
    if !caps.is_empty() {
        eprintln!("pack {} needs: {}", p.name, caps.join("; "));
    }
    if let Some(b) = p
        .capabilities
        .max_bytes()
        .map_err(|e| bad(format!("{}: capabilities.max_bytes: {e}", p.name)))?
    {
        if b > granted_bytes.min(free) {
            return Err(bad(format!(
                "pack {} may write {} but only {} are granted (--max-bytes) or free",
                p.name,
                crate::units::format_bytes_binary(b as f64),
                crate::units::format_bytes_binary(granted_bytes.min(free) as f64)
            )));
        }
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

/// `-p KEY=VALUE` into a map; keys must be declared by some pack (unless a lone script).
fn parse_params(
    raw: &[String],
    packs: &[Pack],
) -> Result<BTreeMap<String, String>, (ExitCode, String)> {
    let mut out = BTreeMap::new();
    for r in raw {
        let (k, v) = r
            .split_once('=')
            .ok_or_else(|| bad(format!("-p {r}: expected KEY=VALUE")))?;
        let declared = packs
            .iter()
            .any(|p| p.params.is_empty() || p.params.contains_key(k));
        if !declared {
            let known: Vec<&String> = packs.iter().flat_map(|p| p.params.keys()).collect();
            return Err(bad(format!(
                "-p {k}: no pack has this parameter (known: {known:?})"
            )));
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

/// Adds a run's metrics as samples of the same-named metrics.
fn merge_samples(into: &mut Vec<Metric>, new: Vec<Metric>) {
    for m in new {
        match into.iter_mut().find(|x| x.name == m.name) {
            Some(x) => x.samples.extend(m.samples),
            None => into.push(m),
        }
    }
    for m in into.iter_mut() {
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
    gathered: &[Gathered],
    started: chrono::DateTime<chrono::Local>,
    finished: chrono::DateTime<chrono::Local>,
) -> RunDocument {
    RunDocument {
        schema: SCHEMA.into(),
        plumb_version: env!("CARGO_PKG_VERSION").into(),
        label: args.label.clone(),
        started: started.to_rfc3339(),
        finished: finished.to_rfc3339(),
        host: crate::sysinfo::host_info(),
        target: crate::sysinfo::target_info(&args.target).ok(),
        scenarios: gathered
            .iter()
            .map(|g| ScenarioResult {
                name: g.name.clone(),
                pack: Some(g.pack.clone()),
                pack_sha256: Some(g.pack_sha.clone()),
                source_sha256: Some(g.sha.clone()),
                params: g.params.clone(),
                repeat: g.runs,
                metrics: g.metrics.clone(),
                jobs: g.jobs.clone(),
                tables: g.tables.clone(),
                notes: g.notes.clone(),
                error: g.error.clone(),
            })
            .collect(),
    }
}
