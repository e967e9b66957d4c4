//! `null`: completes every I/O at once without touching data, as fio's null
//! engine; what it measures is plumb's own cost per I/O.

use super::{Completion, EngineCaps, EngineInfo, EngineSetup, IoEngine, IoRequest};
use std::io;

/// Registry entry.
pub const INFO: EngineInfo = EngineInfo {
    name: "null",
    caps: EngineCaps {
        is_async: true,
        diskless: true,
        by_path: false,
        own_latency: false,
    },
    create,
};

struct Null {
    queued: Vec<Completion>,
}

fn create(setup: EngineSetup<'_>) -> io::Result<Box<dyn IoEngine + '_>> {
    Ok(Box::new(Null {
        queued: Vec::with_capacity(setup.depth as usize),
    }))
}

impl IoEngine for Null {
    fn queue(&mut self, req: &IoRequest) -> io::Result<Option<i64>> {
        self.queued.push(Completion {
            slot: req.slot,
            result: req.len as i64,
        });
        Ok(None)
    }

    fn submit(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, max: u32, out: &mut Vec<Completion>) -> io::Result<()> {
        let n = (max as usize).min(self.queued.len());
        out.extend(self.queued.drain(..n));
        Ok(())
    }
}
