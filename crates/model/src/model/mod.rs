//! The data model that renderers, `plumb compare` and saved result files
//! share: job results, run reports, result documents and machine
//! descriptions. It depends only on the leaf modules (stats, units), never on
//! the runner, the scenario runtimes or the commands.

pub mod comparison;
pub mod document;
pub mod machine;
pub mod result;
pub mod run;
pub mod template;
