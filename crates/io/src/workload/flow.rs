//! `flow` and `flow_id`: jobs of one flow share a counter of I/Os, and each
//! keeps its share of the flow's I/Os in proportion to its weight, as fio's
//! token flow (`flow.c`). A job ahead of its share waits (`flow_sleep`) until
//! the others catch up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The flows of one run, by `flow_id`.
#[derive(Debug, Default)]
pub struct Flows(Mutex<HashMap<u32, Arc<Shared>>>);

/// What the jobs of one flow share.
#[derive(Debug)]
struct Shared {
    /// I/Os of every member, plus one (fio starts it at 1).
    ios: AtomicU64,
    /// The members' weights summed.
    weight: AtomicU64,
}

/// One job's membership in a flow, left when dropped.
#[derive(Debug)]
pub struct Flow {
    shared: Arc<Shared>,
    weight: u64,
    /// This job's I/Os counted in the flow.
    mine: u64,
    /// How long to wait when ahead.
    pub sleep: Duration,
}

impl Flows {
    /// Joins flow `id` with `weight` (none for a weight of 0: no flow).
    pub fn join(&self, id: u32, weight: u32, sleep: Duration) -> Option<Flow> {
        if weight == 0 {
            return None;
        }
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let shared = Arc::clone(map.entry(id).or_insert_with(|| {
            Arc::new(Shared {
                ios: AtomicU64::new(1),
                weight: AtomicU64::new(0),
            })
        }));
        shared
            .weight
            .fetch_add(u64::from(weight), Ordering::Relaxed);
        Some(Flow {
            shared,
            weight: u64::from(weight),
            mine: 0,
            sleep,
        })
    }
}

impl Flow {
    /// True when this job is ahead of its share (it should wait and ask
    /// again); else the next I/O is counted and the job may issue it.
    pub fn ahead(&mut self) -> bool {
        let all = self.shared.ios.load(Ordering::Relaxed).max(1);
        let total = self.shared.weight.load(Ordering::Relaxed).max(1);
        // mine / all > weight / total, without division.
        if u128::from(self.mine) * u128::from(total) > u128::from(self.weight) * u128::from(all) {
            return true;
        }
        self.shared.ios.fetch_add(1, Ordering::Relaxed);
        self.mine += 1;
        false
    }
}

impl Drop for Flow {
    fn drop(&mut self) {
        self.shared.ios.fetch_sub(self.mine, Ordering::Relaxed);
        self.shared.weight.fetch_sub(self.weight, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two members taking turns as fast as they are let: their counts
    /// follow their weights.
    #[test]
    fn shares_follow_weights() {
        let flows = Flows::default();
        let mut a = flows.join(1, 1, Duration::ZERO).unwrap();
        let mut b = flows.join(1, 8, Duration::ZERO).unwrap();
        let (mut na, mut nb) = (0u64, 0u64);
        for _ in 0..90_000 {
            if !a.ahead() {
                na += 1;
            }
            if !b.ahead() {
                nb += 1;
            }
        }
        let ratio = nb as f64 / na as f64;
        assert!((ratio - 8.0).abs() < 0.1, "{na} vs {nb}");
        assert!(flows.join(1, 0, Duration::ZERO).is_none());
        drop(a);
        assert_eq!(b.shared.weight.load(Ordering::Relaxed), 8);
    }
}
