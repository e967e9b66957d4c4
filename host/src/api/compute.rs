//! CPU and memory operations of the host API.

use super::{ApiError, Capability, Host};
use std::time::Duration;

impl Host {
    /// Runs a CPU kernel on `threads` threads for `seconds` (capped by the deadline).
    pub fn cpu(
        &mut self,
        kernel: &str,
        threads: u32,
        seconds: f64,
        param: Option<u64>,
        baseline: Option<f64>,
    ) -> Result<crate::cpu::CpuResult, ApiError> {
        self.allow(Capability::Threads(threads))?;
        if !(seconds > 0.0 && seconds.is_finite()) {
            return Err(ApiError::Invalid(format!(
                "cpu::run: duration {seconds} must be positive"
            )));
        }
        let d = Duration::try_from_secs_f64(seconds)
            .unwrap_or(Duration::MAX)
            .min(self.time_left());
        let r = crate::cpu::run(kernel, threads, d, param, baseline, &self.halt())
            .map_err(|e| ApiError::Invalid(format!("cpu::run: {e}")))?;
        self.check()?;
        Ok(r)
    }

    /// Memory bandwidth as `sysbench memory` measures it.
    pub fn mem_bandwidth(
        &mut self,
        mut o: crate::mem::BandwidthOptions,
    ) -> Result<crate::mem::BandwidthResult, ApiError> {
        self.allow(Capability::Threads(o.threads))?;
        o.duration = o.duration.min(self.time_left());
        let r = crate::mem::bandwidth(&o, &self.halt())
            .map_err(|e| ApiError::Invalid(format!("mem::bandwidth: {e}")))?;
        self.check()?;
        Ok(r)
    }

    /// Memory latency by working-set size (pointer chase); ends with
    /// [`ApiError::Deadline`] or [`ApiError::Interrupted`] when the scenario
    /// must stop mid-curve.
    pub fn mem_latency(
        &mut self,
        o: &crate::mem::LatencyOptions,
    ) -> Result<crate::mem::LatencyResult, ApiError> {
        use crate::mem::LatencyError;
        let r = crate::mem::latency_curve(o, &self.halt()).map_err(|e| match e {
            LatencyError::Halted(h) => self.halted(h),
            LatencyError::Invalid(e) => ApiError::Invalid(format!("mem::latency: {e}")),
        })?;
        self.check()?;
        Ok(r)
    }
}
