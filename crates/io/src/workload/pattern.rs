//! Buffer contents: incompressible data, a per-write stamp that defeats
//! deduplication, and the verify header (`verify=crc32c`).

use rand::{rngs::SmallRng, RngCore, SeedableRng};

/// Bytes of the verify header at the start of each verified block.
pub const HEADER_LEN: usize = 32;
const MAGIC: u32 = 0x504c_4d42; // "PLMB"

/// Fills a buffer with random (incompressible) bytes.
pub fn fill_random(buf: &mut [u8], seed: u64) {
    SmallRng::seed_from_u64(seed).fill_bytes(buf);
}

/// Makes a block unique before it is written: a stamp every 512 bytes, and
/// with `verify` a header carrying the block's offset and a crc32c.
#[inline]
pub fn stamp_block(buf: &mut [u8], offset: u64, seq: u64, verify: bool) {
    let stamp = mix(offset ^ seq.rotate_left(32)).to_le_bytes();
    let first = if verify { HEADER_LEN } else { 0 };
    let mut at = first;
    while at + 8 <= buf.len() {
        buf[at..at + 8].copy_from_slice(&stamp);
        at += 512;
    }
    if verify && buf.len() >= HEADER_LEN {
        buf[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        let len = buf.len() as u32;
        buf[4..8].copy_from_slice(&len.to_le_bytes());
        buf[8..16].copy_from_slice(&offset.to_le_bytes());
        buf[16..24].copy_from_slice(&seq.to_le_bytes());
        let crc = block_crc(buf);
        buf[24..28].copy_from_slice(&crc.to_le_bytes());
        buf[28..32].fill(0);
    }
}

/// splitmix64's finaliser: spreads a counter into uniformly random-looking bits.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn block_crc(buf: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&buf[0..24]), &buf[HEADER_LEN..])
}

/// Why a block failed verification.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VerifyError {
    /// The header is not plumb's (never written, or overwritten).
    #[error("bad magic header {found:#x}, wanted {MAGIC:#x}")]
    BadMagic {
        /// The magic found.
        found: u32,
    },
    /// The block records another offset (misplaced write).
    #[error("header says offset {found}, block is at {expected}")]
    WrongOffset {
        /// The offset found in the header.
        found: u64,
        /// Where the block was read.
        expected: u64,
    },
    /// The header records another length.
    #[error("header says length {found}, block has {expected}")]
    WrongLength {
        /// Length in the header.
        found: u32,
        /// Length read.
        expected: u32,
    },
    /// The payload changed after it was written.
    #[error("crc32c mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    BadCrc {
        /// The crc in the header.
        stored: u32,
        /// The crc of what was read.
        computed: u32,
    },
}

/// Checks a block read back from `offset`.
pub fn verify_block(buf: &[u8], offset: u64) -> Result<(), VerifyError> {
    let u32_at = |i: usize| u32::from_le_bytes(buf[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().unwrap());
    if buf.len() < HEADER_LEN || u32_at(0) != MAGIC {
        return Err(VerifyError::BadMagic {
            found: if buf.len() >= 4 { u32_at(0) } else { 0 },
        });
    }
    if u32_at(4) != buf.len() as u32 {
        return Err(VerifyError::WrongLength {
            found: u32_at(4),
            expected: buf.len() as u32,
        });
    }
    if u64_at(8) != offset {
        return Err(VerifyError::WrongOffset {
            found: u64_at(8),
            expected: offset,
        });
    }
    let (stored, computed) = (u32_at(24), block_crc(buf));
    if stored != computed {
        return Err(VerifyError::BadCrc { stored, computed });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_round_trip_and_corruption() {
        let mut buf = vec![0u8; 4096];
        fill_random(&mut buf, 1);
        stamp_block(&mut buf, 8192, 3, true);
        assert_eq!(verify_block(&buf, 8192), Ok(()));
        assert!(matches!(
            verify_block(&buf, 4096),
            Err(VerifyError::WrongOffset { .. })
        ));
        buf[1000] ^= 0xff;
        assert!(matches!(
            verify_block(&buf, 8192),
            Err(VerifyError::BadCrc { .. })
        ));
        assert!(matches!(
            verify_block(&[0u8; 4096], 0),
            Err(VerifyError::BadMagic { .. })
        ));
    }

    #[test]
    fn stamps_make_blocks_unique() {
        let mut a = vec![0u8; 4096];
        fill_random(&mut a, 9);
        let mut b = a.clone();
        stamp_block(&mut a, 0, 1, false);
        stamp_block(&mut b, 4096, 2, false);
        assert_ne!(a, b);
    }
}
