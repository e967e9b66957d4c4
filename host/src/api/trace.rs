//! Trace replay in the host API: a trace from the pack's data files (or the
//! run directory) replayed inside the run directory, within the byte budget.

use super::{ApiError, Host};
use crate::trace::{replay, ReplayOptions, ReplayResult, Trace};
use std::io::Read;

impl Host {
    /// Replays the trace `name` (a data file of the pack, else a file in the
    /// run directory) inside the run directory.
    pub fn trace_replay(&mut self, name: &str, o: ReplayOptions) -> Result<ReplayResult, ApiError> {
        let text = match self.space.data.get(name) {
            Some(t) => t.clone(),
            None => {
                let fd = self.run_dir().open(name, libc::O_RDONLY, 0)?;
                let mut text = String::new();
                std::fs::File::from(fd)
                    .read_to_string(&mut text)
                    .map_err(|e| ApiError::Os {
                        op: format!("reading trace {name}"),
                        source: e,
                    })?;
                text
            }
        };
        let trace = Trace::parse(name, &text).map_err(|e| ApiError::Invalid(e.to_string()))?;
        self.charge("trace::replay", replay::bytes_needed(&trace))?;
        self.check()?;
        let r = replay::lay_out_and_replay(&trace, self.run_dir(), o, &self.stop)
            .map_err(|e| ApiError::Invalid(format!("trace::replay {name}: {e}")))?;
        self.check()?;
        Ok(r)
    }
}
