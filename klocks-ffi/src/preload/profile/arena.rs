//! The library's allocator, and the arena the report at exit allocates from.
//!
//! The report at exit resolves sites to files and lines, which allocates (it reads
//! modules' files and debug information). It runs in the library's destructor, inside
//! `exit()`, and `exit()` may be called from a signal handler that interrupted the
//! C library's `malloc` on the same thread, holding the allocator's lock: an
//! allocation there would wait for that thread forever. So this library's Rust code
//! allocates through [`Allocator`], which forwards to the C library's allocator
//! ([`System`]) until the report at exit calls [`enter`], and from then on, for the
//! rest of the process, takes memory from an arena mapped by that call with the
//! `mmap` system call (which takes no user-space lock), by bumping a pointer with a
//! cmpxchg: the report never calls `malloc` or `free`, so it ends whatever state the
//! C library's allocator is in, and whichever thread holds it.
//!
//! | state | `alloc` | `dealloc` |
//! |-------|---------|-----------|
//! | before `enter` | `malloc` | `free` |
//! | after `enter`, arena memory | bump the arena | nothing (the process is ending) |
//! | after `enter`, older memory | (none) | nothing: `free` could wait for the allocator's lock |
//!
//! Memory is never reused after `enter`: a freed block stays freed, so the arena's
//! fresh pages are also zeroed memory. An allocation the arena has no room for
//! fails (the report's allocation error aborts the process); [`ARENA_BYTES`] of
//! address space are reserved without swap (`MAP_NORESERVE`), backed only as they
//! are touched. The forwarding costs every allocation of this library one load
//! (none is made by a lock call, see `profile`'s module doc).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{
    AtomicBool, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};

/// The address space the arena reserves.
const ARENA_BYTES: usize = 1 << 30;

/// Whether allocations come from the arena (set once, by [`enter`]).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The first byte of the arena not yet handed out, and the arena's end.
static NEXT: AtomicUsize = AtomicUsize::new(0);
static END: AtomicUsize = AtomicUsize::new(0);

/// This library's allocator: the C library's, or the arena after [`enter`].
pub(crate) struct Allocator;

#[global_allocator]
static ALLOCATOR: Allocator = Allocator;

/// Maps the arena and sends every later allocation of this library to it; whether
/// it could be mapped (if not, nothing changes). Once per process: a second call
/// finds the arena in place.
pub(super) fn enter() -> bool {
    // Acquire: pairs with the Release below, of an earlier call.
    if ACTIVE.load(Acquire) {
        return true;
    }
    // SAFETY: a fresh private anonymous mapping, touching no existing memory; the
    // raw system call takes no lock (a handler interrupting any code may make it).
    let base = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            0usize,
            ARENA_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1 as libc::c_int,
            0usize,
        )
    };
    // The kernel's errors are -4095..-1.
    if (-4095..0).contains(&base) {
        return false;
    }
    let base = base as usize;
    // Relaxed: published by the Release store of ACTIVE.
    NEXT.store(base, Relaxed);
    END.store(base + ARENA_BYTES, Relaxed);
    // Release: pairs with the Acquire loads of `alloc`, `dealloc` and `realloc`,
    // which then see the arena's bounds.
    ACTIVE.store(true, Release);
    true
}

/// Bumps the arena for `layout`; null if it has no room.
fn bump(layout: Layout) -> *mut u8 {
    // Relaxed: the cmpxchg below hands out disjoint ranges; no data is published
    // through the pointer (the caller's own synchronization does that).
    let mut next = NEXT.load(Relaxed);
    let end = END.load(Relaxed);
    loop {
        let Some(start) = next.checked_next_multiple_of(layout.align()) else {
            return std::ptr::null_mut();
        };
        let Some(after) = start.checked_add(layout.size().max(1)) else {
            return std::ptr::null_mut();
        };
        if after > end {
            return std::ptr::null_mut();
        }
        // Relaxed: as the load.
        match NEXT.compare_exchange_weak(next, after, Relaxed, Relaxed) {
            Ok(_) => return start as *mut u8,
            Err(now) => next = now,
        }
    }
}

// SAFETY: before `enter` every call is `System`'s; after it, `bump` hands out
// disjoint ranges of a mapping that lives until the process ends, aligned as asked,
// and nothing is ever reused.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // Acquire: pairs with the Release in `enter` (the arena's bounds).
        if ACTIVE.load(Acquire) {
            return bump(layout);
        }
        // SAFETY: the caller's contract, which is `System`'s.
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // Acquire: as in `alloc`.
        if ACTIVE.load(Acquire) {
            // The arena's pages are fresh, and never reused: zero.
            return bump(layout);
        }
        // SAFETY: the caller's contract, which is `System`'s.
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Acquire: as in `alloc`. After `enter`, nothing is freed: arena memory is
        // never reused, and `free` of older memory could wait for the allocator.
        if !ACTIVE.load(Acquire) {
            // SAFETY: the caller's contract: `ptr` came from `System` (the arena
            // hands out nothing before `enter`).
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Acquire: as in `alloc`.
        if !ACTIVE.load(Acquire) {
            // SAFETY: the caller's contract, which is `System`'s.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // SAFETY: the caller's contract: `new_size` with the old alignment is a
        // valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let moved = bump(new_layout);
        if !moved.is_null() {
            // SAFETY: both blocks are live and at least this long, and disjoint
            // (the arena never hands out a range twice).
            unsafe { std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size)) };
        }
        moved
    }
}
