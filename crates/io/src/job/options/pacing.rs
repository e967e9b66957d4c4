//! The pacing options ([`crate::job::spec::Pacing`]).

use super::{OptionDef, OptionError};
use crate::job::spec::JobSpec;

/// The pacing options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[];

/// Checks the pacing options against each other and the rest of the job.
pub(super) fn validate(_job: &JobSpec) -> Result<(), OptionError> {
    Ok(())
}
