//! fio's two ways of describing jobs: command-line options and INI job files.
//!
//! On the command line, options before the first `--name` are global and every
//! `--name` starts a job. In a job file, `[global]` sections set defaults for
//! the sections after them and every other section is a job named after it.

use super::options::{self, OptionError, Problem};
use super::spec::JobSpec;

/// One `name[=value]` with the place it came from (`job.fio:12` or `--bs`).
#[derive(Debug, Clone)]
pub struct RawOption {
    /// The option's name.
    pub name: String,
    /// Its value, if one was given.
    pub value: Option<String>,
    /// Where it was written, for error messages.
    pub place: String,
}

/// A bad job description, naming the place and the option.
#[derive(Debug, thiserror::Error)]
#[error("{place}: {error}")]
pub struct JobError {
    /// `file:line` or the command-line option.
    pub place: String,
    /// What is wrong with the option.
    pub error: OptionError,
}

/// A section of options: `[global]` or a job.
#[derive(Debug, Clone)]
pub struct Section {
    /// The section's name (`global` for defaults).
    pub name: String,
    /// Where the section starts.
    pub place: String,
    /// Its options in order.
    pub options: Vec<RawOption>,
}

/// Parses fio's INI job file format.
pub fn parse_job_file(text: &str, path: &str) -> Result<Vec<Section>, JobError> {
    let mut sections: Vec<Section> = Vec::new();
    for (i, raw_line) in text.lines().enumerate() {
        let place = format!("{path}:{}", i + 1);
        let line = raw_line.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.strip_suffix(']').ok_or_else(|| JobError {
                place: place.clone(),
                error: OptionError {
                    option: line.to_string(),
                    problem: Problem::OpenSection,
                },
            })?;
            sections.push(Section {
                name: name.trim().to_string(),
                place,
                options: Vec::new(),
            });
            continue;
        }
        let Some(section) = sections.last_mut() else {
            return Err(JobError {
                place,
                error: OptionError {
                    option: line.to_string(),
                    problem: Problem::NoSection,
                },
            });
        };
        let (name, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (line, None),
        };
        section.options.push(RawOption {
            name: name.to_string(),
            value,
            place,
        });
    }
    Ok(sections)
}

/// Builds jobs from sections; `[global]` sections apply to the jobs after them.
pub fn jobs_from_sections(
    base: &[RawOption],
    sections: &[Section],
) -> Result<Vec<JobSpec>, JobError> {
    let mut globals: Vec<RawOption> = base.to_vec();
    let mut jobs = Vec::new();
    for section in sections {
        if section.name == "global" {
            globals.extend(section.options.iter().cloned());
            continue;
        }
        let mut job = JobSpec {
            name: section.name.clone(),
            ..JobSpec::default()
        };
        for opt in globals.iter().chain(&section.options) {
            // A global `name` does not rename every job.
            if opt.name == "name" && !section.options.iter().any(|o| std::ptr::eq(o, opt)) {
                continue;
            }
            options::apply(&mut job, &opt.name, opt.value.as_deref()).map_err(|error| {
                JobError {
                    place: opt.place.clone(),
                    error,
                }
            })?;
        }
        options::validate(&job).map_err(|error| JobError {
            place: section.place.clone(),
            error,
        })?;
        jobs.push(job);
    }
    Ok(jobs)
}

/// Refuses jobs whose clones add up to more threads than fio allows in one
/// run ([`options::MAX_NUMJOBS`], fio's `REAL_MAX_JOBS`).
pub fn check_total_threads(jobs: &[JobSpec]) -> Result<(), JobError> {
    let total: u64 = jobs.iter().map(|j| u64::from(j.numjobs)).sum();
    if total > options::MAX_NUMJOBS {
        return Err(JobError {
            place: "the jobs".into(),
            error: OptionError {
                option: "numjobs".into(),
                problem: Problem::TooManyThreads(total),
            },
        });
    }
    Ok(())
}

/// Splits command-line job options into a global section and one section per `--name`.
pub fn sections_from_args(opts: &[RawOption]) -> (Vec<RawOption>, Vec<Section>) {
    let mut global = Vec::new();
    let mut sections: Vec<Section> = Vec::new();
    for opt in opts {
        if opt.name == "name" {
            sections.push(Section {
                name: opt.value.clone().unwrap_or_default(),
                place: opt.place.clone(),
                options: Vec::new(),
            });
        } else if let Some(s) = sections.last_mut() {
            s.options.push(opt.clone());
        } else {
            global.push(opt.clone());
        }
    }
    (global, sections)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::spec::Pattern;

    #[test]
    fn ini_globals_apply_to_later_jobs() {
        let text = "; comment\n[global]\nbs=8k\ndirect=1\n\n[a]\nrw=randread\n[b]\nrw=write\nbs=64k\ntime_based\nruntime=1\n";
        let sections = parse_job_file(text, "x.fio").unwrap();
        let jobs = jobs_from_sections(&[], &sections).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].name, "a");
        assert_eq!(jobs[0].rw, Pattern::RandRead);
        assert!(jobs[0].direct);
        assert_eq!(jobs[0].bs[0].min(), 8192);
        assert_eq!(jobs[1].bs[1].min(), 65536);
        assert!(jobs[1].time_based);
    }

    #[test]
    fn ini_error_names_line() {
        let text = "[a]\nrw=read\nbogus_opt=3\n";
        let sections = parse_job_file(text, "x.fio").unwrap();
        let err = jobs_from_sections(&[], &sections).unwrap_err();
        assert_eq!(err.place, "x.fio:3");
        assert_eq!(err.error.option, "bogus_opt");
    }
}
