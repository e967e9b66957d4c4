//! The scenario's clock: every result a scenario gets — foreground or
//! background, a job, a copy, a CPU run, a network test — says when it ran
//! in seconds since the scenario started, the same zero as `time::now` and
//! as jobs' per-second timelines, so they can be charted together.

use std::time::Instant;

/// Seconds since a scenario started, for stamping results.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
}

/// When an operation ran, in seconds on its scenario's [`Clock`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Span {
    /// When its measured part began.
    pub started_s: f64,
    /// When it ended.
    pub ended_s: f64,
}

impl Clock {
    /// A clock whose zero is `origin`.
    pub fn new(origin: Instant) -> Clock {
        Clock { origin }
    }

    /// `t` on this clock (0 for an instant before its zero).
    pub fn at(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.origin).as_secs_f64()
    }

    /// The span of something that began at `from` and ends now.
    pub fn since(&self, from: Instant) -> Span {
        Span {
            started_s: self.at(from),
            ended_s: self.at(Instant::now()),
        }
    }

    /// The span of something that ends now after `seconds` of measured
    /// time (for primitives that time their own measured phase after a
    /// setup of theirs, such as a CPU run's single-thread baseline).
    pub fn ending_now(&self, seconds: f64) -> Span {
        let ended_s = self.at(Instant::now());
        let seconds = if seconds.is_finite() {
            seconds.max(0.0)
        } else {
            0.0
        };
        Span {
            started_s: (ended_s - seconds).max(0.0),
            ended_s,
        }
    }
}

impl Span {
    /// Its length in seconds.
    pub fn seconds(self) -> f64 {
        self.ended_s - self.started_s
    }

    /// The span as the optional fields of results that also exist outside
    /// scenarios (`started_s`, `ended_s`).
    pub fn fields(self) -> (Option<f64>, Option<f64>) {
        (Some(self.started_s), Some(self.ended_s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn spans_are_on_the_scenario_clock() {
        let before = Instant::now();
        let c = Clock::new(Instant::now());
        assert_eq!(c.at(before), 0.0, "an instant before the zero");
        std::thread::sleep(Duration::from_millis(20));
        let from = Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        let s = c.since(from);
        assert!(
            s.started_s >= 0.02 && s.ended_s >= s.started_s + 0.02,
            "{s:?}"
        );
        let e = c.ending_now(0.01);
        assert!((e.ended_s - e.started_s - 0.01).abs() < 1e-9, "{e:?}");
        // A measured time longer than the clock has run starts at zero;
        // nonsense lengths give an empty span.
        assert_eq!(c.ending_now(1e9).started_s, 0.0);
        let n = c.ending_now(f64::NAN);
        assert_eq!(n.started_s, n.ended_s);
    }
}
