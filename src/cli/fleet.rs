//! `plumb fleet`: one pack on many machines over the system's OpenSSH
//! (`run`), the network between pairs of them (`net`), the time until
//! hosts answer on a port (`wait`) — and the hidden `agent` that runs on
//! the hosts' side of each session.

use super::{ExitCode, Signals};
use crate::fleet::inventory::{self, Host};
use crate::fleet::net::NetPlan;
use crate::fleet::remote::{Binary, Payload};
use crate::fleet::run::{Observer, Plan};
use crate::fleet::ssh::Ssh;
use crate::fleet::summary::{FleetRecord, HostReport, Stage, FLEET_SCHEMA};
use crate::report::run_table::Format;
use crate::scenario::bundle;
use crate::terminal::clean;
use clap::{Args, Subcommand};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
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
    /// An inventory: plumb's TOML (`[[host]]` tables) or PerfKitBenchmarker's
    /// static-machine JSON (a `.json` file).
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
    /// A host as `[user@]host[:port]` (repeatable); an alias of your ssh
    /// config works.
    #[arg(short = 'H', long = "host", value_name = "[USER@]HOST[:PORT]")]
    pub host: Vec<String>,
    /// Only the inventory's hosts with this label.
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
    /// The host the others are compared against (default: the first).
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Output format of the comparison.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Deadline per scenario, on each host.
    #[arg(long, default_value = "30m")]
    pub timeout: String,
    /// Run each scenario this many times.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
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

fn bad(m: impl Into<String>) -> (ExitCode, String) {
    (ExitCode::BadInput, m.into())
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

/// The hosts and the ssh settings of a command.
fn connect(c: &Connection) -> Result<(Vec<Host>, Ssh), (ExitCode, String)> {
    let mut hosts = match &c.hosts {
        Some(f) => inventory::load(f).map_err(|e| bad(e.to_string()))?,
        None => Vec::new(),
    };
    if !c.host.is_empty() {
        hosts.extend(inventory::parse_specs(&c.host).map_err(|e| bad(e.to_string()))?);
    }
    if hosts.is_empty() {
        return Err(bad("no hosts: give --hosts FILE or -H HOST"));
    }
    let hosts = inventory::finish("--hosts and -H", hosts).map_err(|e| bad(e.to_string()))?;
    let hosts = inventory::select(hosts, c.only.as_deref()).map_err(|e| bad(e.to_string()))?;
    inventory::check_keys(&hosts).map_err(|e| bad(e.to_string()))?;
    for o in &c.ssh_option {
        if o.starts_with('-') || o.chars().any(char::is_control) {
            return Err(bad(format!(
                "--ssh-option '{}': an option as KEY=VALUE",
                clean(o)
            )));
        }
    }
    let connect_timeout = crate::units::parse_duration(&c.connect_timeout)
        .map_err(|e| bad(format!("--connect-timeout: {e}")))?;
    let ssh = Ssh {
        program: PathBuf::from("ssh"),
        config: c.ssh_config.clone(),
        options: c.ssh_option.clone(),
        connect_timeout,
    };
    Ok((hosts, ssh))
}

/// What a pack is sent as: its bundle, or a lone scenario file as it is.
fn payload(p: &crate::scenario::pack::Pack, arg: &str) -> Result<Payload, (ExitCode, String)> {
    if !p.files.is_empty() {
        let bytes = bundle::write(&p.files).map_err(|e| (ExitCode::Failed, e.to_string()))?;
        return Ok(Payload {
            name: format!("pack.{}", bundle::EXTENSION),
            bytes,
            scenario: p.selected.clone(),
        });
    }
    let s = p
        .scenarios
        .first()
        .ok_or_else(|| bad(format!("{arg}: nothing to run")))?;
    let ext = Path::new(arg)
        .extension()
        .and_then(|e| e.to_str())
        .filter(|e| *e == "wasm")
        .unwrap_or("rhai");
    let stem = Path::new(arg)
        .file_stem()
        .and_then(|n| n.to_str())
        .filter(|n| bundle::plain_name(n) && !n.contains(' '))
        .unwrap_or("scenario");
    Ok(Payload {
        name: format!("{stem}.{ext}"),
        bytes: s.bytes().to_vec(),
        scenario: None,
    })
}

fn run(a: RunArgs) -> Outcome {
    let (hosts, ssh) = connect(&a.connection)?;
    if let Some(b) = &a.baseline {
        if !hosts.iter().any(|h| &h.name == b) {
            return Err(bad(format!("--baseline {}: no such host", clean(b))));
        }
    }
    let trusted = a.trust.keys().map_err(bad)?;
    let pack = crate::scenario::pack::resolve_selection(&a.pack, &trusted)
        .map_err(|e| bad(e.to_string()))?;
    a.trust.check(&pack).map_err(bad)?;
    for s in &pack.scenarios {
        crate::scenario::compile(s).map_err(bad)?;
    }
    let cli_params = super::run::parse_params(&a.params, std::slice::from_ref(&pack))?;
    let max_bytes = a
        .max_bytes
        .as_deref()
        .map(crate::units::parse_size)
        .transpose()
        .map_err(|e| bad(format!("--max-bytes: {e}")))?;
    let declared = pack
        .capabilities
        .max_bytes(&pack.params_for(&cli_params))
        .map_err(|e| bad(format!("{}: {e}", pack.name)))?;
    if let (Some(d), Some(m)) = (&declared, max_bytes) {
        if d.bytes > m {
            let why = d.refusal(&pack.name, "--max-bytes grants", m, "a larger --max-bytes");
            return Err(bad(format!("{why} (nothing was run)")));
        }
    }
    if let (Some(d), Some(m)) = (pack.capabilities.max_inodes, a.max_inodes) {
        if d > m {
            return Err(bad(format!(
                "pack {} may make {d} files and directories but --max-inodes grants {m}: nothing was run",
                pack.name
            )));
        }
    }
    let need_bytes = declared.map(|d| d.bytes).or(max_bytes).unwrap_or(0);
    for n in &a.allow_net {
        if n.starts_with('-')
            || !n.contains(':')
            || n.chars().any(|c| c.is_control() || c.is_whitespace())
        {
            return Err(bad(format!(
                "--allow-net '{}': expected HOST:PORT",
                clean(n)
            )));
        }
    }
    let scenarios = u32::try_from(pack.scenarios.len()).unwrap_or(u32::MAX);
    // Each scenario may take its --timeout, each repeat; then a margin
    // for starting, laying out and sending the result back.
    let run_limit = crate::units::parse_duration(&a.timeout)
        .map_err(|e| bad(format!("--timeout: {e}")))?
        .saturating_mul(scenarios.saturating_mul(a.repeat))
        .saturating_add(Duration::from_secs(600));
    let results = a.out.join("results");
    std::fs::create_dir_all(&results)
        .map_err(|e| bad(format!("--out {}: {e}", results.display())))?;
    let payload = payload(&pack, &a.pack)?;
    let mut run_args = vec![
        "--sha256".to_string(),
        bundle::sha256_hex(&payload.bytes),
        "--timeout".into(),
        a.timeout.clone(),
        "--repeat".into(),
        a.repeat.to_string(),
    ];
    for p in &a.params {
        run_args.extend(["-p".to_string(), p.clone()]);
    }
    if let Some(m) = &a.max_bytes {
        run_args.extend(["--max-bytes".to_string(), m.clone()]);
    }
    if let Some(n) = a.max_inodes {
        run_args.extend(["--max-inodes".to_string(), n.to_string()]);
    }
    for n in &a.allow_net {
        run_args.extend(["--allow-net".to_string(), n.clone()]);
    }
    run_args.extend(a.metrics.forwarded());
    let binary = Binary::current().map_err(|e| (ExitCode::Failed, format!("this plumb: {e}")))?;
    let plan = Plan {
        hosts,
        ssh,
        binary,
        payload,
        need_bytes,
        run_args,
        serial: a.serial,
        run_limit,
        out: a.out.clone(),
        origin: Some(pack.origin.describe()),
    };
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
    compare(&reports, a.baseline.as_deref(), a.format);
    Ok(exit_code(&reports, &signals, saved))
}

fn net(a: NetArgs) -> Outcome {
    let (hosts, ssh) = connect(&a.connection)?;
    let find = |n: &str| {
        hosts
            .iter()
            .find(|h| h.name == n)
            .cloned()
            .ok_or_else(|| bad(format!("--pair: no host named '{}'", clean(n))))
    };
    let mut pairs = Vec::new();
    for p in &a.pair {
        let (x, y) = p
            .split_once(':')
            .ok_or_else(|| bad(format!("--pair '{}': expected A:B", clean(p))))?;
        if x == y {
            return Err(bad(format!("--pair '{}': two different hosts", clean(p))));
        }
        if pairs
            .iter()
            .any(|(p, q): &(Host, Host)| format!("{}-{}", p.name, q.name) == format!("{x}-{y}"))
        {
            return Err(bad(format!(
                "--pair '{}': given twice, or named like another pair (results/{x}-{y}.json)",
                clean(p)
            )));
        }
        pairs.push((find(x)?, find(y)?));
    }
    let results = a.out.join("results");
    std::fs::create_dir_all(&results)
        .map_err(|e| bad(format!("--out {}: {e}", results.display())))?;
    let seconds =
        crate::units::parse_duration(&a.seconds).map_err(|e| bad(format!("--seconds: {e}")))?;
    let streams: Vec<u32> = a
        .streams
        .split(',')
        .map(|s| {
            s.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=128).contains(n))
        })
        .collect::<Option<_>>()
        .ok_or_else(|| {
            bad(format!(
                "--streams '{}': numbers 1-128, comma-separated",
                clean(&a.streams)
            ))
        })?;
    let pack = crate::scenario::pack::builtin("fleet-net")
        .expect("built in")
        .map_err(|e| (ExitCode::Failed, e.to_string()))?;
    let payload = payload(&pack, "fleet-net")?;
    // Each stream count runs both ways, then RTT and connect: the server
    // lives for all of it, with room to spare.
    let server_limit = seconds
        .saturating_mul(2 * streams.len() as u32)
        .saturating_add(Duration::from_secs(120));
    let run_args = vec![
        "--sha256".to_string(),
        bundle::sha256_hex(&payload.bytes),
        "-p".into(),
        format!("seconds={}", a.seconds),
        "-p".into(),
        format!(
            "streams={}",
            streams
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
    ];
    let binary = Binary::current().map_err(|e| (ExitCode::Failed, format!("this plumb: {e}")))?;
    let plan = NetPlan {
        ssh,
        binary,
        pairs,
        port: a.port,
        payload,
        run_args,
        server_limit: format!("{}s", server_limit.as_secs()),
        run_limit: server_limit,
        out: a.out.clone(),
    };
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
        pack_sha256: pack.sha256.clone(),
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
    let timeout =
        crate::units::parse_duration(&a.timeout).map_err(|e| bad(format!("--timeout: {e}")))?;
    let interval = crate::units::parse_duration(&a.interval)
        .map_err(|e| bad(format!("--interval: {e}")))?
        .max(Duration::from_millis(10));
    let targets: Vec<(String, u16)> = a
        .hosts
        .iter()
        .map(|h| wait_target(h, a.port))
        .collect::<Result<_, _>>()?;
    let signals = Signals::install();
    let halt = crate::halt::Halt::new(signals.stop.clone(), None);
    let results: Vec<(String, Result<crate::net::PortWait, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = targets
            .iter()
            .map(|(host, port)| {
                let halt = &halt;
                s.spawn(move || wait_one(host, *port, timeout, interval, halt))
            })
            .collect();
        targets
            .iter()
            .zip(handles)
            .map(|((h, p), j)| {
                let shown = if h.contains(':') {
                    format!("[{h}]:{p}")
                } else {
                    format!("{h}:{p}")
                };
                let r = j
                    .join()
                    .unwrap_or_else(|_| Err("the waiting thread panicked".into()));
                (shown, r)
            })
            .collect()
    });
    if a.json {
        let v: Vec<serde_json::Value> = results
            .iter()
            .map(|(h, r)| match r {
                Ok(w) => serde_json::json!({"host": h, "answered": true, "seconds": w.seconds, "attempts": w.attempts}),
                Err(e) => serde_json::json!({"host": h, "answered": false, "error": e}),
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
                Err(e) => println!("{} did not answer: {}", clean(h), clean(e)),
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

/// `HOST`, `HOST:PORT` or `[V6]:PORT` as a host and a port.
fn wait_target(spec: &str, port: u16) -> Result<(String, u16), (ExitCode, String)> {
    let fail = || {
        bad(format!(
            "'{}' is not HOST, HOST:PORT or [ADDR]:PORT",
            clean(spec)
        ))
    };
    let (host, p) = if let Some(v6) = spec.strip_prefix('[') {
        let (h, rest) = v6.split_once(']').ok_or_else(fail)?;
        (h, rest.strip_prefix(':'))
    } else if spec.matches(':').count() > 1 {
        (spec, None)
    } else {
        match spec.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (spec, None),
        }
    };
    let port = match p {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(fail)?,
        None => port,
    };
    let ok = !host.is_empty()
        && host.len() <= 253
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '%'));
    if !ok {
        return Err(fail());
    }
    Ok((host.to_string(), port))
}

/// Waits for one host: its name is resolved again on each attempt (a new
/// VM's name may not resolve at first), then its port polled.
fn wait_one(
    host: &str,
    port: u16,
    timeout: Duration,
    interval: Duration,
    halt: &crate::halt::Halt,
) -> Result<crate::net::PortWait, String> {
    use std::net::ToSocketAddrs;
    let start = std::time::Instant::now();
    loop {
        let left = timeout.saturating_sub(start.elapsed());
        if let Some(addr) = (host, port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
        {
            let resolved = start.elapsed();
            return crate::net::wait_for_port(
                addr,
                left.max(Duration::from_millis(10)),
                interval,
                halt,
            )
            .map(|mut w| {
                w.seconds += resolved.as_secs_f64();
                w
            })
            .map_err(|e| e.to_string());
        }
        if start.elapsed() + interval >= timeout || halt.sleep(interval).is_err() {
            return Err(format!(
                "'{host}' did not resolve within {:.1} s",
                timeout.as_secs_f64()
            ));
        }
    }
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
    let path = out.join("fleet.json");
    let saved = std::fs::create_dir_all(out)
        .map_err(|e| format!("{}: {e}", out.display()))
        .and_then(|()| serde_json::to_vec_pretty(record).map_err(|e| e.to_string()))
        .and_then(|mut text| {
            text.push(b'\n');
            crate::save::write_atomic(&path, &text).map_err(|e| e.to_string())
        });
    match saved {
        Ok(()) => true,
        Err(e) => {
            eprintln!("plumb fleet: error: fleet.json: {}", clean(&e));
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
fn compare(reports: &[HostReport], baseline: Option<&str>, format: Format) {
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

/// Live progress: one line per host on a terminal, plain prefixed lines
/// otherwise — at most one every [`PLAIN_INTERVAL`] per host for the
/// host's own lines (a host that floods its output is not copied through).
struct Progress {
    names: Vec<String>,
    bars: Option<(MultiProgress, Vec<ProgressBar>)>,
    /// When each host's last plain line was written; lines are written
    /// whole, one at a time.
    plain: Mutex<Vec<Option<std::time::Instant>>>,
}

/// The least time between two plain progress lines of one host.
const PLAIN_INTERVAL: Duration = Duration::from_millis(200);

impl Progress {
    fn new(names: &[String]) -> Progress {
        let bars = std::io::stderr().is_terminal().then(|| {
            let m = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let width = names.iter().map(String::len).max().unwrap_or(4);
            let style = ProgressStyle::with_template(&format!(
                "{{prefix:{width}}} {{spinner}} {{elapsed:>4}} {{wide_msg}}"
            ))
            .expect("static template");
            let bars = names
                .iter()
                .map(|n| {
                    let b = m.add(ProgressBar::new_spinner());
                    b.set_style(style.clone());
                    b.set_prefix(clean(n).into_owned());
                    b.enable_steady_tick(Duration::from_millis(200));
                    b
                })
                .collect();
            (m, bars)
        });
        Progress {
            names: names.to_vec(),
            bars,
            plain: Mutex::new(vec![None; names.len()]),
        }
    }

    /// Shows `text` for `host`; a `droppable` line (the host's own) is
    /// skipped in plain mode when the host's last line was too recent.
    fn say(&self, host: usize, text: &str, droppable: bool) {
        match &self.bars {
            Some((_, bars)) => bars[host].set_message(text.to_string()),
            None => {
                let mut last = self.plain.lock().unwrap_or_else(|e| e.into_inner());
                let now = std::time::Instant::now();
                if droppable && last[host].is_some_and(|t| now - t < PLAIN_INTERVAL) {
                    return;
                }
                last[host] = Some(now);
                eprintln!("{}: {}", clean(&self.names[host]), text);
            }
        }
    }

    fn finish(&self) {
        if let Some((_, bars)) = &self.bars {
            for b in bars {
                if !b.is_finished() {
                    b.finish();
                }
            }
        }
    }
}

impl Observer for Progress {
    fn stage(&self, host: usize, _stage: Stage, detail: &str) {
        self.say(host, &clean(detail), false);
    }

    fn line(&self, host: usize, line: &str) {
        self.say(host, &clean(line), true);
    }

    fn done(&self, host: usize, report: &HostReport) {
        let text = match &report.error {
            None => "done".to_string(),
            Some(e) => format!("failed at {}: {}", report.stage.name(), clean(e)),
        };
        // Without a terminal, the final summary says it once.
        if let Some((_, bars)) = &self.bars {
            bars[host].finish_with_message(text);
        }
    }
}
