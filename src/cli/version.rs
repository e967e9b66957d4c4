//! What `plumb --version` says: the package's version, the commit the
//! binary was built from (with `+changes` when the tree had uncommitted
//! changes) and the build profile, so that a result or a bug report names
//! the exact build (see build.rs).

/// `0.1.0 (commit 1a2b3c4d5e6f, release build)`.
pub const LONG: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("PLUMB_COMMIT"),
    ", ",
    env!("PLUMB_PROFILE"),
    " build)"
);
