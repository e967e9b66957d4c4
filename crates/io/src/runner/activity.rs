//! What a running scenario (or `plumb fio`) is doing, for whoever shows it.
//!
//! A scenario's steps publish here: the host function it is in (set by the
//! Rhai adapter on every call) and, while an I/O job runs, the job's live
//! line (rates, its own elapsed time and ETA) or laying out's progress. The
//! CLI's printer reads it; nothing in the library draws.

use std::sync::{Mutex, PoisonError};

/// What one scenario run is doing now; shared by its host and its printer.
#[derive(Debug, Default)]
pub struct Activity {
    /// The host function the scenario called last (`fs`, `write_file`).
    call: Mutex<Option<(&'static str, &'static str)>>,
    /// The live line of the operation under way, when it has one.
    status: Mutex<Option<String>>,
}

impl Activity {
    /// The scenario called the host function `module::name`.
    pub fn enter(&self, module: &'static str, name: &'static str) {
        *self.call.lock().unwrap_or_else(PoisonError::into_inner) = Some((module, name));
    }

    /// The operation under way publishes its live line (None: it ended).
    pub fn set_status(&self, line: Option<String>) {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner) = line;
    }

    /// What to show: the live line, else the host function, else nothing.
    pub fn doing(&self) -> Option<String> {
        let status = self
            .status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        status.or_else(|| {
            self.call
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .map(|(module, name)| format!("in {module}::{name}"))
        })
    }
}
