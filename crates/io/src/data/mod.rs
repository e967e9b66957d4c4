//! What a job writes: fio's byte patterns (`buffer_pattern`) and the
//! content of each write (random, zeros, a pattern, compressible or
//! deduplicable buffers, refilled or scrambled per write).

mod content;
mod pattern;

pub use content::{Content, Participation};
pub use pattern::{parse_pattern, repeat_into, PatternError, MAX_PATTERN_BYTES};
