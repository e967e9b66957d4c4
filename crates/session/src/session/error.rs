//! Why a session could not start or go on: one variant per cause, the
//! message as `plumb run` prints it after `plumb run: error: `.

use crate::scenario::pack::PackError;
use crate::scenario::params::ParamError;
use crate::scenario::trust::TrustError;
use crate::session::grant::GrantError;
use crate::session::saved::ResumeError;
use std::path::PathBuf;

/// A session refused or stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A trusted key cannot be read, or the trust policy refuses a pack.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// A pack cannot be loaded.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// `--scenario-memory` is not a size.
    #[error("--scenario-memory: {0}")]
    ScenarioMemory(crate::units::UnitError),
    /// A scenario does not compile.
    #[error(transparent)]
    Compile(#[from] crate::scenario::CompileError),
    /// A `-p` parameter is refused.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// An assertion does not parse.
    #[error(transparent)]
    Assertion(#[from] crate::scenario::assertions::AssertionError),
    /// `--timeout` is not a duration.
    #[error("--timeout: {0}")]
    Timeout(crate::units::UnitError),
    /// `--timeout` is zero.
    #[error("--timeout '{0}': must be > 0")]
    ZeroTimeout(String),
    /// The `--json` file or its journal refuse the run.
    #[error(transparent)]
    Resume(#[from] ResumeError),
    /// The target directory cannot be made or measured.
    #[error("--target {}: {source}", .target.display())]
    Target {
        /// The target.
        target: PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// `--max-bytes` is not a size.
    #[error("--max-bytes: {0}")]
    MaxBytes(crate::units::UnitError),
    /// A pack asks for more than the run grants.
    #[error(transparent)]
    Grant(#[from] GrantError),
    /// The run directory cannot be made.
    #[error("--target {}: {source}", .target.display())]
    RunDir {
        /// The target.
        target: PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A pack's run directory cannot be made.
    #[error("run directory: {0}")]
    PackDir(std::io::Error),
}

impl SessionError {
    /// True when the input is at fault (the run was refused), false when
    /// the system failed (a directory or the journal's repair).
    pub fn is_bad_input(&self) -> bool {
        !matches!(
            self,
            SessionError::RunDir { .. }
                | SessionError::PackDir(_)
                | SessionError::Resume(ResumeError::Repair(_))
        )
    }
}
