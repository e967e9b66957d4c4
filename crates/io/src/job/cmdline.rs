//! fio's command line as jobs: its job options (`--name=JOB --rw=read …`,
//! each known to the option table) and its job files, read and turned into
//! jobs the way fio does — job files first, then the command line's jobs.
//! The command keeps its own switches (`--output`, `--json` …).

use super::jobfile::{self, JobError, RawOption, Section};
use super::options;
use super::spec::JobSpec;

/// A job option or a job file that is refused.
#[derive(Debug, thiserror::Error)]
pub enum CmdlineError {
    /// An option plumb does not support, with the nearest one it does.
    #[error("{place}: plumb does not support this option{}", .nearest.as_ref().map(|s| format!("; did you mean '--{s}'?")).unwrap_or_default())]
    Unsupported {
        /// The option as written (`--foo`).
        place: String,
        /// The nearest supported option.
        nearest: Option<&'static str>,
    },
    /// A job file that cannot be read.
    #[error("{file}: cannot read job file: {source}")]
    JobFile {
        /// The file.
        file: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A job that is refused (naming its place and option).
    #[error(transparent)]
    Job(#[from] JobError),
}

/// The job options and job files of a command line, in order.
#[derive(Debug, Default)]
pub struct JobArgs {
    options: Vec<RawOption>,
    files: Vec<String>,
}

impl JobArgs {
    /// Takes the job option `--name` (its value `inline` after `=`, or the
    /// next argument `next` when the option takes one and that is not an
    /// option itself); returns true when it took `next`.
    pub fn option(
        &mut self,
        name: &str,
        inline: Option<&str>,
        next: Option<&str>,
    ) -> Result<bool, CmdlineError> {
        let place = format!("--{name}");
        let takes_next = inline.is_none()
            && options::find_option(name).is_some_and(|o| !o.flag)
            && next.is_some_and(|n| !n.starts_with('-'));
        let value = if takes_next {
            next.map(str::to_string)
        } else {
            inline.map(str::to_string)
        };
        if !options::is_known(name) {
            return Err(CmdlineError::Unsupported {
                place,
                nearest: options::suggest(name),
            });
        }
        self.options.push(RawOption {
            name: name.to_string(),
            value,
            place,
        });
        Ok(takes_next)
    }

    /// Takes a job file's path.
    pub fn file(&mut self, path: &str) {
        self.files.push(path.to_string());
    }

    /// The jobs: each job file's (with its own `[global]`s), then the
    /// command line's; options before the first `--name` apply to all.
    /// Each job file's text is added to `description` (for the result's
    /// checksum). The jobs' clones together stay within fio's limit.
    pub fn jobs(&self, description: &mut String) -> Result<Vec<JobSpec>, CmdlineError> {
        let (globals, mut sections) = jobfile::sections_from_args(&self.options);
        let mut file_sections: Vec<Section> = Vec::new();
        for f in &self.files {
            let text = std::fs::read_to_string(f).map_err(|source| CmdlineError::JobFile {
                file: f.clone(),
                source,
            })?;
            description.push('\n');
            description.push_str(&text);
            file_sections.extend(jobfile::parse_job_file(&text, f)?);
        }
        let mut jobs = jobfile::jobs_from_sections(&globals, &file_sections)?;
        sections.retain(|s| !s.name.is_empty() || !s.options.is_empty());
        jobs.extend(jobfile::jobs_from_sections(&globals, &sections)?);
        jobfile::check_total_threads(&jobs)?;
        Ok(jobs)
    }
}
