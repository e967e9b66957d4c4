//! Trace replay in the host API: a trace from the pack's data files (or the
//! run directory) replayed inside the run directory, within the byte budget,
//! the pack's thread count, the deadline and the stop flag.

use super::{ApiError, Capability, Host};
use crate::trace::limits::{read_bounded_file, MAX_TRACE_BYTES};
use crate::trace::{replay, Bounds, Halt, OpKind, ReplayError, ReplayOptions, ReplayResult, Trace};
use std::time::Instant;

impl Host {
    /// Replays the trace `name` (a data file of the pack, else a file in the
    /// run directory) inside the run directory.
    pub fn trace_replay(&mut self, name: &str, o: ReplayOptions) -> Result<ReplayResult, ApiError> {
        let text = match self.space.data.get(name) {
            Some(t) => t.clone(),
            None => {
                // Without blocking: a FIFO is refused, not waited on.
                let fd = self
                    .run_dir()
                    .open(name, libc::O_RDONLY | libc::O_NONBLOCK, 0)?;
                read_bounded_file(std::fs::File::from(fd), MAX_TRACE_BYTES).map_err(|e| {
                    ApiError::Os {
                        op: format!("reading trace {name}"),
                        source: e,
                    }
                })?
            }
        };
        let trace = Trace::parse(name, &text).map_err(|e| ApiError::Invalid(e.to_string()))?;
        let threads = u32::try_from(replay::threads_needed(&trace, o)).unwrap_or(u32::MAX);
        self.allow(Capability::Threads(threads))?;
        if uses_direct_io(&trace) {
            self.allow(Capability::DirectIo)?;
        }
        let need = crate::trace::budget::bytes_needed(&trace);
        self.charge("trace::replay", need)?;
        self.check()?;
        let bounds = Bounds {
            stop: &self.stop,
            deadline: Instant::now().checked_add(self.time_left()),
            max_bytes: need,
        };
        let r = match replay::lay_out_and_replay(&trace, self.run_dir(), o, bounds) {
            Ok(r) => r,
            Err(ReplayError::Refused(m)) => {
                return Err(ApiError::Invalid(format!("trace::replay {name}: {m}")))
            }
            Err(ReplayError::Layout(h)) => return Err(self.replay_halted(name, h)),
        };
        if let Some(h) = r.halted.clone() {
            return Err(self.replay_halted(name, h));
        }
        self.check()?;
        Ok(r)
    }

    /// The error for a replay that stopped early.
    fn replay_halted(&self, name: &str, h: Halt) -> ApiError {
        match h {
            Halt::Interrupted => match self.check() {
                Err(e) => e,
                Ok(()) => ApiError::Interrupted,
            },
            // The replay's deadline is the scenario's: name it even when
            // the host's own clock has not quite reached it yet.
            Halt::Deadline => ApiError::Deadline(self.limits.timeout),
            Halt::DiskFull(m) => ApiError::Os {
                op: format!("trace::replay {name}: {m}"),
                source: std::io::Error::from_raw_os_error(libc::ENOSPC),
            },
            Halt::Budget(m) | Halt::Failed(m) => {
                ApiError::Invalid(format!("trace::replay {name}: {m}"))
            }
        }
    }
}

/// Whether any open of the trace asks for O_DIRECT (the pack must declare
/// `direct_io` for it to be replayed).
fn uses_direct_io(trace: &Trace) -> bool {
    trace
        .ops
        .iter()
        .any(|op| matches!(op.kind, OpKind::Open { flags, .. } if flags.direct))
}
