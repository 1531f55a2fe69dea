//! One lock's entry in the profile's lock table ([`Entry`]): its key, site, waiter
//! counts and the counters of its holds ([`Counters`]), one set per kind of hold
//! ([`Role`]); how the counters are updated without locked instructions is in the
//! table's module doc (`table.rs`).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

use super::super::clock;
use super::super::stacks::Stacks;

/// How a lock is held: a mutex, or an rwlock for reading or writing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(in crate::preload) enum Role {
    Mutex,
    Read,
    Write,
}

impl Role {
    /// Whether holders exclude each other (see the module doc of `table.rs`).
    fn exclusive(self) -> bool {
        self != Role::Read
    }
}

/// What the table knows about one lock.
#[repr(align(64))]
pub(in crate::preload::profile) struct Entry {
    /// The lock's address, [`EMPTY`](super::EMPTY) or [`FREED`](super::FREED).
    pub(super) key: AtomicUsize,
    /// Where the lock was initialised or first locked (a return address), 0 unknown.
    pub(in crate::preload::profile) site: AtomicUsize,
    /// Whether `site` is the initialisation's.
    pub(in crate::preload::profile) site_is_init: AtomicBool,
    /// Whether the lock is an rwlock.
    pub(in crate::preload::profile) rwlock: AtomicBool,
    /// On the table's used list (`table.rs`): set at the entry's first claim, never
    /// cleared.
    pub(super) listed: AtomicBool,
    /// Threads waiting now, and the most seen at once.
    waiting: AtomicU32,
    pub(in crate::preload::profile) peak_waiting: AtomicU32,
    /// When a holder last released it while threads waited (clock ticks), 0 never:
    /// where a wait that ended during the waiter's stack walk ended (`waited`).
    released: AtomicU64,
    /// Mutex holds, or write holds.
    pub(in crate::preload::profile) exclusive: Counters,
    /// Read holds.
    pub(in crate::preload::profile) shared: Counters,
    /// Where threads waited for it (its contention points).
    pub(in crate::preload::profile) stacks: Stacks,
}

/// The counters of one kind of hold. Times are in clock ticks (see `clock`).
pub(in crate::preload::profile) struct Counters {
    pub(in crate::preload::profile) acquisitions: AtomicU64,
    pub(in crate::preload::profile) contended: AtomicU64,
    pub(in crate::preload::profile) wait_total: AtomicU64,
    pub(in crate::preload::profile) wait_max: AtomicU64,
    /// Holds whose length was measured (every contended one, a sample of the rest).
    pub(in crate::preload::profile) timed_holds: AtomicU64,
    pub(in crate::preload::profile) hold_total: AtomicU64,
    pub(in crate::preload::profile) hold_max: AtomicU64,
    /// Where the longest wait was (the return address of its lock call), 0 unknown.
    pub(in crate::preload::profile) wait_site: AtomicUsize,
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
    /// lock (the module doc of `table.rs`); shared ones are single atomic operations whose totals are
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
    pub(in crate::preload::profile) fn acquired(&self, role: Role, waited: Option<(u64, usize)>) {
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
    pub(in crate::preload::profile) fn held(&self, role: Role, ticks: u64) {
        self.add(role, &self.timed_holds, 1);
        self.add(role, &self.hold_total, ticks);
        self.raise(role, &self.hold_max, ticks);
    }

    /// Relaxed: a snapshot for the report.
    pub(in crate::preload::profile) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Relaxed)
    }
}

impl Entry {
    pub(in crate::preload::profile) fn counters(&self, role: Role) -> &Counters {
        if role == Role::Read {
            &self.shared
        } else {
            &self.exclusive
        }
    }

    /// A thread starts waiting. Relaxed, here and in `stop_waiting`: a count for the
    /// report, ordered with nothing.
    pub(in crate::preload::profile) fn start_waiting(&self) {
        let now = self.waiting.fetch_add(1, Relaxed) + 1;
        self.peak_waiting.fetch_max(now, Relaxed);
    }

    pub(in crate::preload::profile) fn stop_waiting(&self) {
        self.waiting.fetch_sub(1, Relaxed);
    }

    /// A holder releases the lock: if threads wait for it, the time is noted (one
    /// clock read, paid only then). Relaxed, the load and the store: a waiter reads
    /// the note after it has taken the lock, so the lock orders the holder's note
    /// (made before its unlock) before the waiter's read; a release that misses a
    /// waiter's registration by a few nanoseconds leaves no note, and that waiter's
    /// wait is counted as 0, the lower bound (see `waited`).
    pub(in crate::preload::profile) fn note_release(&self) {
        if self.waiting.load(Relaxed) > 0 {
            self.released.store(clock::now(), Relaxed);
        }
    }

    /// The last noted release (clock ticks), 0 if none. Relaxed: see `note_release`.
    pub(in crate::preload::profile) fn last_release(&self) -> u64 {
        self.released.load(Relaxed)
    }

    /// Notes where the lock was first seen, unless that is known.
    pub(super) fn note_site(&self, site: usize, is_init: bool, rwlock: bool) {
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
    pub(in crate::preload::profile) fn clear_counts(&self) {
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

    pub(super) fn clear(&self) {
        self.clear_counts();
        self.site.store(0, Relaxed);
        self.site_is_init.store(false, Relaxed);
        self.rwlock.store(false, Relaxed);
    }
}
