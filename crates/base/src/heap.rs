//! Each thread's live heap bytes, counted by [`CountingAlloc`] — the
//! global allocator the `plumb` binary installs — so that a Rhai script
//! (a scenario or a comparison template) can be stopped when the values it
//! builds outgrow its memory limit. Rhai's own size limits do not see every
//! way a script grows its data (a map grown by index, say), and a script's
//! values live on its own thread, so the thread's count is the script's.
//!
//! Without the allocator installed (the library used elsewhere) the counts
//! stay zero and no limit is enforced.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// Bytes allocated minus bytes freed on this thread. Constant-initialised
    /// with no destructor, so reading it never allocates.
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

fn add(bytes: isize) {
    // During thread teardown the slot may be gone: that allocation is not counted.
    let _ = LIVE.try_with(|c| c.set(c.get().wrapping_add(bytes)));
}

/// The system allocator, counting each thread's live bytes.
pub struct CountingAlloc;

// SAFETY: every call is forwarded unchanged to `System`; the bookkeeping
// only touches a thread-local integer.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        add(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            add((new_size as isize).wrapping_sub(layout.size() as isize));
        }
        p
    }
}

/// This thread's live heap bytes (allocated here and not yet freed).
pub fn thread_live_bytes() -> isize {
    LIVE.try_with(Cell::get).unwrap_or(0)
}

/// Watches one thread's heap growth from now on against `limit` bytes.
#[derive(Debug, Clone, Copy)]
pub struct HeapWatch {
    start: isize,
    limit: usize,
}

impl HeapWatch {
    /// Starts watching the calling thread.
    pub fn start(limit: usize) -> HeapWatch {
        HeapWatch {
            start: thread_live_bytes(),
            limit,
        }
    }

    /// True when the thread holds more than `limit` bytes beyond what it
    /// held at [`HeapWatch::start`].
    pub fn over(&self) -> bool {
        let grown = thread_live_bytes().saturating_sub(self.start);
        grown > 0 && grown as usize > self.limit
    }
}
