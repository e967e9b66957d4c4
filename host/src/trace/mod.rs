//! Application traces: record a program's file operations with strace,
//! import strace logs and fio iologs, summarise them, and replay them inside
//! the sandbox.

pub mod format;
pub mod iolog;
pub mod replay;
pub mod show;
pub mod strace;

pub use format::{Op, OpKind, Trace, TraceError};
pub use replay::{ReplayOptions, ReplayResult, Speed};
