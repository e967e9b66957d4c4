//! Pack bundles: one file (`NAME-VERSION.plumbpack`, a ustar archive)
//! holding a pack's files and `SHA256SUMS`, the index of their SHA-256s in
//! `sha256sum`'s format. A bundle is deterministic — entries sorted, mtime
//! 0, owner 0:0, mode 0644 — so the same files always give the same bytes,
//! and the bundle's SHA-256 identifies the pack. Reading one is hostile
//! input: only regular files with plain names, bounded sizes and counts, no
//! name twice, and every file must match the index (the file at fault is
//! named). A bundle is read as a stream (never held whole in memory) and
//! must be byte for byte the one [`write`] makes of its files: no trailing
//! bytes, padding, extra blocks, other header fields or order, so one set
//! of files has exactly one pack hash.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// The index's name inside a bundle.
pub const INDEX: &str = "SHA256SUMS";
/// A pack's manifest.
pub const MANIFEST: &str = "pack.toml";
/// A bundle file's extension.
pub const EXTENSION: &str = "plumbpack";
/// The most files a bundle may hold.
pub const MAX_FILES: usize = 1024;
/// The most bytes a pack's files may hold together (one trace at the
/// trace limit): what loading a pack keeps in memory, whatever it is read
/// from.
pub const MAX_PACK_BYTES: u64 = 256 << 20;
/// The largest bundle plumb reads: [`MAX_PACK_BYTES`] of files, a header
/// and padding per file, the index and the end blocks.
pub const MAX_BUNDLE: u64 = MAX_PACK_BYTES + 2 * (MAX_FILES as u64 + 1) * 512 + (1 << 20);

/// A pack's files by name.
pub type Files = BTreeMap<String, Vec<u8>>;

/// SHA-256 of `bytes`, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// True for a name a pack file may have: one plain component of at most
/// 100 bytes (ustar's name field), not hidden, printable.
pub fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && !name.contains('/')
        && name.bytes().all(|b| b.is_ascii_graphic() && b != b'\\')
}

/// Checks a file name a manifest gives (a scenario, data file or
/// template): a [`plain_name`], and not one of the names a pack reserves
/// (the bundle's index, the manifest itself).
pub fn pack_file_name(name: &str) -> Result<(), BundleError> {
    if !plain_name(name) {
        return Err(BundleError::NotPlainInPack(name.to_string()));
    }
    if name == INDEX || name == MANIFEST {
        return Err(BundleError::Reserved(name.to_string()));
    }
    Ok(())
}

/// A bundle that cannot be read, or a file name a pack may not have; the
/// names shown are made safe to print.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A manifest names a file that is not a plain name.
    #[error("'{}' must be a plain file name inside the pack", crate::terminal::clean(.0))]
    NotPlainInPack(String),
    /// A manifest names a reserved file.
    #[error(
        "'{0}' is reserved (a bundle's index and the manifest have these names); rename the file"
    )]
    Reserved(String),
    /// Not a ustar archive (the reader's reason, bounded and printable).
    #[error("not a bundle (a ustar archive): {0}")]
    NotUstar(String),
    /// Reading failed.
    #[error("{0}")]
    Io(std::io::Error),
    /// Larger than [`MAX_BUNDLE`].
    #[error("larger than the limit of {MAX_BUNDLE} bytes for a bundle")]
    TooLarge,
    /// Not byte for byte the bundle plumb makes of its files.
    #[error(
        "not the bundle plumb makes of its files ({length} bytes where that one has {canonical}): \
             bytes after the archive, padding, extra blocks, other header fields or another order \
             would give the same files another pack hash (plumb pack bundle makes it anew)"
    )]
    NotCanonical {
        /// Its length.
        length: u64,
        /// The length of the bundle plumb makes.
        canonical: u64,
    },
    /// An entry that is not a regular file.
    #[error("'{0}' is not a regular file")]
    NotRegular(String),
    /// An entry whose name is not plain.
    #[error("'{0}' is not a plain file name")]
    NotPlain(String),
    /// An entry that cannot be read.
    #[error("{name}: {source}")]
    Entry {
        /// The entry (shown).
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// An entry over what is left of the limits.
    #[error("{name} is {size} bytes; a pack's files may have {MAX_PACK_BYTES} bytes together, {INDEX} {MAX_INDEX}")]
    EntryTooLarge {
        /// The entry (shown).
        name: String,
        /// Its size.
        size: u64,
    },
    /// More than [`MAX_FILES`] files.
    #[error("more than {MAX_FILES} files")]
    TooManyFiles,
    /// No memory for an entry.
    #[error("{name}: no memory for its {size} bytes")]
    NoMemory {
        /// The entry (shown).
        name: String,
        /// Its size.
        size: u64,
    },
    /// An entry twice.
    #[error("{0} appears twice")]
    Twice(String),
    /// The index is not text.
    #[error("{INDEX} is not text")]
    IndexNotText,
    /// No index.
    #[error("not a bundle: no {INDEX}")]
    NoIndex,
    /// A line of the index that is not `SHA256  NAME`.
    #[error("{INDEX} line {0} is not 'SHA256  NAME'")]
    IndexLine(usize),
    /// A file the index does not list.
    #[error("{0} is not in {INDEX}")]
    NotListed(String),
    /// A file whose hash is not the index's.
    #[error(
        "{name} was altered after bundling: its SHA-256 is {actual} but {INDEX} says {listed}"
    )]
    Altered {
        /// The file.
        name: String,
        /// Its hash.
        actual: String,
        /// The index's.
        listed: String,
    },
    /// A file the index lists that is missing.
    #[error("{} is listed in {INDEX} but missing", crate::terminal::clean(.0))]
    Missing(String),
}

/// A tar reader's error, as plain text of bounded length (it may quote the
/// archive's bytes).
fn not_a_bundle(e: std::io::Error) -> BundleError {
    let text: String = e
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(80)
        .collect();
    BundleError::NotUstar(text)
}

/// The index text: `HASH  NAME` per file, sorted by name.
fn index(files: &Files) -> String {
    files
        .iter()
        .map(|(name, bytes)| format!("{}  {name}\n", sha256_hex(bytes)))
        .collect()
}

/// Writes the bundle of `files` (names already checked with
/// [`plain_name`]) to `out`, and gives `out` back.
pub fn write_to<W: Write>(files: &Files, out: W) -> std::io::Result<W> {
    let mut b = tar::Builder::new(out);
    let index = index(files);
    let entries = std::iter::once((INDEX, index.as_bytes()))
        .chain(files.iter().map(|(n, v)| (n.as_str(), v.as_slice())));
    for (name, bytes) in entries {
        let mut h = tar::Header::new_ustar();
        h.set_path(name)?;
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        b.append(&h, bytes)?;
    }
    b.into_inner()
}

/// The bundle of `files`, in memory.
pub fn write(files: &Files) -> std::io::Result<Vec<u8>> {
    write_to(files, Vec::new())
}

/// The SHA-256 (hex) of the bundle of `files`, streamed through the hash:
/// no copy of the bundle is made.
pub fn bundle_sha256(files: &Files) -> std::io::Result<String> {
    let h = write_to(files, Hashing::new(std::io::sink()))?;
    Ok(format!("{:x}", h.hash.finalize()))
}

/// A reader or writer that hashes and counts every byte passing through.
pub struct Hashing<T> {
    inner: T,
    hash: Sha256,
    /// Bytes passed so far.
    pub bytes: u64,
}

impl<T> Hashing<T> {
    /// Hashes what passes through `inner`.
    pub fn new(inner: T) -> Self {
        Hashing {
            inner,
            hash: Sha256::new(),
            bytes: 0,
        }
    }

    /// The SHA-256 (hex) of what passed.
    pub fn sha256(self) -> String {
        format!("{:x}", self.hash.finalize())
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Seeking back to the start restarts the hash (what was hashed is then
/// the stream from its start again); seeking anywhere else is refused, as
/// the hash would no longer be of one stream.
impl<R: std::io::Seek> std::io::Seek for Hashing<R> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        if to != std::io::SeekFrom::Start(0) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "a hashed stream is read from its start",
            ));
        }
        let at = self.inner.seek(to)?;
        self.hash = Sha256::new();
        self.bytes = 0;
        Ok(at)
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The largest index a bundle may hold (a line per file).
const MAX_INDEX: u64 = 256 << 10;

/// A bundle as read.
#[derive(Debug)]
pub struct Bundle {
    /// Its files (the index left out), each checked against the index.
    pub files: Files,
    /// The SHA-256 of the bundle's bytes, hex: the pack's hash.
    pub sha256: String,
}

/// Reads a bundle from `input` as a stream: at most [`MAX_BUNDLE`] bytes,
/// files of at most [`MAX_PACK_BYTES`] together, each checked against the
/// index, and the whole byte for byte the bundle [`write`] makes of those
/// files. Memory: the files, once.
pub fn read(input: impl Read) -> Result<Bundle, BundleError> {
    let mut input = Hashing::new(input.take(MAX_BUNDLE + 1));
    let (files, listed) = entries(&mut input)?;
    check_index(&files, &listed)?;
    // The end blocks, and whatever follows them.
    std::io::copy(&mut input, &mut std::io::sink()).map_err(BundleError::Io)?;
    if input.bytes > MAX_BUNDLE {
        return Err(BundleError::TooLarge);
    }
    let length = input.bytes;
    let sha256 = input.sha256();
    let canonical = write_to(&files, Hashing::new(std::io::sink())).map_err(BundleError::Io)?;
    let canonical_length = canonical.bytes;
    if canonical_length != length || canonical.sha256() != sha256 {
        return Err(BundleError::NotCanonical {
            length,
            canonical: canonical_length,
        });
    }
    Ok(Bundle { files, sha256 })
}

/// The archive's files and its index text, read entry by entry: regular
/// files with plain names only, each size checked before it is read.
fn entries(input: impl Read) -> Result<(Files, String), BundleError> {
    let mut archive = tar::Archive::new(input);
    let mut files = Files::new();
    let mut listed = None;
    let mut total: u64 = 0;
    // Raw: GNU long names and pax headers are entries like any other (and
    // refused), never read into memory by the tar reader.
    let entries = archive.entries().map_err(not_a_bundle)?.raw(true);
    for entry in entries {
        let mut entry = entry.map_err(not_a_bundle)?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let shown = crate::terminal::cleaned(&name.chars().take(60).collect::<String>());
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Err(BundleError::NotRegular(shown));
        }
        if !plain_name(&name) {
            return Err(BundleError::NotPlain(shown));
        }
        let entry_error = |source| BundleError::Entry {
            name: shown.clone(),
            source,
        };
        let size = entry.header().size().map_err(entry_error)?;
        let left = if name == INDEX {
            MAX_INDEX
        } else {
            MAX_PACK_BYTES - total
        };
        if size > left {
            return Err(BundleError::EntryTooLarge { name: shown, size });
        }
        if files.len() >= MAX_FILES {
            return Err(BundleError::TooManyFiles);
        }
        let mut data = Vec::new();
        data.try_reserve_exact(size as usize)
            .map_err(|_| BundleError::NoMemory {
                name: shown.clone(),
                size,
            })?;
        (&mut entry)
            .take(size)
            .read_to_end(&mut data)
            .map_err(entry_error)?;
        if name == INDEX {
            if listed.is_some() {
                return Err(BundleError::Twice(INDEX.to_string()));
            }
            listed = Some(String::from_utf8(data).map_err(|_| BundleError::IndexNotText)?);
            continue;
        }
        total += size;
        if files.insert(name, data).is_some() {
            return Err(BundleError::Twice(shown));
        }
    }
    let listed = listed.ok_or(BundleError::NoIndex)?;
    Ok((files, listed))
}

/// Checks every file against the index `listed`, naming the file at fault.
fn check_index(files: &Files, listed: &str) -> Result<(), BundleError> {
    let mut want: BTreeMap<&str, String> = BTreeMap::new();
    for (n, line) in listed.lines().enumerate() {
        let (hash, name) = line
            .split_once("  ")
            .filter(|(h, _)| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or(BundleError::IndexLine(n + 1))?;
        want.insert(name, hash.to_ascii_lowercase());
    }
    for (name, bytes) in files {
        match want.get(name.as_str()) {
            None => return Err(BundleError::NotListed(name.clone())),
            Some(h) if *h != sha256_hex(bytes) => {
                return Err(BundleError::Altered {
                    name: name.clone(),
                    actual: sha256_hex(bytes),
                    listed: h.clone(),
                })
            }
            Some(_) => {}
        }
    }
    if let Some(missing) = want.keys().find(|n| !files.contains_key(**n)) {
        return Err(BundleError::Missing(missing.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Files {
        let mut f = Files::new();
        f.insert("pack.toml".into(), b"name = \"x\"\n".to_vec());
        f.insert("a.rhai".into(), b"print(1);".to_vec());
        f
    }

    #[test]
    fn the_same_files_give_the_same_bytes_and_read_back() {
        let a = write(&sample()).unwrap();
        assert_eq!(a, write(&sample()).unwrap());
        let back = read(&a[..]).unwrap();
        assert_eq!(back.files, sample());
        assert_eq!(back.sha256, sha256_hex(&a));
        assert_eq!(bundle_sha256(&sample()).unwrap(), sha256_hex(&a));
        let mut changed = sample();
        changed.get_mut("a.rhai").unwrap()[0] ^= 1;
        assert_ne!(sha256_hex(&a), sha256_hex(&write(&changed).unwrap()));
    }

    #[test]
    fn an_altered_file_is_named() {
        let mut a = write(&sample()).unwrap();
        let at = a.windows(9).position(|w| w == b"print(1);").unwrap();
        a[at + 6] = b'2';
        let e = read(&a[..]).unwrap_err().to_string();
        assert!(e.contains("a.rhai was altered after bundling"), "{e}");
        assert!(read(&b"garbage"[..]).is_err());
    }

    #[test]
    fn only_the_canonical_bytes_of_the_files_are_a_bundle() {
        let a = write(&sample()).unwrap();
        let refused = |bytes: &[u8]| {
            let e = read(bytes).unwrap_err().to_string();
            assert!(e.contains("not the bundle plumb makes"), "{e}");
        };
        // Bytes after the archive, and another record of zero blocks.
        refused(&[&a[..], b"x"].concat());
        refused(&[&a[..], &[0u8; 10240][..]].concat());
        // The same files in another order.
        let mut b = tar::Builder::new(Vec::new());
        let files = sample();
        let index = index(&files);
        for (name, bytes) in files
            .iter()
            .rev()
            .chain([(&INDEX.to_string(), &index.into_bytes())])
        {
            let mut h = tar::Header::new_ustar();
            h.set_path(name).unwrap();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append(&h, &bytes[..]).unwrap();
        }
        refused(&b.into_inner().unwrap());
        // The end blocks cut off (tar takes EOF for the end).
        refused(&a[..a.len() - 1024]);
    }
}
