//! The command layer: one file per `plumb` subcommand, plus what they share
//! (exit codes, Ctrl-C and SIGTERM, the log's subscriber). Only this layer
//! prints for the user and decides the process's exit code; the modules
//! below return typed results and say the rest through `tracing` events,
//! which [`log`] writes.

pub mod args;
pub mod check;
pub mod compare;
pub mod docs;
pub mod fio;
pub mod fleet;
pub mod layout;
pub mod list;
pub mod log;
pub mod metrics;
pub mod pack;
pub mod report;
pub mod run;
pub mod serve;
pub mod show;
pub mod sysinfo;
pub mod ticker;
pub mod trace;
pub mod version;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Process exit codes, the same for every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything ran and every check passed.
    Ok = 0,
    /// A job or scenario failed, or a threshold was missed.
    Failed = 1,
    /// Bad input: usage, script error, unknown option.
    BadInput = 2,
    /// Stopped by SIGINT.
    Interrupted = 130,
    /// Stopped by SIGTERM.
    Terminated = 143,
}

/// SIGINT and SIGTERM turned into flags: a command passes [`Signals::stop`]
/// to whatever runs long, and asks at the end which signal (if any) stopped
/// it, so Ctrl-C exits 130 and SIGTERM 143 whatever the command.
#[derive(Debug, Clone)]
pub struct Signals {
    /// Set by either signal: stop soon, keeping what was gathered.
    pub stop: Arc<AtomicBool>,
    /// Set by SIGTERM only.
    term: Arc<AtomicBool>,
}

impl Signals {
    /// Installs the handlers for this process (they only set the flags).
    pub fn install() -> Signals {
        let stop = Arc::new(AtomicBool::new(false));
        let term = Arc::new(AtomicBool::new(false));
        use signal_hook::consts::{SIGINT, SIGTERM};
        let _ = signal_hook::flag::register(SIGINT, stop.clone());
        let _ = signal_hook::flag::register(SIGTERM, stop.clone());
        let _ = signal_hook::flag::register(SIGTERM, term.clone());
        Signals { stop, term }
    }

    /// True once either signal arrived.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// True when SIGTERM (not Ctrl-C) arrived.
    pub fn terminated(&self) -> bool {
        self.term.load(Ordering::Relaxed)
    }

    /// The exit code of a command a signal stopped: 143 for SIGTERM, else 130.
    pub fn exit_code(&self) -> ExitCode {
        if self.terminated() {
            ExitCode::Terminated
        } else {
            ExitCode::Interrupted
        }
    }
}

/// A command's error line on stderr, `plumb COMMAND: error: MESSAGE`, the
/// message passed through [`crate::terminal::clean_text`]: the one place a command's errors
/// are printed, so no message quoting input can reach the terminal raw.
pub fn print_error(command: &str, message: &str) {
    eprintln!(
        "plumb {command}: error: {}",
        crate::terminal::clean_text(message)
    );
}
