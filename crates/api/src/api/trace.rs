//! Trace replay in the host API: a trace from the pack's data files (or the
//! run directory) replayed inside the run directory, within the byte budget,
//! the pack's thread count, the deadline and the stop flag.

use super::{ApiError, Capability, Host};
use crate::trace::format::stream::Source;
use crate::trace::profile::PrepareError;
use crate::trace::replay::Prepared;
use crate::trace::{replay, Bounds, Halt, MapReplay, ReplayError, ReplayResult, Speed};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;
use std::time::Instant;

/// Which threads a replay plays the operations on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplayThreads {
    /// The recorded threads, each on its own thread (`"keep"`).
    #[default]
    Keep,
    /// Everything in order on one thread (`1`).
    One,
}

/// A `threads` value that is neither `keep` nor `1` (its first 40
/// characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("threads '{0}' is not \"keep\" or 1")]
pub struct UnknownThreads(pub String);

impl std::str::FromStr for ReplayThreads {
    type Err = UnknownThreads;
    /// `keep` or `1`, as scripts and `plumb trace replay --threads` write it.
    fn from_str(s: &str) -> Result<ReplayThreads, UnknownThreads> {
        match s {
            "keep" => Ok(ReplayThreads::Keep),
            "1" => Ok(ReplayThreads::One),
            other => Err(UnknownThreads(other.chars().take(40).collect())),
        }
    }
}

/// `trace::replay`: the think time scaled by `speed` (a factor, or `"max"`
/// for none; default 1) on the recorded threads or one (default `"keep"`),
/// `clients` copies at once (default 1; more play in `clients/clientK`),
/// maps replayed by touching their pages (`mmap`: `"touch"`, the default)
/// or only noted (`"skip"`).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplayOptions {
    /// Think-time scaling.
    #[serde(deserialize_with = "speed")]
    pub speed: Speed,
    /// Recorded threads or one.
    #[serde(deserialize_with = "threads")]
    pub threads: ReplayThreads,
    /// Copies of the trace played at once (1 to 128).
    pub clients: u64,
    /// Maps touched or only noted.
    #[serde(deserialize_with = "maps")]
    pub mmap: MapReplay,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            speed: Speed::Factor(1.0),
            threads: ReplayThreads::Keep,
            clients: 1,
            mmap: MapReplay::Touch,
        }
    }
}

impl ReplayOptions {
    /// The replay's options: a factor within the allowed range, or max; a
    /// client count from 1 to [`crate::trace::replay::MAX_CLIENTS`].
    pub fn validate(&self) -> Result<crate::trace::ReplayOptions, ApiError> {
        let speed = match self.speed {
            Speed::Factor(f) => {
                Speed::factor(f).map_err(|e| ApiError::Invalid(format!("trace::replay: {e}")))?
            }
            Speed::Max => Speed::Max,
        };
        let clients = crate::trace::ReplayOptions::check_clients(self.clients)
            .map_err(|e| ApiError::Invalid(format!("trace::replay: {e}")))?;
        Ok(crate::trace::ReplayOptions {
            speed,
            keep_threads: self.threads == ReplayThreads::Keep,
            clients,
            maps: self.mmap,
        })
    }
}

struct SpeedVisitor;

impl Visitor<'_> for SpeedVisitor {
    type Value = Speed;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a speed factor or \"max\"")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Speed, E> {
        Ok(Speed::Factor(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Speed, E> {
        Ok(Speed::Factor(v as f64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Speed, E> {
        Ok(Speed::Factor(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Speed, E> {
        v.parse().map_err(E::custom)
    }
}

fn speed<'de, D: Deserializer<'de>>(d: D) -> Result<Speed, D::Error> {
    d.deserialize_any(SpeedVisitor)
}

struct ThreadsVisitor;

impl Visitor<'_> for ThreadsVisitor {
    type Value = ReplayThreads;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("threads \"keep\" or 1")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ReplayThreads, E> {
        v.to_string().parse().map_err(E::custom)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ReplayThreads, E> {
        self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<ReplayThreads, E> {
        v.parse().map_err(E::custom)
    }
}

fn threads<'de, D: Deserializer<'de>>(d: D) -> Result<ReplayThreads, D::Error> {
    d.deserialize_any(ThreadsVisitor)
}

/// `"touch"` or `"skip"`.
fn maps<'de, D: Deserializer<'de>>(d: D) -> Result<MapReplay, D::Error> {
    let s = String::deserialize(d)?;
    s.parse().map_err(de::Error::custom)
}

impl Host {
    /// Replays the trace `name` (a data file of the pack, else a file in the
    /// run directory) inside the run directory.
    pub fn trace_replay(
        &mut self,
        name: &str,
        o: &ReplayOptions,
    ) -> Result<ReplayResult, ApiError> {
        let o = o.validate()?;
        let source = match self.space.data.get(name) {
            Some(t) => Source::memory(name, t.as_str()),
            None => {
                // Without blocking: a FIFO is refused, not waited on.
                let fd = self
                    .run_dir()
                    .open(name, libc::O_RDONLY | libc::O_NONBLOCK, 0)
                    .map_err(|e| match e.errno() {
                        Some(libc::ENOENT) => ApiError::Invalid(format!(
                            "trace::replay: no trace '{name}': it is neither a data file of the pack (list it in pack.toml: data = [\"{name}\"]) nor a file in the run directory"
                        )),
                        _ => e.into(),
                    })?;
                Source::file(name, std::fs::File::from(fd))
                    .map_err(|e| ApiError::Invalid(e.to_string()))?
            }
        };
        // Read once through (every record checked, none held), then played.
        let prepared = Prepared::read(source, &self.halt()).map_err(|e| match e {
            PrepareError::Trace(e) => ApiError::Invalid(e.to_string()),
            PrepareError::Halted(h) => self.halted(h),
        })?;
        let trace = &prepared.head;
        // Every client's threads count against the pack's thread grant.
        let threads = u32::try_from(replay::threads_needed(trace, o)).unwrap_or(u32::MAX);
        self.allow(Capability::Threads(threads))?;
        if prepared.profile.direct_io {
            self.allow(Capability::DirectIo)?;
        }
        // The estimates are charged up front: the files' data, and the
        // names the replay may make (each an inode, a block and an entry).
        let need = replay::bytes_needed(&prepared, o);
        let meta = replay::metadata_needed(&prepared, o);
        self.charge_with_inodes(
            "trace::replay",
            need.saturating_add(meta.bytes),
            meta.inodes,
        )?;
        self.check()?;
        let bounds = Bounds {
            stop: &self.stop,
            deadline: Instant::now().checked_add(self.time_left()),
            max_bytes: need,
        };
        let r = match replay::lay_out_and_replay(&prepared, self.run_dir(), o, bounds) {
            Ok(r) => r,
            Err(ReplayError::Refused(m)) => {
                return Err(ApiError::Invalid(format!("trace::replay {name}: {m}")))
            }
            Err(ReplayError::Layout(h)) => return Err(self.replay_halted(name, h)),
        };
        if let Some(h) = r.halted.clone() {
            return Err(self.replay_halted(name, h));
        }
        self.check()?;
        Ok(r)
    }

    /// The error for a replay that stopped early.
    fn replay_halted(&self, name: &str, h: Halt) -> ApiError {
        match h {
            Halt::Interrupted => match self.check() {
                Err(e) => e,
                Ok(()) => ApiError::Interrupted,
            },
            // The replay's deadline is the scenario's: name it even when
            // the host's own clock has not quite reached it yet.
            Halt::Deadline => ApiError::Deadline(self.limits.timeout),
            Halt::DiskFull(m) => ApiError::Os {
                op: format!("trace::replay {name}: {m}"),
                source: std::io::Error::from_raw_os_error(libc::ENOSPC),
            },
            Halt::Budget(m) | Halt::Failed(m) => ApiError::Failed {
                op: "trace::replay",
                message: format!("{name}: {m}"),
            },
        }
    }
}
