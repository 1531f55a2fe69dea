//! Totals per site (where locks were initialised or first locked): what destroyed
//! locks counted, added when each is destroyed, so that its entry in the lock table
//! can go to another lock while the site's totals stay exact.
//!
//! A site keeps every count the advice reads of a lock ([`Tally`]: acquisitions,
//! reads, waits, their total and longest, the timed holds, their total and longest,
//! the most threads waiting at once), so that a site whose locks were destroyed is
//! advised exactly as a live lock of the same counts would be: sums of sums, maxima
//! of maxima.
//!
//! A fixed array of [`SITES`] sites found by the site's address (open addressing, as
//! the lock table), so destroying a lock never allocates. Sites beyond it are summed
//! in [`OTHER`]. The `live` tally is the report's scratch space: it adds the live
//! locks of each site there (under its one-report-at-a-time flag), which needs no
//! buffer on a signal handler's stack.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

use super::super::stacks::Stacks;
use super::entry::{Counters, Entry};

/// How many sites the table tells apart.
pub(in crate::preload::profile) const SITES: usize = 2048;
/// The longest probe for a site.
const MAX_PROBE: usize = 32;

/// The counts of one or more locks, summed (maxima: the largest). Times are in clock
/// ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(in crate::preload::profile) struct Tally {
    pub(in crate::preload::profile) locks: u64,
    pub(in crate::preload::profile) acquisitions: u64,
    /// Read acquisitions (rwlocks).
    pub(in crate::preload::profile) reads: u64,
    pub(in crate::preload::profile) contended: u64,
    pub(in crate::preload::profile) wait: u64,
    pub(in crate::preload::profile) wait_max: u64,
    pub(in crate::preload::profile) timed_holds: u64,
    pub(in crate::preload::profile) hold_total: u64,
    pub(in crate::preload::profile) hold_max: u64,
    /// The most threads seen waiting at once for one of the locks.
    pub(in crate::preload::profile) peak_waiting: u64,
}

impl Tally {
    /// One lock's counts, its reads and writes (or mutex holds) together.
    pub(in crate::preload::profile) fn of(entry: &Entry) -> Tally {
        let (ex, sh) = (&entry.exclusive, &entry.shared);
        let get = Counters::get;
        Tally {
            locks: 1,
            acquisitions: get(&ex.acquisitions) + get(&sh.acquisitions),
            reads: get(&sh.acquisitions),
            contended: get(&ex.contended) + get(&sh.contended),
            wait: get(&ex.wait_total).saturating_add(get(&sh.wait_total)),
            wait_max: get(&ex.wait_max).max(get(&sh.wait_max)),
            timed_holds: get(&ex.timed_holds) + get(&sh.timed_holds),
            hold_total: get(&ex.hold_total).saturating_add(get(&sh.hold_total)),
            hold_max: get(&ex.hold_max).max(get(&sh.hold_max)),
            // Relaxed: a snapshot for the report, or final at destroy.
            peak_waiting: u64::from(entry.peak_waiting.load(Relaxed)),
        }
    }

    /// Both tallies' locks together.
    pub(in crate::preload::profile) fn merged(self, other: Tally) -> Tally {
        Tally {
            locks: self.locks + other.locks,
            acquisitions: self.acquisitions + other.acquisitions,
            reads: self.reads + other.reads,
            contended: self.contended + other.contended,
            wait: self.wait.saturating_add(other.wait),
            wait_max: self.wait_max.max(other.wait_max),
            timed_holds: self.timed_holds + other.timed_holds,
            hold_total: self.hold_total.saturating_add(other.hold_total),
            hold_max: self.hold_max.max(other.hold_max),
            peak_waiting: self.peak_waiting.max(other.peak_waiting),
        }
    }
}

/// A [`Tally`] that locks of one site, destroyed by any thread, add to at once.
struct Totals {
    locks: AtomicU64,
    acquisitions: AtomicU64,
    reads: AtomicU64,
    contended: AtomicU64,
    wait: AtomicU64,
    wait_max: AtomicU64,
    timed_holds: AtomicU64,
    hold_total: AtomicU64,
    hold_max: AtomicU64,
    peak_waiting: AtomicU64,
}

impl Totals {
    const fn new() -> Totals {
        Totals {
            locks: AtomicU64::new(0),
            acquisitions: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            wait: AtomicU64::new(0),
            wait_max: AtomicU64::new(0),
            timed_holds: AtomicU64::new(0),
            hold_total: AtomicU64::new(0),
            hold_max: AtomicU64::new(0),
            peak_waiting: AtomicU64::new(0),
        }
    }

    /// Relaxed, here and in `get` and `clear`: totals read only by the report, which
    /// orders them with nothing else; read-modify-writes, since locks of one site are
    /// destroyed by any thread.
    fn add(&self, tally: Tally) {
        let sums = [
            (&self.locks, tally.locks),
            (&self.acquisitions, tally.acquisitions),
            (&self.reads, tally.reads),
            (&self.contended, tally.contended),
            (&self.wait, tally.wait),
            (&self.timed_holds, tally.timed_holds),
            (&self.hold_total, tally.hold_total),
        ];
        for (total, amount) in sums {
            total.fetch_add(amount, Relaxed);
        }
        let maxima = [
            (&self.wait_max, tally.wait_max),
            (&self.hold_max, tally.hold_max),
            (&self.peak_waiting, tally.peak_waiting),
        ];
        for (max, value) in maxima {
            max.fetch_max(value, Relaxed);
        }
    }

    fn get(&self) -> Tally {
        let get = |total: &AtomicU64| total.load(Relaxed);
        Tally {
            locks: get(&self.locks),
            acquisitions: get(&self.acquisitions),
            reads: get(&self.reads),
            contended: get(&self.contended),
            wait: get(&self.wait),
            wait_max: get(&self.wait_max),
            timed_holds: get(&self.timed_holds),
            hold_total: get(&self.hold_total),
            hold_max: get(&self.hold_max),
            peak_waiting: get(&self.peak_waiting),
        }
    }

    fn clear(&self) {
        let all = [
            &self.locks,
            &self.acquisitions,
            &self.reads,
            &self.contended,
            &self.wait,
            &self.wait_max,
            &self.timed_holds,
            &self.hold_total,
            &self.hold_max,
            &self.peak_waiting,
        ];
        for total in all {
            total.store(0, Relaxed);
        }
    }
}

/// One site's totals.
pub(in crate::preload::profile) struct Site {
    /// The site's address plus one (so that an unknown site, 0, has a key); 0: free.
    key: AtomicUsize,
    pub(in crate::preload::profile) is_init: AtomicBool,
    pub(in crate::preload::profile) rwlock: AtomicBool,
    /// Its destroyed locks, summed.
    destroyed: Totals,
    /// Its live locks, as the report last summed them.
    live: Totals,
    /// Where threads waited for its destroyed locks.
    pub(in crate::preload::profile) stacks: Stacks,
}

impl Site {
    const fn new() -> Site {
        Site {
            key: AtomicUsize::new(0),
            is_init: AtomicBool::new(false),
            rwlock: AtomicBool::new(false),
            destroyed: Totals::new(),
            live: Totals::new(),
            stacks: Stacks::new(),
        }
    }

    /// The site's return address, 0 if unknown.
    pub(in crate::preload::profile) fn address(&self) -> usize {
        // Relaxed: the key is read only to name the site; its totals are atomics of
        // their own.
        self.key.load(Relaxed).wrapping_sub(1)
    }

    /// Its destroyed locks, summed.
    pub(in crate::preload::profile) fn destroyed(&self) -> Tally {
        self.destroyed.get()
    }

    /// Its live locks, as the report last summed them ([`add_live`]).
    pub(in crate::preload::profile) fn live(&self) -> Tally {
        self.live.get()
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
    let tally = Tally::of(entry);
    if tally.acquisitions == 0 {
        return;
    }
    let site = site_of(entry);
    site.destroyed.add(tally);
    site.stacks.merge(&entry.stacks);
}

/// The site of `entry`'s lock.
fn site_of(entry: &Entry) -> &'static Site {
    // Relaxed: as in the report.
    find(
        entry.site.load(Relaxed),
        entry.site_is_init.load(Relaxed),
        entry.rwlock.load(Relaxed),
    )
}

/// The report's tally of live locks: cleared, then each live lock added.
pub(in crate::preload::profile) fn clear_live() {
    for site in TABLE.iter().chain([&OTHER]) {
        site.live.clear();
    }
}

/// Adds a live lock, `tally` its counts, to its site's tally.
pub(in crate::preload::profile) fn add_live(entry: &Entry, tally: Tally) {
    site_of(entry).live.add(tally);
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
    // Only sites that have had a lock (`all`): clearing the others would copy every
    // page of the table into the child for nothing.
    for site in all() {
        site.destroyed.clear();
        site.live.clear();
        site.stacks.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two locks' tallies as one: counts and totals summed, longest wait and hold and
    /// most waiters the larger; and a site's totals add tallies the same way.
    #[test]
    fn tallies_sum_counts_and_keep_maxima() {
        let a = Tally {
            locks: 1,
            acquisitions: 10,
            reads: 4,
            contended: 3,
            wait: 300,
            wait_max: 200,
            timed_holds: 5,
            hold_total: 50,
            hold_max: 30,
            peak_waiting: 2,
        };
        let b = Tally {
            locks: 2,
            acquisitions: 20,
            reads: 0,
            contended: 1,
            wait: 100,
            wait_max: 100,
            timed_holds: 1,
            hold_total: 40,
            hold_max: 40,
            peak_waiting: 5,
        };
        let both = Tally {
            locks: 3,
            acquisitions: 30,
            reads: 4,
            contended: 4,
            wait: 400,
            wait_max: 200,
            timed_holds: 6,
            hold_total: 90,
            hold_max: 40,
            peak_waiting: 5,
        };
        assert_eq!(a.merged(b), both);
        let totals = Totals::new();
        totals.add(a);
        totals.add(b);
        assert_eq!(totals.get(), both);
        totals.clear();
        assert_eq!(totals.get(), Tally::default());
    }
}
