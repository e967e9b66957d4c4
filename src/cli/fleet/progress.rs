//! What a fleet command shows while its hosts work: a line per host on a
//! terminal (indicatif), plain lines prefixed with the host's name
//! otherwise.

use crate::fleet::run::Observer;
use crate::fleet::summary::{HostReport, Stage};
use crate::terminal::clean;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

/// Live progress: one line per host on a terminal, plain prefixed lines
/// otherwise — at most one every [`PLAIN_INTERVAL`] per host for the
/// host's own lines (a host that floods its output is not copied through).
pub(super) struct Progress {
    names: Vec<String>,
    bars: Option<(MultiProgress, Vec<ProgressBar>)>,
    /// When each host's last plain line was written; lines are written
    /// whole, one at a time.
    plain: Mutex<Vec<Option<std::time::Instant>>>,
}

/// The least time between two plain progress lines of one host.
const PLAIN_INTERVAL: Duration = Duration::from_millis(200);

impl Progress {
    pub(super) fn new(names: &[String]) -> Progress {
        let bars = std::io::stderr().is_terminal().then(|| {
            let m = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let width = names.iter().map(String::len).max().unwrap_or(4);
            let style = ProgressStyle::with_template(&format!(
                "{{prefix:{width}}} {{spinner}} {{elapsed:>4}} {{wide_msg}}"
            ))
            .expect("static template");
            let bars = names
                .iter()
                .map(|n| {
                    let b = m.add(ProgressBar::new_spinner());
                    b.set_style(style.clone());
                    b.set_prefix(clean(n).into_owned());
                    b.enable_steady_tick(Duration::from_millis(200));
                    b
                })
                .collect();
            (m, bars)
        });
        Progress {
            names: names.to_vec(),
            bars,
            plain: Mutex::new(vec![None; names.len()]),
        }
    }

    /// Shows `text` for `host`; a `droppable` line (the host's own) is
    /// skipped in plain mode when the host's last line was too recent.
    fn say(&self, host: usize, text: &str, droppable: bool) {
        match &self.bars {
            Some((_, bars)) => bars[host].set_message(text.to_string()),
            None => {
                let mut last = self.plain.lock().unwrap_or_else(|e| e.into_inner());
                let now = std::time::Instant::now();
                if droppable && last[host].is_some_and(|t| now - t < PLAIN_INTERVAL) {
                    return;
                }
                last[host] = Some(now);
                eprintln!("{}: {}", clean(&self.names[host]), text);
            }
        }
    }

    pub(super) fn finish(&self) {
        if let Some((_, bars)) = &self.bars {
            for b in bars {
                if !b.is_finished() {
                    b.finish();
                }
            }
        }
    }
}

impl Observer for Progress {
    fn stage(&self, host: usize, _stage: Stage, detail: &str) {
        self.say(host, &clean(detail), false);
    }

    fn line(&self, host: usize, line: &str) {
        self.say(host, &clean(line), true);
    }

    fn done(&self, host: usize, report: &HostReport) {
        let text = match &report.error {
            None => "done".to_string(),
            Some(e) => format!("failed at {}: {}", report.stage.name(), clean(e)),
        };
        // Without a terminal, the final summary says it once.
        if let Some((_, bars)) = &self.bars {
            bars[host].finish_with_message(text);
        }
    }
}
