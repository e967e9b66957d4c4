//! The fleet commands' plans, checked before any host is reached: which
//! hosts and how ssh reaches them ([`Connection`]), what `fleet run`
//! sends and asks of each host ([`run`]), and the pairs and streams of
//! `fleet net` ([`net`]).

pub mod net;
pub mod run;

use crate::fleet::inventory::{self, Host, InventoryError};
use crate::fleet::remote::Payload;
use crate::fleet::ssh::Ssh;
use crate::scenario::bundle;
use crate::scenario::pack::{Pack, PackError};
use crate::scenario::params::ParamError;
use crate::scenario::trust::TrustError;
use crate::scenario::CompileError;
use crate::terminal::clean;
use std::path::{Path, PathBuf};

/// A plan refused (bad input) or that cannot be made (the system failed).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// An inventory or a `-H` spec is refused.
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    /// Neither `--hosts` nor `-H`.
    #[error("no hosts: give --hosts FILE or -H HOST")]
    NoHosts,
    /// An `--ssh-option` that is not `KEY=VALUE`.
    #[error("--ssh-option '{}': an option as KEY=VALUE", clean(.0))]
    SshOption(String),
    /// A duration option that is not one (`--connect-timeout: …`).
    #[error("{flag}: {reason}")]
    Duration {
        /// The option.
        flag: &'static str,
        /// Why.
        reason: crate::units::UnitError,
    },
    /// `--baseline` names no host of the fleet.
    #[error("--baseline {}: no such host", clean(.0))]
    Baseline(String),
    /// `--group-by` names neither a machine field nor a label key of the
    /// hosts.
    #[error(transparent)]
    GroupBy(#[from] crate::report::many::ManyError),
    /// A trusted key cannot be read, or the trust policy refuses the pack.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// The pack cannot be loaded.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// A scenario does not compile.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// A `-p` parameter is refused.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// `--max-bytes` is not a size.
    #[error("--max-bytes: {0}")]
    MaxBytes(crate::units::UnitError),
    /// The pack's byte budget cannot be reckoned with the parameters.
    #[error("{pack}: {reason}")]
    Budget {
        /// The pack's name.
        pack: String,
        /// Why.
        reason: crate::api::CapabilityError,
    },
    /// The pack may write more than `--max-bytes` grants.
    #[error("{0} (nothing was run)")]
    Bytes(String),
    /// The pack may make more files than `--max-inodes` grants.
    #[error("pack {pack} may make {need} files and directories but --max-inodes grants {granted}: nothing was run")]
    Inodes {
        /// The pack's name.
        pack: String,
        /// What it declares.
        need: u64,
        /// What `--max-inodes` grants.
        granted: u64,
    },
    /// An `--allow-net` that is not `HOST:PORT`.
    #[error("--allow-net '{}': expected HOST:PORT", clean(.0))]
    AllowNet(String),
    /// The output folder cannot be made.
    #[error("--out {}: {source}", .dir.display())]
    Out {
        /// The folder.
        dir: PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A lone scenario argument that holds nothing.
    #[error("{0}: nothing to run")]
    NothingToRun(String),
    /// A `--pair` that is not two hosts of the fleet.
    #[error(transparent)]
    Pair(#[from] net::PairError),
    /// `--streams` is not a list of stream counts.
    #[error("--streams '{}': numbers 1-128, comma-separated", clean(.0))]
    Streams(String),
    /// The pack cannot be bundled to be sent.
    #[error("{0}")]
    Bundle(std::io::Error),
    /// This plumb cannot be read to be copied.
    #[error("this plumb: {0}")]
    Binary(std::io::Error),
    /// A built-in pack that does not load.
    #[error(transparent)]
    Builtin(PackError),
}

impl PlanError {
    /// True when the input is at fault, false when the system failed.
    pub fn is_bad_input(&self) -> bool {
        !matches!(
            self,
            PlanError::Bundle(_) | PlanError::Binary(_) | PlanError::Builtin(_)
        )
    }
}

/// Which hosts, and how ssh reaches them.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// An inventory file (plumb's TOML, PerfKitBenchmarker's JSON, or
    /// Ansible's `.ini`/`.yml` read through `ansible-inventory`).
    pub hosts: Option<PathBuf>,
    /// Hosts as `[user@]host[:port]`.
    pub host: Vec<String>,
    /// Only the inventory's hosts with this label.
    pub only: Option<String>,
    /// An ssh config file (ssh -F).
    pub ssh_config: Option<PathBuf>,
    /// ssh options (ssh -o).
    pub ssh_option: Vec<String>,
    /// How long a connection may take to open (a duration).
    pub connect_timeout: String,
}

impl Connection {
    /// The hosts, checked, and the ssh settings.
    pub fn connect(&self) -> Result<(Vec<Host>, Ssh), PlanError> {
        let mut hosts = match &self.hosts {
            Some(f) => inventory::load(f)?,
            None => Vec::new(),
        };
        if !self.host.is_empty() {
            hosts.extend(inventory::parse_specs(&self.host)?);
        }
        if hosts.is_empty() {
            return Err(PlanError::NoHosts);
        }
        let hosts = inventory::finish("--hosts and -H", hosts)?;
        let hosts = inventory::select(hosts, self.only.as_deref())?;
        inventory::check_keys(&hosts)?;
        if let Some(o) = self
            .ssh_option
            .iter()
            .find(|o| o.starts_with('-') || o.chars().any(char::is_control))
        {
            return Err(PlanError::SshOption(o.clone()));
        }
        let connect_timeout = duration("--connect-timeout", &self.connect_timeout)?;
        let program = PathBuf::from("ssh");
        let ssh = Ssh {
            sharing: crate::fleet::ssh::Sharing::new(&program, &self.ssh_option)
                .map(std::sync::Arc::new),
            program,
            config: self.ssh_config.clone(),
            options: self.ssh_option.clone(),
            connect_timeout,
        };
        Ok((hosts, ssh))
    }
}

/// The duration option `flag`'s value `text`.
pub(crate) fn duration(flag: &'static str, text: &str) -> Result<std::time::Duration, PlanError> {
    crate::units::parse_duration(text).map_err(|reason| PlanError::Duration { flag, reason })
}

/// Makes `OUT/results`, where the hosts' results go.
pub(crate) fn results_dir(out: &Path) -> Result<(), PlanError> {
    let dir = out.join("results");
    std::fs::create_dir_all(&dir).map_err(|source| PlanError::Out { dir, source })
}

/// What pack `p` (named `arg` on the command line) is sent as: its
/// bundle, or a lone scenario file as it is.
pub fn payload(p: &Pack, arg: &str) -> Result<Payload, PlanError> {
    if !p.files.is_empty() {
        let bytes = bundle::write(&p.files).map_err(PlanError::Bundle)?;
        return Ok(Payload {
            name: format!("pack.{}", bundle::EXTENSION),
            bytes,
            scenario: p.selected.clone(),
        });
    }
    let s = p
        .scenarios
        .first()
        .ok_or_else(|| PlanError::NothingToRun(arg.to_string()))?;
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
