//! The profile's lock table: an array of entries mapped once at start (its size set
//! by `KLOCKS_PROFILE_LOCKS`), found by the lock's address with open addressing
//! (linear probing), so a lock call never allocates.
//!
//! A key is a lock's address, or [`EMPTY`] (never used: ends a probe) or [`FREED`] (a
//! lock was destroyed here: reusable, and a probe goes on past it). Addresses of real
//! locks are never 0 or 1. A destroyed lock's counts are first added to its site's
//! totals ([`sites`]), so its entry is reused and the table holds live locks only.
//!
//! Counters of a mutex, and of an rwlock's writers, change only while the lock is
//! held, so the lock itself orders their updates: a plain load and store suffice,
//! with no locked instruction on the lock's path. Readers share the lock, so their
//! counters change with `fetch_add`; so do the waiter counts, changed by threads that
//! do not hold the lock.

pub(super) mod sites;

use super::clock;
use super::stacks::Stacks;
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
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

/// Maps a table of `slots` entries (a power of two), from the library's constructor,
/// before the profile is switched on. The mapping reserves address space only: a page
/// is backed when an entry on it is first used, so memory is at most `slots` × 512
/// bytes however many locks the program makes. `false` if it could not be mapped.
pub(super) fn allocate(slots: usize) -> bool {
    let bytes = slots * size_of::<Entry>();
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
    if memory == libc::MAP_FAILED {
        return false;
    }
    // Relaxed: published by the Release that switches the profile on (`profile::on`).
    // Zeroed memory is a table of empty entries: every field is an atomic integer or
    // flag, all zero in `Entry::new`.
    ENTRIES.store(memory.cast(), Relaxed);
    SLOTS.store(slots, Relaxed);
    true
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

/// How a lock is held: a mutex, or an rwlock for reading or writing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(in crate::preload) enum Role {
    Mutex,
    Read,
    Write,
}

impl Role {
    /// Whether holders exclude each other (see the module doc).
    fn exclusive(self) -> bool {
        self != Role::Read
    }
}

/// What the table knows about one lock.
#[repr(align(64))]
pub(super) struct Entry {
    /// The lock's address, [`EMPTY`] or [`FREED`].
    key: AtomicUsize,
    /// Where the lock was initialised or first locked (a return address), 0 unknown.
    pub(super) site: AtomicUsize,
    /// Whether `site` is the initialisation's.
    pub(super) site_is_init: AtomicBool,
    /// Whether the lock is an rwlock.
    pub(super) rwlock: AtomicBool,
    /// Threads waiting now, and the most seen at once.
    waiting: AtomicU32,
    pub(super) peak_waiting: AtomicU32,
    /// When a holder last released it while threads waited (clock ticks), 0 never:
    /// where a wait that ended during the waiter's stack walk ended (`waited`).
    released: AtomicU64,
    /// Mutex holds, or write holds.
    pub(super) exclusive: Counters,
    /// Read holds.
    pub(super) shared: Counters,
    /// Where threads waited for it (its contention points).
    pub(super) stacks: Stacks,
}

/// The counters of one kind of hold. Times are in clock ticks (see `clock`).
pub(super) struct Counters {
    pub(super) acquisitions: AtomicU64,
    pub(super) contended: AtomicU64,
    pub(super) wait_total: AtomicU64,
    pub(super) wait_max: AtomicU64,
    /// Holds whose length was measured (every contended one, a sample of the rest).
    pub(super) timed_holds: AtomicU64,
    pub(super) hold_total: AtomicU64,
    pub(super) hold_max: AtomicU64,
    /// Where the longest wait was (the return address of its lock call), 0 unknown.
    pub(super) wait_site: AtomicUsize,
}

impl Counters {
    fn all(&self) -> [&AtomicU64; 7] {
        [
            &self.acquisitions,
            &self.contended,
            &self.wait_total,
            &self.wait_max,
            &self.timed_holds,
            &self.hold_total,
            &self.hold_max,
        ]
    }

    /// Relaxed, here and in `raise`: an exclusive holder's updates are ordered by the
    /// lock (module doc); shared ones are single atomic operations whose totals are
    /// read only by the report, which wants no ordering with anything else.
    fn add(&self, role: Role, counter: &AtomicU64, amount: u64) {
        if role.exclusive() {
            counter.store(counter.load(Relaxed).wrapping_add(amount), Relaxed);
        } else {
            counter.fetch_add(amount, Relaxed);
        }
    }

    fn raise(&self, role: Role, counter: &AtomicU64, value: u64) {
        if role.exclusive() {
            if value > counter.load(Relaxed) {
                counter.store(value, Relaxed);
            }
        } else {
            counter.fetch_max(value, Relaxed);
        }
    }

    /// Counts an acquisition, and its wait if it had to wait (`Some((ticks, site))`:
    /// how long, and the return address of the call that waited).
    pub(super) fn acquired(&self, role: Role, waited: Option<(u64, usize)>) {
        self.add(role, &self.acquisitions, 1);
        if let Some((waited, site)) = waited {
            self.add(role, &self.contended, 1);
            self.add(role, &self.wait_total, waited);
            // Relaxed: read only by the report. Readers race here: of two record waits
            // at once, the site kept may be the shorter's, a lapse the report can bear.
            if waited > self.wait_max.load(Relaxed) {
                self.wait_site.store(site, Relaxed);
            }
            self.raise(role, &self.wait_max, waited);
        }
    }

    /// Counts a measured hold of `ticks`.
    pub(super) fn held(&self, role: Role, ticks: u64) {
        self.add(role, &self.timed_holds, 1);
        self.add(role, &self.hold_total, ticks);
        self.raise(role, &self.hold_max, ticks);
    }

    /// Relaxed: a snapshot for the report.
    pub(super) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Relaxed)
    }
}

impl Entry {
    pub(super) fn counters(&self, role: Role) -> &Counters {
        if role == Role::Read {
            &self.shared
        } else {
            &self.exclusive
        }
    }

    /// A thread starts waiting. Relaxed, here and in `stop_waiting`: a count for the
    /// report, ordered with nothing.
    pub(super) fn start_waiting(&self) {
        let now = self.waiting.fetch_add(1, Relaxed) + 1;
        self.peak_waiting.fetch_max(now, Relaxed);
    }

    pub(super) fn stop_waiting(&self) {
        self.waiting.fetch_sub(1, Relaxed);
    }

    /// A holder releases the lock: if threads wait for it, the time is noted (one
    /// clock read, paid only then). Relaxed, the load and the store: a waiter reads
    /// the note after it has taken the lock, so the lock orders the holder's note
    /// (made before its unlock) before the waiter's read; a release that misses a
    /// waiter's registration by a few nanoseconds leaves no note, and that waiter's
    /// wait is counted as 0, the lower bound (see `waited`).
    pub(super) fn note_release(&self) {
        if self.waiting.load(Relaxed) > 0 {
            self.released.store(clock::now(), Relaxed);
        }
    }

    /// The last noted release (clock ticks), 0 if none. Relaxed: see `note_release`.
    pub(super) fn last_release(&self) -> u64 {
        self.released.load(Relaxed)
    }

    /// Notes where the lock was first seen, unless that is known.
    fn note_site(&self, site: usize, is_init: bool, rwlock: bool) {
        // Relaxed: read only by the report; a site lost to a race is another call's.
        self.rwlock.store(rwlock, Relaxed);
        if site != 0
            && self
                .site
                .compare_exchange(0, site, Relaxed, Relaxed)
                .is_ok()
        {
            self.site_is_init.store(is_init, Relaxed);
        }
    }

    /// Zeroes everything, for reuse or for a fork child's fresh start.
    /// Relaxed: see the callers, which publish the entry (or have one thread).
    pub(super) fn clear_counts(&self) {
        for counter in self.exclusive.all().into_iter().chain(self.shared.all()) {
            counter.store(0, Relaxed);
        }
        self.exclusive.wait_site.store(0, Relaxed);
        self.shared.wait_site.store(0, Relaxed);
        self.waiting.store(0, Relaxed);
        self.peak_waiting.store(0, Relaxed);
        self.released.store(0, Relaxed);
        self.stacks.clear();
    }

    fn clear(&self) {
        self.clear_counts();
        self.site.store(0, Relaxed);
        self.site_is_init.store(false, Relaxed);
        self.rwlock.store(false, Relaxed);
    }
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
pub(super) fn restart_counts() {
    for seen in in_use() {
        seen.entry.clear_counts();
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
