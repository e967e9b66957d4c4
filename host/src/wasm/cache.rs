//! Compiled components cached on disk, keyed by the component's SHA-256,
//! plumb's version and the engine's settings, so a pack's second run does
//! not compile again. The cache lives in `$PLUMB_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/plumb`, else `~/.cache/plumb`.

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use wasmtime::component::Component;
use wasmtime::Engine;

/// The cache directory, if one can be named.
pub fn dir() -> Option<PathBuf> {
    let base = std::env::var_os("PLUMB_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("plumb")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/plumb")))?;
    Some(base.join("wasm"))
}

fn key(engine: &Engine, bytes: &[u8]) -> String {
    let mut settings = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut settings);
    let mut h = Sha256::new();
    h.update(bytes);
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(settings.finish().to_le_bytes());
    format!("{:x}", h.finalize())
}

/// The component from the cache, or compiled (and stored); true when cached.
pub fn load_or_compile(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<(Component, bool)> {
    let Some(dir) = dir() else {
        return Ok((Component::new(engine, bytes)?, false));
    };
    let path = dir.join(format!("{}.cwasm", key(engine, bytes)));
    if path.is_file() {
        // SAFETY: the artifact was written by this plumb version with these
        // engine settings (both are in the file name's key) into the user's
        // own cache; wasmtime still checks its header and refuses a mismatch,
        // in which case the component is compiled again below.
        if let Ok(c) = unsafe { Component::deserialize_file(engine, &path) } {
            return Ok((c, true));
        }
    }
    let component = Component::new(engine, bytes)?;
    if let Ok(artifact) = component.serialize() {
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let stored = std::fs::create_dir_all(&dir)
            .and_then(|_| std::fs::write(&tmp, artifact))
            .and_then(|_| std::fs::rename(&tmp, &path));
        if stored.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    Ok((component, false))
}
