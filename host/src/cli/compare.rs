//! `plumb compare`: loads result files, compares them against the first,
//! prints the table (or JSON, CSV, Markdown), writes charts on request, and
//! exits 1 when `--fail-if-slower` trips.

use super::ExitCode;
use crate::compare::{compare, load, regressions};
use crate::report::comparison;
use crate::report::run_table::Format;
use crate::terminal::clean;

/// `plumb compare`: prints the comparison; exit 1 when `--fail-if-slower` trips.
pub fn compare_main(
    files: &[std::path::PathBuf],
    format: Format,
    fail_if_slower: Option<&str>,
    allow_mismatch: bool,
    svg: Option<&std::path::Path>,
) -> ExitCode {
    if files.len() < 2 {
        eprintln!(
            "plumb compare: error: give at least two result files (the first is the baseline)"
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
    let mut docs = Vec::new();
    for f in files {
        match load::load(f) {
            Ok(d) => docs.push(d),
            Err(e) => {
                eprintln!("plumb compare: error: {}", clean(&e));
                return ExitCode::BadInput;
            }
        }
    }
    let c = compare(&docs);
    let versions: std::collections::BTreeSet<&str> =
        docs.iter().map(|d| d.plumb_version.as_str()).collect();
    if versions.len() > 1 {
        let list: Vec<&str> = versions.into_iter().collect();
        eprintln!(
            "plumb compare: warning: the runs were made by different plumb versions ({})",
            clean(&list.join(", "))
        );
    }
    print!("{}", comparison::render(&c, &docs, format));
    if let Some(dir) = svg {
        match crate::report::charts::write_all(dir, &docs, &c) {
            Ok(files) => eprintln!("wrote {} chart(s) to {}", files.len(), dir.display()),
            Err(err) => {
                eprintln!("plumb compare: error: charts: {}", clean(&err));
                return ExitCode::Failed;
            }
        }
    }
    if let Some(pct) = threshold {
        let bad = regressions(&c, pct, allow_mismatch);
        if !bad.is_empty() {
            eprintln!(
                "plumb compare: {} metric(s) regressed by more than {pct}%:",
                bad.len()
            );
            for b in &bad {
                eprintln!("  {}", clean(b));
            }
            return ExitCode::Failed;
        }
    }
    ExitCode::Ok
}
