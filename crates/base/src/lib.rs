//! plumb's foundation: sizes and durations with fio's suffixes, the thread
//! gate and the stop rule (deadline, signal) every long operation polls, live
//! counters, statistics, atomic saves, bounded reads of named files, safe
//! terminal text, the cache and scratch directories, and the time and memory
//! limits of the programs plumb runs on foreign input. It depends on no other
//! plumb crate.
//!
//! Layer 1 of 15: it may use no other plumb crate; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod cache;
pub mod child;
pub mod gate;
pub mod halt;
pub mod headroom;
pub mod heap;
pub mod input;
pub mod meter;
pub mod save;
pub mod scratch;
pub mod stats;
pub mod terminal;
pub mod units;
