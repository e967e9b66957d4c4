//! `plumb report A.json [B.json …] -o report.html|report.md`: result files
//! as one page to publish (see [`crate::report::page`]). The first file is
//! the baseline; the runs' pack's comparison template lays out the summary
//! as `plumb compare` does. Markdown gets its charts as SVG files in
//! `STEM-charts/` beside it. The page and its charts are written where
//! `-o` names them and nowhere else: a symlink (or anything but a regular
//! file) in the page's place, or anything but a directory in the charts'
//! place, is refused before anything is written ([`Dir`]).

use super::{layout, ExitCode};
use crate::compare::{compare_files, load};
use crate::report::charts;
use crate::report::page::{self, Page};
use crate::save::{Dir, SaveError};
use crate::scenario::template;
use crate::terminal::clean;
use std::path::{Path, PathBuf};

/// Options of `plumb report`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// Result files written with --json (the first is the baseline).
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// The page to write: `.html` (one self-contained file) or `.md`
    /// (Markdown, its charts as SVG files in STEM-charts/ beside it).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
}

/// What the output's extension asks for.
enum Output {
    Html,
    Markdown,
}

fn fail(code: ExitCode, msg: &str) -> ExitCode {
    eprintln!("plumb report: error: {}", clean(msg));
    code
}

/// `plumb report`: exit 0 once written, 2 for a file that cannot be read,
/// an output that is neither `.html` nor `.md` or a place refused, 1 when
/// writing fails.
pub fn report_main(args: &ReportArgs) -> ExitCode {
    let kind = match args.output.extension().and_then(|e| e.to_str()) {
        Some("html" | "htm") => Output::Html,
        Some("md" | "markdown") => Output::Markdown,
        _ => {
            return fail(
                ExitCode::BadInput,
                &format!(
                    "-o {}: the page is written as HTML (.html) or Markdown (.md)",
                    args.output.display()
                ),
            )
        }
    };
    let mut docs = Vec::new();
    for f in &args.files {
        match load::load(f) {
            Ok(d) => docs.push(d),
            Err(e) => return fail(ExitCode::BadInput, &e.to_string()),
        }
    }
    let c = match compare_files(&docs, &args.files) {
        Ok(c) => c,
        Err(e) => return fail(ExitCode::BadInput, &e.to_string()),
    };
    let layouts = if docs.len() == 1 {
        layout::for_one_run(&docs[0], "report")
    } else {
        match template::for_runs(&docs) {
            template::Choice::Template(t) => {
                layout::made(&t, &docs, &c, "report").into_iter().collect()
            }
            template::Choice::Generic => Vec::new(),
            template::Choice::Unavailable(why) => {
                eprintln!("plumb report: note: {}", clean(&why));
                Vec::new()
            }
        }
    };
    let all = match charts::all(&docs, &c) {
        Ok(all) => all,
        Err(e) => return fail(ExitCode::BadInput, &format!("charts: {e}")),
    };
    let files: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
    let p = Page {
        docs: &docs,
        files: &files,
        c: &c,
        layouts: &layouts,
        charts: &all,
    };
    let written = match kind {
        Output::Html => {
            Dir::of(&args.output).and_then(|(dir, name)| dir.write(name, page::html(&p).as_bytes()))
        }
        Output::Markdown => write_markdown(&args.output, &p),
    };
    match written {
        Ok(()) => {
            eprintln!(
                "wrote {} ({} chart(s), {} run(s))",
                args.output.display(),
                all.len(),
                docs.len()
            );
            ExitCode::Ok
        }
        Err(e) if e.refused() => fail(ExitCode::BadInput, &e.to_string()),
        Err(e) => fail(ExitCode::Failed, &e.to_string()),
    }
}

/// The Markdown page, and its charts in `STEM-charts/` beside it; the
/// page's place is checked before the first chart is written.
fn write_markdown(out: &Path, p: &Page) -> Result<(), SaveError> {
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let dir_name = format!("{}-charts", charts::file_part(&stem));
    let (dir, name) = Dir::of(out)?;
    dir.check(name)?;
    let charts_dir = dir.sub(dir_name.as_ref())?;
    for c in p.charts {
        charts_dir.write(c.file.as_ref(), c.svg.as_bytes())?;
    }
    dir.write(name, page::markdown(p, &dir_name).as_bytes())
}
