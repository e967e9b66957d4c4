//! Application traces: record a program's file operations with strace,
//! import strace logs, fio iologs and dbench load files, summarise them, and
//! replay them inside the sandbox (as many copies at once as asked).

pub mod budget;
pub mod dbench;
pub mod format;
pub mod halt;
pub mod iolog;
pub mod layout;
pub mod limits;
pub mod replay;
pub mod show;
pub mod strace;

pub use format::{Op, OpKind, Trace, TraceError};
pub use halt::{Bounds, Halt};
pub use replay::{
    OptionError, Refusal, ReplayError, ReplayOptions, ReplayResult, Speed, StepSummary,
};
