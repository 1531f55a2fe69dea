//! What every format of the profile's report reports ([`Summary`]): the locks ranked
//! by total wait and by number of waits, the sites' sums, the run's totals and the
//! shapes the advice reads; and the report's settings that a summary is taken with.

use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

use crate::preload::settings::MAX_PROFILE_TOP;

use super::super::advice::{InUse, Shape};
use super::super::clock;
use super::super::table::sites::{self, Site, Tally};
use super::super::table::{self, Counters, Entry, Seen};

/// How many locks the report lists unless `KLOCKS_PROFILE_TOP` says.
pub(in crate::preload) const DEFAULT_TOP: usize = 10;

pub(super) static TOP: AtomicUsize = AtomicUsize::new(DEFAULT_TOP);

/// The locks the program runs under (`KLOCKS_LOCK`, `KLOCKS_RWLOCK`).
pub(super) static IN_USE: OnceLock<InUse> = OnceLock::new();

/// Below this share of the threads' time spent waiting for locks, the report gives
/// no remedy: no lock would win back more.
pub(super) const NEGLIGIBLE_SHARE: f64 = 0.01;
pub(super) static CPUS: AtomicUsize = AtomicUsize::new(1);

/// How sites are printed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(in crate::preload::profile) enum Sites {
    /// As files and lines (or symbols): allocates.
    Resolved,
    /// As return addresses: safe in a signal handler.
    Raw,
}

/// One listed lock.
#[derive(Clone, Copy)]
pub(super) struct Row {
    pub(super) seen: Seen,
    pub(super) wait: u64,
    /// Its contended acquisitions.
    pub(super) waits: u64,
}

/// Every lock's total wait, in ticks.
pub(super) fn total_wait(entry: &Entry) -> u64 {
    Counters::get(&entry.exclusive.wait_total)
        .saturating_add(Counters::get(&entry.shared.wait_total))
}

pub(super) fn acquisitions(entry: &Entry) -> u64 {
    Counters::get(&entry.exclusive.acquisitions) + Counters::get(&entry.shared.acquisitions)
}

fn contended(entry: &Entry) -> u64 {
    Counters::get(&entry.exclusive.contended) + Counters::get(&entry.shared.contended)
}

/// Keeps the `top` largest of what `insert` is given by `key`, without allocating.
pub(super) struct Top<T, const N: usize> {
    pub(super) items: [Option<T>; N],
    pub(super) top: usize,
}

impl<T: Copy, const N: usize> Top<T, N> {
    fn new(top: usize) -> Self {
        Top {
            items: [None; N],
            top: top.min(N),
        }
    }

    fn insert<K: PartialOrd>(&mut self, mut item: T, key: impl Fn(&T) -> K) {
        for place in self.items.iter_mut().take(self.top) {
            match place {
                None => {
                    *place = Some(item);
                    return;
                }
                Some(there) if key(&item) > key(there) => item = std::mem::replace(there, item),
                Some(_) => {}
            }
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().flatten()
    }
}

/// The `top` locks by total wait (then acquisitions), the `top` waited for at all by
/// number of waits (then total wait), and how many locks were seen.
fn ranked(top: usize) -> (Top<Row, MAX_PROFILE_TOP>, Top<Row, MAX_PROFILE_TOP>, usize) {
    let mut rows = Top::new(top);
    let mut by_waits = Top::new(top);
    let mut seen = 0;
    for lock in table::in_use() {
        if acquisitions(lock.entry) == 0 {
            continue;
        }
        seen += 1;
        let row = Row {
            seen: lock,
            wait: total_wait(lock.entry),
            waits: contended(lock.entry),
        };
        rows.insert(row, |row| (row.wait, acquisitions(row.seen.entry)));
        if row.waits > 0 {
            by_waits.insert(row, |row| (row.waits, row.wait));
        }
    }
    (rows, by_waits, seen)
}

/// A site's locks, live and destroyed, summed.
#[derive(Clone, Copy)]
pub(super) struct SiteSum {
    pub(super) site: &'static Site,
    /// How many of its locks were destroyed.
    pub(super) destroyed: u64,
    /// Its locks, live and destroyed.
    pub(super) tally: Tally,
}

impl SiteSum {
    fn of(site: &'static Site) -> SiteSum {
        let destroyed = site.destroyed();
        SiteSum {
            site,
            destroyed: destroyed.locks,
            tally: destroyed.merged(site.live()),
        }
    }

    /// Whether its locks are rwlocks (its first lock's kind).
    pub(super) fn rwlock(&self) -> bool {
        // Relaxed: a snapshot for the report.
        self.site.rwlock.load(Relaxed)
    }
}

/// Every site's totals, the live locks' added to the destroyed ones'; and the wait of
/// all locks together.
fn tally_sites() -> u64 {
    sites::clear_live();
    for lock in table::in_use() {
        let tally = Tally::of(lock.entry);
        if tally.acquisitions > 0 {
            sites::add_live(lock.entry, tally);
        }
    }
    sites::all().map(|site| SiteSum::of(site).tally.wait).sum()
}

/// The sites with more than one lock (or any destroyed one), by their locks' total
/// wait; `None` if there is none.
fn by_site(top: usize) -> Option<Top<SiteSum, MAX_PROFILE_TOP>> {
    let mut top_sites = Top::new(top);
    for site in sites::all().map(SiteSum::of) {
        if site.tally.locks > 1 || site.destroyed > 0 {
            top_sites.insert(site, |s| (s.tally.wait, s.tally.acquisitions));
        }
    }
    let any = top_sites.items[0].is_some();
    any.then_some(top_sites)
}

/// The CPU time the process has used (every thread's, the ended ones' included), in
/// nanoseconds.
fn cpu_ns() -> f64 {
    // SAFETY: a zeroed rusage is valid to write; getrusage is a plain system call.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let ns = |t: libc::timeval| t.tv_sec as f64 * 1e9 + t.tv_usec as f64 * 1e3;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}

/// What every format reports: the run's totals and the locks listed.
pub(super) struct Summary {
    pub(super) ns_per_tick: f64,
    /// Nanoseconds since the profile started.
    pub(super) elapsed: u64,
    pub(super) top: usize,
    pub(super) cpus: usize,
    pub(super) in_use: InUse,
    /// All locks' wait, destroyed ones included, in ticks.
    pub(super) all_wait: u64,
    pub(super) rows: Top<Row, MAX_PROFILE_TOP>,
    /// The `top` locks by number of waits ([`ranked`]).
    pub(super) by_waits: Top<Row, MAX_PROFILE_TOP>,
    /// How many live locks were acquired at all.
    pub(super) seen: usize,
    /// The sites of many or destroyed locks ([`by_site`]).
    pub(super) sites: Option<Top<SiteSum, MAX_PROFILE_TOP>>,
    /// The process's CPU time, in nanoseconds.
    pub(super) cpu_ns: f64,
    /// The share of the threads' time spent waiting for locks.
    pub(super) share: f64,
    pub(super) untracked: u64,
}

impl Summary {
    pub(super) fn take() -> Summary {
        let (ns_per_tick, elapsed) = clock::ns_per_tick();
        // Relaxed: see `configure`.
        let top = TOP.load(Relaxed);
        let all_wait = tally_sites();
        let (rows, by_waits, seen) = ranked(top);
        let wait_ns = all_wait as f64 * ns_per_tick;
        let cpu_ns = cpu_ns();
        Summary {
            ns_per_tick,
            elapsed,
            top,
            // Relaxed: see `configure`.
            cpus: CPUS.load(Relaxed),
            in_use: IN_USE.get().copied().unwrap_or_default(),
            all_wait,
            rows,
            by_waits,
            seen,
            sites: by_site(top),
            cpu_ns,
            share: wait_ns / (wait_ns + cpu_ns).max(1.0),
            // Relaxed: a count for the report, ordered with nothing.
            untracked: table::UNTRACKED.load(Relaxed),
        }
    }

    pub(super) fn ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick
    }

    /// The rank of the lock at `address` by number of waits, if in the top.
    pub(super) fn waits_rank(&self, address: usize) -> Option<usize> {
        let mut ranks = self.by_waits.iter().enumerate();
        ranks
            .find(|(_, row)| row.seen.address == address)
            .map(|(i, _)| i + 1)
    }

    /// The locks in the top by number of waits but not by wait time, with their rank
    /// by waits: the "most often waited for" list.
    pub(super) fn often(&self) -> impl Iterator<Item = (usize, &Row)> {
        let by_time = |address| self.rows.iter().any(|row| row.seen.address == address);
        let ranks = self.by_waits.iter().enumerate();
        ranks
            .filter(move |(_, row)| !by_time(row.seen.address))
            .map(|(i, row)| (i + 1, row))
    }
}

/// The measured shape of locks whose counts are `tally`, for
/// [`super::super::advice::advise`]: one lock's, or a site's (its locks summed), read alike.
fn shape(tally: &Tally, rwlock: bool, summary: &Summary) -> Shape {
    let ns = |ticks: u64| summary.ns(ticks);
    Shape {
        rwlock,
        acquisitions: tally.acquisitions,
        reads: tally.reads,
        contended: tally.contended,
        wait_ns: ns(tally.wait),
        max_wait_ns: ns(tally.wait_max),
        mean_hold_ns: (tally.timed_holds > 0)
            .then(|| ns(tally.hold_total) / tally.timed_holds as f64),
        max_hold_ns: ns(tally.hold_max),
        peak_waiting: u32::try_from(tally.peak_waiting).unwrap_or(u32::MAX),
        cpus: summary.cpus,
    }
}

/// A live lock's shape.
pub(super) fn lock_shape(entry: &Entry, summary: &Summary) -> Shape {
    // Relaxed: a snapshot for the report.
    shape(&Tally::of(entry), entry.rwlock.load(Relaxed), summary)
}

/// A site's shape: its locks, live and destroyed, as one.
pub(super) fn site_shape(site: &SiteSum, summary: &Summary) -> Shape {
    shape(&site.tally, site.rwlock(), summary)
}

/// The program's name (glibc's `program_invocation_short_name`).
pub(super) fn program() -> &'static str {
    extern "C" {
        static program_invocation_short_name: *const std::ffi::c_char;
    }
    // SAFETY: glibc sets it before any constructor runs, to a NUL-terminated string
    // that lives as long as the process.
    unsafe { CStr::from_ptr(program_invocation_short_name) }
        .to_str()
        .unwrap_or("?")
}
