//! [`AlignedBuf`]: the one page-aligned I/O buffer every data path uses
//! (job workers, the file API, trace replay).
//!
//! Allocation is fallible and bounded: a size beyond [`max_len`] or one the
//! allocator refuses comes back as a [`BufError`], never as an abort. Every
//! view of the memory is a bounds-checked slice, so a syscall is always given
//! a pointer and a length taken from the same slice.
//!
//! Buffers come from the system allocator directly, not through the
//! counting global allocator ([`plumb_base::heap`]): they are the host's, bounded
//! by their own budgets, and not a script's data.
//!
//! Buffers of [`HUGE_FROM`] bytes or more are mapped on their own, aligned
//! to 2 MiB and advised to use transparent huge pages: a 1 MiB direct I/O
//! into scattered 4 KiB pages is 256 segments, more than many queues take
//! in one request (virtio-blk here: 254), so the block layer splits it in
//! two; in a huge page it is one segment and one request. Measured with
//! fio on this machine's disk, 1 MiB QD8 direct reads went from 1.95
//! requests per read and ≈ 0.8 GB/s to 0.98 and ≈ 1.6–1.9 GB/s.
//!
//! fio's other kinds of buffer memory (`iomem=shm|shmhuge|mmap|mmaphuge|
//! mmapshared`) and its `iomem_align` come through [`AlignedBuf::allocate`].

use crate::workload::fill_random;
use std::alloc::{GlobalAlloc, Layout, System};
use std::ops::Range;
use std::ptr::NonNull;

/// Alignment (and size granularity) of every buffer: a page, enough for O_DIRECT.
pub const ALIGN: usize = 4096;

/// Hard ceiling on one buffer whatever the machine: 4 GiB.
const HARD_MAX: usize = 4 << 30;

/// Buffers this big or bigger are backed by transparent huge pages.
pub const HUGE_FROM: usize = 1 << 20;

/// A huge page: the alignment and size granularity of the mapping behind a
/// buffer of [`HUGE_FROM`] bytes or more.
const HUGE_PAGE: usize = 2 << 20;

/// The largest `iomem_align`: the first buffer's start past a page is
/// taken from one extra allocation of this much at most.
pub const MAX_MEM_ALIGN: u64 = 1 << 20;

/// How I/O buffers are allocated (fio's `iomem=`/`mem=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoMem {
    /// plumb's own allocation (fio's `malloc`): heap pages, or from
    /// [`HUGE_FROM`] on a mapping advised to use transparent huge pages.
    #[default]
    Malloc,
    /// System V shared memory (`shmget`).
    Shm,
    /// System V shared memory in reserved huge pages (`SHM_HUGETLB`).
    ShmHuge,
    /// A private anonymous mapping of ordinary pages.
    Mmap,
    /// A private anonymous mapping of reserved huge pages (`MAP_HUGETLB`).
    MmapHuge,
    /// A shared anonymous mapping.
    MmapShared,
}

impl IoMem {
    /// fio's name of each kind, in fio's order.
    pub const NAMES: &'static [&'static str] =
        &["malloc", "shm", "shmhuge", "mmap", "mmaphuge", "mmapshared"];

    /// The kind fio calls `name`.
    pub fn parse(name: &str) -> Option<IoMem> {
        Some(match name {
            "malloc" => IoMem::Malloc,
            "shm" => IoMem::Shm,
            "shmhuge" => IoMem::ShmHuge,
            "mmap" => IoMem::Mmap,
            "mmaphuge" => IoMem::MmapHuge,
            "mmapshared" => IoMem::MmapShared,
            _ => return None,
        })
    }

    /// fio's name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// True for the kinds that need reserved huge pages.
    pub fn needs_huge_pages(self) -> bool {
        matches!(self, IoMem::ShmHuge | IoMem::MmapHuge)
    }
}

/// The reserved huge pages: (total, free, size in bytes), from
/// /proc/meminfo (zeros when it does not say).
pub fn huge_pages() -> (u64, u64, usize) {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    let size = field("Hugepagesize:")
        .and_then(|kb| usize::try_from(kb.checked_mul(1024)?).ok())
        .filter(|s| s.is_power_of_two() && *s >= ALIGN)
        .unwrap_or(HUGE_PAGE);
    (
        field("HugePages_Total:").unwrap_or(0),
        field("HugePages_Free:").unwrap_or(0),
        size,
    )
}

/// The error for huge-page memory the kernel refused with `err`.
fn no_huge_pages(kind: IoMem, err: std::io::Error) -> BufError {
    let (total, free, _) = huge_pages();
    BufError::NoHugePages {
        kind: kind.name(),
        free,
        total,
        reason: err.to_string(),
    }
}

/// Why a buffer could not be made or viewed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BufError {
    /// Bigger than the bound for one buffer.
    #[error("an I/O buffer of {requested} bytes is larger than the {limit}-byte limit (half the machine's memory, at most 4 GiB); use a smaller block size or depth")]
    TooLarge {
        /// Bytes asked for.
        requested: u128,
        /// The bound.
        limit: usize,
    },
    /// The allocator refused.
    #[error("cannot allocate an I/O buffer of {0} bytes: out of memory")]
    OutOfMemory(usize),
    /// `iomem=shmhuge|mmaphuge` without free huge pages.
    #[error("iomem={kind} needs free huge pages, and the system has {free} of {total} free ({reason}); reserve some (echo 64 > /proc/sys/vm/nr_hugepages) or use iomem=malloc")]
    NoHugePages {
        /// The kind asked for.
        kind: &'static str,
        /// Huge pages free.
        free: u64,
        /// Huge pages reserved in all.
        total: u64,
        /// What the kernel said.
        reason: String,
    },
    /// The kernel refused the kind of memory asked for.
    #[error("cannot allocate {len} bytes of iomem={kind} buffers: {reason}")]
    Refused {
        /// The kind asked for.
        kind: &'static str,
        /// Bytes asked for.
        len: usize,
        /// What the kernel said.
        reason: String,
    },
    /// A range outside the buffer.
    #[error("range {start}..{end} is outside the {len}-byte buffer")]
    OutOfBounds {
        /// First byte asked for.
        start: usize,
        /// One past the last byte asked for.
        end: usize,
        /// The buffer's length.
        len: usize,
    },
}

impl From<BufError> for std::io::Error {
    fn from(e: BufError) -> std::io::Error {
        let kind = match e {
            BufError::OutOfMemory(_) => std::io::ErrorKind::OutOfMemory,
            _ => std::io::ErrorKind::InvalidInput,
        };
        std::io::Error::new(kind, e)
    }
}

/// The largest buffer [`AlignedBuf`] allocates: half the machine's physical
/// memory, at most 4 GiB (beyond that a benchmark's buffers would push the
/// machine into swap or the OOM killer instead of measuring anything).
pub fn max_len() -> usize {
    let phys = physical_memory()
        .and_then(|m| usize::try_from(m).ok())
        .unwrap_or(HARD_MAX);
    (phys / 2).clamp(ALIGN, HARD_MAX)
}

/// The machine's physical memory in bytes (None if the system does not
/// say), asked once: glibc answers `_SC_PHYS_PAGES` with a sysinfo(2)
/// call, and every buffer a scenario allocates is checked against it.
pub fn physical_memory() -> Option<u64> {
    static MEMORY: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *MEMORY.get_or_init(|| {
        // SAFETY: plain sysconf queries.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        u64::try_from(pages)
            .ok()?
            .checked_mul(u64::try_from(page).ok()?)
    })
}

/// `requested` as a `usize` when one buffer may be that big, else the error
/// saying so. Compute sizes from input (block size × depth) in `u128` and
/// check them here, so nothing wraps before the bound is applied. Returns
/// the bound on success.
pub fn checked_len(requested: u128) -> Result<usize, BufError> {
    let limit = max_len();
    if requested > limit as u128 {
        return Err(BufError::TooLarge { requested, limit });
    }
    Ok(limit)
}

/// The memory [`AlignedBuf::zeroed`]`(len)` holds: `len` in whole pages,
/// or in whole huge pages from [`HUGE_FROM`] on. Budgets of buffer memory
/// charge this, not the length asked for.
pub fn footprint(len: usize) -> usize {
    let size = len.max(ALIGN).next_multiple_of(ALIGN);
    if size >= HUGE_FROM {
        size.next_multiple_of(HUGE_PAGE)
    } else {
        size
    }
}

/// A zeroed, page-aligned heap buffer of a whole number of pages.
///
/// It owns its memory like a `Vec<u8>`; views are slices whose bounds are
/// checked against the allocation.
#[derive(Debug)]
pub struct AlignedBuf {
    /// The first usable byte (past `iomem_align` bytes of the allocation).
    ptr: NonNull<u8>,
    /// The start of the allocation, to give it back.
    base: NonNull<u8>,
    /// Bytes usable: the request rounded up to whole pages.
    len: usize,
    backing: Backing,
}

/// Where a buffer's memory comes from, to give it back the same way.
#[derive(Debug)]
enum Backing {
    /// The system allocator, with this layout.
    Heap(Layout),
    /// An anonymous mapping of its own, this long (whole huge pages).
    Mapped(usize),
    /// A System V shared memory segment attached here, this long (its id
    /// is already marked for removal: it goes when detached).
    Shm(usize),
}

// SAFETY: the buffer owns its allocation and hands out access only through
// `&self`/`&mut self` (or raw parts whose use the caller vouches for).
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access gives only `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// At least `len` zeroed bytes (rounded up to whole pages, at least one).
    /// The pages are not touched: the kernel maps them on first use.
    /// From [`HUGE_FROM`] bytes on, the memory is a mapping of whole huge
    /// pages aligned to 2 MiB, advised to be backed by them.
    pub fn zeroed(len: usize) -> Result<AlignedBuf, BufError> {
        let limit = checked_len(len as u128)?;
        // `len <= limit <= HARD_MAX`, so the rounding does not overflow.
        let size = len.max(ALIGN).next_multiple_of(ALIGN);
        if size >= HUGE_FROM {
            return Self::mapped(size);
        }
        let layout = Layout::from_size_align(size, ALIGN).map_err(|_| BufError::TooLarge {
            requested: len as u128,
            limit,
        })?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { System.alloc_zeroed(layout) })
            .ok_or(BufError::OutOfMemory(size))?;
        Ok(AlignedBuf {
            ptr,
            base: ptr,
            len: size,
            backing: Backing::Heap(layout),
        })
    }

    /// `size` bytes (whole pages, at most [`HARD_MAX`]) in an anonymous
    /// mapping of whole huge pages aligned to a huge page, advised to use
    /// transparent huge pages (where the kernel has none, ordinary pages).
    fn mapped(size: usize) -> Result<AlignedBuf, BufError> {
        let map_len = size.next_multiple_of(HUGE_PAGE);
        // Room to slide the start to a huge-page boundary.
        let total = map_len + HUGE_PAGE;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(BufError::OutOfMemory(size));
        }
        let head = (base as usize).next_multiple_of(HUGE_PAGE) - base as usize;
        let start = base.cast::<u8>().wrapping_add(head);
        // SAFETY: both ranges lie in the mapping just made, outside the part
        // kept; unmapping them cannot fail for a valid mapping's pages.
        unsafe {
            if head > 0 {
                libc::munmap(base, head);
            }
            let tail = total - head - map_len;
            if tail > 0 {
                libc::munmap(start.wrapping_add(map_len).cast(), tail);
            }
            // Advice only: without transparent huge pages the buffer is
            // made of ordinary pages, as from the heap.
            libc::madvise(start.cast(), map_len, libc::MADV_HUGEPAGE);
        }
        let ptr = NonNull::new(start).ok_or(BufError::OutOfMemory(size))?;
        Ok(AlignedBuf {
            ptr,
            base: ptr,
            len: size,
            backing: Backing::Mapped(map_len),
        })
    }

    /// At least `len` zeroed bytes of the kind of memory `mem` names,
    /// starting `align` bytes past a page boundary (fio's `iomem_align`;
    /// at most [`MAX_MEM_ALIGN`]). `IoMem::Malloc` with no offset is
    /// [`AlignedBuf::zeroed`]. The huge-page kinds fail with
    /// [`BufError::NoHugePages`] when none are free, as fio's do (fio
    /// does not fall back either).
    pub fn allocate(len: usize, mem: IoMem, align: usize) -> Result<AlignedBuf, BufError> {
        if mem == IoMem::Malloc && align == 0 {
            return Self::zeroed(len);
        }
        let limit = checked_len(len as u128 + align as u128)?;
        if align as u64 > MAX_MEM_ALIGN {
            return Err(BufError::TooLarge {
                requested: len as u128 + align as u128,
                limit,
            });
        }
        let size = len.max(ALIGN).next_multiple_of(ALIGN);
        // Whole pages past the start, then the buffer: `align` bytes in.
        let total = size + align.next_multiple_of(ALIGN);
        let mut b = match mem {
            IoMem::Malloc => Self::zeroed(total)?,
            IoMem::Shm | IoMem::ShmHuge => Self::shm(total, mem)?,
            IoMem::Mmap | IoMem::MmapHuge | IoMem::MmapShared => Self::mmap(total, mem)?,
        };
        // In bounds: the allocation holds `align` rounded up plus `size`.
        b.ptr =
            NonNull::new(b.base.as_ptr().wrapping_add(align)).ok_or(BufError::OutOfMemory(size))?;
        b.len = size;
        Ok(b)
    }

    /// `size` bytes of System V shared memory (in huge pages for
    /// `IoMem::ShmHuge`), marked for removal at once so it never outlives
    /// the buffer.
    fn shm(size: usize, mem: IoMem) -> Result<AlignedBuf, BufError> {
        let (mut flags, mut len) = (libc::IPC_CREAT | 0o600, size);
        if mem == IoMem::ShmHuge {
            flags |= libc::SHM_HUGETLB;
            len = size.next_multiple_of(huge_pages().2);
        }
        // SAFETY: plain System V calls; the segment is private to this process.
        unsafe {
            let id = libc::shmget(libc::IPC_PRIVATE, len, flags);
            if id < 0 {
                let e = std::io::Error::last_os_error();
                return Err(if mem == IoMem::ShmHuge {
                    no_huge_pages(mem, e)
                } else {
                    BufError::Refused {
                        kind: mem.name(),
                        len,
                        reason: e.to_string(),
                    }
                });
            }
            let at = libc::shmat(id, std::ptr::null(), 0);
            let e = std::io::Error::last_os_error();
            libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
            if at as isize == -1 {
                return Err(BufError::Refused {
                    kind: mem.name(),
                    len,
                    reason: e.to_string(),
                });
            }
            let ptr = NonNull::new(at.cast::<u8>()).ok_or(BufError::OutOfMemory(len))?;
            Ok(AlignedBuf {
                ptr,
                base: ptr,
                len,
                backing: Backing::Shm(len),
            })
        }
    }

    /// `size` bytes of an anonymous mapping: private, shared, or of huge pages.
    fn mmap(size: usize, mem: IoMem) -> Result<AlignedBuf, BufError> {
        let (mut flags, mut len) = (libc::MAP_ANONYMOUS | libc::MAP_PRIVATE, size);
        match mem {
            IoMem::MmapShared => flags = libc::MAP_ANONYMOUS | libc::MAP_SHARED,
            IoMem::MmapHuge => {
                flags |= libc::MAP_HUGETLB;
                len = size.next_multiple_of(huge_pages().2);
            }
            _ => {}
        }
        // SAFETY: a fresh anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            return Err(if mem == IoMem::MmapHuge {
                no_huge_pages(mem, e)
            } else {
                BufError::Refused {
                    kind: mem.name(),
                    len,
                    reason: e.to_string(),
                }
            });
        }
        let ptr = NonNull::new(base.cast::<u8>()).ok_or(BufError::OutOfMemory(len))?;
        Ok(AlignedBuf {
            ptr,
            base: ptr,
            len,
            backing: Backing::Mapped(len),
        })
    }

    /// At least `len` bytes of incompressible data from `seed`; every page is
    /// written, so it is faulted in before any measurement.
    pub fn random(len: usize, seed: u64) -> Result<AlignedBuf, BufError> {
        let mut b = Self::zeroed(len)?;
        fill_random(b.as_mut_slice(), seed);
        Ok(b)
    }

    /// Its length in bytes (a multiple of [`ALIGN`]).
    pub fn len(&self) -> usize {
        self.len
    }

    /// The memory it holds (at least its length: see [`footprint`]).
    pub fn footprint(&self) -> usize {
        match self.backing {
            Backing::Heap(layout) => layout.size(),
            Backing::Mapped(map_len) | Backing::Shm(map_len) => map_len,
        }
    }

    /// Always false: a buffer holds at least one page.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The whole buffer.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the allocation is `len()` bytes, initialised (zeroed), owned here.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len()) }
    }

    /// The whole buffer, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len()) }
    }

    /// Checks that `range` lies inside the buffer.
    fn check(&self, range: &Range<usize>) -> Result<(), BufError> {
        if range.start > range.end || range.end > self.len() {
            return Err(BufError::OutOfBounds {
                start: range.start,
                end: range.end,
                len: self.len(),
            });
        }
        Ok(())
    }

    /// The bytes in `range`, or an error when it is not inside the buffer.
    pub fn get(&self, range: Range<usize>) -> Result<&[u8], BufError> {
        self.check(&range)?;
        Ok(&self.as_slice()[range])
    }

    /// The bytes in `range`, writable, or an error when it is not inside the buffer.
    pub fn get_mut(&mut self, range: Range<usize>) -> Result<&mut [u8], BufError> {
        self.check(&range)?;
        Ok(&mut self.as_mut_slice()[range])
    }

    /// The first `len` bytes (an error when the buffer is shorter).
    pub fn prefix_mut(&mut self, len: usize) -> Result<&mut [u8], BufError> {
        self.get_mut(0..len)
    }

    /// A raw pointer to `range` and its length, for memory the kernel fills
    /// or reads asynchronously (io_uring, libaio), where no Rust reference
    /// may stay alive. The range is bounds-checked; using the pointer is the
    /// caller's `unsafe` business.
    pub fn raw_range(&self, range: Range<usize>) -> Result<(*mut u8, usize), BufError> {
        self.check(&range)?;
        // In bounds by the check above.
        Ok((self.ptr.as_ptr().wrapping_add(range.start), range.len()))
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        match self.backing {
            // SAFETY: allocated in `zeroed` with this layout.
            Backing::Heap(layout) => unsafe { System.dealloc(self.base.as_ptr(), layout) },
            // SAFETY: mapped in `mapped` or `mmap`, this long, from this address.
            Backing::Mapped(len) => unsafe {
                libc::munmap(self.base.as_ptr().cast(), len);
            },
            // SAFETY: attached in `shm` at this address.
            Backing::Shm(_) => unsafe {
                libc::shmdt(self.base.as_ptr().cast());
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_up_to_aligned_pages() {
        let b = AlignedBuf::zeroed(1).unwrap();
        assert_eq!(b.len(), ALIGN);
        assert_eq!(b.as_slice().as_ptr() as usize % ALIGN, 0);
        assert!(b.as_slice().iter().all(|&x| x == 0));
        let b = AlignedBuf::zeroed(ALIGN + 1).unwrap();
        assert_eq!(b.len(), 2 * ALIGN);
        let b = AlignedBuf::zeroed(0).unwrap();
        assert_eq!(b.len(), ALIGN);
    }

    #[test]
    fn big_buffers_sit_in_huge_pages_of_their_own() {
        for len in [
            HUGE_FROM - ALIGN,
            HUGE_FROM,
            HUGE_FROM + 1,
            3 << 20,
            8 << 20,
        ] {
            let mut b = AlignedBuf::zeroed(len).unwrap();
            assert_eq!(b.len(), len.next_multiple_of(ALIGN), "{len}");
            let at = b.as_slice().as_ptr() as usize;
            if b.len() >= HUGE_FROM {
                assert!(
                    matches!(b.backing, Backing::Mapped(m) if m % HUGE_PAGE == 0 && m >= b.len())
                );
                assert_eq!(at % HUGE_PAGE, 0, "{len}: not on a huge page");
            } else {
                assert!(matches!(b.backing, Backing::Heap(_)), "{len}");
            }
            assert!(b.as_slice().iter().all(|&x| x == 0));
            // Every byte is usable, and no more.
            assert_eq!(b.footprint(), footprint(len), "{len}");
            let n = b.len();
            b.as_mut_slice()[n - 1] = 7;
            assert_eq!(b.get(n - 1..n).unwrap(), [7]);
            assert!(b.get(n..n + 1).is_err());
        }
    }

    /// Mappings are given back: 200 of 4 MiB in a row (1.2 GiB of address
    /// space if kept) leave the process's size as it was. The process's size
    /// is only this test's to read when nothing else runs in it, so the test
    /// runs itself again, alone, in a process of its own.
    #[test]
    fn mappings_are_given_back() {
        const ALONE: &str = "PLUMB_TEST_ALONE";
        if std::env::var_os(ALONE).is_none() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "buffer::tests::mappings_are_given_back",
                    "--test-threads=1",
                    "--nocapture",
                ])
                .env(ALONE, "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && text.contains("1 passed"),
                "{text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        let vm_size = || {
            let s = std::fs::read_to_string("/proc/self/status").unwrap();
            let line = s.lines().find(|l| l.starts_with("VmSize:")).unwrap();
            line.split_whitespace()
                .nth(1)
                .unwrap()
                .parse::<u64>()
                .unwrap()
                * 1024
        };
        let before = vm_size();
        for _ in 0..200 {
            let b = AlignedBuf::random(4 << 20, 1).unwrap();
            assert_ne!(b.as_slice()[0..64], [0u8; 64]);
        }
        let grown = vm_size().saturating_sub(before);
        assert!(grown < 64 << 20, "the process grew by {grown} bytes");
    }

    #[test]
    fn random_fills_every_page_reproducibly() {
        let a = AlignedBuf::random(3 * ALIGN, 7).unwrap();
        let b = AlignedBuf::random(3 * ALIGN, 7).unwrap();
        assert_eq!(a.as_slice(), b.as_slice());
        for page in a.as_slice().chunks(ALIGN) {
            assert!(page.iter().any(|&x| x != 0), "a page was left zeroed");
        }
    }

    #[test]
    fn absurd_sizes_are_errors_not_aborts() {
        for len in [usize::MAX, usize::MAX - 1, max_len() + 1, HARD_MAX + 1] {
            match AlignedBuf::zeroed(len) {
                Err(BufError::TooLarge { requested, limit }) => {
                    assert_eq!(requested, len as u128);
                    assert_eq!(limit, max_len());
                }
                other => panic!("{len}: {other:?}"),
            }
        }
        let huge = (1u128 << 30) * 100_000_000;
        assert!(matches!(checked_len(huge), Err(BufError::TooLarge { .. })));
        assert!(checked_len(4096).is_ok());
        assert!(matches!(
            AlignedBuf::random(usize::MAX, 1),
            Err(BufError::TooLarge { .. })
        ));
        let e: std::io::Error = AlignedBuf::zeroed(usize::MAX).unwrap_err().into();
        assert!(e.to_string().contains("larger than"), "{e}");
    }

    #[test]
    fn the_limit_is_sane() {
        let m = max_len();
        assert!((ALIGN..=HARD_MAX).contains(&m), "{m}");
        assert!(AlignedBuf::zeroed(m.min(1 << 20)).is_ok());
    }

    #[test]
    fn views_are_bounds_checked() {
        let mut b = AlignedBuf::zeroed(ALIGN).unwrap();
        assert_eq!(b.get(0..ALIGN).unwrap().len(), ALIGN);
        assert_eq!(b.get(10..20).unwrap().len(), 10);
        assert_eq!(
            b.get(0..ALIGN + 1),
            Err(BufError::OutOfBounds {
                start: 0,
                end: ALIGN + 1,
                len: ALIGN
            })
        );
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 20..10;
        assert!(b.get(backwards).is_err());
        assert!(b.get_mut(ALIGN..ALIGN + 1).is_err());
        assert!(b.prefix_mut(ALIGN + 1).is_err());
        b.prefix_mut(3).unwrap().copy_from_slice(b"abc");
        assert_eq!(&b.as_slice()[..3], b"abc");
        assert!(b.raw_range(ALIGN - 1..ALIGN + 1).is_err());
        let (p, n) = b.raw_range(ALIGN - 8..ALIGN).unwrap();
        assert_eq!(n, 8);
        assert_eq!(p as usize, b.as_slice().as_ptr() as usize + ALIGN - 8);
    }
}
