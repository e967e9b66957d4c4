//! Integration tests: the real `plumb` binary against real files and processes.

mod util;

mod accuracy;
mod background;
mod budget_inodes;
mod cache_git;
mod cache_journal;
mod cache_scratch;
mod compare;
mod dbench;
mod engines;
mod file_api;
mod fio_readers;
mod fleet;
mod hangs;
mod honest;
mod hostile;
mod jobs_and_output;
mod limits_run;
mod net;
mod options;
mod pack;
mod packs_surfaces;
mod props;
mod render;
mod results;
mod run;
mod safety;
mod seed_commands;
mod select;
mod serve;
mod suites;
mod templates;
mod trace;
mod trace_apps;
mod wasm;
