//! `--metrics-listen` and `--metrics-linger`, shared by `plumb run`,
//! `plumb fio` and `plumb fleet run`: start the `/metrics` endpoint before
//! the run, and after it wait a little for a last scrape.

use crate::metrics::{listen_address, Board, Endpoint, Limits, Steps};
use crate::terminal::clean;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The linger when `--metrics-linger` is not given.
pub const DEFAULT_LINGER: &str = "15s";
/// The longest linger after a run a signal stopped (SIGINT and SIGTERM
/// end plumb within a second or two).
const STOPPED_LINGER: Duration = Duration::from_secs(1);

/// The endpoint's options.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MetricsArgs {
    /// Serve OpenMetrics at http://ADDR:PORT/metrics while the run lasts
    /// (a port alone listens on loopback; port 0 picks a free one).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics_listen: Option<String>,
    /// After the run, keep the endpoint up until a scrape has seen the
    /// final figures, at most this long.
    #[arg(long, value_name = "DURATION", requires = "metrics_listen")]
    pub metrics_linger: Option<String>,
}

/// A running endpoint and the board it shows.
#[derive(Debug)]
pub struct Live {
    endpoint: Endpoint,
    board: Arc<Board>,
    linger: Duration,
}

impl MetricsArgs {
    /// Starts the endpoint when asked (None when not), for a run labelled
    /// `label` whose progress counts `steps`; an address that cannot be
    /// used is an error naming the flag, before anything runs.
    pub fn start(&self, label: &str, steps: Steps) -> Result<Option<Live>, String> {
        let Some(listen) = &self.metrics_listen else {
            return Ok(None);
        };
        let linger = self.metrics_linger.as_deref().unwrap_or(DEFAULT_LINGER);
        let linger =
            crate::units::parse_duration(linger).map_err(|e| format!("--metrics-linger: {e}"))?;
        let addr = listen_address(listen).map_err(|e| format!("--metrics-listen {e}"))?;
        let host = crate::sysinfo::host_info().hostname;
        let label = if label.is_empty() { &host } else { label };
        let board = Board::new(label, &host, steps);
        board.on_first_drop(Box::new(|what: &str| {
            eprintln!(
                "plumb: note: the metrics endpoint dropped {} (it counts what it drops in plumb_series_dropped_total; the run goes on as without it)",
                clean(what)
            )
        }));
        let endpoint = Endpoint::start(addr, board.clone(), Limits::default())
            .map_err(|e| format!("--metrics-listen {}: {e}", clean(listen)))?;
        let at = endpoint.local_addr();
        if !at.ip().is_loopback() {
            eprintln!(
                "plumb: warning: the metrics endpoint listens on {at}, beyond this machine: whoever reaches it reads the run's figures"
            );
        }
        eprintln!("plumb: metrics at http://{at}/metrics");
        Ok(Some(Live {
            endpoint,
            board,
            linger,
        }))
    }

    /// The flags again, for a `plumb run` on another host (`plumb fleet run`).
    pub fn forwarded(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(l) = &self.metrics_listen {
            args.extend(["--metrics-listen".to_string(), l.clone()]);
        }
        if let Some(l) = &self.metrics_linger {
            args.extend(["--metrics-linger".to_string(), l.clone()]);
        }
        args
    }
}

impl Live {
    /// The board the run publishes on.
    pub fn board(&self) -> &Arc<Board> {
        &self.board
    }

    /// The run ended: scrapes see it so; waits until one has (or the
    /// linger passed, or a signal — raised before, or during the wait —
    /// cuts it to a second), then stops the endpoint.
    pub fn finish(self, stop: &AtomicBool) {
        self.board.finish();
        let stopped_before = stop.load(Ordering::Relaxed);
        let linger = if stopped_before {
            self.linger.min(STOPPED_LINGER)
        } else {
            self.linger
        };
        let start = Instant::now();
        let mut told = false;
        while self.endpoint.counts().final_scrapes.load(Ordering::Relaxed) == 0
            && start.elapsed() < linger
            && (stopped_before || !stop.load(Ordering::Relaxed))
        {
            if !told && start.elapsed() >= Duration::from_secs(1) {
                eprintln!(
                    "plumb: waiting up to {} s for a last scrape of http://{}/metrics (--metrics-linger)",
                    linger.as_secs(),
                    self.endpoint.local_addr()
                );
                told = true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_are_forwarded_as_given() {
        let m = MetricsArgs {
            metrics_listen: Some("0.0.0.0:9464".into()),
            metrics_linger: Some("30s".into()),
        };
        assert_eq!(
            m.forwarded(),
            [
                "--metrics-listen",
                "0.0.0.0:9464",
                "--metrics-linger",
                "30s"
            ]
        );
        assert!(MetricsArgs::default().forwarded().is_empty());
        assert!(MetricsArgs::default()
            .start("x", Steps::Jobs)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_bad_linger_or_address_is_an_error_naming_the_flag() {
        let m = |listen: &str, linger: Option<&str>| MetricsArgs {
            metrics_listen: Some(listen.into()),
            metrics_linger: linger.map(str::to_string),
        };
        let e = m("127.0.0.1:0", Some("soon"))
            .start("x", Steps::Jobs)
            .unwrap_err();
        assert!(e.starts_with("--metrics-linger"), "{e}");
        let e = m("nowhere", None).start("x", Steps::Jobs).unwrap_err();
        assert!(e.starts_with("--metrics-listen"), "{e}");
    }
}
