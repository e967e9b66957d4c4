//! Integration tests: the real `plumb` binary against real files and processes.

mod util;

mod accuracy;
mod compare;
mod engines;
mod hostile;
mod jobs_and_output;
mod net;
mod options;
mod props;
mod run;
mod safety;
mod seed_commands;
mod trace;
mod wasm;
