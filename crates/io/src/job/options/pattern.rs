//! The pattern options ([`crate::job::spec::PatternOpts`]).

use super::{OptionDef, OptionError};
use crate::job::spec::JobSpec;

/// The pattern options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[];

/// Checks the pattern options against each other and the rest of the job.
pub(super) fn validate(_job: &JobSpec) -> Result<(), OptionError> {
    Ok(())
}
