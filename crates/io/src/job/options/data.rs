//! The data options ([`crate::job::spec::DataOpts`]).

use super::{OptionDef, OptionError};
use crate::job::spec::JobSpec;

/// The data options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[];

/// Checks the data options against each other and the rest of the job.
pub(super) fn validate(_job: &JobSpec) -> Result<(), OptionError> {
    Ok(())
}
