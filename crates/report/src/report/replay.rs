//! A trace replay's result as people read it: the operations table, the
//! steps table when the trace names steps, and the summary under them —
//! what `plumb trace replay` prints and `plumb show` prints of its saved
//! `--json`, in every `--format`.

use crate::report::export::{exporter, Content, Machine, Part};
use crate::report::run_table::Format;
use crate::report::tables::Titled;
use crate::trace::replay::{ReplayResult, REPLAY_SCHEMA};
use crate::trace::Halt;
use serde::{Deserialize, Serialize};

/// A replay's result as `--json` saves it: the schema first, so that
/// readers know it, then the figures.
#[derive(Serialize, Deserialize)]
pub struct SavedReplay {
    /// [`REPLAY_SCHEMA`].
    pub schema: String,
    /// The figures.
    #[serde(flatten)]
    pub result: ReplayResult,
}

impl SavedReplay {
    /// `r` with the schema.
    pub fn new(r: ReplayResult) -> SavedReplay {
        SavedReplay {
            schema: REPLAY_SCHEMA.into(),
            result: r,
        }
    }
}

/// A table owned, before it is borrowed as [`Titled`].
struct Owned {
    title: &'static str,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

fn strings(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

/// Microseconds with one decimal.
pub fn us(v: f64) -> String {
    format!("{v:.1}")
}

/// The operations table of replay `r`, its header and a row per
/// operation, the bytes written by `bytes` (scaled on screen, in full in a
/// result document): one definition for both.
pub fn operations(
    r: &ReplayResult,
    bytes: impl Fn(u64) -> String,
) -> (Vec<String>, Vec<Vec<String>>) {
    let header = strings(&[
        "operation",
        "count",
        "bytes",
        "expected errors",
        "divergences",
        "mean µs",
        "p50 µs",
        "p99 µs",
        "max µs",
    ]);
    let rows = r
        .ops
        .iter()
        .map(|o| {
            vec![
                o.op.clone(),
                o.count.to_string(),
                bytes(o.bytes),
                o.expected_errors.to_string(),
                o.divergences.to_string(),
                us(o.mean_us),
                us(o.p50_us),
                us(o.p99_us),
                us(o.max_us),
            ]
        })
        .collect();
    (header, rows)
}

/// The summary lines: clients, time against the recording, files laid out,
/// how it stopped, divergences.
pub fn summary(r: &ReplayResult) -> Vec<String> {
    let mut lines = Vec::new();
    if r.clients > 1 {
        let each: Vec<String> = r.client_seconds.iter().map(|s| format!("{s:.3}")).collect();
        lines.push(format!(
            "{} clients at once (figures are their sums); seconds per client: {}",
            r.clients,
            each.join(" ")
        ));
    }
    lines.push(format!(
        "replayed {} operations in {:.3} s ({}); {} file(s), {} laid out first; {} map(s) noted but not replayed",
        r.total_ops,
        r.seconds,
        r.against(),
        r.files_created,
        crate::units::format_bytes_binary(r.bytes_laid_out as f64),
        r.skipped
    ));
    if let Some(h) = &r.halted {
        lines.push(format!("stopped early: {h}"));
    }
    lines.push(format!(
        "{} divergence(s) from the recording; {} error(s) the application also saw",
        r.divergences, r.expected_errors
    ));
    if let Some(e) = &r.first_divergence {
        lines.push(format!("first divergence: {e}"));
    }
    lines
}

/// The operations table, then the steps table (when there are steps).
fn owned(r: &ReplayResult) -> Vec<Owned> {
    let (header, rows) = operations(r, |b| crate::units::format_bytes_binary(b as f64));
    let ops = Owned {
        title: "replayed operations",
        header,
        rows,
    };
    let mut out = vec![ops];
    if !r.steps.is_empty() {
        out.push(Owned {
            title: "steps",
            header: strings(&["step", "count", "mean ms", "p99 ms", "max ms"]),
            rows: r
                .steps
                .iter()
                .map(|s| {
                    vec![
                        s.step.clone(),
                        s.count.to_string(),
                        format!("{:.3}", s.mean_us / 1000.0),
                        format!("{:.3}", s.p99_us / 1000.0),
                        format!("{:.3}", s.max_us / 1000.0),
                    ]
                })
                .collect(),
        });
    }
    out
}

/// `r` in `format` (JSON: the saved form, with its schema): the tables,
/// the summary under the last (in CSV, a table of its own). Text from the
/// trace (operation and step names, divergences) is cleaned by the
/// exporter.
pub fn render(r: &ReplayResult, format: Format) -> String {
    let owned = owned(r);
    let summary = summary(r);
    let tables: Vec<Titled> = owned
        .iter()
        .map(|t| Titled {
            title: t.title,
            header: &t.header,
            rows: &t.rows,
            notes: &[],
        })
        .collect();
    exporter(format).write(&Content {
        parts: vec![Part::Tables {
            tables,
            summary: &summary,
        }],
        machine: Some(Machine::Replay(r)),
    })
}

/// What to tell the user when a replay stopped early.
pub fn halt_message(h: &Halt) -> String {
    match h {
        Halt::Interrupted => "interrupted; the figures above are what was measured".into(),
        Halt::Deadline => {
            "the replay ran past its deadline (--timeout); the figures above are what was measured"
                .into()
        }
        Halt::DiskFull(m) => format!(
            "the disk filled up during the replay ({m}); the figures above are what was measured"
        ),
        Halt::Budget(m) => format!("{m}; the replay stopped there"),
        Halt::Failed(m) => format!("the replay failed: {m}"),
    }
}
