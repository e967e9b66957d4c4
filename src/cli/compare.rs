//! `plumb compare`: loads result files, compares them against the first,
//! prints the table (or JSON, CSV, Markdown) — laid out by the runs' pack's
//! comparison template when it has one; one file gets its suite's own
//! one-machine layout —, writes charts on request, and exits 1 when
//! `--fail-if-slower` trips.

use super::{layout, ExitCode};
use crate::compare::{compare_files, load, regressions, undecided};
use crate::model::comparison::Comparison;
use crate::model::document::RunDocument;
use crate::report::many::ManyOptions;
use crate::report::results;
use crate::report::run_table::Format;
use crate::scenario::template::{self, Template};
use crate::terminal::clean;

/// Which template lays the comparison out.
#[derive(Debug, Clone, Copy)]
pub enum TemplateChoice<'a> {
    /// The template of the pack every run came from, if it has one.
    FromPack,
    /// `--template ARG`.
    Given(&'a str),
    /// `--no-template`.
    Generic,
}

/// How a comparison of more than four runs (a fleet) is laid out: a row
/// per run (see [`crate::report::many`]).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ManyArgs {
    /// Past four runs: rank and sort the runs by this metric (`metric` or
    /// `scenario/metric`; default the first column's).
    #[arg(long, value_name = "METRIC")]
    pub sort: Option<String>,
    /// Past four runs: group the runs by a machine field (cpu, cores,
    /// memory, kernel, os, filesystem, device, scheduler) or by the key of
    /// a KEY=VALUE label a fleet inventory gave the hosts (zone=…).
    #[arg(long, value_name = "FIELD|KEY")]
    pub group_by: Option<String>,
    /// Past four runs: these metrics as columns (comma-separated; default
    /// as many as fit in 160 columns).
    #[arg(long, value_name = "METRIC,...", value_delimiter = ',')]
    pub metrics: Vec<String>,
}

impl ManyArgs {
    /// The layout these options ask for.
    pub fn options(&self) -> ManyOptions {
        ManyOptions {
            metrics: self.metrics.clone(),
            sort: self.sort.clone(),
            group_by: self.group_by.clone(),
        }
    }
}

/// `plumb compare`'s options.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    /// Output format.
    pub format: Format,
    /// `--fail-if-slower PCT`.
    pub fail_if_slower: Option<&'a str>,
    /// `--allow-mismatch`.
    pub allow_mismatch: bool,
    /// `--svg DIR`.
    pub svg: Option<&'a std::path::Path>,
    /// `--template` / `--no-template`.
    pub template: TemplateChoice<'a>,
    /// `--sort`, `--group-by`, `--metrics`.
    pub many: ManyOptions,
}

/// `plumb compare`: prints the comparison; exit 1 when `--fail-if-slower` trips.
pub fn compare_main(files: &[std::path::PathBuf], options: Options) -> ExitCode {
    let Options {
        format,
        fail_if_slower,
        allow_mismatch,
        svg,
        template,
        many,
    } = options;
    if files.is_empty() {
        eprintln!(
            "plumb compare: error: give one result file (its suite's own layout) or more (the first is the baseline)"
        );
        return ExitCode::BadInput;
    }
    let threshold = match fail_if_slower.map(|t| t.trim_end_matches('%').parse::<f64>()) {
        None => None,
        Some(Ok(p)) if p >= 0.0 => Some(p),
        Some(_) => {
            eprintln!(
                "plumb compare: error: --fail-if-slower: '{}' is not a percentage",
                fail_if_slower.unwrap_or_default()
            );
            return ExitCode::BadInput;
        }
    };
    // A template named on the command line is loaded before anything else.
    let given = match template {
        TemplateChoice::Given(arg) => match Template::from_arg(arg) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!(
                    "plumb compare: error: --template: {}",
                    clean(&e.to_string())
                );
                return ExitCode::BadInput;
            }
        },
        _ => None,
    };
    let mut docs = Vec::new();
    for f in files {
        match load::load(f) {
            Ok(d) => docs.push(d),
            Err(e) => {
                eprintln!("plumb compare: error: {}", clean(&e.to_string()));
                return ExitCode::BadInput;
            }
        }
    }
    // A file's stem titles its run where two runs without labels would
    // share a title.
    let c = match compare_files(&docs, files) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("plumb compare: error: {}", clean(&e.to_string()));
            return ExitCode::BadInput;
        }
    };
    let versions: std::collections::BTreeSet<&str> =
        docs.iter().map(|d| d.plumb_version.as_str()).collect();
    if versions.len() > 1 {
        let list: Vec<&str> = versions.into_iter().collect();
        eprintln!(
            "plumb compare: warning: the runs were made by different plumb versions ({})",
            clean(&list.join(", "))
        );
    }
    let template = match template {
        TemplateChoice::Given(_) => given.map(Ok),
        TemplateChoice::FromPack => match template::for_runs(&docs) {
            template::Choice::Template(t) => Some(Ok(t)),
            template::Choice::Generic => None,
            template::Choice::Unavailable(why) => Some(Err(why)),
        },
        TemplateChoice::Generic => None,
    };
    match laid_out(&c, &docs, format, template, &many) {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("plumb compare: error: {}", clean(&e.to_string()));
            return ExitCode::BadInput;
        }
    }
    if let Some(dir) = svg {
        match crate::report::charts::write_all(dir, &docs, &c) {
            Ok(files) => eprintln!("wrote {} chart(s) to {}", files.len(), dir.display()),
            Err(err) => {
                eprintln!("plumb compare: error: charts: {}", clean(&err.to_string()));
                return ExitCode::Failed;
            }
        }
    }
    match threshold {
        Some(pct) if regressed(&c, pct, allow_mismatch) => ExitCode::Failed,
        _ => ExitCode::Ok,
    }
}

/// `--fail-if-slower PCT`: says which metrics regressed by more than
/// `pct` (and which figures are not judged); true when some did.
fn regressed(c: &Comparison, pct: f64, allow_mismatch: bool) -> bool {
    if let Some((cells, repeat)) = undecided(c) {
        eprintln!(
            "plumb compare: --fail-if-slower: {cells} figure(s) have fewer than {} samples on a side and are not judged (runs made with --repeat {repeat} would be)",
            crate::compare::MIN_SAMPLES
        );
    }
    let bad = regressions(c, pct, allow_mismatch);
    if bad.is_empty() {
        return false;
    }
    eprintln!(
        "plumb compare: {} metric(s) regressed by more than {pct}%:",
        bad.len()
    );
    for b in &bad {
        eprintln!("  {}", clean(b));
    }
    true
}

/// The comparison laid out by `template` when there is one and it works;
/// else, with the reason on stderr, the generic table; then every run's
/// scenario tables.
fn laid_out(
    c: &Comparison,
    docs: &[RunDocument],
    format: Format,
    template: Option<Result<Template, String>>,
    many: &ManyOptions,
) -> Result<String, crate::report::many::ManyError> {
    let layout = match template {
        None => None,
        Some(Err(why)) => {
            eprintln!("plumb compare: note: {}", clean(&why));
            None
        }
        Some(Ok(t)) => {
            let made = layout::made(&t, docs, c, "compare");
            if made.is_none() {
                eprintln!(
                    "plumb compare: the generic table follows (--no-template skips the template)"
                );
            }
            made
        }
    };
    results::compare(c, docs, layout.as_ref(), format, many)
}
