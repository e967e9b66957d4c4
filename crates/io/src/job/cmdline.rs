//! fio's command line as jobs: its job options (`--name=JOB --rw=read …`,
//! each known to the option table) and its job files, read and turned into
//! jobs the way fio does — job files first, then the command line's jobs.
//! The command keeps its own switches (`--output`, `--json` …).

use super::expand::Keywords;
use super::jobfile::{self, Includes, JobError, RawOption, Section};
use super::options;
use super::spec::JobSpec;

/// `text` as one word for a POSIX shell: as is when it holds only safe
/// characters, else in single quotes.
fn shell_quote(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:,=+%@^".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

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
    /// A `--max-jobs` that is not a count from 1 to the limit.
    #[error("--max-jobs: '{0}' is not a count from 1 to {max}", max = options::MAX_NUMJOBS)]
    MaxJobs(String),
    /// A job that is refused (naming its place and option).
    #[error(transparent)]
    Job(#[from] JobError),
}

/// The job options and job files of a command line, in order.
#[derive(Debug, Default)]
pub struct JobArgs {
    options: Vec<RawOption>,
    files: Vec<String>,
    /// `--section`: the only job-file sections to run (all when empty).
    sections: Vec<String>,
    /// `--max-jobs`: most threads the jobs may add up to.
    max_jobs: Option<u64>,
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

    /// Runs only the job-file section `name` (`--section`, repeatable;
    /// `[global]` sections always apply).
    pub fn only_section(&mut self, name: &str) {
        self.sections.push(name.to_string());
    }

    /// Caps the threads the jobs add up to (`--max-jobs`); refuses 0 and
    /// values above [`options::MAX_NUMJOBS`].
    pub fn max_jobs(&mut self, value: &str) -> Result<(), CmdlineError> {
        let n = value
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=options::MAX_NUMJOBS).contains(n))
            .ok_or_else(|| CmdlineError::MaxJobs(value.to_string()))?;
        self.max_jobs = Some(n);
        Ok(())
    }

    /// Each job file as one `plumb fio` command line, as fio's `--showcmd`:
    /// the options of `[global]` sections first, each job as `--name=JOB`
    /// followed by its options, values quoted for a POSIX shell.
    pub fn command_lines(&self) -> Result<String, CmdlineError> {
        let mut out = String::new();
        let mut includes = Includes::default();
        for f in &self.files {
            let text = jobfile::read_bounded(std::path::Path::new(f), jobfile::MAX_JOB_TEXT)
                .map_err(|source| CmdlineError::JobFile {
                    file: f.clone(),
                    source,
                })?;
            includes.count(text.len(), f)?;
            out.push_str("plumb fio");
            for section in jobfile::parse_job_file(&text, f, &mut includes)? {
                if !jobfile::is_global(&section.name) {
                    out.push_str(&format!(" --name={}", shell_quote(&section.name)));
                }
                for o in &section.options {
                    out.push_str(" --");
                    out.push_str(&shell_quote(&o.name));
                    if let Some(v) = &o.value {
                        out.push('=');
                        out.push_str(&shell_quote(v));
                    }
                }
            }
            out.push('\n');
        }
        Ok(out)
    }

    /// The jobs: each job file's (with its own `[global]`s), then the
    /// command line's; options before the first `--name` apply to all.
    /// Each job file's text is added to `description` (for the result's
    /// checksum). The jobs' clones together stay within fio's limit.
    ///
    /// As fio, the first job of every job file after the first waits for
    /// the jobs before it (an implied `stonewall`), and `--section` keeps
    /// only the named sections of the job files.
    pub fn jobs(&self, description: &mut String) -> Result<Vec<JobSpec>, CmdlineError> {
        let keywords = Keywords::of_this_machine();
        let (globals, mut sections) = jobfile::sections_from_args(&self.options);
        let mut file_sections: Vec<Section> = Vec::new();
        let mut includes = Includes::default();
        for (i, f) in self.files.iter().enumerate() {
            let text = jobfile::read_bounded(std::path::Path::new(f), jobfile::MAX_JOB_TEXT)
                .map_err(|source| CmdlineError::JobFile {
                    file: f.clone(),
                    source,
                })?;
            includes.count(text.len(), f)?;
            description.push('\n');
            description.push_str(&text);
            let mut parsed = jobfile::parse_job_file(&text, f, &mut includes)?;
            if !self.sections.is_empty() {
                parsed.retain(|s| jobfile::is_global(&s.name) || self.sections.contains(&s.name));
            }
            if i > 0 {
                if let Some(first) = parsed.iter_mut().find(|s| !jobfile::is_global(&s.name)) {
                    first.options.insert(
                        0,
                        RawOption {
                            name: "stonewall".into(),
                            value: None,
                            place: format!("{f} (a later job file waits for the earlier ones)"),
                        },
                    );
                }
            }
            file_sections.extend(parsed);
        }
        let mut jobs = jobfile::jobs_from_sections(&globals, &file_sections, &keywords)?;
        sections.retain(|s| !s.name.is_empty() || !s.options.is_empty());
        jobs.extend(jobfile::jobs_from_sections(&globals, &sections, &keywords)?);
        jobfile::check_total_threads(&jobs, self.max_jobs.unwrap_or(options::MAX_NUMJOBS))?;
        Ok(jobs)
    }
}
