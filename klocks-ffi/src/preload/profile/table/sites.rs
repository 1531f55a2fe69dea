//! Totals per site (where locks were initialised or first locked): what destroyed
//! locks counted, added when each is destroyed, so that its entry in the lock table
//! can go to another lock while the site's totals stay exact.
//!
//! A fixed array of [`SITES`] sites found by the site's address (open addressing, as
//! the lock table), so destroying a lock never allocates. Sites beyond it are summed
//! in [`OTHER`]. The `live_` fields are the report's scratch space: it adds the live
//! locks of each site there (under its one-report-at-a-time flag), which needs no
//! buffer on a signal handler's stack.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

use super::super::stacks::Stacks;
use super::{Counters, Entry};

/// How many sites the table tells apart.
pub(in crate::preload::profile) const SITES: usize = 2048;
/// The longest probe for a site.
const MAX_PROBE: usize = 32;

/// One site's totals.
pub(in crate::preload::profile) struct Site {
    /// The site's address plus one (so that an unknown site, 0, has a key); 0: free.
    key: AtomicUsize,
    pub(in crate::preload::profile) is_init: AtomicBool,
    pub(in crate::preload::profile) rwlock: AtomicBool,
    /// Of its destroyed locks: how many, and their counts summed.
    pub(in crate::preload::profile) destroyed: AtomicU64,
    pub(in crate::preload::profile) acquisitions: AtomicU64,
    pub(in crate::preload::profile) contended: AtomicU64,
    pub(in crate::preload::profile) wait: AtomicU64,
    /// Of its live locks, as the report last summed them.
    pub(in crate::preload::profile) live: AtomicU64,
    pub(in crate::preload::profile) live_acquisitions: AtomicU64,
    pub(in crate::preload::profile) live_contended: AtomicU64,
    pub(in crate::preload::profile) live_wait: AtomicU64,
    /// Where threads waited for its destroyed locks.
    pub(in crate::preload::profile) stacks: Stacks,
}

impl Site {
    const fn new() -> Site {
        Site {
            key: AtomicUsize::new(0),
            is_init: AtomicBool::new(false),
            rwlock: AtomicBool::new(false),
            destroyed: AtomicU64::new(0),
            acquisitions: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            wait: AtomicU64::new(0),
            live: AtomicU64::new(0),
            live_acquisitions: AtomicU64::new(0),
            live_contended: AtomicU64::new(0),
            live_wait: AtomicU64::new(0),
            stacks: Stacks::new(),
        }
    }

    /// The site's return address, 0 if unknown.
    pub(in crate::preload::profile) fn address(&self) -> usize {
        // Relaxed: the key is read only to name the site; its totals are atomics of
        // their own.
        self.key.load(Relaxed).wrapping_sub(1)
    }

    /// Relaxed, here and in `add_live`: totals read only by the report, which orders
    /// them with nothing else; `fetch_add`, since locks of one site are destroyed by
    /// any thread.
    fn add(&self, locks: u64, acquisitions: u64, contended: u64, wait: u64) {
        self.destroyed.fetch_add(locks, Relaxed);
        self.acquisitions.fetch_add(acquisitions, Relaxed);
        self.contended.fetch_add(contended, Relaxed);
        self.wait.fetch_add(wait, Relaxed);
    }

    /// Its counters: the destroyed locks' four, then the report's four.
    fn counters(&self) -> [&AtomicU64; 8] {
        [
            &self.destroyed,
            &self.acquisitions,
            &self.contended,
            &self.wait,
            &self.live,
            &self.live_acquisitions,
            &self.live_contended,
            &self.live_wait,
        ]
    }

    fn clear(&self, live_only: bool) {
        let skip = if live_only { 4 } else { 0 };
        for counter in self.counters().into_iter().skip(skip) {
            // Relaxed: see `add`.
            counter.store(0, Relaxed);
        }
    }
}

static TABLE: [Site; SITES] = [const { Site::new() }; SITES];
/// The sites [`TABLE`] had no room for, summed.
pub(in crate::preload::profile) static OTHER: Site = Site::new();

/// The site `site` (0: unknown), given a place in the table if it has none; [`OTHER`]
/// when the table has no room.
fn find(site: usize, is_init: bool, rwlock: bool) -> &'static Site {
    let key = site.wrapping_add(1);
    let start = (key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SITES.trailing_zeros());
    for step in 0..MAX_PROBE {
        let place = &TABLE[(start as usize + step) % SITES];
        // Relaxed, here and in the CAS: nothing is published with a key. Its totals
        // are atomics of their own, and its flags (its first lock's) are read only by
        // the report, which may see a site just claimed before they are set.
        let found = match place.key.load(Relaxed) {
            0 => match place.key.compare_exchange(0, key, Relaxed, Relaxed) {
                Ok(_) => {
                    // Relaxed: read only by the report.
                    place.is_init.store(is_init, Relaxed);
                    place.rwlock.store(rwlock, Relaxed);
                    true
                }
                Err(now) => now == key,
            },
            now => now == key,
        };
        if found {
            return place;
        }
    }
    &OTHER
}

/// Adds a lock's counts to its site's totals, as it is destroyed (no lock call can
/// change them any more).
pub(super) fn fold(entry: &Entry) {
    let (ex, sh) = (&entry.exclusive, &entry.shared);
    let get = Counters::get;
    let acquisitions = get(&ex.acquisitions) + get(&sh.acquisitions);
    if acquisitions == 0 {
        return;
    }
    // Relaxed: as in the report.
    let site = find(
        entry.site.load(Relaxed),
        entry.site_is_init.load(Relaxed),
        entry.rwlock.load(Relaxed),
    );
    site.add(
        1,
        acquisitions,
        get(&ex.contended) + get(&sh.contended),
        get(&ex.wait_total).saturating_add(get(&sh.wait_total)),
    );
    site.stacks.merge(&entry.stacks);
}

/// The report's tally of live locks: cleared, then each live lock added.
pub(in crate::preload::profile) fn clear_live() {
    for site in TABLE.iter().chain([&OTHER]) {
        site.clear(true);
    }
}

/// Adds a live lock (`acquisitions`, `contended`, `wait`) to its site's tally.
pub(in crate::preload::profile) fn add_live(entry: &Entry, counts: [u64; 3]) {
    // Relaxed: as in `fold`.
    let site = find(
        entry.site.load(Relaxed),
        entry.site_is_init.load(Relaxed),
        entry.rwlock.load(Relaxed),
    );
    // Relaxed: see `Site::add`.
    site.live.fetch_add(1, Relaxed);
    site.live_acquisitions.fetch_add(counts[0], Relaxed);
    site.live_contended.fetch_add(counts[1], Relaxed);
    site.live_wait.fetch_add(counts[2], Relaxed);
}

/// Every site that has had a lock, and [`OTHER`].
pub(in crate::preload::profile) fn all() -> impl Iterator<Item = &'static Site> {
    // Relaxed: as in `find`.
    TABLE
        .iter()
        .filter(|site| site.key.load(Relaxed) != 0)
        .chain([&OTHER])
}

/// Whether `site` is [`OTHER`].
pub(in crate::preload::profile) fn is_other(site: &Site) -> bool {
    std::ptr::eq(site, &OTHER)
}

/// In a fork child (one thread): the parent's totals are the parent's.
pub(super) fn restart_counts() {
    for site in TABLE.iter().chain([&OTHER]) {
        site.clear(false);
        site.stacks.clear();
    }
}
