//! Replays a trace inside a run directory: recreates the files as they were
//! first seen ([`super::layout`]), then plays each thread's operations
//! (`play`) in order with the recorded think time between them, scaled by
//! the speed, keeping the recorded order between threads (`order`: an
//! operation waits for whatever other threads had finished before it began).
//! Every path goes through the sandbox (`execute`): whatever the trace
//! says, nothing outside the run directory is touched.
//!
//! The trace is streamed, never held: it is read once through first
//! ([`Prepared`]: its head and what its operations ask, checked before
//! anything is written), then read again as it plays (`feed`), so memory
//! grows with threads, open handles and files, not with operations.
//!
//! With `clients` N above 1 the trace is played N times at once, as dbench
//! runs N clients: each copy beneath its own `clients/clientK` (K from 1),
//! on threads of its own, with its own handles, cross-thread order and
//! share of the byte grant; a client on one thread reads the trace
//! itself, clients of several are fed by the calling thread, which reads
//! it once for them all. One client plays in the run directory itself, as
//! before.
//!
//! This file holds the entry points ([`lay_out_and_replay`],
//! [`threads_needed`]), their options and result, and the checks made
//! before anything is written.

mod execute;
mod fd_calls;
mod feed;
mod map;
mod order;
mod play;
mod room;

use super::budget::Allowance;
use super::format::Trace;
use super::halt::{Bounds, Guard, Halt};
use super::layout::lay_out;
use super::limits::{MAX_REPLAY_BUFFERS, MAX_THREADS, SPEED_RANGE};
pub use super::profile::Prepared;
use crate::sandbox::{Account, Metering, RunDir};
pub use room::{room, Room, RoomError};
use serde::{Deserialize, Serialize};

/// How fast to replay: the recorded think time scaled, or none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// Think time divided by this factor.
    Factor(f64),
    /// No think time at all.
    Max,
}

impl Speed {
    /// A think-time factor within [`SPEED_RANGE`], the one rule for scripts,
    /// guests and `plumb trace replay --speed`.
    pub fn factor(f: f64) -> Result<Speed, OptionError> {
        let (slow, fast) = SPEED_RANGE;
        if (slow..=fast).contains(&f) {
            return Ok(Speed::Factor(f));
        }
        Err(OptionError::Speed(f.to_string()))
    }
}

impl std::str::FromStr for Speed {
    type Err = OptionError;
    fn from_str(s: &str) -> Result<Speed, OptionError> {
        if s == "max" {
            return Ok(Speed::Max);
        }
        match s.parse::<f64>().map(Speed::factor) {
            Ok(Ok(speed)) => Ok(speed),
            _ => Err(OptionError::Speed(s.chars().take(40).collect())),
        }
    }
}

/// A replay option outside what a replay takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    /// A speed that is not a factor within [`SPEED_RANGE`] (as given).
    #[error("speed '{0}' is not a factor from {slow} to {fast} or 'max'", slow = SPEED_RANGE.0, fast = SPEED_RANGE.1)]
    Speed(String),
    /// A client count outside 1 to [`MAX_CLIENTS`].
    #[error("clients {0} is not from 1 to {MAX_CLIENTS}")]
    Clients(u64),
    /// Not `touch` or `skip` (as given, cut short).
    #[error("mmap '{0}' is not 'touch' or 'skip'")]
    Maps(String),
}

/// What a replay does with a trace's maps (`map` records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MapReplay {
    /// Maps each range the same way and touches its pages once.
    #[default]
    Touch,
    /// Notes them without replaying, as plumb did before trace version 5.
    Skip,
}

impl std::str::FromStr for MapReplay {
    type Err = OptionError;
    /// `touch` or `skip`, as scripts and `plumb trace replay --mmap` write it.
    fn from_str(s: &str) -> Result<MapReplay, OptionError> {
        match s {
            "touch" => Ok(MapReplay::Touch),
            "skip" => Ok(MapReplay::Skip),
            other => Err(OptionError::Maps(other.chars().take(40).collect())),
        }
    }
}

/// Most copies of a trace one replay plays at once.
pub const MAX_CLIENTS: u32 = 128;

/// How a replay runs: its pace, whether the recorded threads are kept, and
/// how many copies play at once.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// Think-time scaling.
    pub speed: Speed,
    /// Keep the recorded threads (true) or play everything on one thread.
    pub keep_threads: bool,
    /// Copies of the trace played at once, each in `clients/clientK`
    /// (1 to [`MAX_CLIENTS`]; 1 plays in the run directory itself).
    pub clients: u32,
    /// Whether maps are replayed or only noted.
    pub maps: MapReplay,
}

impl ReplayOptions {
    /// The client count within 1 to [`MAX_CLIENTS`], the one rule for
    /// scripts, guests and `plumb trace replay --clients`.
    pub fn check_clients(clients: u64) -> Result<u32, OptionError> {
        match u32::try_from(clients) {
            Ok(n) if (1..=MAX_CLIENTS).contains(&n) => Ok(n),
            _ => Err(OptionError::Clients(clients)),
        }
    }
}

/// The directory client `k` (from 1) of `clients` plays in: the run
/// directory itself for a lone client.
pub fn client_dir(k: u32, clients: u32) -> String {
    if clients <= 1 {
        String::new()
    } else {
        format!("clients/client{k}")
    }
}

/// The schema a saved replay result (`plumb trace replay --json`) names, so
/// `plumb show` knows it.
pub const REPLAY_SCHEMA: &str = "plumb.replay.v1";

/// What a replay's time is measured against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reference {
    /// The application run without the tracer (`plumb trace record` ran it
    /// again to know): the think time was scaled to it.
    Untraced,
    /// The run under the tracer: its think time includes the tracer's
    /// slowdown.
    Traced,
    /// The trace's own clock (an import without a tracer record).
    #[default]
    Recording,
}

impl Reference {
    /// The reference for a replay of `t`, and its seconds.
    pub fn of(t: &Trace) -> (Reference, f64) {
        let recorded = t.duration_us as f64 / 1e6;
        match (t.untraced_us, &t.tracer) {
            (Some(u), Some(_)) => (Reference::Untraced, u as f64 / 1e6),
            (_, Some(_)) => (Reference::Traced, recorded),
            _ => (Reference::Recording, recorded),
        }
    }

    /// Its name in results (`time_vs_untraced`).
    pub fn name(self) -> &'static str {
        match self {
            Reference::Untraced => "untraced",
            Reference::Traced => "traced",
            Reference::Recording => "recording",
        }
    }
}

impl ReplayResult {
    /// The replay's time against its reference, as the summary says it:
    /// which reference, its seconds, and the ratio.
    pub fn against(&self) -> String {
        let (reference, seconds) = if self.reference_seconds > 0.0 {
            (self.reference, self.reference_seconds)
        } else {
            (Reference::Recording, self.original_seconds)
        };
        // An untimed trace (a dbench load file without times) has no ratio.
        if seconds <= 0.0 {
            return "untimed".into();
        }
        let ratio = self.seconds / seconds;
        match reference {
            Reference::Untraced => format!(
                "the untraced run took {seconds:.3} s, ratio {ratio:.3}; traced {:.3} s",
                self.original_seconds
            ),
            Reference::Traced => format!(
                "the traced run took {seconds:.3} s, ratio {ratio:.3}; no untraced run: think time includes the tracer's slowdown"
            ),
            Reference::Recording => format!("recorded {seconds:.3} s, ratio {ratio:.3}"),
        }
    }
}

/// Figures for one kind of operation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpSummary {
    /// The operation's name as the trace shows it (`pread`, `open`, ...).
    pub op: String,
    /// How many were replayed.
    pub count: u64,
    /// Bytes read or written.
    pub bytes: u64,
    /// How many failed on replay as they failed in the recording (errors
    /// the application also saw).
    pub expected_errors: u64,
    /// How many ended otherwise than in the recording: a failure the
    /// recording did not see, a success where it failed, another errno.
    pub divergences: u64,
    /// Mean latency in µs.
    pub mean_us: f64,
    /// Median latency in µs.
    pub p50_us: f64,
    /// 99th percentile in µs.
    pub p99_us: f64,
    /// Largest latency in µs.
    pub max_us: f64,
}

/// Figures for one named step (see [`crate::trace::format::Steps`]): its
/// latency is the time of its operations together.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepSummary {
    /// The step's name (`NTCreateX`, `ReadX`, ...).
    pub step: String,
    /// How many were replayed.
    pub count: u64,
    /// Mean latency in µs.
    pub mean_us: f64,
    /// Median latency in µs.
    pub p50_us: f64,
    /// 99th percentile in µs.
    pub p99_us: f64,
    /// Largest latency in µs.
    pub max_us: f64,
}

/// What a replay measured, per kind of operation and in all, and what
/// the layout wrote before it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplayResult {
    /// Per operation type, by name.
    pub ops: Vec<OpSummary>,
    /// Operations replayed (old `mmap` records, maps under `--mmap skip`,
    /// implicit opens and inherited descriptors are not counted).
    pub total_ops: u64,
    /// Operations that ended otherwise than in the recording.
    pub divergences: u64,
    /// Operations that failed as they failed in the recording.
    pub expected_errors: u64,
    /// Operations noted but not replayed (old `mmap` records, and maps
    /// under `--mmap skip`).
    pub skipped: u64,
    /// The first divergence, if any, naming the record.
    pub first_divergence: Option<String>,
    /// Why the replay stopped before its end, if it did (the figures are
    /// what was measured until then).
    pub halted: Option<Halt>,
    /// Replay wall time in seconds.
    pub seconds: f64,
    /// The recording's length in seconds.
    pub original_seconds: f64,
    /// What the replay's time is measured against.
    #[serde(default)]
    pub reference: Reference,
    /// The reference's seconds: the untraced run's, else the recording's
    /// (0 in results saved before the field: then `original_seconds`).
    #[serde(default)]
    pub reference_seconds: f64,
    /// seconds / reference_seconds.
    pub time_ratio: f64,
    /// Files recreated before the replay.
    pub files_created: u64,
    /// Bytes written to recreate them.
    pub bytes_laid_out: u64,
    /// Copies of the trace played at once (the figures above are their sums).
    pub clients: u32,
    /// Seconds each client took, from the common start to its last thread's
    /// end (client 1 first).
    pub client_seconds: Vec<f64>,
    /// Per named step, in the trace's order of first use (empty when the
    /// trace names none).
    pub steps: Vec<StepSummary>,
}

/// Replay threads of each client: one per recorded thread, or one.
fn lanes(t: &Trace, keep_threads: bool) -> usize {
    if keep_threads {
        t.threads.len().max(1)
    } else {
        1
    }
}

/// Threads the replay starts for `t` under `o`: each client's replay
/// threads (a client's only thread reads the trace itself; the calling
/// thread reads it for clients of several).
pub fn threads_needed(t: &Trace, o: ReplayOptions) -> usize {
    lanes(t, o.keep_threads).saturating_mul(o.clients.max(1) as usize)
}

/// Bytes the replay of `p` under `o` may write at most: every client's
/// estimate (saturating).
pub fn bytes_needed(p: &Prepared, o: ReplayOptions) -> u64 {
    p.profile.bytes.saturating_mul(u64::from(o.clients.max(1)))
}

/// What the inodes the replay of `p` under `o` makes may take at most:
/// every client's estimate, and the clients' own directories.
pub fn metadata_needed(p: &Prepared, o: ReplayOptions) -> super::budget::Metadata {
    let clients = o.clients.max(1);
    let mut m = p.profile.metadata.times(u64::from(clients));
    if clients > 1 {
        m.add("clients", true);
        for k in 1..=clients {
            m.add(&client_dir(k, clients), true);
        }
    }
    m
}

/// Memory the replay threads' I/O buffers may take together (every
/// client's): each as large as its largest transfer, at least 1 MiB; more
/// than [`MAX_REPLAY_BUFFERS`] is refused before anything starts.
fn check_buffers(p: &Prepared, o: ReplayOptions) -> Result<(), Refusal> {
    let largest = &p.profile.largest;
    let lanes = lanes(&p.head, o.keep_threads);
    let each = |l: u64| l.max(1 << 20);
    let total = if o.keep_threads {
        largest
            .iter()
            .fold(0u64, |sum, l| sum.saturating_add(each(*l)))
    } else {
        each(largest.iter().copied().max().unwrap_or(0))
    };
    let total = total.saturating_mul(u64::from(o.clients));
    if total > MAX_REPLAY_BUFFERS {
        return Err(Refusal::Buffers {
            threads: lanes.saturating_mul(o.clients as usize),
            mib: total >> 20,
        });
    }
    Ok(())
}

/// Why a replay could not start.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The trace asks for more than a replay may use (bad input).
    #[error("{0}")]
    Refused(Refusal),
    /// Laying out the files stopped (signal, deadline, full disk, failure).
    #[error("{0}")]
    Layout(Halt),
}

/// What a replay refuses before it writes anything.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// An option out of its range.
    #[error(transparent)]
    Option(#[from] OptionError),
    /// More replay threads than may run at once.
    #[error("{clients} client(s) of {per_client} thread(s) are {threads} replay threads; at most {MAX_THREADS} may run at once")]
    Threads {
        /// Clients asked.
        clients: u32,
        /// Threads of each.
        per_client: usize,
        /// Threads in all.
        threads: usize,
    },
    /// I/O buffers past [`MAX_REPLAY_BUFFERS`].
    #[error("the replay's {threads} thread(s) would need {mib} MiB of I/O buffers; at most {max} MiB are allowed (replay with --threads 1, fewer clients, or fewer large transfers)", max = MAX_REPLAY_BUFFERS >> 20)]
    Buffers {
        /// Replay threads in all.
        threads: usize,
        /// MiB their buffers need.
        mib: u64,
    },
    /// An estimate past the byte grant.
    #[error("the replay may write {need} bytes but only {granted} are granted")]
    OverGrant {
        /// Bytes the replay may write.
        need: u64,
        /// Bytes granted.
        granted: u64,
    },
    /// The run directory could not be metered.
    #[error("the run directory: {0}")]
    RunDir(std::io::Error),
}

/// Recreates the files (each client's), then replays within `bounds`; the
/// result says how much was laid out, and why it stopped early if it did.
/// Refuses, before writing anything, a client count outside 1 to
/// [`MAX_CLIENTS`] or whose threads pass [`MAX_THREADS`], a trace whose
/// threads' buffers pass [`MAX_REPLAY_BUFFERS`], or whose estimate passes
/// `bounds.max_bytes`.
pub fn lay_out_and_replay(
    p: &Prepared,
    dir: &RunDir,
    o: ReplayOptions,
    bounds: Bounds,
) -> Result<ReplayResult, ReplayError> {
    let refused = |r: Refusal| ReplayError::Refused(r);
    let t = &p.head;
    ReplayOptions::check_clients(u64::from(o.clients)).map_err(|e| refused(e.into()))?;
    let per_client = lanes(t, o.keep_threads);
    let threads = threads_needed(t, o);
    if threads > MAX_THREADS {
        return Err(refused(Refusal::Threads {
            clients: o.clients,
            per_client,
            threads,
        }));
    }
    check_buffers(p, o).map_err(refused)?;
    let need = bytes_needed(p, o);
    if need > bounds.max_bytes {
        return Err(refused(Refusal::OverGrant {
            need,
            granted: bounds.max_bytes,
        }));
    }
    // Every name the replay makes is charged to its estimate, counted the
    // way the estimate counts (no lookups: the replay makes the recorded
    // calls and no others), so no mistake in the estimate can pass it.
    let meta = metadata_needed(p, o);
    let dir = &dir
        .metered(Account::new(meta.bytes, meta.inodes), Metering::UpperBound)
        .map_err(|e| refused(Refusal::RunDir(e)))?;
    let guard = Guard::new(bounds);
    // Each client may write its share of the grant: its own estimate fits.
    let share = guard.max_bytes() / u64::from(o.clients);
    let allowances: Vec<Allowance> = (0..o.clients).map(|_| Allowance::new(t, share)).collect();
    let dirs: Vec<String> = (1..=o.clients).map(|k| client_dir(k, o.clients)).collect();
    let (mut files, mut bytes) = (0u64, 0u64);
    for d in &dirs {
        let (f, b) = lay_out(t, &p.profile.files, dir, &guard, d).map_err(ReplayError::Layout)?;
        files = files.saturating_add(f);
        bytes = bytes.saturating_add(b);
    }
    let mut r = play::replay(
        p,
        dir,
        o,
        lanes(t, o.keep_threads),
        &guard,
        &play::Clients {
            dirs: &dirs,
            allowances: &allowances,
        },
    );
    r.files_created = files;
    r.bytes_laid_out = bytes;
    Ok(r)
}
