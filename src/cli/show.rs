//! `plumb show RESULT.json`: a saved result printed as `plumb run` printed
//! it — the metric table, every scenario's tables, its packs' own layouts
//! — in any `--format`, for all its scenarios or those `--scenario` names.
//! The file is input: read by the result reader with its limits, every text
//! cleaned before it is printed.

use super::print_error;
use super::{layout, ExitCode};
use crate::compare::load;
use crate::model::document::ScenarioResult;
use crate::report::results;
use crate::report::run_table::{scenario_name, Format};
use crate::terminal::clean;
use std::path::PathBuf;

/// Options of `plumb show`.
#[derive(Debug, Clone, clap::Args)]
pub struct ShowArgs {
    /// A result file written by `plumb run --json` (or `plumb fio --json`, a fleet's results, `plumb trace replay --json`).
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Show only this scenario: its name or PACK/NAME (repeatable).
    #[arg(long, value_name = "NAME")]
    pub scenario: Vec<String>,
}

/// How many scenario names an error lists.
const NAMES_LISTED: usize = 20;

/// `plumb show`: exit 0 once printed, 2 when the file cannot be read or a
/// `--scenario` is not in it.
pub fn show_main(args: &ShowArgs) -> ExitCode {
    let mut doc = match load::load_saved(&args.file) {
        Ok(load::Saved::Run(d)) => *d,
        Ok(load::Saved::Replay(r)) => return show_replay(args, &r),
        Err(e) => {
            print_error("show", &e.to_string());
            return ExitCode::BadInput;
        }
    };
    if !args.scenario.is_empty() {
        let named = |s: &ScenarioResult, n: &str| s.name == n || s.qualified_name() == n;
        if let Some(missing) = args
            .scenario
            .iter()
            .find(|n| !doc.scenarios.iter().any(|s| named(s, n)))
        {
            let mut has: Vec<String> = doc
                .scenarios
                .iter()
                .take(NAMES_LISTED)
                .map(scenario_name)
                .collect();
            if doc.scenarios.len() > NAMES_LISTED {
                has.push("…".into());
            }
            print_error(
                "show",
                &format!(
                    "--scenario {}: {} has no such scenario (it has: {})",
                    clean(missing),
                    args.file.display(),
                    if has.is_empty() {
                        "none".into()
                    } else {
                        has.join(", ")
                    }
                ),
            );
            return ExitCode::BadInput;
        }
        doc.scenarios
            .retain(|s| args.scenario.iter().any(|n| named(s, n)));
    }
    let layouts = if args.format == Format::Json {
        Vec::new()
    } else {
        layout::for_one_run(&doc, "show")
    };
    print!("{}", results::run(&doc, &layouts, args.format));
    ExitCode::Ok
}

/// A trace replay's saved result, as `plumb trace replay` printed it; it
/// has no scenarios to pick.
fn show_replay(args: &ShowArgs, r: &crate::trace::replay::ReplayResult) -> ExitCode {
    if !args.scenario.is_empty() {
        print_error(
            "show",
            &format!(
                "--scenario: {} is a trace replay's result, which has no scenarios",
                args.file.display()
            ),
        );
        return ExitCode::BadInput;
    }
    print!("{}", crate::report::replay::render(r, args.format));
    ExitCode::Ok
}
