//! fio's two ways of describing jobs: command-line options and INI job files.
//!
//! On the command line, options before the first `--name` are global and every
//! `--name` starts a job. In a job file, `[global]` sections set defaults for
//! the sections after them and every other section is a job named after it.

use super::expand::{expand, Keywords};
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

/// Deepest nesting of `include` lines (fio has no bound; a file that
/// includes itself would recurse forever).
pub const MAX_INCLUDE_DEPTH: usize = 16;
/// Most bytes of job files read for one command line, includes counted.
pub const MAX_JOB_TEXT: u64 = 16 << 20;
/// Longest section name (fio reads at most 255 bytes of it).
pub const MAX_SECTION_NAME: usize = 255;

/// Reads the files an `include` line names: the file as written if it
/// exists, else relative to the including file's folder (as fio), within
/// [`MAX_INCLUDE_DEPTH`] and [`MAX_JOB_TEXT`].
#[derive(Debug, Default)]
pub struct Includes {
    /// Bytes read so far (job files and includes).
    bytes: u64,
}

impl Includes {
    /// Counts `n` bytes of job text against [`MAX_JOB_TEXT`].
    pub fn count(&mut self, n: usize, place: &str) -> Result<(), JobError> {
        self.bytes = self.bytes.saturating_add(n as u64);
        if self.bytes > MAX_JOB_TEXT {
            return Err(include_error(
                place,
                format!(
                    "the job files add up to more than {} MiB",
                    MAX_JOB_TEXT >> 20
                ),
            ));
        }
        Ok(())
    }

    /// The options of the file `name` included from `from` at `place`.
    fn read(
        &mut self,
        from: &str,
        name: &str,
        place: &str,
        depth: usize,
    ) -> Result<Vec<RawOption>, JobError> {
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(include_error(
                place,
                format!("includes nested deeper than {MAX_INCLUDE_DEPTH}"),
            ));
        }
        let as_written = std::path::Path::new(name);
        let path = if as_written.exists() {
            as_written.to_path_buf()
        } else {
            std::path::Path::new(from)
                .parent()
                .map(|d| d.join(name))
                .unwrap_or_else(|| as_written.to_path_buf())
        };
        let shown = path.display().to_string();
        let text = read_bounded(&path, MAX_JOB_TEXT.saturating_sub(self.bytes))
            .map_err(|e| include_error(place, format!("cannot read '{shown}': {e}")))?;
        self.count(text.len(), place)?;
        let mut options = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line_place = format!("{shown}:{}", i + 1);
            match classify(raw) {
                Line::Empty => {}
                Line::Section(_) | Line::OpenSection => {
                    return Err(include_error(
                        &line_place,
                        "an included file may not hold [sections]".into(),
                    ))
                }
                Line::Include(inner) => {
                    options.extend(self.read(&shown, inner, &line_place, depth + 1)?)
                }
                Line::Option(name, value) => options.push(RawOption {
                    name: name.to_string(),
                    value: value.map(str::to_string),
                    place: line_place,
                }),
            }
        }
        Ok(options)
    }
}

/// Reads a text file of at most `limit` bytes.
///
/// Only a regular file: a FIFO would block the open or the read, a device
/// would never end. Opened without blocking, then checked.
pub fn read_bounded(path: &std::path::Path, limit: u64) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut text = String::new();
    file.take(limit.saturating_add(1))
        .read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "larger than the {} MiB job files may add up to",
            MAX_JOB_TEXT >> 20
        )));
    }
    Ok(text)
}

fn include_error(place: &str, reason: String) -> JobError {
    JobError {
        place: place.to_string(),
        error: OptionError {
            option: "include".into(),
            problem: Problem::Include(reason),
        },
    }
}

/// One line of a job file, as fio reads it.
enum Line<'a> {
    /// Blank, or a comment.
    Empty,
    /// `[name]`.
    Section(&'a str),
    /// `[name` without its `]`.
    OpenSection,
    /// `include FILE`.
    Include(&'a str),
    /// `name` or `name=value`.
    Option(&'a str, Option<&'a str>),
}

/// Reads a line as fio does: everything from the first `;` or `#` is a
/// comment (so `numjobs=4 ; four threads` is `numjobs=4`), blanks around
/// are dropped.
fn classify(raw: &str) -> Line<'_> {
    let line = raw.split([';', '#']).next().unwrap_or("").trim();
    if line.is_empty() {
        return Line::Empty;
    }
    if let Some(rest) = line.strip_prefix('[') {
        return match rest.strip_suffix(']') {
            Some(name) => Line::Section(name.trim()),
            None => Line::OpenSection,
        };
    }
    if let Some(file) = line.strip_prefix("include") {
        if file.starts_with(char::is_whitespace) {
            return Line::Include(file.trim());
        }
    }
    match line.split_once('=') {
        Some((k, v)) => Line::Option(k.trim(), Some(v.trim())),
        None => Line::Option(line, None),
    }
}

/// True for a section of defaults: fio takes every name that starts with
/// `global` as one.
pub fn is_global(name: &str) -> bool {
    name.starts_with("global")
}

/// Parses fio's INI job file format, reading `include` lines through
/// `includes`.
pub fn parse_job_file(
    text: &str,
    path: &str,
    includes: &mut Includes,
) -> Result<Vec<Section>, JobError> {
    let mut sections: Vec<Section> = Vec::new();
    for (i, raw_line) in text.lines().enumerate() {
        let place = format!("{path}:{}", i + 1);
        let error = |option: &str, problem: Problem| JobError {
            place: place.clone(),
            error: OptionError {
                option: option.to_string(),
                problem,
            },
        };
        match classify(raw_line) {
            Line::Empty => {}
            Line::OpenSection => return Err(error(raw_line.trim(), Problem::OpenSection)),
            Line::Section(name) => {
                if name.len() > MAX_SECTION_NAME {
                    return Err(error(
                        &name.chars().take(32).collect::<String>(),
                        Problem::LongSectionName(name.len()),
                    ));
                }
                sections.push(Section {
                    name: name.to_string(),
                    place,
                    options: Vec::new(),
                });
            }
            Line::Include(file) => {
                let Some(section) = sections.last_mut() else {
                    return Err(error("include", Problem::NoSection));
                };
                section
                    .options
                    .extend(includes.read(path, file, &place, 0)?);
            }
            Line::Option(name, value) => {
                let Some(section) = sections.last_mut() else {
                    return Err(error(name, Problem::NoSection));
                };
                section.options.push(RawOption {
                    name: name.to_string(),
                    value: value.map(str::to_string),
                    place,
                });
            }
        }
    }
    Ok(sections)
}

/// Builds jobs from sections; `[global]` sections apply to the jobs after them.
///
/// Values are expanded first ([`expand`]: `${VAR}`, `$ncpus`, arithmetic).
pub fn jobs_from_sections(
    base: &[RawOption],
    sections: &[Section],
    keywords: &Keywords,
) -> Result<Vec<JobSpec>, JobError> {
    let mut globals: Vec<RawOption> = base.to_vec();
    let mut jobs = Vec::new();
    for section in sections {
        if is_global(&section.name) {
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
            let at = |error| JobError {
                place: opt.place.clone(),
                error,
            };
            let value = opt
                .value
                .as_deref()
                .map(|v| expand(v, &|name| std::env::var(name).ok(), keywords))
                .transpose()
                .map_err(|e| {
                    at(OptionError {
                        option: opt.name.clone(),
                        problem: Problem::Expand(e),
                    })
                })?;
            options::apply(&mut job, &opt.name, value.as_deref()).map_err(at)?;
        }
        options::validate(&job).map_err(|error| JobError {
            place: section.place.clone(),
            error,
        })?;
        jobs.push(job);
    }
    Ok(jobs)
}

/// Refuses jobs whose clones add up to more threads than `max` (fio's
/// `--max-jobs`, at most [`options::MAX_NUMJOBS`], fio's `REAL_MAX_JOBS`).
pub fn check_total_threads(jobs: &[JobSpec], max: u64) -> Result<(), JobError> {
    let total: u64 = jobs.iter().map(|j| u64::from(j.numjobs)).sum();
    if total > max {
        return Err(JobError {
            place: "the jobs".into(),
            error: OptionError {
                option: "numjobs".into(),
                problem: Problem::TooManyThreads { total, max },
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

    const K: Keywords = Keywords {
        pagesize: 4096,
        mb_memory: 1024,
        ncpus: 2,
    };

    #[test]
    fn inline_comments_globals_by_prefix_and_expressions() {
        let text = "[global_defaults]\nnumjobs=4 ; 4 simultaneous threads\nbs=(2*2)k # four\n[a]\nsize=$mb_memory\n";
        let sections = parse_job_file(text, "x.fio", &mut Includes::default()).unwrap();
        let jobs = jobs_from_sections(&[], &sections, &K).unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].numjobs, 4);
        assert_eq!(jobs[0].bs[0].min(), 4096);
        assert_eq!(jobs[0].size, Some(crate::units::SizeSpec::Bytes(1024)));
    }

    #[test]
    fn includes_nest_relative_to_the_including_file_and_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("inner.fio"), "bs=8k\n").unwrap();
        std::fs::write(
            dir.path().join("outer.fio"),
            "include inner.fio\nrw=write\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("loop.fio"), "include loop.fio\n").unwrap();
        std::fs::write(dir.path().join("section.fio"), "[x]\n").unwrap();
        let main = dir.path().join("main.fio");
        let main = main.to_str().unwrap();
        let text = "[a]\ninclude outer.fio\n";
        let sections = parse_job_file(text, main, &mut Includes::default()).unwrap();
        let jobs = jobs_from_sections(&[], &sections, &K).unwrap();
        assert_eq!(jobs[0].bs[0].min(), 8192);
        assert_eq!(jobs[0].rw, Pattern::Write);
        let deep =
            parse_job_file("[a]\ninclude loop.fio\n", main, &mut Includes::default()).unwrap_err();
        assert!(deep.to_string().contains("nested deeper"), "{deep}");
        let sect = parse_job_file("[a]\ninclude section.fio\n", main, &mut Includes::default())
            .unwrap_err();
        assert!(sect.to_string().contains("[sections]"), "{sect}");
        let missing =
            parse_job_file("[a]\ninclude nope.fio\n", main, &mut Includes::default()).unwrap_err();
        assert_eq!(missing.place, format!("{main}:2"));
    }

    #[test]
    fn ini_globals_apply_to_later_jobs() {
        let text = "; comment\n[global]\nbs=8k\ndirect=1\n\n[a]\nrw=randread\n[b]\nrw=write\nbs=64k\ntime_based\nruntime=1\n";
        let sections = parse_job_file(text, "x.fio", &mut Includes::default()).unwrap();
        let jobs = jobs_from_sections(&[], &sections, &K).unwrap();
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
        let sections = parse_job_file(text, "x.fio", &mut Includes::default()).unwrap();
        let err = jobs_from_sections(&[], &sections, &K).unwrap_err();
        assert_eq!(err.place, "x.fio:3");
        assert_eq!(err.error.option, "bogus_opt");
    }
}
