//! Workload generation: which file, direction, offset and size comes next.

mod blocksize;
mod chooser;
mod flow;
mod minrate;
mod offsets;
mod pattern;
mod permutation;
mod rate;
mod shaped;
mod think;

pub use blocksize::BlockSizePicker;
pub use chooser::DistributionError;
pub use flow::{Flow, Flows};
pub use minrate::{MinRate, MinRateMiss};
pub use offsets::{NextIo, OffsetGenerator, Region};
pub use pattern::{fill_random, stamp_block, verify_block, VerifyError, HEADER_LEN};
pub use permutation::Permutation;
pub use rate::RateLimiter;
pub use think::Think;
