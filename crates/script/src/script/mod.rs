//! Scenario runtimes. Rhai today; each runtime is a thin adapter over the
//! host API in [`crate::api`].

pub mod lint;
pub mod rhai_engine;
pub mod rhai_modules;
pub mod template;
mod values;

use std::fmt;

/// A script error with its place: `file:line:col`, the message and the line quoted.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptError {
    /// The script's file name.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// What went wrong.
    pub message: String,
    /// The source line, quoted.
    pub source_line: Option<String>,
    /// True for errors found before running (syntax, unknown functions).
    pub compile_time: bool,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        write!(f, ": {}", self.message)?;
        if let Some(src) = &self.source_line {
            write!(f, "\n  | {src}")?;
            if let Some(c) = self.column {
                write!(f, "\n  | {}^", " ".repeat(c.saturating_sub(1)))?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ScriptError {}
