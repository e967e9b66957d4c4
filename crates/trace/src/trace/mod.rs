//! Application traces: record a program's file operations with strace,
//! import strace logs, fio iologs and dbench load files, summarise them, and
//! replay them inside the sandbox (as many copies at once as asked).
//!
//! The operations a trace holds are defined once, in the table of
//! `format/ops.rs` ([`format`](mod@format) tells how): reading and writing traces,
//! `show`'s names and counts and the byte budget's estimates follow from
//! it; the converters make operations, and the replay carries each out as
//! its system call (`replay/execute.rs`, `replay/fd_calls.rs`). Every
//! error is typed, and those about an input name its file and line.

pub mod budget;
pub mod calibrate;
pub mod dbench;
pub mod format;
pub mod halt;
pub mod iolog;
pub mod layout;
pub mod limits;
pub mod profile;
pub mod replay;
pub mod show;
pub mod strace;

pub use format::{Op, OpKind, Trace, TraceError};
pub use halt::{Bounds, Halt};
pub use replay::{
    MapReplay, OpSummary, OptionError, Reference, Refusal, ReplayError, ReplayOptions,
    ReplayResult, Speed, StepSummary,
};
