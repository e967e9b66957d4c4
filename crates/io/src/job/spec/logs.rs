//! fio's per-job logs: bandwidth, IOPS, latency and latency histograms
//! over the run, in fio's file names and formats.

/// What a windowed latency log entry holds (`log_window_value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogWindow {
    /// The mean over the window (fio's default).
    #[default]
    Avg,
    /// The largest value in the window.
    Max,
    /// Both: the mean, then the largest.
    Both,
}

/// The job's log options, with fio's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct LogOpts {
    /// `write_bw_log`: the prefix of the bandwidth log (empty: the job's name).
    pub bw: Option<String>,
    /// `write_iops_log`: the prefix of the IOPS log.
    pub iops: Option<String>,
    /// `write_lat_log`: the prefix of the slat, clat and lat logs.
    pub lat: Option<String>,
    /// `write_hist_log`: the prefix of the clat histogram log.
    pub hist: Option<String>,
    /// `log_avg_msec`: one entry per window of this many ms (0: per I/O).
    pub avg_msec: u32,
    /// `log_hist_msec`: one histogram per window of this many ms (0: none).
    pub hist_msec: u32,
    /// `log_hist_coarseness`: each step halves the histogram's bins (0–6).
    pub hist_coarseness: u32,
    /// `log_window_value` / `log_max_value`.
    pub window: LogWindow,
    /// `log_offset`: an offset column.
    pub offset: bool,
    /// `log_prio`: the priority column shows class and level.
    pub prio: bool,
    /// `per_job_logs`: one file per thread (`NAME_bw.N.log`), else one
    /// shared by every thread writing it (`NAME_bw.log`).
    pub per_job: bool,
    /// `log_unix_epoch`: times since the Unix epoch instead of the job's start.
    pub unix_epoch: bool,
}

impl Default for LogOpts {
    fn default() -> Self {
        LogOpts {
            bw: None,
            iops: None,
            lat: None,
            hist: None,
            avg_msec: 0,
            hist_msec: 0,
            hist_coarseness: 0,
            window: LogWindow::Avg,
            offset: false,
            prio: false,
            per_job: true,
            unix_epoch: false,
        }
    }
}

impl LogOpts {
    /// True when any log is asked for.
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.iops.is_some() || self.lat.is_some() || self.hist.is_some()
    }
}
