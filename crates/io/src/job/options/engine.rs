//! The engine options ([`crate::job::spec::EngineOpts`]).

use super::{OptionDef, OptionError};
use crate::job::spec::JobSpec;

/// The engine options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[];

/// Checks the engine options against each other and the rest of the job.
pub(super) fn validate(_job: &JobSpec) -> Result<(), OptionError> {
    Ok(())
}
