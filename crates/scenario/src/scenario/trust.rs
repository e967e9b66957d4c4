//! How far a pack named on the command line is trusted: the keys whose
//! signatures count, a pinned content hash, and whether a signature is
//! required — the policy `plumb run`, `plumb fleet run` and
//! `plumb pack inspect`/`verify` share.

use crate::scenario::pack::{Origin, Pack};
use crate::scenario::signature::{self, SignatureError, Signed};
use std::path::{Path, PathBuf};

/// A trusted public key and its id.
pub type TrustedKey = (minisign::PublicKey, String);

/// The trust options of a command (`--sha256`, `--trust`,
/// `--trusted-keys`, `--require-signature`).
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The content hash the pack must have.
    pub sha256: Option<String>,
    /// Public keys (files or the keys themselves) whose signatures count.
    pub trust: Vec<String>,
    /// A file of trusted public keys, one per line.
    pub trusted_keys: Option<PathBuf>,
    /// Refuse a pack that is not a bundle signed by a trusted key.
    pub require_signature: bool,
}

/// A key that cannot be read, or a pack the policy refuses.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// A `--trust` key that is not a key.
    #[error("--trust: {0}")]
    Key(SignatureError),
    /// A `--trusted-keys` file that cannot be read.
    #[error("--trusted-keys: {0}")]
    KeyFile(SignatureError),
    /// The pack's content hash is not the pinned one.
    #[error("pack {pack} has SHA-256 {actual}, not {wanted} (--sha256); nothing was run")]
    NotPinned {
        /// The pack's name.
        pack: String,
        /// Its content hash.
        actual: String,
        /// The hash `--sha256` gave.
        wanted: String,
    },
    /// Signed, but by a key not trusted.
    #[error("pack {pack} is signed by key {key_id}, which is not trusted (--trust, --trusted-keys); nothing was run")]
    UntrustedSigner {
        /// The pack's name.
        pack: String,
        /// The signer's key id.
        key_id: String,
    },
    /// Not a signed bundle, under `--require-signature`.
    #[error("pack {0} is not a signed bundle (--require-signature); nothing was run")]
    Unsigned(String),
}

impl Policy {
    /// The trusted keys this policy names.
    pub fn keys(&self) -> Result<Vec<TrustedKey>, TrustError> {
        trusted(&self.trust, self.trusted_keys.as_deref())
    }

    /// Refuses `p` when it is not the pack `sha256` pins, or not signed by
    /// a trusted key under `require_signature`.
    pub fn check(&self, p: &Pack) -> Result<(), TrustError> {
        pinned(p, self.sha256.as_deref(), self.require_signature)
    }
}

/// The trusted keys from `--trust` (each a key file or a key) and
/// `--trusted-keys` (a file of keys).
pub fn trusted(trust: &[String], file: Option<&Path>) -> Result<Vec<TrustedKey>, TrustError> {
    let mut keys = trust
        .iter()
        .map(|t| signature::public_key(t).map_err(TrustError::Key))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(f) = file {
        keys.extend(signature::trusted_keys(f).map_err(TrustError::KeyFile)?);
    }
    Ok(keys)
}

/// Refuses a pack whose content hash is not `sha256`, or (with
/// `require_signature`) one not signed by a trusted key.
pub fn pinned(p: &Pack, sha256: Option<&str>, require_signature: bool) -> Result<(), TrustError> {
    if let Some(want) = sha256 {
        if !want.eq_ignore_ascii_case(&p.sha256) {
            return Err(TrustError::NotPinned {
                pack: p.name.clone(),
                actual: p.sha256.clone(),
                wanted: want.to_string(),
            });
        }
    }
    if require_signature {
        match &p.origin {
            Origin::Bundle {
                signed: Signed::Verified { .. },
                ..
            } => {}
            Origin::Bundle {
                signed: Signed::Untrusted { key_id },
                ..
            } => {
                return Err(TrustError::UntrustedSigner {
                    pack: p.name.clone(),
                    key_id: key_id.clone(),
                })
            }
            _ => return Err(TrustError::Unsigned(p.name.clone())),
        }
    }
    Ok(())
}
