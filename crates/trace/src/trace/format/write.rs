//! Writing a trace: version 2, or version 3 when it holds locks or steps,
//! version 4 when it holds the untraced time, 5 when it holds maps;
//! each operation's arguments as the table of operations (`ops.rs`) says.

use super::escape::encode;
use super::{errno, Trace, MAGIC, MAGIC_V3, MAGIC_V4, MAGIC_V5};
use std::fmt::Write as _;

impl Trace {
    /// The trace as text, in the oldest version that holds it.
    pub fn to_text(&self) -> String {
        let magic = match self.version() {
            5 => MAGIC_V5,
            4 => MAGIC_V4,
            3 => MAGIC_V3,
            _ => MAGIC,
        };
        let mut out = format!("{magic}\nduration_us {}\n", self.duration_us);
        if let Some(t) = &self.tracer {
            let _ = writeln!(out, "tracer {} {} {}", t.name, t.wall_us, t.calls);
        }
        if let Some(u) = self.untraced_us {
            let _ = writeln!(out, "untraced {u}");
        }
        for (i, f) in self.files.iter().enumerate() {
            let size = f.size.map_or("-".to_string(), |s| s.to_string());
            let _ = write!(
                out,
                "file {i} {} {size} {}",
                f.kind.letter(),
                encode(&f.path)
            );
            if let Some(target) = &f.target {
                let _ = write!(out, " {}", encode(target));
            }
            out.push('\n');
        }
        for (i, t) in self.threads.iter().enumerate() {
            let _ = writeln!(out, "thread {i} {t}");
        }
        let mut starts = self.steps.starts.iter().peekable();
        for (i, op) in self.ops.iter().enumerate() {
            let _ = write!(
                out,
                "op {} {} {} {} {}",
                op.thread,
                op.start_us,
                op.dur_us,
                op.kind.name(),
                op.kind.args()
            );
            if let Some(e) = op.failed {
                let _ = write!(out, " ={}", errno::name(e));
            }
            if let Some((_, id)) = starts.next_if(|(at, _)| *at as usize == i) {
                let _ = write!(out, " @{}", self.steps.name(*id));
            }
            out.push('\n');
        }
        let _ = writeln!(out, "end {}", self.ops.len());
        out
    }
}
