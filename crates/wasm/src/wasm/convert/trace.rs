//! The trace interface's records: replay options in, replay results out.

use super::set;
use crate::api;
use crate::wasm::bindings::plumb::bench::trace as wtrace;

impl From<wtrace::ReplayOptions> for api::ReplayOptions {
    fn from(o: wtrace::ReplayOptions) -> Self {
        let mut r = api::ReplayOptions::default();
        set(
            &mut r.speed,
            o.speed.map(|s| match s {
                wtrace::Speed::Factor(f) => crate::trace::Speed::Factor(f),
                wtrace::Speed::Max => crate::trace::Speed::Max,
            }),
        );
        set(
            &mut r.threads,
            o.threads.map(|t| match t {
                wtrace::ReplayThreads::Keep => api::ReplayThreads::Keep,
                wtrace::ReplayThreads::One => api::ReplayThreads::One,
            }),
        );
        set(&mut r.clients, o.clients.map(u64::from));
        set(
            &mut r.mmap,
            o.mmap.map(|m| match m {
                wtrace::MmapReplay::Touch => crate::trace::MapReplay::Touch,
                wtrace::MmapReplay::Skip => crate::trace::MapReplay::Skip,
            }),
        );
        r
    }
}

impl From<crate::trace::ReplayResult> for wtrace::ReplayResult {
    fn from(r: crate::trace::ReplayResult) -> Self {
        wtrace::ReplayResult {
            ops: r
                .ops
                .into_iter()
                .map(|o| wtrace::OpSummary {
                    op: o.op,
                    count: o.count,
                    bytes: o.bytes,
                    expected_errors: o.expected_errors,
                    divergences: o.divergences,
                    mean_us: o.mean_us,
                    p50_us: o.p50_us,
                    p99_us: o.p99_us,
                    max_us: o.max_us,
                })
                .collect(),
            total_ops: r.total_ops,
            divergences: r.divergences,
            expected_errors: r.expected_errors,
            skipped: r.skipped,
            first_divergence: r.first_divergence,
            halted: r.halted.map(|h| h.to_string()),
            seconds: r.seconds,
            original_seconds: r.original_seconds,
            reference: match r.reference {
                crate::trace::Reference::Untraced => wtrace::ReplayReference::Untraced,
                crate::trace::Reference::Traced => wtrace::ReplayReference::Traced,
                crate::trace::Reference::Recording => wtrace::ReplayReference::Recording,
            },
            reference_seconds: r.reference_seconds,
            time_ratio: r.time_ratio,
            files_created: r.files_created,
            bytes_laid_out: r.bytes_laid_out,
            clients: r.clients,
            client_seconds: r.client_seconds,
            steps: r
                .steps
                .into_iter()
                .map(|s| wtrace::StepSummary {
                    step: s.step,
                    count: s.count,
                    mean_us: s.mean_us,
                    p50_us: s.p50_us,
                    p99_us: s.p99_us,
                    max_us: s.max_us,
                })
                .collect(),
        }
    }
}
