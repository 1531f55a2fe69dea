//! The profile's lock table: an array of entries mapped once at start (its size set
//! by `KLOCKS_PROFILE_LOCKS`), found by the lock's address with open addressing
//! (linear probing), so a lock call never allocates.
//!
//! A key is a lock's address, or [`EMPTY`] (never used: ends a probe) or [`FREED`] (a
//! lock was destroyed here: reusable, and a probe goes on past it). Addresses of real
//! locks are never 0 or 1. A destroyed lock's counts are first added to its site's
//! totals ([`sites`]), so its entry is reused and the table holds live locks only.
//!
//! A fork child clears the parent's counts from the entries in use, and only those:
//! every entry a lock ever claimed is on the **used list**, an array of slot numbers
//! mapped beside the table (one per entry at most: an entry is listed at its first
//! claim and stays listed when it is freed and claimed again), so the child's reset
//! costs the entries the program used, not the table's size (whose untouched pages a
//! walk over every key would fault in, one per 8 entries).
//!
//! Counters of a mutex, and of an rwlock's writers, change only while the lock is
//! held, so the lock itself orders their updates: a plain load and store suffice,
//! with no locked instruction on the lock's path. Readers share the lock, so their
//! counters change with `fetch_add`; so do the waiter counts, changed by threads that
//! do not hold the lock.

mod entry;
pub(super) mod sites;

pub(in crate::preload) use entry::Role;
pub(super) use entry::{Counters, Entry};

use std::sync::atomic::{
    AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};

/// The longest probe; a lock beyond it is counted in [`UNTRACKED`], not profiled.
const MAX_PROBE: usize = 64;

pub(super) const EMPTY: usize = 0;
pub(super) const FREED: usize = 1;

/// Acquisitions of locks the table had no room for.
pub(super) static UNTRACKED: AtomicU64 = AtomicU64::new(0);

/// The entries (a mapping made by [`allocate`]), and how many (a power of two).
static ENTRIES: AtomicPtr<Entry> = AtomicPtr::new(std::ptr::null_mut());
static SLOTS: AtomicUsize = AtomicUsize::new(0);
/// The used list (module doc): `USED[0..USED_LEN]` are the slots of every entry ever
/// claimed, each once. Mapped by [`allocate`] with room for every slot.
static USED: AtomicPtr<AtomicU32> = AtomicPtr::new(std::ptr::null_mut());
static USED_LEN: AtomicUsize = AtomicUsize::new(0);

/// Maps a table of `slots` entries (a power of two), from the library's constructor,
/// before the profile is switched on. The mapping reserves address space only: a page
/// is backed when an entry on it is first used, so memory is at most `slots` × 512
/// bytes however many locks the program makes. `false` if it could not be mapped.
pub(super) fn allocate(slots: usize) -> bool {
    let (Some(memory), Some(used)) = (
        map_zeroed(slots * size_of::<Entry>()),
        map_zeroed(slots * size_of::<AtomicU32>()),
    ) else {
        return false;
    };
    // Relaxed: published by the Release that switches the profile on (`profile::on`).
    // Zeroed memory is a table of empty entries: every field is an atomic integer or
    // flag, all zero in `Entry::new`; and an empty used list.
    ENTRIES.store(memory.cast(), Relaxed);
    USED.store(used.cast(), Relaxed);
    SLOTS.store(slots, Relaxed);
    true
}

/// A fresh private anonymous mapping of `bytes` zeroed bytes, backed as touched.
fn map_zeroed(bytes: usize) -> Option<*mut libc::c_void> {
    // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
    let memory = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    (memory != libc::MAP_FAILED).then_some(memory)
}

/// The used list's places, as many as the table has entries.
fn used() -> &'static [AtomicU32] {
    // Relaxed: see `allocate`.
    let base = USED.load(Relaxed);
    if base.is_null() {
        return &[];
    }
    // SAFETY: `allocate` mapped `slots()` zeroed atomics, never unmapped.
    unsafe { std::slice::from_raw_parts(base, slots()) }
}

/// Lists the entry in `slot` on the used list, unless it is listed already.
fn list_used(slot: usize, entry: &Entry) {
    // Relaxed (the swap and the count): each entry is listed once, by whoever flips
    // its flag; only a fork child reads the list, on its one thread, and sees it as
    // at some instant of the parent: a place taken but not yet written holds slot 0,
    // whose counts the child then clears needlessly; an entry flagged but not yet
    // placed keeps the parent's counts in the child's report (a claim in flight at
    // the fork, in another thread of the parent).
    if entry.listed.swap(true, Relaxed) {
        return;
    }
    let place = USED_LEN.fetch_add(1, Relaxed);
    if let Some(place) = used().get(place) {
        place.store(slot as u32, Relaxed);
    }
}

/// How many entries the table has.
pub(super) fn slots() -> usize {
    // Relaxed: set before the profile is on (see `allocate`).
    SLOTS.load(Relaxed)
}

/// Every entry.
fn entries() -> &'static [Entry] {
    // Relaxed: see `allocate`.
    let base = ENTRIES.load(Relaxed);
    if base.is_null() {
        return &[];
    }
    // SAFETY: `allocate` mapped `slots()` zeroed entries, never unmapped; all-zero
    // bytes are a valid `Entry` (atomics and flags only).
    unsafe { std::slice::from_raw_parts(base, slots()) }
}

/// The slot a lock's probe starts at (Fibonacci hashing of the address).
fn home(lock: usize) -> usize {
    let bits = slots().trailing_zeros();
    ((lock as u64 >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

/// The entry of the lock at `lock`, made if it has none (noting `site`); `None` when
/// the table has no room for it.
#[inline]
pub(super) fn entry(lock: usize, site: usize, rwlock: bool) -> Option<(u32, &'static Entry)> {
    let entries = entries();
    let mask = entries.len().wrapping_sub(1);
    let start = home(lock);
    'retry: for _ in 0..4 {
        let mut reusable = None;
        for step in 0..MAX_PROBE.min(entries.len()) {
            let slot = (start + step) & mask;
            // Acquire: pairs with the AcqRel of the CAS that stored the key, after the
            // entry was cleared (`claim`).
            match entries[slot].key.load(Acquire) {
                key if key == lock => return Some((slot as u32, &entries[slot])),
                FREED => {
                    reusable.get_or_insert(slot);
                }
                EMPTY => match claim(reusable.unwrap_or(slot), lock, site, rwlock) {
                    Some(found) => return Some(found),
                    None => continue 'retry,
                },
                _ => {}
            }
        }
        if let Some(slot) = reusable {
            if let Some(found) = claim(slot, lock, site, rwlock) {
                return Some(found);
            }
            continue 'retry;
        }
        break;
    }
    // Relaxed: a count for the report, ordered with nothing.
    UNTRACKED.fetch_add(1, Relaxed);
    None
}

/// Takes the free `slot` for `lock`; `None` if another thread took it first for
/// another lock (the caller probes again).
#[cold]
fn claim(slot: usize, lock: usize, site: usize, rwlock: bool) -> Option<(u32, &'static Entry)> {
    let entry = &entries()[slot];
    // Relaxed: only picks the value to replace; the CAS below decides (and its
    // Acquire orders what follows).
    let free = entry.key.load(Relaxed);
    if free != EMPTY && free != FREED {
        return (free == lock).then_some((slot as u32, entry));
    }
    // AcqRel: Release publishes the cleared entry to the threads that find the key
    // (`entry`); Acquire pairs with the Release in `forget`, which cleared it.
    match entry.key.compare_exchange(free, lock, AcqRel, Acquire) {
        Ok(_) => {
            list_used(slot, entry);
            entry.note_site(site, false, rwlock);
            Some((slot as u32, entry))
        }
        Err(now) if now == lock => Some((slot as u32, entry)),
        Err(_) => None,
    }
}

/// The lock at `lock` was initialised at `site`: a lock that lived at the same
/// address before is forgotten, and the new one gets an entry of its own.
pub(super) fn initialised(lock: usize, site: usize, rwlock: bool) {
    forget(lock);
    if let Some((_, entry)) = entry(lock, site, rwlock) {
        entry.note_site(site, true, rwlock);
        // Relaxed: init happens-before the lock's other calls (POSIX's rule).
        entry.site_is_init.store(true, Relaxed);
    }
}

/// The lock at `lock` was destroyed (or its memory is being reused): its counts are
/// added to its site's totals and its entry is freed for another lock.
pub(super) fn forget(lock: usize) {
    let entries = entries();
    let mask = entries.len().wrapping_sub(1);
    let start = home(lock);
    for step in 0..MAX_PROBE.min(entries.len()) {
        let entry = &entries[(start + step) & mask];
        // Acquire: as in `entry`.
        match entry.key.load(Acquire) {
            EMPTY => return,
            key if key == lock => {
                // Destroy happens-after the lock's last use (POSIX's rule), so its
                // counters are final here.
                sites::fold(entry);
                entry.clear();
                // Release: pairs with the Acquire of `claim`'s CAS, which then sees
                // the cleared entry.
                entry.key.store(FREED, Release);
                return;
            }
            _ => {}
        }
    }
}

/// A live lock the table holds counts of.
#[derive(Clone, Copy)]
pub(super) struct Seen {
    pub(super) address: usize,
    pub(super) entry: &'static Entry,
}

/// Every live lock the table holds counts of.
pub(super) fn in_use() -> impl Iterator<Item = Seen> {
    entries()
        .iter()
        // Acquire: as in `entry`.
        .map(|entry| (entry.key.load(Acquire), entry))
        .filter(|&(key, _)| key != EMPTY && key != FREED)
        .map(|(address, entry)| Seen { address, entry })
}

/// In a fork child (one thread): the parent's counts are the parent's to report.
/// Touches the entries on the used list only (module doc).
pub(super) fn restart_counts() {
    let entries = entries();
    // Relaxed: the child has one thread (see `list_used` for what it sees).
    let listed = USED_LEN.load(Relaxed).min(entries.len());
    for place in &used()[..listed] {
        if let Some(entry) = entries.get(place.load(Relaxed) as usize) {
            // Acquire: as in `entry`.
            if !matches!(entry.key.load(Acquire), EMPTY | FREED) {
                entry.clear_counts();
            }
        }
    }
    sites::restart_counts();
    // Relaxed: one thread.
    UNTRACKED.store(0, Relaxed);
}

/// The entry in `slot`, as [`entry`] returned it.
pub(super) fn at(slot: u32) -> &'static Entry {
    &entries()[slot as usize]
}

// The sizes the docs and the memory test state.
const _: () = assert!(size_of::<Entry>() == 512);
const _: () = assert!(size_of::<sites::Site>() == 520);
