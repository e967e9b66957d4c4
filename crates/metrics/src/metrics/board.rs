//! What a scrape of `/metrics` shows, kept as the run goes: the run's
//! description, its progress, every job's I/O figures and a scenario's own
//! series (`report::counter`, `report::gauge`).
//!
//! Writers are the threads that already watch a run — the job watcher
//! (every [`PUBLISH_EVERY`], from the counters the job threads publish for
//! the progress line), the scenario's thread (its own series, its steps) —
//! never a job thread: the endpoint adds no work to the I/O loop. The
//! endpoint's thread takes a [`Snapshot`] under the lock and encodes it
//! after letting go.
//!
//! The board is an observer: nothing on it fails a run. Past its caps it
//! merges jobs (under [`OTHER_JOBS`]) and drops series of the scenarios'
//! own, counting each series dropped (`plumb_series_dropped_total`) and
//! telling its [`Board::on_first_drop`] once; a scenario's calls are
//! checked by rules of its own, the same with or without an endpoint.

use crate::stats::live_latency::{counts_below_edges, EXPORT_EDGES_NS};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How often the job watcher publishes a job's figures here.
pub const PUBLISH_EVERY: Duration = Duration::from_millis(200);
/// Most job series (pack, scenario, job) a run exports; jobs past them are
/// counted together under the job name [`OTHER_JOBS`].
pub const MAX_JOB_SERIES: usize = 256;
/// The job name that collects the jobs past [`MAX_JOB_SERIES`].
pub const OTHER_JOBS: &str = "(others)";
/// Most series of the scenarios' own (`report::counter`, `report::gauge`)
/// a run exports (and a scenario may have); more are dropped and counted.
pub const MAX_SCRIPT_SERIES: usize = 256;
/// Most dropped series remembered, so that each is counted once; past
/// them, each update of a series not remembered counts again.
const MAX_DROPPED_KEYS: usize = 1 << 16;
/// Longest name of a scenario's own series, in bytes.
pub const MAX_SCRIPT_NAME: usize = 64;
/// Longest label value, in bytes (longer ones are cut on a character).
pub const MAX_LABEL_BYTES: usize = 128;
/// Most packs the info metric lists.
const MAX_PACKS: usize = 64;

/// Name endings OpenMetrics gives meanings of its own (a counter's
/// `_total`, a histogram's `_bucket`, …): a scenario's series may not end
/// with one.
const RESERVED_SUFFIXES: [&str; 8] = [
    "_total", "_created", "_count", "_sum", "_bucket", "_info", "_gcount", "_gsum",
];

/// A series of a scenario's own that could not be recorded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetricsError {
    /// The name is not one the exposition can carry.
    #[error("'{name}' is not a series name: {why}")]
    Name {
        /// The name given (cleaned of control characters).
        name: String,
        /// The rule it breaks.
        why: &'static str,
    },
    /// The value is not one the series can take.
    #[error("'{name}': {value} is not {want}")]
    Value {
        /// The series.
        name: String,
        /// The value given.
        value: f64,
        /// What the series takes.
        want: &'static str,
    },
    /// The name is already a series of the other kind.
    #[error("'{name}' is already a {was}; a name is a counter or a gauge, not both")]
    KindClash {
        /// The series.
        name: String,
        /// What it is already.
        was: &'static str,
    },
    /// The scenario already has as many series of its own as it may.
    #[error("a scenario has at most {MAX_SCRIPT_SERIES} series of its own")]
    TooMany,
}

/// What a series of a scenario's own is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptKind {
    /// Only goes up (`report::counter` adds to it).
    Counter,
    /// Goes up and down (`report::gauge` sets it).
    Gauge,
}

impl ScriptKind {
    /// The kind's name, as messages say it.
    pub fn name(self) -> &'static str {
        match self {
            ScriptKind::Counter => "counter",
            ScriptKind::Gauge => "gauge",
        }
    }
}

/// Checks a scenario's series `name` and `value` for `kind`, with or
/// without an endpoint (a scenario behaves the same either way): a name of
/// lowercase letters, digits and `_`, starting with a letter, at most
/// [`MAX_SCRIPT_NAME`] bytes, not ending like an OpenMetrics sample
/// (`_total`, …); a finite value, and for a counter one not below zero.
pub fn check_script_series(name: &str, value: f64, kind: ScriptKind) -> Result<(), MetricsError> {
    let refuse = |why| MetricsError::Name {
        name: crate::terminal::clean(name).chars().take(80).collect(),
        why,
    };
    if name.is_empty() || name.len() > MAX_SCRIPT_NAME {
        return Err(refuse("it must have 1 to 64 bytes"));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase())
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        return Err(refuse(
            "it must be lowercase letters, digits and _, starting with a letter",
        ));
    }
    if RESERVED_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return Err(refuse(
            "it may not end with _total, _created, _count, _sum, _bucket, _info, _gcount or _gsum (plumb adds _total to a counter)",
        ));
    }
    let want = match kind {
        ScriptKind::Counter if !(value.is_finite() && value >= 0.0) => {
            Some("a finite amount of at least 0 to add")
        }
        ScriptKind::Gauge if !value.is_finite() => Some("a finite value"),
        _ => None,
    };
    match want {
        Some(want) => Err(MetricsError::Value {
            name: name.to_string(),
            value,
            want,
        }),
        None => Ok(()),
    }
}

/// A label value from any text: control characters become `?` (the
/// exposition escapes only `\`, `"` and newline), at most
/// [`MAX_LABEL_BYTES`] bytes, cut on a character.
pub fn label_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_LABEL_BYTES));
    for c in text.chars() {
        let c = if c.is_control() { '?' } else { c };
        if out.len() + c.len_utf8() > MAX_LABEL_BYTES {
            break;
        }
        out.push(c);
    }
    out
}

/// One direction's completion latency, in the exported buckets.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Latency {
    /// Completions below each of [`EXPORT_EDGES_NS`] (cumulative).
    pub below: [u64; EXPORT_EDGES_NS.len()],
    /// Every completion counted.
    pub count: u64,
    /// Their latencies summed, in nanoseconds.
    pub sum_ns: u64,
}

impl Latency {
    /// From live bucket counts (`BUCKETS` long) and the sum of the
    /// latencies they counted.
    pub fn from_live(counts: &[u64], sum_ns: u64) -> Latency {
        Latency {
            below: counts_below_edges(counts),
            count: counts.iter().fold(0u64, |s, c| s.saturating_add(*c)),
            sum_ns,
        }
    }

    fn add(&mut self, other: &Latency) {
        for (a, b) in self.below.iter_mut().zip(other.below) {
            *a = a.saturating_add(b);
        }
        self.count = self.count.saturating_add(other.count);
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
    }
}

/// What one job (its clones summed) has done in its measured phase, per
/// direction (0 read, 1 write).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct JobFigures {
    /// I/O operations completed.
    pub ios: [u64; 2],
    /// Bytes moved.
    pub bytes: [u64; 2],
    /// Completion latency.
    pub latency: [Latency; 2],
}

impl JobFigures {
    fn add(&mut self, other: &JobFigures) {
        for d in 0..2 {
            self.ios[d] = self.ios[d].saturating_add(other.ios[d]);
            self.bytes[d] = self.bytes[d].saturating_add(other.bytes[d]);
            self.latency[d].add(&other.latency[d]);
        }
    }
}

/// One exported job series: what its finished runs did, and the runs
/// under way (a job name run twice, by `--repeat` or two calls, keeps
/// counting up).
#[derive(Debug, Clone)]
struct JobSeries {
    pack: String,
    scenario: String,
    job: String,
    done: JobFigures,
    live: Vec<(u64, JobFigures)>,
}

/// A series of a scenario's own.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptSeries {
    /// Its pack's name.
    pub pack: String,
    /// Its scenario's name.
    pub scenario: String,
    /// Its name (exported as `plumb_script_NAME`).
    pub name: String,
    /// A counter or a gauge.
    pub kind: ScriptKind,
    /// Its value.
    pub value: f64,
}

/// What counts as a step of the run's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steps {
    /// One run of one scenario (`plumb run`).
    Scenarios,
    /// One job (`plumb fio`).
    Jobs,
}

#[derive(Debug)]
struct State {
    packs: Vec<(String, String)>,
    planned: u64,
    done: u64,
    running: bool,
    jobs: Vec<JobSeries>,
    script: Vec<ScriptSeries>,
    next_tap: u64,
    /// Series dropped so far.
    dropped: u64,
    /// Hashes of the series dropped (at most [`MAX_DROPPED_KEYS`]).
    dropped_keys: std::collections::HashSet<u64>,
}

/// Told once, when the board drops its first series: what was dropped.
pub type DropNotice = Box<dyn FnOnce(&str) + Send>;

/// The live figures of one run, shared by its writers and its endpoint.
pub struct Board {
    label: String,
    host: String,
    steps: Steps,
    started: Instant,
    state: Mutex<State>,
    notice: Mutex<Option<DropNotice>>,
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board")
            .field("label", &self.label)
            .field("host", &self.host)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

/// A job series as a scrape shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobView {
    /// The pack's name.
    pub pack: String,
    /// The scenario's name.
    pub scenario: String,
    /// The job's name.
    pub job: String,
    /// Its figures: finished runs and runs under way together.
    pub figures: JobFigures,
}

/// Everything one scrape shows, taken at once.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The run's label (`--label`, else the host name).
    pub label: String,
    /// The host's name.
    pub host: String,
    /// The packs run, with their SHA-256.
    pub packs: Vec<(String, String)>,
    /// Seconds since the run started.
    pub elapsed: f64,
    /// Steps finished, of those planned.
    pub done: u64,
    /// Steps planned.
    pub planned: u64,
    /// False once the run ended (the endpoint lingers).
    pub running: bool,
    /// Every job series.
    pub jobs: Vec<JobView>,
    /// The scenarios' own series.
    pub script: Vec<ScriptSeries>,
    /// Series the board dropped (past its caps).
    pub dropped: u64,
    /// CPU seconds this process used, in user mode and in the kernel.
    pub cpu_seconds: [f64; 2],
}

impl Board {
    /// A board for a run labelled `label` on `host`, whose progress counts
    /// `steps`.
    pub fn new(label: &str, host: &str, steps: Steps) -> Arc<Board> {
        Arc::new(Board {
            label: label_value(label),
            host: label_value(host),
            steps,
            started: Instant::now(),
            state: Mutex::new(State {
                packs: Vec::new(),
                planned: 0,
                done: 0,
                running: true,
                jobs: Vec::new(),
                script: Vec::new(),
                next_tap: 0,
                dropped: 0,
                dropped_keys: std::collections::HashSet::new(),
            }),
            notice: Mutex::new(None),
        })
    }

    /// Calls `notice` once, when the first series is dropped (the command
    /// says so on stderr; a library never prints).
    pub fn on_first_drop(&self, notice: DropNotice) {
        *self.notice.lock().unwrap_or_else(PoisonError::into_inner) = Some(notice);
    }

    /// Counts the series `key` (pack, scenario, name) dropped for `why`,
    /// once per series; tells the notice the first time.
    fn dropped(&self, mut s: MutexGuard<'_, State>, key: (&str, &str, &str), why: &str) {
        use std::hash::{Hash, Hasher};
        // A fixed hasher: the keys are only compared with each other.
        let mut h = std::hash::DefaultHasher::new();
        key.hash(&mut h);
        let hash = h.finish();
        if s.dropped_keys.contains(&hash) {
            return;
        }
        if s.dropped_keys.len() < MAX_DROPPED_KEYS {
            s.dropped_keys.insert(hash);
        }
        s.dropped = s.dropped.saturating_add(1);
        let first = s.dropped == 1;
        drop(s);
        if first {
            let notice = self
                .notice
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(n) = notice {
                let (pack, scenario, name) = key;
                n(&format!("series '{name}' of {pack}/{scenario}: {why}"));
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The run runs `pack` (its SHA-256 in the info metric).
    pub fn add_pack(&self, pack: &str, sha256: &str) {
        let mut s = self.lock();
        let entry = (label_value(pack), label_value(sha256));
        if s.packs.len() < MAX_PACKS && !s.packs.contains(&entry) {
            s.packs.push(entry);
        }
    }

    /// `steps` more steps are planned.
    pub fn plan(&self, steps: u64) {
        let mut s = self.lock();
        s.planned = s.planned.saturating_add(steps);
    }

    /// One more step of the kind this board counts finished.
    pub fn step_done(&self, kind: Steps, steps: u64) {
        if kind != self.steps {
            return;
        }
        let mut s = self.lock();
        s.done = s.done.saturating_add(steps).min(s.planned.max(s.done));
    }

    /// The run ended: a scrape from now on sees `running` 0.
    pub fn finish(&self) {
        self.lock().running = false;
    }

    /// True until [`Board::finish`].
    pub fn running(&self) -> bool {
        self.lock().running
    }

    /// Where a scenario (or `plumb fio`) publishes.
    pub fn scope(self: &Arc<Board>, pack: &str, scenario: &str) -> Scope {
        Scope {
            board: self.clone(),
            pack: label_value(pack),
            scenario: label_value(scenario),
        }
    }

    /// What a scrape shows now.
    pub fn snapshot(&self) -> Snapshot {
        let (packs, done, planned, running, jobs, script, dropped) = {
            let s = self.lock();
            let jobs: Vec<JobView> = s
                .jobs
                .iter()
                .map(|j| {
                    let mut figures = j.done;
                    for (_, f) in &j.live {
                        figures.add(f);
                    }
                    JobView {
                        pack: j.pack.clone(),
                        scenario: j.scenario.clone(),
                        job: j.job.clone(),
                        figures,
                    }
                })
                .collect();
            (
                s.packs.clone(),
                s.done,
                s.planned,
                s.running,
                jobs,
                s.script.clone(),
                s.dropped,
            )
        };
        Snapshot {
            label: self.label.clone(),
            host: self.host.clone(),
            packs,
            elapsed: self.started.elapsed().as_secs_f64(),
            done,
            planned,
            running,
            jobs,
            script,
            dropped,
            cpu_seconds: cpu_seconds(),
        }
    }
}

/// CPU seconds this process has used, user and system, every thread.
fn cpu_seconds() -> [f64; 2] {
    // SAFETY: getrusage fills the zeroed struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    [secs(ru.ru_utime), secs(ru.ru_stime)]
}

/// A pack and scenario's place on a [`Board`]: what its jobs and its own
/// series are labelled with.
#[derive(Debug, Clone)]
pub struct Scope {
    board: Arc<Board>,
    pack: String,
    scenario: String,
}

impl Scope {
    /// The board.
    pub fn board(&self) -> &Arc<Board> {
        &self.board
    }

    /// Starts publishing the figures of `jobs` (one entry per job, in
    /// order) as they run; dropping the tap keeps their last figures as
    /// finished.
    pub fn tap(&self, jobs: &[&str]) -> JobTap {
        let mut s = self.board.lock();
        let mut entries = Vec::with_capacity(jobs.len());
        for job in jobs {
            let job = label_value(job);
            let find = |s: &State, job: &str| {
                s.jobs.iter().position(|j| {
                    j.pack == self.pack && j.scenario == self.scenario && j.job == job
                })
            };
            let at = match find(&s, &job) {
                Some(at) => at,
                None if s.jobs.len() < MAX_JOB_SERIES => {
                    s.jobs.push(self.series(job));
                    s.jobs.len() - 1
                }
                None => match find(&s, OTHER_JOBS) {
                    Some(at) => at,
                    None => {
                        s.jobs.push(self.series(OTHER_JOBS.to_string()));
                        s.jobs.len() - 1
                    }
                },
            };
            let id = s.next_tap;
            s.next_tap += 1;
            s.jobs[at].live.push((id, JobFigures::default()));
            entries.push((at, id));
        }
        JobTap {
            board: self.board.clone(),
            entries,
        }
    }

    fn series(&self, job: String) -> JobSeries {
        JobSeries {
            pack: self.pack.clone(),
            scenario: self.scenario.clone(),
            job,
            done: JobFigures::default(),
            live: Vec::new(),
        }
    }

    /// Adds `amount` to the scenario's counter `name` (made at 0 the first
    /// time; it stays at the largest finite value rather than overflow),
    /// or sets its gauge `name` to `amount`. A name or value the rules of
    /// [`check_script_series`] refuse is an error (the scenario's own call
    /// was checked by them already); a series the board cannot keep — past
    /// [`MAX_SCRIPT_SERIES`] for the run, or a name another scenario uses
    /// for the other kind (one metric family has one type) — is dropped and
    /// counted, never an error: the endpoint does not change a run.
    pub fn script(&self, name: &str, amount: f64, kind: ScriptKind) -> Result<(), MetricsError> {
        check_script_series(name, amount, kind)?;
        let mut s = self.board.lock();
        let clash = s
            .script
            .iter()
            .find(|x| x.name == name && x.kind != kind)
            .map(|other| other.kind.name());
        if let Some(was) = clash {
            let why =
                format!("another scenario's '{name}' is a {was} (one name, one kind on /metrics)");
            self.board
                .dropped(s, (&self.pack, &self.scenario, name), &why);
            return Ok(());
        }
        let full = s.script.len() >= MAX_SCRIPT_SERIES;
        let mine = s
            .script
            .iter_mut()
            .find(|x| x.name == name && x.pack == self.pack && x.scenario == self.scenario);
        match (mine, kind) {
            (Some(x), ScriptKind::Counter) => x.value = (x.value + amount).min(f64::MAX),
            (Some(x), ScriptKind::Gauge) => x.value = amount,
            (None, _) if full => {
                let why = format!("the endpoint keeps at most {MAX_SCRIPT_SERIES} series of the scenarios' own per run");
                self.board
                    .dropped(s, (&self.pack, &self.scenario, name), &why);
            }
            (None, _) => s.script.push(ScriptSeries {
                pack: self.pack.clone(),
                scenario: self.scenario.clone(),
                name: name.to_string(),
                kind,
                value: amount,
            }),
        }
        Ok(())
    }
}

/// The runs of a set of jobs under way, as a [`Scope::tap`] registered
/// them: their figures so far, replaced at each update.
#[derive(Debug)]
pub struct JobTap {
    board: Arc<Board>,
    entries: Vec<(usize, u64)>,
}

impl JobTap {
    /// The figures of every job so far, in the order of the tap's jobs.
    pub fn update(&self, figures: &[JobFigures]) {
        let mut s = self.board.lock();
        for ((at, id), f) in self.entries.iter().zip(figures) {
            if let Some(slot) = s.jobs[*at].live.iter_mut().find(|(i, _)| i == id) {
                slot.1 = *f;
            }
        }
    }
}

impl Drop for JobTap {
    /// The jobs ended: their last figures become finished figures.
    fn drop(&mut self) {
        let mut s = self.board.lock();
        for (at, id) in &self.entries {
            let series = &mut s.jobs[*at];
            if let Some(pos) = series.live.iter().position(|(i, _)| i == id) {
                let (_, f) = series.live.swap_remove(pos);
                series.done.add(&f);
            }
        }
        drop(s);
        self.board.step_done(Steps::Jobs, self.entries.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(ios: u64) -> JobFigures {
        JobFigures {
            ios: [ios, 0],
            bytes: [ios * 4096, 0],
            ..JobFigures::default()
        }
    }

    #[test]
    fn a_job_run_twice_keeps_counting_up() {
        let b = Board::new("l", "h", Steps::Scenarios);
        let s = b.scope("p", "s");
        let tap = s.tap(&["j"]);
        tap.update(&[figures(10)]);
        assert_eq!(b.snapshot().jobs[0].figures.ios[0], 10);
        drop(tap);
        let tap = s.tap(&["j"]);
        tap.update(&[figures(5)]);
        let snap = b.snapshot();
        assert_eq!(snap.jobs.len(), 1);
        assert_eq!(snap.jobs[0].figures.ios[0], 15);
        assert_eq!(snap.jobs[0].figures.bytes[0], 15 * 4096);
    }

    #[test]
    fn jobs_past_the_cap_count_under_one_name() {
        let b = Board::new("l", "h", Steps::Jobs);
        b.plan(MAX_JOB_SERIES as u64 + 5);
        let s = b.scope("p", "s");
        let names: Vec<String> = (0..MAX_JOB_SERIES + 5).map(|i| format!("j{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let tap = s.tap(&refs);
        tap.update(&vec![figures(1); refs.len()]);
        drop(tap);
        let snap = b.snapshot();
        assert_eq!(snap.jobs.len(), MAX_JOB_SERIES + 1);
        let other = snap.jobs.iter().find(|j| j.job == OTHER_JOBS).unwrap();
        assert_eq!(other.figures.ios[0], 5);
        assert_eq!((snap.done, snap.planned), (snap.planned, snap.planned));
    }

    #[test]
    fn script_series_are_checked_and_kept_apart_by_kind() {
        let b = Board::new("l", "h", Steps::Scenarios);
        let s = b.scope("p", "s");
        s.script("docs", 2.0, ScriptKind::Counter).unwrap();
        s.script("docs", 3.0, ScriptKind::Counter).unwrap();
        s.script("queue", 7.0, ScriptKind::Gauge).unwrap();
        s.script("queue", 1.5, ScriptKind::Gauge).unwrap();
        let snap = b.snapshot();
        assert_eq!(snap.script[0].value, 5.0);
        assert_eq!(snap.script[1].value, 1.5);
        // Another scenario's gauge of a counter's name is dropped, not refused.
        b.scope("p", "other")
            .script("docs", 1.0, ScriptKind::Gauge)
            .unwrap();
        assert_eq!(b.snapshot().script.len(), 2);
        assert_eq!(b.snapshot().dropped, 1);
        for bad in [
            "",
            "Docs",
            "9x",
            "a-b",
            "docs_total",
            "x_bucket",
            &"a".repeat(65),
        ] {
            assert!(
                matches!(
                    s.script(bad, 1.0, ScriptKind::Counter),
                    Err(MetricsError::Name { .. })
                ),
                "{bad}"
            );
        }
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(s.script("docs", bad, ScriptKind::Counter).is_err(), "{bad}");
        }
        assert!(s.script("queue", -4.0, ScriptKind::Gauge).is_ok());
        assert!(s.script("queue", f64::NAN, ScriptKind::Gauge).is_err());
        // Counters stay finite.
        s.script("docs", f64::MAX, ScriptKind::Counter).unwrap();
        s.script("docs", f64::MAX, ScriptKind::Counter).unwrap();
        assert_eq!(b.snapshot().script[0].value, f64::MAX);
    }

    #[test]
    fn series_past_the_cap_are_dropped_counted_once_and_told_once() {
        let b = Board::new("l", "h", Steps::Scenarios);
        let told = Arc::new(Mutex::new(Vec::new()));
        let t = told.clone();
        b.on_first_drop(Box::new(move |m: &str| {
            t.lock().unwrap().push(m.to_string())
        }));
        // Two scenarios of 200 gauges each: 400 series for a cap of 256.
        for scenario in ["s1", "s2"] {
            let s = b.scope("p", scenario);
            for round in 0..3 {
                for i in 0..200 {
                    s.script(&format!("g{i}"), round as f64, ScriptKind::Gauge)
                        .unwrap();
                }
            }
        }
        let snap = b.snapshot();
        assert_eq!(snap.script.len(), MAX_SCRIPT_SERIES);
        assert_eq!(snap.dropped, 400 - MAX_SCRIPT_SERIES as u64);
        let told = told.lock().unwrap();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(told[0].contains("at most 256"), "{told:?}");
    }

    #[test]
    fn label_values_lose_control_characters_and_length() {
        assert_eq!(label_value("a\nb\r\"c\""), "a?b?\"c\"");
        let long = "é".repeat(100);
        let v = label_value(&long);
        assert!(v.len() <= MAX_LABEL_BYTES && v.chars().all(|c| c == 'é'));
    }
}
