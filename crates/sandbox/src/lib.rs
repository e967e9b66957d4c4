//! The run directory a scenario sees and nothing else: every path resolved
//! beneath it (openat2 RESOLVE_BENEATH), the byte and inode budget, and the
//! owner checks.
//!
//! Layer 2 of 15: it may use no other plumb crate; the crates above it are not among its dependencies, so an upward import does not compile.
#![deny(missing_docs)]

pub mod sandbox;
