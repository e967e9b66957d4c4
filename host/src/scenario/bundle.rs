//! Pack bundles: one file (`NAME-VERSION.plumbpack`, a ustar archive)
//! holding a pack's files and `SHA256SUMS`, the index of their SHA-256s in
//! `sha256sum`'s format. A bundle is deterministic — entries sorted, mtime
//! 0, owner 0:0, mode 0644 — so the same files always give the same bytes,
//! and the bundle's SHA-256 identifies the pack. Reading one is hostile
//! input: only regular files with plain names, bounded sizes and counts, no
//! name twice, and every file must match the index (the file at fault is
//! named).

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;

/// The index's name inside a bundle.
pub const INDEX: &str = "SHA256SUMS";
/// A bundle file's extension.
pub const EXTENSION: &str = "plumbpack";
/// The most files a bundle may hold.
pub const MAX_FILES: usize = 1024;
/// The largest bundle plumb reads.
pub const MAX_BUNDLE: u64 = 1 << 30;

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

/// A tar reader's error, as plain text of bounded length (it may quote the
/// archive's bytes).
fn not_a_bundle(e: std::io::Error) -> String {
    let text: String = e
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(80)
        .collect();
    format!("not a bundle (a ustar archive): {text}")
}

/// The index text: `HASH  NAME` per file, sorted by name.
fn index(files: &Files) -> String {
    files
        .iter()
        .map(|(name, bytes)| format!("{}  {name}\n", sha256_hex(bytes)))
        .collect()
}

/// The bundle of `files` (names already checked with [`plain_name`]).
pub fn write(files: &Files) -> std::io::Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
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

/// Reads a bundle: its files (the index left out), each checked against
/// the index.
pub fn read(bytes: &[u8], max_file: u64) -> Result<Files, String> {
    let mut archive = tar::Archive::new(bytes);
    let mut files = Files::new();
    let mut listed = None;
    let entries = archive.entries().map_err(not_a_bundle)?;
    for entry in entries {
        let mut entry = entry.map_err(not_a_bundle)?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let shown: String = name.chars().take(60).collect();
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Err(format!("'{shown}' is not a regular file"));
        }
        if !plain_name(&name) && name != INDEX {
            return Err(format!("'{shown}' is not a plain file name"));
        }
        let size = entry.header().size().map_err(|e| format!("{shown}: {e}"))?;
        if size > max_file {
            return Err(format!(
                "{shown} is {size} bytes; a pack file may have at most {max_file}"
            ));
        }
        if files.len() >= MAX_FILES {
            return Err(format!("more than {MAX_FILES} files"));
        }
        let mut data = Vec::with_capacity(size as usize);
        (&mut entry)
            .take(max_file + 1)
            .read_to_end(&mut data)
            .map_err(|e| format!("{shown}: {e}"))?;
        if name == INDEX {
            if listed.is_some() {
                return Err(format!("{INDEX} appears twice"));
            }
            listed = Some(String::from_utf8(data).map_err(|_| format!("{INDEX} is not text"))?);
        } else if files.insert(name.clone(), data).is_some() {
            return Err(format!("{shown} appears twice"));
        }
    }
    let listed = listed.ok_or_else(|| format!("not a bundle: no {INDEX}"))?;
    let mut want: BTreeMap<String, String> = BTreeMap::new();
    for (n, line) in listed.lines().enumerate() {
        let (hash, name) = line
            .split_once("  ")
            .filter(|(h, _)| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| format!("{INDEX} line {} is not 'SHA256  NAME'", n + 1))?;
        want.insert(name.to_string(), hash.to_ascii_lowercase());
    }
    for (name, bytes) in &files {
        match want.get(name) {
            None => return Err(format!("{name} is not in {INDEX}")),
            Some(h) if *h != sha256_hex(bytes) => {
                return Err(format!(
                    "{name} was altered after bundling: its SHA-256 is {} but {INDEX} says {h}",
                    sha256_hex(bytes)
                ))
            }
            Some(_) => {}
        }
    }
    if let Some(missing) = want.keys().find(|n| !files.contains_key(*n)) {
        return Err(format!("{missing} is listed in {INDEX} but missing"));
    }
    Ok(files)
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
        assert_eq!(read(&a, 1 << 20).unwrap(), sample());
        let mut changed = sample();
        changed.get_mut("a.rhai").unwrap()[0] ^= 1;
        assert_ne!(sha256_hex(&a), sha256_hex(&write(&changed).unwrap()));
    }

    #[test]
    fn an_altered_file_is_named() {
        let mut a = write(&sample()).unwrap();
        let at = a.windows(9).position(|w| w == b"print(1);").unwrap();
        a[at + 6] = b'2';
        let e = read(&a, 1 << 20).unwrap_err();
        assert!(e.contains("a.rhai was altered after bundling"), "{e}");
        assert!(read(b"garbage", 10).is_err());
        assert!(read(&a, 4).unwrap_err().contains("at most 4"));
    }
}
