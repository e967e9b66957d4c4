//! plumb compressed for the wire: zstd where the host has `zstd`, gzip
//! where it has only `gzip`, as is otherwise. The host unpacks it into a
//! temporary file and checks the SHA-256 of the *unpacked* binary against
//! its name before it is used, so a damaged or planted packed copy can
//! fail a copy but never run.
//!
//! Each packed copy is made once per binary and kept in plumb's own cache
//! (`self/plumb-SHA.zst`), so a fleet of fifty hosts compresses once and a
//! second fleet run not at all.

use super::Binary;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

/// zstd's level, by measurement on plumb's stripped release binary
/// (39.7 MB; zstd's command line, one core of the development VM): level 3
/// made 11.2 MB in 0.24 s, level 9 10.0 MB in 1.3 s, level 12 9.9 MB in
/// 3.5 s, level 19 8.7 MB in 43 s (gzip -9: 11.6 MB in 4.9 s). Level 9 is
/// under the 12 MB wanted on the wire, once per binary.
const ZSTD_LEVEL: i32 = 9;

/// How the host unpacks what it receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// `zstd -dc`.
    Zstd,
    /// `gzip -dc`.
    Gzip,
    /// Sent as it is (`cat`).
    Plain,
}

impl Packing {
    /// The best the host can unpack, from its check's `unpack=` field.
    pub fn from_probe(field: Option<&str>) -> Packing {
        match field {
            Some("zstd") => Packing::Zstd,
            Some("gzip") => Packing::Gzip,
            _ => Packing::Plain,
        }
    }

    /// The shell command on the host that turns stdin into the binary on
    /// stdout.
    pub fn unpack_command(self) -> &'static str {
        match self {
            Packing::Zstd => "zstd -dcq",
            Packing::Gzip => "gzip -dc",
            Packing::Plain => "cat",
        }
    }

    /// The shell test that tells which the host has (prints
    /// `unpack=zstd|gzip`, or nothing).
    pub const PROBE: &'static str = "if command -v zstd >/dev/null 2>&1; then echo unpack=zstd; \
         elif command -v gzip >/dev/null 2>&1; then echo unpack=gzip; fi";

    /// Its name in `fleet.json`.
    pub fn name(self) -> &'static str {
        match self {
            Packing::Zstd => "zstd",
            Packing::Gzip => "gzip",
            Packing::Plain => "plain",
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            Packing::Zstd => "zst",
            Packing::Gzip => "gz",
            Packing::Plain => "",
        }
    }
}

/// Why a packed copy could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// plumb's cache directory is not usable.
    #[error("plumb's cache: {0}")]
    Cache(#[from] crate::cache::CacheError),
    /// Reading the binary or compressing it failed.
    #[error("packing {}: {source}", .path.display())]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The packed copy could not be saved.
    #[error(transparent)]
    Save(#[from] crate::save::SaveError),
}

/// One packing at a time in this process: hosts that need the same packed
/// copy wait for the first to make it rather than each compressing.
static PACKING: Mutex<()> = Mutex::new(());

impl Binary {
    /// The file to send to a host that unpacks with `packing`, and its
    /// size: the binary itself, or its packed copy from plumb's cache
    /// (made now if missing).
    pub fn packed(&self, packing: Packing) -> Result<(PathBuf, u64), PackError> {
        if packing == Packing::Plain {
            return Ok((self.path.clone(), self.len));
        }
        let dir = crate::cache::open("self")?;
        let path = dir.join(format!("plumb-{}.{}", self.sha256, packing.suffix()));
        let _one = PACKING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(len) = std::fs::symlink_metadata(&path)
            .ok()
            .filter(|m| m.is_file() && m.len() > 0)
            .map(|m| m.len())
        {
            return Ok((path, len));
        }
        let io = |source| PackError::Io {
            path: path.clone(),
            source,
        };
        let data = std::fs::read(&self.path).map_err(|source| PackError::Io {
            path: self.path.clone(),
            source,
        })?;
        let packed = match packing {
            Packing::Zstd => zstd::bulk::compress(&data, ZSTD_LEVEL).map_err(io)?,
            Packing::Gzip => {
                let mut e = flate2::write::GzEncoder::new(
                    Vec::with_capacity(data.len() / 3),
                    flate2::Compression::best(),
                );
                e.write_all(&data).map_err(io)?;
                e.finish().map_err(io)?
            }
            Packing::Plain => unreachable!("returned above"),
        };
        crate::save::write_atomic(&path, &packed)?;
        Ok((path, packed.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn both_packings_unpack_to_the_same_bytes() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let z = zstd::bulk::compress(&data, ZSTD_LEVEL).unwrap();
        assert_eq!(zstd::stream::decode_all(&z[..]).unwrap(), data);
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&data).unwrap();
        let g = e.finish().unwrap();
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&g[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, data);
        assert!(z.len() < data.len() / 4 && g.len() < data.len() / 4);
    }

    #[test]
    fn the_probe_picks_the_best_unpacker() {
        assert_eq!(Packing::from_probe(Some("zstd")), Packing::Zstd);
        assert_eq!(Packing::from_probe(Some("gzip")), Packing::Gzip);
        assert_eq!(Packing::from_probe(Some("lz4")), Packing::Plain);
        assert_eq!(Packing::from_probe(None), Packing::Plain);
    }
}
