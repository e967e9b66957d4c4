//! The placement options ([`crate::job::spec::Placement`]).

use super::{OptionDef, OptionError};
use crate::job::spec::JobSpec;

/// The placement options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[];

/// Checks the placement options against each other and the rest of the job.
pub(super) fn validate(_job: &JobSpec) -> Result<(), OptionError> {
    Ok(())
}
