//! When I/Os are issued and when jobs start and stop: think time, rate
//! processes, flows, start delays, `wait_for`, `exitall` and the latency target.

use std::time::Duration;

/// What `thinktime_blocks` counts (`thinktime_blocks_type=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThinkCount {
    /// I/Os completed (fio's default).
    #[default]
    Complete,
    /// I/Os issued.
    Issue,
}

/// How I/Os of a rated job are spaced (`rate_process=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateProcess {
    /// Evenly: the n-th I/O of a direction is due at n / rate.
    #[default]
    Linear,
    /// A Poisson process: exponentially distributed gaps whose mean is 1 / rate.
    Poisson,
}

/// Which jobs an `exitall` ends when its job ends (`exit_what=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExitWhat {
    /// The jobs of the same reporting group.
    #[default]
    Group,
    /// Every job running now; the next stonewalled set still runs.
    Stonewall,
    /// Every job, running or not started yet: the run ends.
    All,
}

/// Who submits the I/Os (`io_submit_mode=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubmitMode {
    /// The job thread queues, submits and reaps.
    #[default]
    Inline,
    /// A submitter thread of the job's own issues what the job queues, on
    /// the rate's schedule, whatever the device's completions do.
    Offload,
}

/// Classes of errors `continue_on_error` lets a job go on after (a bit set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ErrorClasses(u8);

impl ErrorClasses {
    /// No error is tolerated (`none`).
    pub const NONE: ErrorClasses = ErrorClasses(0);
    /// Read errors.
    pub const READ: ErrorClasses = ErrorClasses(1);
    /// Write errors.
    pub const WRITE: ErrorClasses = ErrorClasses(2);
    /// Verify errors.
    pub const VERIFY: ErrorClasses = ErrorClasses(4);
    /// Every class (`all`).
    pub const ALL: ErrorClasses = ErrorClasses(7);

    /// The union of two sets.
    pub fn with(self, other: ErrorClasses) -> ErrorClasses {
        ErrorClasses(self.0 | other.0)
    }

    /// True when every class of `other` is in this set.
    pub fn has(self, other: ErrorClasses) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    /// True when no class is set.
    pub fn is_none(self) -> bool {
        self.0 == 0
    }
}

/// The job's pacing options, with fio's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Pacing {
    /// `thinktime`: stall this long after every `thinktime_blocks` I/Os.
    pub thinktime: Duration,
    /// `thinktime_spin`: the part of the stall spent busy on the CPU.
    pub thinktime_spin: Duration,
    /// `thinktime_blocks`: I/Os between stalls (fio's default 1); `None`
    /// when not given (with `thinktime_iotime`, only time triggers then).
    pub thinktime_blocks: Option<u32>,
    /// `thinktime_blocks_type`: what the blocks count.
    pub thinktime_blocks_type: ThinkCount,
    /// `thinktime_iotime`: stall after this much time of I/O (zero: never).
    pub thinktime_iotime: Duration,
    /// `rate_process`: how rated I/Os are spaced.
    pub rate_process: RateProcess,
    /// `rate_min`: the least bandwidth per direction, bytes/s.
    pub rate_min: [Option<u64>; 2],
    /// `rate_iops_min`: the least IOPS per direction.
    pub rate_iops_min: [Option<u64>; 2],
    /// `rate_cycle`: the window the minimum rates are averaged over.
    pub ratecycle: Duration,
    /// `flow`: this job's weight in its flow (0: not in a flow).
    pub flow: u32,
    /// `flow_id`: the flow the job belongs to.
    pub flow_id: u32,
    /// `flow_sleep`: how long to wait when the job is ahead of its share.
    pub flow_sleep: Duration,
    /// `startdelay`: the start waits this long after the run began; a
    /// range draws each clone's delay between its ends.
    pub startdelay: (Duration, Duration),
    /// `wait_for`: the job starts once every clone of this job has ended.
    pub wait_for: Option<String>,
    /// `exitall`: when a job ends, the jobs `exit_what` names stop.
    pub exitall: bool,
    /// `exitall_on_error`: the same, when a job ends in error.
    pub exitall_on_error: bool,
    /// `exit_what`: which jobs `exitall` ends.
    pub exit_what: ExitWhat,
    /// `io_submit_mode`.
    pub io_submit_mode: SubmitMode,
    /// `latency_target`: search the deepest queue whose latency stays under this.
    pub latency_target: Option<Duration>,
    /// `latency_window`: how long each depth is measured.
    pub latency_window: Duration,
    /// `latency_percentile`: the share of I/Os that must be under the target.
    pub latency_percentile: f64,
    /// `latency_run`: keep adjusting the depth after the search instead of ending.
    pub latency_run: bool,
    /// `continue_on_error`: the classes of errors the job goes on after.
    pub continue_on_error: ErrorClasses,
    /// `ignore_error`: errno values the job goes on after, per class
    /// (read, write, verify); they replace fio's non-fatal errors (EIO,
    /// EILSEQ) for the classes `continue_on_error` names.
    pub ignore_error: [Vec<i32>; 3],
    /// `error_dump`: print every error, fatal or not.
    pub error_dump: bool,
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing {
            thinktime: Duration::ZERO,
            thinktime_spin: Duration::ZERO,
            thinktime_blocks: None,
            thinktime_blocks_type: ThinkCount::Complete,
            thinktime_iotime: Duration::ZERO,
            rate_process: RateProcess::Linear,
            rate_min: [None, None],
            rate_iops_min: [None, None],
            ratecycle: Duration::from_millis(1000),
            flow: 0,
            flow_id: 0,
            flow_sleep: Duration::ZERO,
            startdelay: (Duration::ZERO, Duration::ZERO),
            wait_for: None,
            exitall: false,
            exitall_on_error: false,
            exit_what: ExitWhat::Group,
            io_submit_mode: SubmitMode::Inline,
            latency_target: None,
            latency_window: Duration::ZERO,
            latency_percentile: 100.0,
            latency_run: false,
            continue_on_error: ErrorClasses::NONE,
            ignore_error: [Vec::new(), Vec::new(), Vec::new()],
            error_dump: true,
        }
    }
}

impl Pacing {
    /// True when a think time is set.
    pub fn thinks(&self) -> bool {
        !self.thinktime.is_zero()
    }

    /// True when a minimum rate is checked.
    pub fn checks_min_rate(&self) -> bool {
        self.rate_min
            .iter()
            .chain(&self.rate_iops_min)
            .any(|r| r.is_some())
    }

    /// True when an error of `class` with `errno` lets the job go on (as
    /// fio): `continue_on_error` must name the class, and the errno must be
    /// in the class's `ignore_error` list, or among fio's non-fatal errors
    /// (EIO, EILSEQ) when the class has no list.
    pub fn tolerates(&self, class: ErrorClasses, errno: i32) -> bool {
        if !self.continue_on_error.has(class) {
            return false;
        }
        let list = match class {
            ErrorClasses::READ => &self.ignore_error[0],
            ErrorClasses::WRITE => &self.ignore_error[1],
            _ => &self.ignore_error[2],
        };
        if list.is_empty() {
            matches!(errno, libc::EIO | libc::EILSEQ)
        } else {
            list.contains(&errno)
        }
    }

    /// True when the job counts errors it went on after (fio's `total_err`
    /// and `first_error` appear in its results).
    pub fn continues_on_error(&self) -> bool {
        !self.continue_on_error.is_none()
    }
}
