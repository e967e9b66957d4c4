//! `fleet run`'s plan: the pack resolved, trusted and compiled here, its
//! parameters and grants checked as `plumb run` would on each host, and
//! the arguments that `plumb run` gets there.

use super::{duration, payload, results_dir, Connection, PlanError};
use crate::fleet::remote::Binary;
use crate::fleet::run::Plan;
use crate::scenario::pack::{self, Pack};
use crate::scenario::{self as scenarios, bundle, params, trust};
use std::path::PathBuf;
use std::time::Duration;

/// What `plumb fleet run` asks for, as its options give it.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The pack (or one scenario of one, or a lone scenario file).
    pub pack: String,
    /// Which hosts, and how ssh reaches them.
    pub connection: Connection,
    /// `KEY=VALUE` parameters.
    pub params: Vec<String>,
    /// Where `results/` and `fleet.json` go.
    pub out: PathBuf,
    /// One host after another.
    pub serial: bool,
    /// The most hosts copying or running at once (0: the default).
    pub parallel: usize,
    /// The host the others are compared against.
    pub baseline: Option<String>,
    /// `--group-by`: a machine field or a label key of the hosts (checked
    /// here, before any host is reached).
    pub group_by: Option<String>,
    /// The deadline per scenario on each host (a duration).
    pub timeout: String,
    /// How many times each scenario runs.
    pub repeat: u32,
    /// The most bytes the run may write on each host (a size).
    pub max_bytes: Option<String>,
    /// The most files and directories the run may have on each host.
    pub max_inodes: Option<u64>,
    /// Endpoints granted on every host (`HOST:PORT`).
    pub allow_net: Vec<String>,
    /// How far the pack is trusted.
    pub trust: trust::Policy,
    /// More arguments for `plumb run` on each host (the /metrics flags).
    pub forwarded: Vec<String>,
}

/// A fleet run ready to go: its plan and the pack it runs.
pub struct RunPlan {
    /// What each host does.
    pub plan: Plan,
    /// The pack.
    pub pack: Pack,
}

impl RunRequest {
    /// Checks the request and makes the plan; nothing is run and no host
    /// is reached (only `OUT/results` is made).
    pub fn plan(&self) -> Result<RunPlan, PlanError> {
        let (hosts, ssh) = self.connection.connect()?;
        if let Some(b) = &self.baseline {
            if !hosts.iter().any(|h| &h.name == b) {
                return Err(PlanError::Baseline(b.clone()));
            }
        }
        crate::report::many::check_group_by(
            self.group_by.as_deref(),
            hosts.iter().map(|h| h.labels.as_slice()),
        )?;
        let trusted = self.trust.keys()?;
        let pack = pack::resolve_selection(&self.pack, &trusted)?;
        self.trust.check(&pack)?;
        for s in &pack.scenarios {
            scenarios::compile(s)?;
        }
        let need_bytes = self.check_grants(&pack)?;
        let scenarios = u32::try_from(pack.scenarios.len()).unwrap_or(u32::MAX);
        // Each scenario may take its --timeout, each repeat; then a margin
        // for starting, laying out and sending the result back.
        let run_limit = duration("--timeout", &self.timeout)?
            .saturating_mul(scenarios.saturating_mul(self.repeat))
            .saturating_add(Duration::from_secs(600));
        results_dir(&self.out)?;
        let payload = payload(&pack, &self.pack)?;
        let run_args = self.run_args(bundle::sha256_hex(&payload.bytes));
        let binary = Binary::current().map_err(PlanError::Binary)?;
        let plan = Plan {
            hosts,
            ssh,
            binary,
            sent: crate::fleet::sent::SentPack::new(&pack, &payload),
            payload,
            need_bytes,
            run_args,
            serial: self.serial,
            parallel: match self.parallel {
                0 => crate::fleet::run::DEFAULT_PARALLEL as usize,
                n => n,
            },
            run_limit,
            out: self.out.clone(),
        };
        Ok(RunPlan { plan, pack })
    }

    /// Checks the parameters and what the pack asks for against
    /// `--max-bytes`, `--max-inodes` and `--allow-net`; the free bytes
    /// each host must have.
    fn check_grants(&self, pack: &Pack) -> Result<u64, PlanError> {
        let cli_params = params::parse(&self.params, std::slice::from_ref(pack))?;
        let max_bytes = self
            .max_bytes
            .as_deref()
            .map(crate::units::parse_size)
            .transpose()
            .map_err(PlanError::MaxBytes)?;
        let declared = pack
            .capabilities
            .max_bytes(&pack.params_for(&cli_params))
            .map_err(|reason| PlanError::Budget {
                pack: pack.name.clone(),
                reason,
            })?;
        if let (Some(d), Some(m)) = (&declared, max_bytes) {
            if d.bytes > m {
                let why = d.refusal(&pack.name, "--max-bytes grants", m, "a larger --max-bytes");
                return Err(PlanError::Bytes(why));
            }
        }
        if let (Some(need), Some(granted)) = (pack.capabilities.max_inodes, self.max_inodes) {
            if need > granted {
                return Err(PlanError::Inodes {
                    pack: pack.name.clone(),
                    need,
                    granted,
                });
            }
        }
        if let Some(n) = self.allow_net.iter().find(|n| {
            n.starts_with('-')
                || !n.contains(':')
                || n.chars().any(|c| c.is_control() || c.is_whitespace())
        }) {
            return Err(PlanError::AllowNet(n.clone()));
        }
        Ok(declared.map(|d| d.bytes).or(max_bytes).unwrap_or(0))
    }

    /// The arguments of `plumb run` on each host, the payload's hash first.
    fn run_args(&self, sha256: String) -> Vec<String> {
        let mut run_args = vec![
            "--sha256".to_string(),
            sha256,
            "--timeout".into(),
            self.timeout.clone(),
            "--repeat".into(),
            self.repeat.to_string(),
        ];
        for p in &self.params {
            run_args.extend(["-p".to_string(), p.clone()]);
        }
        if let Some(m) = &self.max_bytes {
            run_args.extend(["--max-bytes".to_string(), m.clone()]);
        }
        if let Some(n) = self.max_inodes {
            run_args.extend(["--max-inodes".to_string(), n.to_string()]);
        }
        for n in &self.allow_net {
            run_args.extend(["--allow-net".to_string(), n.clone()]);
        }
        run_args.extend(self.forwarded.iter().cloned());
        run_args
    }
}
