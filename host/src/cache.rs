//! plumb's cache directory: `$PLUMB_CACHE_DIR`, else `$XDG_CACHE_HOME/plumb`,
//! else `~/.cache/plumb`; compiled components and git clones of packs live
//! in folders of their own below it.

use std::path::PathBuf;

/// The cache folder for `kind` (`wasm`, `git`), if one can be named.
pub fn dir(kind: &str) -> Option<PathBuf> {
    let base = std::env::var_os("PLUMB_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("plumb")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/plumb")))?;
    Some(base.join(kind))
}
