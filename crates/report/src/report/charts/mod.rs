//! SVG charts of results, one list for every output (`--svg DIR` on `run`
//! and `compare`, `plumb report`): each chart with its file name, title
//! and a line saying what it measures.
//!
//! - [`change`]: with several runs, each metric's change against the
//!   baseline (right is better, left is worse, whatever the metric's
//!   direction; the confidence interval as whiskers), grouped by scenario;
//!   with one run, the metrics' values grouped by unit.
//! - [`jobs`]: per job instance — (pack, scenario, job, case, repeat), so
//!   that jobs of one name are never merged — its latency percentiles and
//!   its timeline on the job's clock, one line per run and direction.
//! - [`series`]: per run of a scenario, the time series it reported and
//!   its jobs on the scenario's clock, its phases as labelled bands.

pub mod change;
pub mod jobs;
pub mod overlap;
pub mod series;
pub mod svg;

use crate::model::comparison::Comparison;
use crate::model::document::RunDocument;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Each metric's change against the baseline.
    Change,
    /// One run's metrics, grouped by unit.
    Values,
    /// A job instance's latency percentiles.
    Latency,
    /// A job instance's IOPS and bandwidth over time.
    Timeline,
    /// A scenario's jobs on its clock.
    Jobs,
    /// A scenario's reported series.
    Series,
}

/// One chart.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Its file name (safe characters only, unique in the list).
    pub file: String,
    /// What it shows.
    pub kind: Kind,
    /// Its title, as drawn on it (not escaped).
    pub title: String,
    /// The scenario it belongs to, as named on screen
    /// ([`crate::report::run_table::shown_name`]), if one: shared by the
    /// scenario's charts, not copied into each.
    pub scenario: Option<Arc<str>>,
    /// The SVG document.
    pub svg: String,
}

/// The most characters of a name (scenario, job, case, run) a chart's
/// title quotes: a title is drawn, named in the chart's `<title>` and
/// captioned on a page, once per chart, so a long name is cut there (with
/// `…`) and given whole once, where its scenario's section is headed.
pub const TITLE_NAME: usize = 120;

/// `name` as a chart's title quotes it: at most [`TITLE_NAME`] characters.
pub fn title_part(name: &str) -> Cow<'_, str> {
    match name.char_indices().nth(TITLE_NAME) {
        None => name.into(),
        Some((end, _)) => {
            let mut cut: String = name[..end].chars().take(TITLE_NAME - 1).collect();
            cut.push('…');
            cut.into()
        }
    }
}

/// `s` as a file-name part: safe characters only, at most 60 of them.
pub fn file_part(s: &str) -> String {
    s.chars()
        .take(60)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Makes file names unique: a name met before gets `-2`, `-3`, …; each
/// stem remembers the number it reached, so that n charts of one stem take
/// n steps, not n².
#[derive(Debug, Default)]
pub struct Names {
    /// The names taken.
    taken: HashSet<String>,
    /// Per stem, the number its next name tries.
    next: HashMap<String, usize>,
}

impl Names {
    /// `stem.svg`, or `stem-N.svg` when taken.
    pub fn take(&mut self, stem: &str) -> String {
        let n = self.next.entry(stem.to_string()).or_insert(1);
        loop {
            let name = match *n {
                1 => format!("{stem}.svg"),
                k => format!("{stem}-{k}.svg"),
            };
            *n += 1;
            if self.taken.insert(name.clone()) {
                return name;
            }
        }
    }
}

/// Why the charts were not made or written.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// A scenario's series whose values are too far apart to scale.
    #[error("{title}: values too far apart to draw")]
    FarApart {
        /// The chart's title.
        title: String,
    },
    /// The `--svg` directory could not be made.
    #[error("--svg {}: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A chart's file could not be written.
    #[error("{}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: crate::save::SaveError,
    },
}

/// Every chart of `docs` (titles of runs in `c.runs`, `c` their comparison
/// made once by the caller), in reading order: the metrics, then per
/// scenario its series and jobs, then per job instance its latency and
/// timeline.
pub fn all(docs: &[RunDocument], c: &Comparison) -> Result<Vec<Chart>, ChartError> {
    let mut names = Names::default();
    let mut out = Vec::new();
    out.extend(change::chart(docs, c, &mut names));
    out.extend(series::charts(docs, &c.runs, &mut names)?);
    out.extend(jobs::charts(docs, &c.runs, &mut names));
    Ok(out)
}

/// Writes every chart of [`all`] into `dir`. Returns the files written.
pub fn write_all(
    dir: &Path,
    docs: &[RunDocument],
    c: &Comparison,
) -> Result<Vec<PathBuf>, ChartError> {
    std::fs::create_dir_all(dir).map_err(|source| ChartError::Dir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    for chart in all(docs, c)? {
        let path = dir.join(&chart.file);
        crate::save::write_atomic(&path, chart.svg.as_bytes()).map_err(|source| {
            ChartError::Write {
                path: path.clone(),
                source,
            }
        })?;
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_quote_long_names_cut_at_a_character() {
        assert_eq!(title_part("short"), "short");
        let exact = "é".repeat(TITLE_NAME);
        assert_eq!(title_part(&exact), exact);
        let cut = title_part(&"é".repeat(4000)).into_owned();
        assert_eq!(cut.chars().count(), TITLE_NAME);
        assert!(cut.ends_with("é…"), "{cut}");
    }

    #[test]
    fn names_stay_unique_when_stems_look_like_numbered_names() {
        let mut n = Names::default();
        let got: Vec<String> = ["a", "a-2", "a", "a", "a-2", "b"]
            .iter()
            .map(|s| n.take(s))
            .collect();
        assert_eq!(
            got,
            [
                "a.svg",
                "a-2.svg",
                "a-3.svg",
                "a-4.svg",
                "a-2-2.svg",
                "b.svg"
            ]
        );
        // Many charts of one stem: each name found in a step or two.
        let mut n = Names::default();
        for i in 1..=20_000 {
            let name = n.take("s");
            assert!(i == 1 || name == format!("s-{i}.svg"), "{name}");
        }
    }
}
