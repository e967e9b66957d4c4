//! A session's request checked before anything runs: the packs resolved,
//! trusted and compiled, the parameters, assertions and deadline parsed,
//! the journal a killed run left read (or refused), and the grants.

use crate::scenario::assertions::{self, Assertion};
use crate::scenario::pack::{self, Pack};
use crate::scenario::trust;
use crate::scenario::{self as scenarios, params, Compiled};
use crate::session::grant::{grant, Grants};
use crate::session::saved::Saved;
use crate::session::{Observer, SessionError};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// What `plumb run` asks for, as its options give it.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `.rhai` files, pack folders, bundles, git specs or built-in pack
    /// names, each maybe selecting one scenario (default: `quick`).
    pub scenarios: Vec<String>,
    /// Directory under which the run directory is made.
    pub target: PathBuf,
    /// `KEY=VALUE` parameters.
    pub params: Vec<String>,
    /// How many times each scenario runs (at least 1).
    pub repeat: u32,
    /// The run's label.
    pub label: Option<String>,
    /// The result document's file, with its journal beside it.
    pub json: Option<PathBuf>,
    /// Continue the run whose journal a kill left.
    pub resume: bool,
    /// Endpoints granted (`HOST:PORT`).
    pub allow_net: Vec<String>,
    /// The most bytes the run may write (a size), else the free space.
    pub max_bytes: Option<String>,
    /// The most files and directories the run may have at once.
    pub max_inodes: Option<u64>,
    /// The most threads the run may have at once.
    pub max_threads: Option<u32>,
    /// The deadline per scenario (a duration).
    pub timeout: String,
    /// Keep the run directories.
    pub keep: bool,
    /// The memory each scenario may use (a size).
    pub scenario_memory: String,
    /// Thresholds (`METRIC OP VALUE`), besides the packs' own.
    pub asserts: Vec<String>,
    /// How far the packs are trusted.
    pub trust: trust::Policy,
}

/// A session checked and ready to run.
pub struct Prepared {
    /// The request.
    pub(crate) request: Request,
    /// The packs, in the order given.
    pub(crate) packs: Vec<Pack>,
    /// Each scenario compiled, pack after pack.
    pub(crate) compiled: Vec<Compiled>,
    /// The `-p` parameters.
    pub(crate) params: BTreeMap<String, String>,
    /// Every assertion: the request's, then the packs'.
    pub(crate) asserts: Vec<Assertion>,
    /// The deadline per scenario.
    pub(crate) timeout: Duration,
    /// The memory each scenario may use.
    pub(crate) memory: usize,
    /// The bytes and files the run may use.
    pub(crate) granted_bytes: u64,
    /// The files and directories the run may have at once.
    pub(crate) granted_inodes: u64,
    /// The `--json` file and its journal.
    pub(crate) saved: Saved,
}

impl Prepared {
    /// Checks `request`, in the order of the messages a user meets: the
    /// packs and their trust, the scenarios' code, the parameters and
    /// assertions, the journal, then the grants. The target directory is
    /// made (and stale run directories under it swept), nothing else.
    pub fn new(request: Request, observer: &mut dyn Observer) -> Result<Prepared, SessionError> {
        if let Some(n) = request.max_threads {
            crate::gate::set_max_threads(n);
        }
        let targets = if request.scenarios.is_empty() {
            vec!["quick".to_string()]
        } else {
            request.scenarios.clone()
        };
        let trusted = request.trust.keys()?;
        let packs: Vec<Pack> = targets
            .iter()
            .map(|t| pack::resolve_selection(t, &trusted))
            .collect::<Result<_, _>>()?;
        for p in &packs {
            request.trust.check(p)?;
        }
        let memory = crate::units::parse_size(&request.scenario_memory)
            .map_err(SessionError::ScenarioMemory)?;
        let memory = usize::try_from(memory).unwrap_or(usize::MAX);
        // Compile everything before running anything.
        let compiled = packs
            .iter()
            .flat_map(|p| p.scenarios.iter())
            .map(scenarios::compile)
            .collect::<Result<Vec<_>, _>>()?;
        let params = params::parse(&request.params, &packs)?;
        let asserts = request
            .asserts
            .iter()
            .chain(packs.iter().flat_map(|p| p.asserts.iter()))
            .map(|a| assertions::parse(a))
            .collect::<Result<Vec<_>, _>>()?;
        let timeout =
            crate::units::parse_duration(&request.timeout).map_err(SessionError::Timeout)?;
        if timeout.is_zero() {
            return Err(SessionError::ZeroTimeout(request.timeout.clone()));
        }
        let started = chrono::Local::now().to_rfc3339();
        // Before anything is made: a leftover journal may refuse the run.
        let saved = Saved::open(
            request.json.as_deref(),
            request.resume,
            request.label.clone(),
            started,
            observer,
        )?;
        saved.check_covers(&packs)?;
        let (granted_bytes, granted_inodes) = grant_all(&request, &packs, &params, observer)?;
        Ok(Prepared {
            request,
            packs,
            compiled,
            params,
            asserts,
            timeout,
            memory,
            granted_bytes,
            granted_inodes,
            saved,
        })
    }

    /// The packs, in the order given.
    pub fn packs(&self) -> &[Pack] {
        &self.packs
    }

    /// The scenario runs the session plans: every scenario, `repeat` times.
    pub fn planned_runs(&self) -> u64 {
        let scenarios: usize = self.packs.iter().map(|p| p.scenarios.len()).sum();
        (scenarios as u64).saturating_mul(u64::from(self.request.repeat))
    }
}

/// Makes the target directory, sweeps stale run directories under it, and
/// grants each pack what it asks for; the bytes and inodes the run may use.
fn grant_all(
    request: &Request,
    packs: &[Pack],
    params: &BTreeMap<String, String>,
    observer: &mut dyn Observer,
) -> Result<(u64, u64), SessionError> {
    let target = &request.target;
    let target_error = |source| SessionError::Target {
        target: target.clone(),
        source,
    };
    std::fs::create_dir_all(target).map_err(target_error)?;
    crate::sandbox::sweep_stale(target);
    let free = crate::files::free_bytes(target).map_err(target_error)?;
    let bytes = match &request.max_bytes {
        Some(s) => crate::units::parse_size(s).map_err(SessionError::MaxBytes)?,
        None => free,
    };
    let inodes = request
        .max_inodes
        .unwrap_or_else(|| crate::sandbox::default_inodes(target));
    let grants = Grants {
        bytes,
        bytes_by_flag: request.max_bytes.is_some(),
        free,
        target,
        inodes,
        net: &request.allow_net,
    };
    for p in packs {
        grant(p, params, &grants, observer)?;
    }
    Ok((bytes, inodes))
}
