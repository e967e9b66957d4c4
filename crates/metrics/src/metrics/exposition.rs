//! A [`Snapshot`] in the OpenMetrics text format, written by the
//! Prometheus project's own client (`prometheus-client`): its encoder
//! writes the descriptors, the label escaping, the sample suffixes and the
//! closing `# EOF`; this module only says which metric holds what.
//!
//! The metrics (every one labelled with the run's `label`):
//! - `plumb_run_info{version, host, pack, pack_sha256}` — one per pack run;
//! - `plumb_run_progress_ratio` — steps finished of those planned (a step is
//!   a scenario run for `plumb run`, a job for `plumb fio`);
//!   `plumb_run_elapsed_seconds`; `plumb_run_running` (1, then 0 while the
//!   endpoint lingers after the run);
//! - `plumb_cpu_seconds_total{mode="user"|"system"}` — this process;
//! - `plumb_series_dropped_total` — series of the scenarios' own the board
//!   did not keep (past its cap of 256 per run, or a name another
//!   scenario uses for the other kind); the run is not affected;
//! - per `pack`, `scenario`, `jobname` (fio's JSON key; Prometheus keeps `job` for its scrape job) and `direction` (`read`, `write`):
//!   `plumb_io_operations_total`, `plumb_io_bytes_total` and the
//!   completion latency histogram `plumb_io_latency_seconds` (buckets at
//!   every power of two nanoseconds from 1,024 ns to 2^34 ns);
//! - a scenario's own series: `plumb_script_NAME_total` (`report::counter`)
//!   and `plumb_script_NAME` (`report::gauge`), per `pack` and `scenario`.

use super::board::{ScriptKind, Snapshot};
use crate::stats::live_latency::EXPORT_EDGES_NS;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use std::fmt::Error;

/// The two text formats a scrape may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 (what Prometheus asks for).
    OpenMetrics,
    /// Prometheus's classic text format 0.0.4 (what a scrape that asks for
    /// no OpenMetrics gets: curl, `promtool check metrics`).
    Prometheus,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it names
    /// `application/openmetrics-text` (as Prometheus's scrapes do), the
    /// classic text otherwise — the negotiation of Prometheus's own Go
    /// client.
    pub fn from_accept(accept: Option<&[u8]>) -> Format {
        let wants = accept.is_some_and(|a| {
            a.windows(OPENMETRICS_TYPE.len())
                .any(|w| w.eq_ignore_ascii_case(OPENMETRICS_TYPE.as_bytes()))
        });
        if wants {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    /// The `Content-Type` of the format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }
}

/// The media type that asks for OpenMetrics.
const OPENMETRICS_TYPE: &str = "application/openmetrics-text";

/// The directions, as the `direction` label names them.
const DIRECTIONS: [&str; 2] = ["read", "write"];

/// `snapshot` in `format` (OpenMetrics ends with `# EOF`).
pub fn encode(snapshot: Snapshot, format: Format) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Scrape(snapshot)));
    let mut out = String::new();
    // Writing into a String cannot fail; a collector that could not encode
    // leaves what it wrote.
    let _ = match format {
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
        Format::Prometheus => {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
        }
    };
    out
}

/// One scrape's snapshot, as a collector the registry encodes.
#[derive(Debug)]
struct Scrape(Snapshot);

type Labels<'a> = Vec<(&'static str, &'a str)>;

/// Writes one metric family: its descriptor, then `samples` with it.
fn family(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    kind: MetricType,
    samples: impl FnOnce(&mut MetricEncoder) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut m = enc.encode_descriptor(name, help, unit, kind)?;
    samples(&mut m)
}

fn gauge(m: &mut MetricEncoder, labels: &Labels, value: f64) -> Result<(), Error> {
    ConstGauge::new(value).encode(m.encode_family(labels)?)
}

fn counter<T>(m: &mut MetricEncoder, labels: &Labels, value: T) -> Result<(), Error>
where
    ConstCounter<T>: EncodeMetric,
{
    ConstCounter::new(value).encode(m.encode_family(labels)?)
}

impl Collector for Scrape {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), Error> {
        run_families(&mut enc, &self.0)?;
        io_families(&mut enc, &self.0)?;
        script_families(&mut enc, &self.0)
    }
}

/// The run's families: its info, progress, elapsed time, whether it runs,
/// and this process's CPU time.
fn run_families(enc: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    let run: Labels = vec![("label", &s.label)];
    family(
        enc,
        "plumb_run",
        "The run: plumb's version, the host, each pack run and its SHA-256.",
        None,
        MetricType::Info,
        |m| {
            let version = env!("CARGO_PKG_VERSION");
            for (pack, sha) in &s.packs {
                let info: Labels = vec![
                    ("version", version),
                    ("host", &s.host),
                    ("pack", pack),
                    ("pack_sha256", sha),
                ];
                m.encode_family(&run)?.encode_info(&info)?;
            }
            if s.packs.is_empty() {
                let info: Labels = vec![("version", version), ("host", &s.host)];
                m.encode_family(&run)?.encode_info(&info)?;
            }
            Ok(())
        },
    )?;
    family(
        enc,
        "plumb_run_progress",
        "Steps of the run finished, of those planned (a step: a scenario run for plumb run, a job for plumb fio).",
        Some(&Unit::Other("ratio".into())),
        MetricType::Gauge,
        |m| {
            let ratio = if s.planned == 0 {
                if s.running {
                    0.0
                } else {
                    1.0
                }
            } else {
                s.done as f64 / s.planned as f64
            };
            gauge(m, &run, ratio)
        },
    )?;
    family(
        enc,
        "plumb_run_elapsed",
        "Time since the run started.",
        Some(&Unit::Seconds),
        MetricType::Gauge,
        |m| gauge(m, &run, s.elapsed),
    )?;
    family(
        enc,
        "plumb_run_running",
        "1 while the run goes on, 0 once it ended (the endpoint lingers a little for a last scrape).",
        None,
        MetricType::Gauge,
        |m| gauge(m, &run, if s.running { 1.0 } else { 0.0 }),
    )?;
    family(
        enc,
        "plumb_cpu",
        "CPU time this plumb process used, every thread.",
        Some(&Unit::Seconds),
        MetricType::Counter,
        |m| {
            for (mode, secs) in ["user", "system"].into_iter().zip(s.cpu_seconds) {
                let labels: Labels = vec![("label", &s.label), ("mode", mode)];
                counter(m, &labels, secs)?;
            }
            Ok(())
        },
    )?;
    family(
        enc,
        "plumb_series_dropped",
        "Series of the scenarios' own this endpoint did not keep (past its cap, or a name used for both kinds); the run is not affected.",
        None,
        MetricType::Counter,
        |m| counter(m, &run, s.dropped),
    )?;
    Ok(())
}

/// The I/O families, per job and direction: operations, bytes and the
/// latency histogram.
fn io_families(enc: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    let job_labels = |j: &'_ super::board::JobView, d: usize| -> Vec<(&'static str, String)> {
        vec![
            ("label", s.label.clone()),
            ("pack", j.pack.clone()),
            ("scenario", j.scenario.clone()),
            ("jobname", j.job.clone()),
            ("direction", DIRECTIONS[d].to_string()),
        ]
    };
    family(
        enc,
        "plumb_io_operations",
        "I/O operations a job completed in its measured phase (ramp excluded), its clones together.",
        None,
        MetricType::Counter,
        |m| {
            for j in &s.jobs {
                for d in 0..2 {
                    ConstCounter::new(j.figures.ios[d])
                        .encode(m.encode_family(&job_labels(j, d))?)?;
                }
            }
            Ok(())
        },
    )?;
    family(
        enc,
        "plumb_io",
        "Bytes a job moved in its measured phase, its clones together.",
        Some(&Unit::Bytes),
        MetricType::Counter,
        |m| {
            for j in &s.jobs {
                for d in 0..2 {
                    ConstCounter::new(j.figures.bytes[d])
                        .encode(m.encode_family(&job_labels(j, d))?)?;
                }
            }
            Ok(())
        },
    )?;
    family(
        enc,
        "plumb_io_latency",
        "Completion latency of a job's I/O (as fio's clat), buckets at powers of two nanoseconds.",
        Some(&Unit::Seconds),
        MetricType::Histogram,
        |m| {
            for j in &s.jobs {
                for d in 0..2 {
                    let l = &j.figures.latency[d];
                    // Per-bucket counts (the encoder adds them up).
                    let mut buckets = Vec::with_capacity(EXPORT_EDGES_NS.len() + 1);
                    let mut before = 0u64;
                    for (edge, below) in EXPORT_EDGES_NS.iter().zip(l.below) {
                        buckets.push((*edge as f64 / 1e9, below.saturating_sub(before)));
                        before = below;
                    }
                    buckets.push((f64::INFINITY, l.count.saturating_sub(before)));
                    m.encode_family(&job_labels(j, d))?
                        .encode_histogram::<Labels>(
                            l.sum_ns as f64 / 1e9,
                            l.count,
                            &buckets,
                            None,
                        )?;
                }
            }
            Ok(())
        },
    )?;
    Ok(())
}

/// A scenario's own series, one family per name (counter or gauge).
fn script_families(enc: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    // A name's series of several scenarios go in one family.
    let mut names: Vec<(&str, ScriptKind)> = Vec::new();
    for x in &s.script {
        if !names.iter().any(|(n, _)| *n == x.name) {
            names.push((&x.name, x.kind));
        }
    }
    for (name, kind) in names {
        let (kind, help) = match kind {
            ScriptKind::Counter => (
                MetricType::Counter,
                "A scenario's own counter (report::counter).",
            ),
            ScriptKind::Gauge => (MetricType::Gauge, "A scenario's own gauge (report::gauge)."),
        };
        let family_name = format!("plumb_script_{name}");
        family(enc, &family_name, help, None, kind, |m| {
            for y in s.script.iter().filter(|y| y.name == name) {
                let labels: Labels = vec![
                    ("label", &s.label),
                    ("pack", &y.pack),
                    ("scenario", &y.scenario),
                ];
                match y.kind {
                    ScriptKind::Counter => counter(m, &labels, y.value)?,
                    ScriptKind::Gauge => gauge(m, &labels, y.value)?,
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Board, JobFigures, Latency, Steps};

    fn board() -> std::sync::Arc<Board> {
        let b = Board::new("lab \"1\"", "h", Steps::Scenarios);
        b.add_pack("p", &"a".repeat(64));
        b.plan(2);
        b.step_done(Steps::Scenarios, 1);
        let s = b.scope("p", "s");
        let mut counts = vec![0u64; crate::stats::live_latency::BUCKETS];
        counts[152] = 3; // 6,144 ns: at least 2^12 ns, below 2^13 ns
        let tap = s.tap(&["j"]);
        tap.update(&[JobFigures {
            ios: [3, 0],
            bytes: [12288, 0],
            latency: [Latency::from_live(&counts, 24_000), Latency::default()],
        }]);
        s.script("docs", 5.0, ScriptKind::Counter).unwrap();
        drop(tap);
        b
    }

    #[test]
    fn openmetrics_lines_of_a_known_board() {
        let text = encode(board().snapshot(), Format::OpenMetrics);
        for line in [
            "# TYPE plumb_io_operations counter",
            r#"plumb_io_operations_total{label="lab \"1\"",pack="p",scenario="s",jobname="j",direction="read"} 3"#,
            r#"plumb_io_bytes_total{label="lab \"1\"",pack="p",scenario="s",jobname="j",direction="read"} 12288"#,
            "# UNIT plumb_io_latency_seconds seconds",
            r#"plumb_io_latency_seconds_count{label="lab \"1\"",pack="p",scenario="s",jobname="j",direction="read"} 3"#,
            r#"plumb_io_latency_seconds_bucket{le="0.000004096",label="lab \"1\"",pack="p",scenario="s",jobname="j",direction="read"} 0"#,
            r#"plumb_io_latency_seconds_bucket{le="0.000008192",label="lab \"1\"",pack="p",scenario="s",jobname="j",direction="read"} 3"#,
            r#"plumb_run_progress_ratio{label="lab \"1\""} 0.5"#,
            r#"plumb_script_docs_total{label="lab \"1\"",pack="p",scenario="s"} 5.0"#,
            r#"plumb_series_dropped_total{label="lab \"1\""} 0"#,
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        }
        assert!(
            text.contains(&format!("pack_sha256=\"{}\"", "a".repeat(64))),
            "{text}"
        );
    }

    #[test]
    fn the_classic_text_has_no_openmetrics_only_lines() {
        let text = encode(board().snapshot(), Format::Prometheus);
        assert!(
            !text.contains("# EOF") && !text.contains("# UNIT"),
            "{text}"
        );
        assert!(text.contains("# TYPE plumb_run_info gauge"), "{text}");
        assert_eq!(Format::from_accept(None), Format::Prometheus);
        assert_eq!(
            Format::from_accept(Some(b"application/OpenMetrics-text;version=1.0.0")),
            Format::OpenMetrics
        );
        assert_eq!(Format::from_accept(Some(b"text/plain")), Format::Prometheus);
    }
}
