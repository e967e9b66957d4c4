//! `io::job`: a declarative fio-style job run natively inside the run directory.

use super::{ApiError, Capability, Host};
use crate::files::FileError;
use crate::job::options::job_from_pairs;
use crate::result::JobResult;
use crate::runner::{prepare, RunError, RunOptions};

impl Host {
    /// Runs one job given as fio `name=value` options; files live in the run directory.
    pub fn job(&mut self, options: Vec<(String, String)>) -> Result<JobResult, ApiError> {
        if let Some((k, _)) = options
            .iter()
            .find(|(k, _)| k == "directory" || k == "write_iolog")
        {
            return Err(ApiError::Invalid(format!(
                "io::job: option '{k}' is not allowed in scenarios (files live in the run directory)"
            )));
        }
        let mut job =
            job_from_pairs(options).map_err(|e| ApiError::Invalid(format!("io::job: {e}")))?;
        if let Some(names) = &job.filename {
            for name in names.split(':') {
                // Resolving the parent beneath the run directory refuses escapes.
                if name.starts_with('/') || name.split('/').any(|c| c == "..") {
                    return Err(crate::sandbox::SandboxError::Escape {
                        path: name.to_string(),
                    }
                    .into());
                }
                if self.run_dir().exists(name)? && self.run_dir().stat(name)?.is_symlink {
                    return Err(crate::sandbox::SandboxError::Escape {
                        path: name.to_string(),
                    }
                    .into());
                }
            }
        }
        if job.direct {
            self.allow(Capability::DirectIo)?;
        }
        self.allow(Capability::Threads(job.numjobs))?;
        if job.runtime.is_none_or(|r| r > self.time_left()) {
            job.runtime = Some(self.time_left());
        }
        job.directory = Some(self.run_dir().path().display().to_string());
        let prepared =
            prepare(std::slice::from_ref(&job), false).map_err(|RunError::Files(e)| file_err(e))?;
        self.charge("io::job", prepared.bytes_to_lay_out())?;
        let opts = RunOptions {
            allow_device: false,
            progress: true,
            stop: self.stop_flag().clone(),
        };
        let mut report = prepared
            .run(&opts)
            .map_err(|RunError::Files(e)| file_err(e))?;
        self.check()?;
        let result = report.groups.pop().map(|g| g.total).unwrap_or_default();
        if let Some(e) = &result.error {
            return Err(ApiError::Invalid(format!(
                "io::job '{}' failed: {e}",
                job.name
            )));
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
