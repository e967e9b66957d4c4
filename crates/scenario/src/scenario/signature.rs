//! Pack signatures in minisign's formats (Ed25519, through the `minisign`
//! crate), so the real `minisign` tool verifies what plumb signs and plumb
//! verifies what `minisign` signs: keys are minisign key files, and a
//! bundle's signature is `BUNDLE.minisig` beside it, as `minisign -S`
//! writes it.

use minisign::{PError, PublicKey, PublicKeyBox, SecretKey, SecretKeyBox, SignatureBox};
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

/// A key, a signature or a bundle that cannot be used, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// A file that cannot be read.
    #[error("{}: {reason}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: crate::input::InputError,
    },
    /// A key or signature file that is not text.
    #[error("{}: not text", .0.display())]
    NotText(PathBuf),
    /// A file that is not a public key.
    #[error("{}: not a minisign public key: {source}", .path.display())]
    NotPublicKeyFile {
        /// The file.
        path: PathBuf,
        /// minisign's reason.
        source: PError,
    },
    /// Neither a key file nor a key.
    #[error("'{spec}' is neither a public key file nor a minisign public key: {source}")]
    NotPublicKey {
        /// What was given.
        spec: String,
        /// minisign's reason.
        source: PError,
    },
    /// A line of a trusted-keys file that is not a key.
    #[error("{}:{line}: {source}", .path.display())]
    KeyLine {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// Why.
        source: Box<SignatureError>,
    },
    /// A key file that exists already.
    #[error("{} exists; plumb does not overwrite keys", .0.display())]
    Exists(PathBuf),
    /// Both keys at one path.
    #[error("the public and the secret key would both be {}: give two paths", .0.display())]
    SamePath(PathBuf),
    /// minisign failed.
    #[error("{0}")]
    Minisign(#[from] PError),
    /// A file that cannot be written or read again.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A file that is not a secret key.
    #[error("{}: not a minisign secret key: {source}", .path.display())]
    NotSecretKey {
        /// The file.
        path: PathBuf,
        /// minisign's reason.
        source: PError,
    },
    /// A secret key that cannot be opened.
    #[error("{}: {source} (an encrypted key needs its password in PLUMB_KEY_PASSWORD)", .path.display())]
    Locked {
        /// The file.
        path: PathBuf,
        /// minisign's reason.
        source: PError,
    },
    /// A bundle that is not one plumb loads.
    #[error("{}: {source}", .path.display())]
    Bundle {
        /// The bundle.
        path: PathBuf,
        /// Why.
        source: super::bundle::BundleError,
    },
    /// The bundle changed while it was signed.
    #[error("{}: the bundle changed while it was signed; nothing was written", .0.display())]
    ChangedWhileSigning(PathBuf),
    /// The signature cannot be saved.
    #[error("{}: {source}", .path.display())]
    Save {
        /// The signature file.
        path: PathBuf,
        /// Why.
        source: crate::save::SaveError,
    },
    /// A file that is not a signature.
    #[error("{}: not a minisign signature: {source}", .path.display())]
    NotSignature {
        /// The file.
        path: PathBuf,
        /// minisign's reason.
        source: PError,
    },
    /// A legacy signature.
    #[error("{}: a legacy signature (not prehashed); sign the bundle again with plumb pack sign or minisign -S", .0.display())]
    Legacy(PathBuf),
    /// The bundle cannot be read again.
    #[error("{0}")]
    Rewind(std::io::Error),
    /// A trusted key's signature that does not hold.
    #[error("{}: the signature by key {key_id} does not match the bundle (altered after signing?): {source}", .path.display())]
    Mismatch {
        /// The signature file.
        path: PathBuf,
        /// The key's id.
        key_id: String,
        /// minisign's reason.
        source: PError,
    },
    /// The bundle changed while it was read.
    #[error("the bundle changed while it was read; nothing was run")]
    ChangedWhileRead,
}

/// The largest key or signature file read.
const MAX_KEY_FILE: u64 = 64 << 10;

/// The signature file of a bundle: `BUNDLE.minisig`.
pub fn signature_path(bundle: &Path) -> PathBuf {
    let mut p = bundle.as_os_str().to_owned();
    p.push(".minisig");
    PathBuf::from(p)
}

/// A key id as minisign prints it: 16 hex digits.
fn key_id(keynum: &[u8]) -> String {
    let mut n = [0u8; 8];
    n.copy_from_slice(&keynum[..8.min(keynum.len())]);
    format!("{:016X}", u64::from_le_bytes(n))
}

fn read_small(path: &Path) -> Result<String, SignatureError> {
    let bytes =
        crate::input::read_file(path, MAX_KEY_FILE).map_err(|reason| SignatureError::Read {
            path: path.to_path_buf(),
            reason,
        })?;
    String::from_utf8(bytes).map_err(|_| SignatureError::NotText(path.to_path_buf()))
}

/// A public key: a minisign public key file, or the key itself (the
/// base64 line of such a file).
pub fn public_key(spec: &str) -> Result<(PublicKey, String), SignatureError> {
    let path = Path::new(spec);
    let key = if path.is_file() {
        let text = read_small(path)?;
        PublicKeyBox::from_string(&text)
            .and_then(|b| b.into_public_key())
            .map_err(|source| SignatureError::NotPublicKeyFile {
                path: path.to_path_buf(),
                source,
            })?
    } else {
        PublicKey::from_base64(spec.trim()).map_err(|source| SignatureError::NotPublicKey {
            spec: spec.to_string(),
            source,
        })?
    };
    let id = key_id(key.keynum());
    Ok((key, id))
}

/// Trusted keys from a file: one minisign public key (base64) per line;
/// blank lines, comments (`#`) and minisign's `untrusted comment:` lines
/// are skipped.
pub fn trusted_keys(path: &Path) -> Result<Vec<(PublicKey, String)>, SignatureError> {
    let text = read_small(path)?;
    let mut keys = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("untrusted comment:") {
            continue;
        }
        keys.push(public_key(line).map_err(|e| SignatureError::KeyLine {
            path: path.to_path_buf(),
            line: n + 1,
            source: Box::new(e),
        })?);
    }
    Ok(keys)
}

/// Makes a key pair without a password (as `minisign -G -W`): writes the
/// public key to `public` and the secret key to `secret` (mode 0600).
/// Refuses, before writing anything, to overwrite either or to give both
/// the same path; a failure leaves neither file behind. Returns the key id.
pub fn keygen(public: &Path, secret: &Path) -> Result<String, SignatureError> {
    for p in [public, secret] {
        if std::fs::symlink_metadata(p).is_ok() {
            return Err(SignatureError::Exists(p.to_path_buf()));
        }
    }
    if same_place(public, secret) {
        return Err(SignatureError::SamePath(public.to_path_buf()));
    }
    let pair = minisign::KeyPair::generate_unencrypted_keypair()?;
    let id = key_id(pair.pk.keynum());
    let pk = pair.pk.to_box()?.to_string();
    let sk = pair
        .sk
        .to_box(Some(&format!("plumb secret key {id}")))?
        .to_string();
    write_new(secret, sk.as_bytes(), 0o600)?;
    if let Err(e) = write_new(public, pk.as_bytes(), 0o644) {
        // The secret key is ours (made just now, O_EXCL): no half pair stays.
        let _ = std::fs::remove_file(secret);
        return Err(e);
    }
    Ok(id)
}

/// Whether two paths not yet made name the same file: the same name in the
/// same directory (however the directory is spelled).
fn same_place(a: &Path, b: &Path) -> bool {
    let place = |p: &Path| {
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Some((std::fs::canonicalize(dir).ok()?, p.file_name()?.to_owned()))
    };
    a == b || matches!((place(a), place(b)), (Some(x), Some(y)) if x == y)
}

/// Writes a new file (never an existing one, nor through a symlink) with
/// `mode`, durably; on a failure after it was made, removes it.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), SignatureError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let at = |source| SignatureError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(at)?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(|e| {
        let _ = std::fs::remove_file(path);
        at(e)
    })
}

/// Signs `bundle` with the secret key file `key` (unencrypted, or with the
/// password in `password`), writing `BUNDLE.minisig`. Returns the key id.
pub fn sign(bundle: &Path, key: &Path, password: Option<String>) -> Result<String, SignatureError> {
    let text = read_small(key)?;
    let sk_box =
        SecretKeyBox::from_string(&text).map_err(|source| SignatureError::NotSecretKey {
            path: key.to_path_buf(),
            source,
        })?;
    let sk: SecretKey = match password {
        None => sk_box.into_unencrypted_secret_key(),
        Some(p) => sk_box.into_secret_key(Some(p)),
    }
    .map_err(|source| SignatureError::Locked {
        path: key.to_path_buf(),
        source,
    })?;
    // Only a bundle plumb would load is signed; read as a stream twice
    // (checked, then signed) through one open file.
    let path = bundle.to_path_buf();
    let mut file =
        crate::input::open_file(bundle, super::bundle::MAX_BUNDLE).map_err(|reason| {
            SignatureError::Read {
                path: path.clone(),
                reason,
            }
        })?;
    let sha256 = super::bundle::read(&mut file)
        .map_err(|source| SignatureError::Bundle {
            path: path.clone(),
            source,
        })?
        .sha256;
    file.rewind().map_err(|source| SignatureError::Io {
        path: path.clone(),
        source,
    })?;
    let name = bundle
        .file_name()
        .map_or("bundle".into(), |n| n.to_string_lossy().into_owned());
    let trusted = format!("file:{name}\tsha256:{sha256}");
    let mut signed = super::bundle::Hashing::new(file.take(super::bundle::MAX_BUNDLE));
    let sig = minisign::sign(None, &sk, &mut signed, Some(&trusted), None)?;
    if signed.sha256() != sha256 {
        return Err(SignatureError::ChangedWhileSigning(path));
    }
    let out = signature_path(bundle);
    crate::save::write_atomic(&out, sig.to_string().as_bytes()).map_err(|source| {
        SignatureError::Save {
            path: out.clone(),
            source,
        }
    })?;
    Ok(key_id(sig.keynum()))
}

/// What a bundle's signature says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signed {
    /// No `BUNDLE.minisig`.
    Unsigned,
    /// Signed by this key, which is not among the trusted ones (the
    /// signature itself is not checked without the key).
    Untrusted {
        /// The signer's key id.
        key_id: String,
    },
    /// Signed by a trusted key, and the signature holds.
    Verified {
        /// The signer's key id.
        key_id: String,
        /// The signature's trusted comment.
        comment: String,
    },
}

/// Checks the signature in `sig_file` of the bundle open in `data` (read
/// again from its start, as a stream), whose SHA-256 was `sha256` when it
/// was loaded, against `trusted` keys. A signature by a trusted key that
/// does not hold (the bundle or the signature was altered), a legacy
/// (not prehashed) one, or a bundle that changed since it was loaded is an
/// error.
pub fn check(
    data: &mut std::fs::File,
    sha256: &str,
    sig_file: &Path,
    trusted: &[(PublicKey, String)],
) -> Result<Signed, SignatureError> {
    if !sig_file.exists() {
        return Ok(Signed::Unsigned);
    }
    let text = read_small(sig_file)?;
    let sig = SignatureBox::from_string(&text).map_err(|source| SignatureError::NotSignature {
        path: sig_file.to_path_buf(),
        source,
    })?;
    let key_id = key_id(sig.keynum());
    let Some((pk, _)) = trusted.iter().find(|(_, id)| *id == key_id) else {
        return Ok(Signed::Untrusted { key_id });
    };
    if !sig.is_prehashed() {
        return Err(SignatureError::Legacy(sig_file.to_path_buf()));
    }
    data.rewind().map_err(SignatureError::Rewind)?;
    let mut read = super::bundle::Hashing::new(&mut *data);
    minisign::verify(pk, &sig, &mut read, true, false, false).map_err(|source| {
        SignatureError::Mismatch {
            path: sig_file.to_path_buf(),
            key_id: key_id.clone(),
            source,
        }
    })?;
    if read.sha256() != sha256 {
        return Err(SignatureError::ChangedWhileRead);
    }
    let comment = sig.trusted_comment().unwrap_or_default();
    Ok(Signed::Verified { key_id, comment })
}
