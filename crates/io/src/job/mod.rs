//! Jobs described with fio's options: the typed spec, the option table, and
//! the command-line and job-file parsers.

pub mod cmdline;
pub mod expand;
pub mod help;
pub mod jobfile;
pub mod options;
pub mod spec;
mod values;

pub use spec::JobSpec;
pub use values::ValueError;
