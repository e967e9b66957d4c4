//! `plumb fleet`: one pack on many machines over the system's OpenSSH
//! (`run`), the network between pairs of them (`net`), the time until
//! hosts answer on a port (`wait`) — and the hidden `agent` that runs on
//! the hosts' side of each session.

mod progress;

use super::{ExitCode, Signals};
use crate::fleet::plan::net::{NetRequest, NetRun};
use crate::fleet::plan::run::{RunPlan, RunRequest};
use crate::fleet::plan::{self, PlanError};
use crate::fleet::summary::{FleetRecord, HostReport, FLEET_SCHEMA};
use crate::fleet::wait;
use crate::report::many::ManyOptions;
use crate::report::run_table::Format;
use crate::terminal::clean;
use clap::{Args, Subcommand};
use progress::Progress;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `plumb fleet` subcommands.
#[derive(Subcommand, Debug)]
pub enum FleetCommand {
    /// Run a pack on every host at once over ssh, fetch the results, compare them.
    Run(Box<RunArgs>),
    /// Network between pairs of hosts: plumb serve on B, TCP streams, RTT and connect time from A.
    Net(NetArgs),
    /// Seconds until each host first accepts a TCP connection on a port.
    Wait(WaitArgs),
    /// The hosts' side of a fleet session (started by plumb over ssh).
    #[command(hide = true, subcommand)]
    Agent(AgentCommand),
}

/// Which hosts, and how ssh reaches them.
#[derive(Args, Debug, Clone)]
pub struct Connection {
    /// An inventory: plumb's TOML (`[[host]]` tables), PerfKitBenchmarker's
    /// static-machine JSON (a `.json` file), or an Ansible inventory (a
    /// `.ini`, `.yml` or `.yaml` file, read with `ansible-inventory`; its
    /// groups are labels for --only).
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
    /// A host as `[user@]host[:port]` (repeatable); an alias of your ssh
    /// config works.
    #[arg(short = 'H', long = "host", value_name = "[USER@]HOST[:PORT]")]
    pub host: Vec<String>,
    /// Only the inventory's hosts with this label (an Ansible group).
    #[arg(long, value_name = "LABEL")]
    pub only: Option<String>,
    /// An ssh config file instead of ~/.ssh/config (ssh -F).
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// An ssh option (ssh -o), e.g. ProxyJump=bastion (repeatable).
    #[arg(long, value_name = "OPTION")]
    pub ssh_option: Vec<String>,
    /// How long a connection may take to open.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub connect_timeout: String,
}

/// Options of `plumb fleet run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// A pack (built-in name, folder, bundle, git+URL#REV), one scenario of
    /// one (PACK/SCENARIO, git+URL#REV#SCENARIO) or a .rhai/.wasm scenario.
    pub pack: String,
    /// Which hosts, and how ssh reaches them.
    #[command(flatten)]
    pub connection: Connection,
    /// A parameter, KEY=VALUE (repeatable).
    #[arg(short = 'p', long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Where results/HOST.json and fleet.json go.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub out: PathBuf,
    /// One host after another (for hosts that share storage).
    #[arg(long)]
    pub serial: bool,
    /// The most hosts copying plumb or running the pack at once (the
    /// checks run on all at once); the others wait their turn.
    #[arg(long, value_name = "N", default_value_t = crate::fleet::run::DEFAULT_PARALLEL,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub parallel: u32,
    /// The host the others are compared against (default: the first).
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// The many-host layout of the comparison.
    #[command(flatten)]
    pub many: super::compare::ManyArgs,
    /// Output format of the comparison.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Deadline per scenario, on each host.
    #[arg(long, default_value = "30m")]
    pub timeout: String,
    /// Run each scenario this many times (at most 100,000: a result
    /// document's limit).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::model::document::limits::REPEAT)))]
    pub repeat: u32,
    /// The most bytes the run may write on each host.
    #[arg(long, value_name = "SIZE")]
    pub max_bytes: Option<String>,
    /// The most files, directories and symlinks the run may have made at
    /// once on each host (default: each host's own, as `plumb run`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_inodes: Option<u64>,
    /// Grant network access to HOST:PORT on every host (repeatable).
    #[arg(long, value_name = "HOST:PORT")]
    pub allow_net: Vec<String>,
    /// How far the pack is trusted.
    #[command(flatten)]
    pub trust: crate::cli::pack::PackTrust,
    /// The /metrics endpoint each host's run serves (ADDR:PORT on that host).
    #[command(flatten)]
    pub metrics: super::metrics::MetricsArgs,
}

/// Options of `plumb fleet net`.
#[derive(Args, Debug, Clone)]
pub struct NetArgs {
    /// A pair A:B of host names: plumb serve on B, the tests from A (repeatable).
    #[arg(long, required = true, value_name = "A:B")]
    pub pair: Vec<String>,
    /// Which hosts, and how ssh reaches them.
    #[command(flatten)]
    pub connection: Connection,
    /// The port plumb serve listens on.
    #[arg(long, default_value_t = 5201)]
    pub port: u16,
    /// How long each throughput test runs.
    #[arg(long, default_value = "5s")]
    pub seconds: String,
    /// Stream counts, comma-separated (iperf3 -P).
    #[arg(long, default_value = "1,4,10")]
    pub streams: String,
    /// Where results/A-B.json and fleet.json go.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub out: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Options of `plumb fleet wait`.
#[derive(Args, Debug, Clone)]
pub struct WaitArgs {
    /// Hosts as HOST or HOST:PORT ([v6]:PORT).
    #[arg(required = true)]
    pub hosts: Vec<String>,
    /// The port, where a host gives none.
    #[arg(long, default_value_t = 22)]
    pub port: u16,
    /// How long to wait for each.
    #[arg(long, default_value = "5m")]
    pub timeout: String,
    /// Time between attempts.
    #[arg(long, default_value = "250ms")]
    pub interval: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// The agent's modes.
#[derive(Subcommand, Debug)]
pub enum AgentCommand {
    /// Receive a payload on stdin, run it under TARGET, send the result.
    Run {
        /// The target directory.
        #[arg(long)]
        target: PathBuf,
        /// Run only this scenario of the bundle (`plumb run BUNDLE/SCENARIO`).
        #[arg(long)]
        scenario: Option<String>,
        /// Arguments for plumb run.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Run plumb serve until stdin ends.
    Serve {
        /// The address to listen on.
        #[arg(long)]
        listen: String,
        /// The longest it may run.
        #[arg(long, default_value = "1h")]
        max_duration: String,
    },
    /// Remove run directories whose plumb is gone.
    Sweep {
        /// The target directory.
        #[arg(long)]
        target: PathBuf,
        /// Wait for this agent to end first.
        #[arg(long)]
        pid: Option<u32>,
    },
}

type Outcome = Result<ExitCode, (ExitCode, String)>;

/// A plan's error with its exit code.
fn refused(e: PlanError) -> (ExitCode, String) {
    let code = if e.is_bad_input() {
        ExitCode::BadInput
    } else {
        ExitCode::Failed
    };
    (code, e.to_string())
}

/// Runs a `plumb fleet` subcommand.
pub fn main(cmd: FleetCommand) -> ExitCode {
    let r = match cmd {
        FleetCommand::Run(a) => run(*a),
        FleetCommand::Net(a) => net(a),
        FleetCommand::Wait(a) => wait(a),
        FleetCommand::Agent(a) => agent(a),
    };
    match r {
        Ok(code) => code,
        Err((code, message)) => {
            eprintln!(
                "plumb fleet: error: {}",
                crate::terminal::clean_text(&message)
            );
            code
        }
    }
}

impl Connection {
    /// The library's connection settings.
    fn request(&self) -> plan::Connection {
        plan::Connection {
            hosts: self.hosts.clone(),
            host: self.host.clone(),
            only: self.only.clone(),
            ssh_config: self.ssh_config.clone(),
            ssh_option: self.ssh_option.clone(),
            connect_timeout: self.connect_timeout.clone(),
        }
    }
}

impl RunArgs {
    /// The fleet run these options ask for.
    fn request(&self) -> RunRequest {
        RunRequest {
            pack: self.pack.clone(),
            connection: self.connection.request(),
            params: self.params.clone(),
            out: self.out.clone(),
            serial: self.serial,
            parallel: self.parallel as usize,
            baseline: self.baseline.clone(),
            group_by: self.many.group_by.clone(),
            timeout: self.timeout.clone(),
            repeat: self.repeat,
            max_bytes: self.max_bytes.clone(),
            max_inodes: self.max_inodes,
            allow_net: self.allow_net.clone(),
            trust: self.trust.policy(),
            forwarded: self.metrics.forwarded(),
        }
    }
}

fn run(a: RunArgs) -> Outcome {
    let RunPlan { plan, pack } = a.request().plan().map_err(refused)?;
    let caps = pack.capabilities.describe();
    if !caps.is_empty() {
        eprintln!(
            "pack {} needs: {}",
            clean(&pack.name),
            clean(&caps.join("; "))
        );
    }
    let signals = Signals::install();
    let started = chrono::Local::now().to_rfc3339();
    let names: Vec<String> = plan.hosts.iter().map(|h| h.name.clone()).collect();
    let progress = Progress::new(&names);
    let reports = crate::fleet::run::execute(&plan, &progress, &signals.stop);
    progress.finish();
    let record = FleetRecord {
        schema: FLEET_SCHEMA.into(),
        pack: a.pack.clone(),
        pack_sha256: pack.sha256.clone(),
        started,
        finished: chrono::Local::now().to_rfc3339(),
        hosts: reports.clone(),
    };
    let saved = save_record(&a.out, &record);
    summarise(&reports);
    compare(&reports, a.baseline.as_deref(), a.format, a.many.options());
    Ok(exit_code(&reports, &signals, saved))
}

fn net(a: NetArgs) -> Outcome {
    let request = NetRequest {
        pair: a.pair.clone(),
        connection: a.connection.request(),
        port: a.port,
        seconds: a.seconds.clone(),
        streams: a.streams.clone(),
        out: a.out.clone(),
    };
    let NetRun { plan, pack_sha256 } = request.plan().map_err(refused)?;
    let signals = Signals::install();
    let started = chrono::Local::now().to_rfc3339();
    let names: Vec<String> = plan
        .pairs
        .iter()
        .map(|(x, y)| format!("{}-{}", x.name, y.name))
        .collect();
    let progress = Progress::new(&names);
    let reports = crate::fleet::net::execute(&plan, &progress, &signals.stop);
    progress.finish();
    let record = FleetRecord {
        schema: FLEET_SCHEMA.into(),
        pack: "fleet-net".into(),
        pack_sha256,
        started,
        finished: chrono::Local::now().to_rfc3339(),
        hosts: reports.clone(),
    };
    let saved = save_record(&a.out, &record);
    summarise(&reports);
    let docs: Vec<_> = reports
        .iter()
        .filter_map(|r| r.result.as_deref())
        .filter_map(|p| crate::compare::load::load(p).ok())
        .collect();
    for d in &docs {
        println!("{}", clean(d.label.as_deref().unwrap_or("")));
        print!("{}", crate::report::results::run(d, &[], a.format));
    }
    Ok(exit_code(&reports, &signals, saved))
}

fn wait(a: WaitArgs) -> Outcome {
    let bad = |e: String| (ExitCode::BadInput, e);
    let timeout =
        crate::units::parse_duration(&a.timeout).map_err(|e| bad(format!("--timeout: {e}")))?;
    let interval = crate::units::parse_duration(&a.interval)
        .map_err(|e| bad(format!("--interval: {e}")))?
        .max(Duration::from_millis(10));
    let targets: Vec<(String, u16)> = a
        .hosts
        .iter()
        .map(|h| wait::target(h, a.port).map_err(|e| bad(e.to_string())))
        .collect::<Result<_, _>>()?;
    let signals = Signals::install();
    let halt = crate::halt::Halt::new(signals.stop.clone(), None);
    let results = wait::all(&targets, timeout, interval, &halt);
    if a.json {
        let v: Vec<serde_json::Value> = results
            .iter()
            .map(|(h, r)| match r {
                Ok(w) => serde_json::json!({"host": h, "answered": true, "seconds": w.seconds, "attempts": w.attempts}),
                Err(e) => serde_json::json!({"host": h, "answered": false, "error": e.to_string()}),
            })
            .collect();
        println!("{}", serde_json::Value::Array(v));
    } else {
        for (h, r) in &results {
            match r {
                Ok(w) => println!(
                    "{} answered after {:.2} s ({} attempt{})",
                    clean(h),
                    w.seconds,
                    w.attempts,
                    if w.attempts == 1 { "" } else { "s" }
                ),
                Err(e) => println!("{} did not answer: {}", clean(h), clean(&e.to_string())),
            }
        }
    }
    Ok(if signals.stopped() {
        signals.exit_code()
    } else if results.iter().all(|(_, r)| r.is_ok()) {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}

fn agent(a: AgentCommand) -> Outcome {
    use crate::fleet::agent;
    let code = match a {
        AgentCommand::Run {
            target,
            scenario,
            args,
        } => agent::run(&target, scenario.as_deref(), &args),
        AgentCommand::Serve {
            listen,
            max_duration,
        } => agent::serve(&listen, &max_duration),
        AgentCommand::Sweep { target, pid } => {
            agent::sweep(&target, pid, agent::SWEEP_WAIT);
            Ok(0)
        }
    }
    .map_err(|e| (ExitCode::Failed, e.to_string()))?;
    Ok(match code {
        0 => ExitCode::Ok,
        2 => ExitCode::BadInput,
        130 => ExitCode::Interrupted,
        143 => ExitCode::Terminated,
        _ => ExitCode::Failed,
    })
}

/// Saves `OUT/fleet.json`; false (and says why) when it could not.
fn save_record(out: &Path, record: &FleetRecord) -> bool {
    match record.save(out) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("plumb fleet: error: fleet.json: {}", clean(&e.to_string()));
            false
        }
    }
}

/// One line per host: ok, or where and why it failed.
fn summarise(reports: &[HostReport]) {
    for r in reports {
        match &r.error {
            None => eprintln!(
                "{}: ok in {:.1} s (plumb {}), result {}",
                clean(&r.name),
                r.seconds,
                match r.binary {
                    Some(crate::fleet::summary::BinaryCopy::Copied) => "copied",
                    _ => "cached",
                },
                r.result
                    .as_deref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ),
            Some(e) => eprintln!(
                "{}: failed at {}: {}{}",
                clean(&r.name),
                r.stage.name(),
                clean(e),
                r.result
                    .as_deref()
                    .map(|p| format!(" (partial results in {})", p.display()))
                    .unwrap_or_default()
            ),
        }
    }
}

/// The comparison of the hosts that succeeded (the baseline first), or
/// the one host's table.
fn compare(reports: &[HostReport], baseline: Option<&str>, format: Format, many: ManyOptions) {
    let mut files: Vec<(&str, PathBuf)> = reports
        .iter()
        .filter(|r| r.ok)
        .filter_map(|r| Some((r.name.as_str(), r.result.clone()?)))
        .collect();
    if let Some(b) = baseline {
        if !files.iter().any(|(n, _)| *n == b) && !files.is_empty() {
            eprintln!(
                "plumb fleet: note: the baseline {} has no result; {} is the baseline instead",
                clean(b),
                clean(files[0].0)
            );
        }
        files.sort_by_key(|(n, _)| *n != b);
    }
    match files.len() {
        0 => {}
        1 => {
            if let Ok(d) = crate::compare::load::load(&files[0].1) {
                print!("{}", crate::report::results::run(&d, &[], format));
            }
        }
        _ => {
            let paths: Vec<PathBuf> = files.into_iter().map(|(_, p)| p).collect();
            super::compare::compare_main(
                &paths,
                super::compare::Options {
                    format,
                    fail_if_slower: None,
                    allow_mismatch: false,
                    svg: None,
                    template: super::compare::TemplateChoice::FromPack,
                    many,
                },
            );
        }
    }
}

fn exit_code(reports: &[HostReport], signals: &Signals, saved: bool) -> ExitCode {
    if signals.stopped() {
        signals.exit_code()
    } else if saved && reports.iter().all(|r| r.ok) {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    }
}
