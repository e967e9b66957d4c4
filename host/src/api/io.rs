//! `io::job`: a declarative fio-style job run natively inside the run directory.

use super::{ApiError, Capability, Host};
use crate::files::{FileError, FileSpace};
use crate::job::options::job_from_pairs;
use crate::model::result::JobResult;
use crate::runner::{prepare_in, RunError, RunOptions};
use std::time::Instant;

impl Host {
    /// Runs one job given as fio `name=value` options; files live in the run directory.
    pub fn job(&mut self, options: Vec<(String, String)>) -> Result<JobResult, ApiError> {
        if let Some((k, _)) = options.iter().find(|(k, _)| k == "write_iolog") {
            return Err(ApiError::Invalid(format!(
                "io::job: option '{k}' is not allowed in scenarios (use report:: for results)"
            )));
        }
        let mut job =
            job_from_pairs(options).map_err(|e| ApiError::Invalid(format!("io::job: {e}")))?;
        if job.direct {
            self.allow(Capability::DirectIo)?;
        }
        self.allow(Capability::Threads(job.numjobs))?;
        if job.runtime.is_none_or(|r| r > self.time_left()) {
            job.runtime = Some(self.time_left());
        }
        // Every name (name, filename, directory) is resolved beneath the run
        // directory's descriptor; escapes, FIFOs and devices are refused there.
        let space = FileSpace::sandboxed(self.run_dir()).map_err(|source| ApiError::Os {
            op: "io::job: run directory".into(),
            source,
        })?;
        let deadline = Instant::now() + self.time_left();
        let prepared = prepare_in(std::slice::from_ref(&job), false, &space)
            .map_err(|RunError::Files(e)| file_err(e))?
            .with_deadline(deadline);
        self.charge("io::job", prepared.bytes_to_lay_out())?;
        let opts = RunOptions {
            allow_device: false,
            progress: true,
            stop: self.stop_flag().clone(),
        };
        let mut report = prepared.run(&opts).map_err(|RunError::Files(e)| match e {
            FileError::Deadline => ApiError::Deadline(self.limits.timeout),
            e => file_err(e),
        })?;
        self.check()?;
        let result = report.groups.pop().map(|g| g.total).unwrap_or_default();
        if let Some(e) = &result.error {
            return Err(ApiError::Failed {
                op: "io::job",
                message: format!("'{}' failed: {e}", job.name),
            });
        }
        if !job.create_only {
            self.report.jobs.push(result.clone());
        }
        Ok(result)
    }
}

fn file_err(e: FileError) -> ApiError {
    match e {
        FileError::Interrupted => ApiError::Interrupted,
        other => ApiError::Invalid(format!("io::job: {other}")),
    }
}
