//! Running the comparison templates that lay results out, for the commands
//! that print results (`run`, `show`, `compare`): a template that fails or
//! cannot be found is a note on stderr, and the results are printed
//! without its layout.

use crate::compare::compare;
use crate::model::comparison::Comparison;
use crate::model::document::{RunDocument, ScenarioResult};
use crate::model::template::TemplateInput;
use crate::report::results::Layout;
use crate::scenario::template::{self, Choice, Template};
use crate::terminal::{clean, clean_text};

/// The most packs of one run whose templates are run: a result file is
/// input, and each template may run for seconds.
const MAX_PACKS: usize = 8;

/// Runs `t` on the comparison `c` of `docs`; a failure is a note naming
/// `command`.
pub fn made(t: &Template, docs: &[RunDocument], c: &Comparison, command: &str) -> Option<Layout> {
    match t.render(&TemplateInput::new(docs, c)) {
        Ok(tables) => Some(Layout {
            file: t.file.clone(),
            tables,
        }),
        Err(e) => {
            eprintln!(
                "plumb {command}: error: the comparison template failed: {}",
                clean_text(&e.to_string())
            );
            None
        }
    }
}

/// The suite layouts of one run: for each pack of `doc` whose comparison
/// template is found (see [`template::for_runs`]), the tables it makes from
/// this run's scenarios of that pack, in the order the packs ran.
pub fn for_one_run(doc: &RunDocument, command: &str) -> Vec<Layout> {
    let mut packs: Vec<&str> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for p in doc.scenarios.iter().filter_map(|s| s.pack.as_deref()) {
        if seen.insert(p) {
            packs.push(p);
        }
    }
    if packs.len() > MAX_PACKS {
        eprintln!(
            "plumb {command}: note: the run has {} packs; only the first {MAX_PACKS} are laid out by their templates",
            packs.len()
        );
        packs.truncate(MAX_PACKS);
    }
    let mut out = Vec::new();
    for p in packs {
        let one = [RunDocument {
            scenarios: doc
                .scenarios
                .iter()
                .filter(|s| s.pack.as_deref() == Some(p))
                .map(metrics_only)
                .collect(),
            ..header(doc)
        }];
        match template::for_runs(&one) {
            // One run of one pack: within the document's own limits.
            Choice::Template(t) => match compare(&one) {
                Ok(c) => out.extend(made(&t, &one, &c, command)),
                Err(e) => eprintln!("plumb {command}: note: {}", clean(&e.to_string())),
            },
            Choice::Generic => {}
            Choice::Unavailable(why) => {
                eprintln!("plumb {command}: note: {}", clean(&why));
            }
        }
    }
    out
}

/// `doc` without its scenarios.
fn header(doc: &RunDocument) -> RunDocument {
    RunDocument {
        schema: doc.schema.clone(),
        plumb_version: doc.plumb_version.clone(),
        label: doc.label.clone(),
        labels: doc.labels.clone(),
        started: doc.started.clone(),
        finished: doc.finished.clone(),
        host: doc.host.clone(),
        target: doc.target.clone(),
        scenarios: Vec::new(),
    }
}

/// What a template reads of a scenario: all but its jobs, tables and series.
fn metrics_only(s: &ScenarioResult) -> ScenarioResult {
    ScenarioResult {
        name: s.name.clone(),
        pack: s.pack.clone(),
        pack_sha256: s.pack_sha256.clone(),
        pack_version: s.pack_version.clone(),
        pack_origin: s.pack_origin.clone(),
        pack_signer: s.pack_signer.clone(),
        source_sha256: s.source_sha256.clone(),
        params: s.params.clone(),
        params_read: s.params_read.clone(),
        repeat: s.repeat,
        metrics: s.metrics.clone(),
        jobs: Vec::new(),
        tables: Vec::new(),
        notes: Vec::new(),
        series: Vec::new(),
        phases: Vec::new(),
        error: s.error.clone(),
        error_kind: s.error_kind.clone(),
    }
}
