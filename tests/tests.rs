//! Integration tests: the real `plumb` binary against real files and processes.

mod util;

mod accuracy;
mod compare;
mod engines;
mod file_api;
mod jobs_and_output;
mod net;
mod options;
mod run;
mod safety;
mod seed_commands;
mod trace;
mod wasm;
