//! Why a scenario stopped, the same for both runtimes: each runtime decides
//! the kind from typed facts (the stop flag, the deadline, its memory
//! limiter, the category a host error carried), never from message text.

use super::ErrorKind;
use std::fmt;

/// What stopped a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScenarioErrorKind {
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// The scenario's deadline (`--timeout`) passed.
    Deadline,
    /// A WebAssembly guest grew its memory past `--wasm-memory`.
    MemoryLimit,
    /// A WebAssembly guest trapped (the message has its backtrace).
    Trap,
    /// A script error: syntax, a type error, a script limit, a `throw`
    /// (the message has `file:line:col`).
    Script,
    /// A host operation failed and the scenario did not handle it.
    Host(ErrorKind),
    /// The component's `run` returned an error of its own.
    Failed,
    /// The runtime could not start (its thread, its instance).
    Start,
}

impl ScenarioErrorKind {
    /// The kind as result files record it: `interrupted`, `deadline`,
    /// `memory_limit`, `trap`, `script`, `failed`, `start`, or `host/` and
    /// the host error's category (`host/sandbox`, `host/os`, …).
    pub fn name(self) -> String {
        match self {
            ScenarioErrorKind::Interrupted => "interrupted".into(),
            ScenarioErrorKind::Deadline => "deadline".into(),
            ScenarioErrorKind::MemoryLimit => "memory_limit".into(),
            ScenarioErrorKind::Trap => "trap".into(),
            ScenarioErrorKind::Script => "script".into(),
            ScenarioErrorKind::Host(kind) => format!("host/{}", kind.name()),
            ScenarioErrorKind::Failed => "failed".into(),
            ScenarioErrorKind::Start => "start".into(),
        }
    }
}

/// A scenario's error: its kind, and the message for the user (with the
/// file, and the place or backtrace when there is one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// What stopped it.
    pub kind: ScenarioErrorKind,
    /// What to tell the user.
    pub message: String,
}

impl ScenarioError {
    /// An error of `kind` with its message.
    pub fn new(kind: ScenarioErrorKind, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScenarioError {}
