//! Compiled components cached on disk, keyed by the component's SHA-256,
//! plumb's version and the engine's settings, so a pack's second run does
//! not compile again. The cache lives in `$PLUMB_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/plumb`, else `~/.cache/plumb`.
//!
//! A cached artifact is native code, so the cache is private and every
//! artifact authenticated before wasmtime sees it:
//! - the directory passes the rule of every cache folder
//!   ([`crate::cache::open`]: made `0700`, owned by this user, writable by no
//!   one else); one that does not is not used (compiling without caching,
//!   said once on stderr);
//! - each `KEY.cwasm` holds a header with SHA-256(key ‖ artifact), written
//!   at compile time, then the artifact. Before deserializing, the file is
//!   read into memory once, the digest checked against those bytes and the
//!   component deserialized from the same bytes (no second read). A file
//!   copied from another key, truncated or corrupted fails the check and is
//!   compiled again and replaced;
//! - files are written to a temporary file, synced and renamed into place.

use sha2::{Digest, Sha256};
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use wasmtime::component::Component;
use wasmtime::Engine;

/// What every cache file starts with, before the 32-byte digest.
const MAGIC: &[u8] = b"plumb-cwasm-v1\n";

/// The largest cache file read back (a component's artifact is far smaller).
const MAX_ARTIFACT: u64 = 1 << 30;

fn key(engine: &Engine, bytes: &[u8]) -> String {
    let mut settings = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut settings);
    let mut h = Sha256::new();
    h.update(bytes);
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(settings.finish().to_le_bytes());
    format!("{:x}", h.finalize())
}

/// The digest that binds an artifact to its key.
fn seal(key: &str, artifact: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(key.as_bytes());
    h.update(artifact);
    h.finalize().into()
}

/// Says once per process why the cache is not used.
fn warn_unused(why: &crate::cache::CacheError) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        tracing::warn!(
            "plumb: not using the compiled-component cache: {why}; compiling without caching"
        )
    });
}

/// The artifact stored for `key`, if the file is there and its digest holds.
fn load(path: &Path, key: &str) -> Option<Vec<u8>> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let m = f.metadata().ok()?;
    if !m.is_file() || m.len() > MAX_ARTIFACT {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(MAX_ARTIFACT).read_to_end(&mut bytes).ok()?;
    let rest = bytes.strip_prefix(MAGIC)?;
    let (digest, artifact) = rest.split_at_checked(32)?;
    (digest == seal(key, artifact)).then(|| artifact.to_vec())
}

/// Writes the sealed artifact to a temporary file, syncs it and renames it
/// over `path`.
fn store(dir: &Path, path: &Path, key: &str, artifact: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{key}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(MAGIC)?;
        f.write_all(&seal(key, artifact))?;
        f.write_all(artifact)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The component from the cache, or compiled (and stored); true when cached.
pub fn load_or_compile(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<(Component, bool)> {
    let dir = match crate::cache::open("wasm") {
        Ok(dir) => dir,
        Err(crate::cache::CacheError::Unnamed) => {
            return Ok((Component::new(engine, bytes)?, false))
        }
        Err(why) => {
            warn_unused(&why);
            return Ok((Component::new(engine, bytes)?, false));
        }
    };
    let key = key(engine, bytes);
    let path = dir.join(format!("{key}.cwasm"));
    if let Some(artifact) = load(&path, &key) {
        // SAFETY: `artifact` is exactly what this plumb wrote for this key
        // (version and engine settings are in the key): its SHA-256 bound to
        // the key was checked on these very bytes, read from a private
        // directory. wasmtime still checks its header and refuses a
        // mismatch, in which case the component is compiled again below.
        if let Ok(c) = unsafe { Component::deserialize(engine, &artifact) } {
            return Ok((c, true));
        }
    }
    let component = Component::new(engine, bytes)?;
    if let Ok(artifact) = component.serialize() {
        let _ = store(&dir, &path, &key, &artifact);
    }
    Ok((component, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_artifact_loads_only_under_its_own_key() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("a.cwasm");
        store(t.path(), &path, "a", b"native code").unwrap();
        assert_eq!(load(&path, "a").as_deref(), Some(&b"native code"[..]));
        assert_eq!(load(&path, "b"), None, "copied under another key");
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(load(&path, "a"), None, "corrupted");
        std::fs::write(&path, b"plumb").unwrap();
        assert_eq!(load(&path, "a"), None, "truncated");
    }
}
