//! `plumb trace show`: what a trace holds — operations by type, bytes,
//! files, threads, the read and write size histograms, the fsync rate and
//! the duration, the calls that failed in the recording, and how long the
//! program ran under the tracer.

use super::format::stream::Source;
use super::format::{EntryKind, Op, OpKind, ThinkTally, Trace, TraceError};
use serde::Serialize;
use std::collections::BTreeMap;

/// A trace's summary.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Recording length in seconds.
    pub duration_s: f64,
    /// Threads.
    pub threads: usize,
    /// Files and directories touched.
    pub files: usize,
    /// Bytes of the files that existed when first touched.
    pub existing_bytes: u64,
    /// Operations (implicit opens not counted).
    pub ops: usize,
    /// Count and bytes per operation type.
    pub by_op: BTreeMap<String, (u64, u64)>,
    /// Reads by size (power-of-two buckets: bucket → count).
    pub read_sizes: BTreeMap<u64, u64>,
    /// Writes by size.
    pub write_sizes: BTreeMap<u64, u64>,
    /// fsync + fdatasync + sync_file_range per second.
    pub syncs_per_sec: f64,
    /// Opens with O_DIRECT.
    pub direct_opens: u64,
    /// Directories among the files.
    pub directories: usize,
    /// Per operation type, the calls that failed in the recording (a replay
    /// expects them to fail the same way).
    pub failed: BTreeMap<String, u64>,
    /// Seconds the program ran under the tracer, when recorded.
    pub traced_s: Option<f64>,
    /// The tracer, when recorded.
    pub tracer: Option<String>,
    /// Seconds the program ran without the tracer, when measured.
    pub untraced_s: Option<f64>,
    /// The share of the recorded think time a replay at speed 1 keeps.
    pub think_scale: f64,
}

fn bucket(len: u64) -> u64 {
    len.max(1).next_power_of_two()
}

/// What the summary counts of the operations, taken in one at a time.
#[derive(Default)]
struct Counts {
    ops: usize,
    by_op: BTreeMap<String, (u64, u64)>,
    read_sizes: BTreeMap<u64, u64>,
    write_sizes: BTreeMap<u64, u64>,
    syncs: u64,
    direct_opens: u64,
    failed: BTreeMap<String, u64>,
    think: ThinkTally,
}

impl Counts {
    /// Takes in the next operation.
    fn op(&mut self, op: &Op) {
        self.think.op(op);
        if !op.kind.counted() {
            return;
        }
        if op.failed.is_some() {
            *self.failed.entry(op.kind.name().to_string()).or_default() += 1;
        }
        match &op.kind {
            OpKind::Open { flags, .. } if flags.direct => self.direct_opens += 1,
            OpKind::Read { len, .. } => *self.read_sizes.entry(bucket(*len)).or_default() += 1,
            OpKind::Write { len, .. } => *self.write_sizes.entry(bucket(*len)).or_default() += 1,
            OpKind::Fsync { .. } | OpKind::Fdatasync { .. } | OpKind::SyncFileRange { .. } => {
                self.syncs += 1
            }
            _ => {}
        }
        self.ops += 1;
        let e = self.by_op.entry(op.kind.name().to_string()).or_default();
        e.0 += 1;
        e.1 = e.1.saturating_add(op.kind.bytes());
    }

    /// The summary of the trace whose head is `t`.
    fn summary(self, t: &Trace) -> Summary {
        let duration_s = t.duration_us as f64 / 1e6;
        Summary {
            duration_s,
            threads: t.threads.len(),
            files: t.files.len(),
            existing_bytes: t
                .files
                .iter()
                .filter_map(|f| f.size)
                .fold(0u64, u64::saturating_add),
            ops: self.ops,
            by_op: self.by_op,
            read_sizes: self.read_sizes,
            write_sizes: self.write_sizes,
            syncs_per_sec: self.syncs as f64 / duration_s.max(1e-6),
            direct_opens: self.direct_opens,
            directories: t.files.iter().filter(|f| f.kind == EntryKind::Dir).count(),
            failed: self.failed,
            traced_s: t.tracer.as_ref().map(|r| r.wall_us as f64 / 1e6),
            tracer: t.tracer.as_ref().map(|r| r.name.clone()),
            untraced_s: t.untraced_us.map(|u| u as f64 / 1e6),
            think_scale: self.think.scale(t),
        }
    }
}

/// Summarises a trace held whole.
pub fn summarize(t: &Trace) -> Summary {
    let mut c = Counts::default();
    for op in &t.ops {
        c.op(op);
    }
    c.summary(t)
}

/// Summarises the trace `source` holds, reading it through (every record
/// checked as [`Trace::parse`] does) without holding its operations.
pub fn summarize_source(source: &Source) -> Result<Summary, TraceError> {
    let mut stream = source.stream()?;
    let mut c = Counts::default();
    while let Some(parsed) = stream.next_op()? {
        c.op(&parsed.op);
    }
    let head = stream.finish()?;
    Ok(c.summary(&head))
}

/// The summary as text.
pub fn render(s: &Summary) -> String {
    use crate::units::format_bytes_binary as b;
    let mut out = format!(
        "duration {:.3} s, {} thread(s), {} file(s) ({} existed), {} operations, {:.1} syncs/s, {} direct open(s)\n\n",
        s.duration_s,
        s.threads,
        s.files,
        b(s.existing_bytes as f64),
        s.ops,
        s.syncs_per_sec,
        s.direct_opens
    );
    match (&s.tracer, s.traced_s, s.untraced_s) {
        (Some(tracer), Some(secs), Some(own)) => {
            out = format!(
                "recorded under {tracer}: the program ran {secs:.3} s while traced and {own:.3} s without it; a replay at speed 1 keeps {:.3} of the think time here\n{out}",
                s.think_scale
            );
        }
        (Some(tracer), Some(secs), None) => {
            out = format!(
                "recorded under {tracer}: the program ran {secs:.3} s while traced; {tracer} slows every traced call, so think time here may be longer than the application's own\n{out}"
            );
        }
        _ => {}
    }
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header(["operation", "count", "failed", "bytes"]);
    for (op, (count, bytes)) in &s.by_op {
        table.add_row([
            op.clone(),
            count.to_string(),
            s.failed.get(op).map_or(String::new(), u64::to_string),
            if *bytes > 0 {
                b(*bytes as f64)
            } else {
                String::new()
            },
        ]);
    }
    out.push_str(&format!("{table}\n"));
    for (title, hist) in [
        ("read sizes", &s.read_sizes),
        ("write sizes", &s.write_sizes),
    ] {
        if hist.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{title} (up to):\n"));
        let max = *hist.values().max().unwrap_or(&1);
        for (size, count) in hist {
            let bar = "#".repeat(((*count as f64 / max as f64) * 40.0).ceil() as usize);
            out.push_str(&format!("  {:>9} {:>9} {bar}\n", b(*size as f64), count));
        }
    }
    out
}
