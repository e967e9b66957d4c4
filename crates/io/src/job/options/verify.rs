//! The verification options beyond `verify` and `do_verify`
//! ([`crate::job::spec::VerifyOpts`]).

use super::{OptionDef, OptionError};
use crate::job::spec::JobSpec;
use crate::job::values::{parse_bool, parse_count, ValueError};

/// Most blocks between two verifications: the blocks wait in memory.
const MAX_BACKLOG: u64 = 1 << 24;

/// The verification options, in fio's names.
pub(super) static OPTIONS: &[OptionDef] = &[
    opt!(
        "verify_backlog",
        [],
        false,
        "verify every N blocks written, as the job goes",
        |j, v| {
            let n = parse_count(v, 0)?;
            if n > MAX_BACKLOG {
                return Err(ValueError::OutOfRange {
                    value: n,
                    min: 0,
                    max: MAX_BACKLOG,
                });
            }
            j.verify_opts.backlog = n;
            Ok(())
        }
    ),
    opt!(
        "verify_dump",
        [],
        true,
        "write a block that fails to FILE.OFFSET.received",
        |j, v| {
            j.verify_opts.dump = parse_bool(v)?;
            Ok(())
        }
    ),
    opt!(
        "verify_fatal",
        [],
        true,
        "stop at the first block that fails its check",
        |j, v| {
            j.verify_opts.fatal = parse_bool(v)?;
            Ok(())
        }
    ),
];

/// The verification options need no check against each other.
pub(super) fn validate(_job: &JobSpec) -> Result<(), OptionError> {
    Ok(())
}
