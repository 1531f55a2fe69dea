//! The profile's report: first the share of the threads' time spent waiting for
//! locks, then the locks that made threads wait longest, one row each (two for an
//! rwlock: its reads and its writes) and a line naming where it comes from, then the
//! locks waited for most often that the first list leaves out, the sites whose locks
//! waited longest (destroyed locks included, ranked `s1`, `s2`, ...), then a
//! suggestion per lock and one per site, a site's for its locks, live and destroyed,
//! as one lock of their summed counts (none when locks cost a negligible share).
//! Every line is wrapped at 120 columns ([`out`]). Here: what every format reports
//! ([`Summary`]); the text is written by `text.rs`, JSON by `json.rs`, folded stacks
//! by `folded.rs`.
//!
//! # Two rankings
//!
//! Wait time ranks the locks, since it is what a lock costs the threads. But a lock
//! waited for very often and very briefly (a queue's lock taken on every request)
//! sinks in that ranking below locks with a few long waits, while it is the one whose
//! waits a faster handoff shortens, and the one a count-ranking tool such as mutrace
//! puts near the top. So the report also ranks by number of waits, keeps the same
//! `top`, and lists under "most often waited for" the locks of that ranking that the
//! first list leaves out, one line each with its rank by waits; the first list's
//! `waited` column gives the count of the others.
//!
//! Written without allocating, from fixed buffers, with the raw `write` system call,
//! so that a `SIGUSR2` handler may print it; only resolving sites to files and lines
//! allocates, which the report at exit does and the signal's does not.

use std::ffi::{c_int, CStr};
use std::fmt;
use std::sync::atomic::{
    AtomicBool, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::OnceLock;

use crate::preload::settings::MAX_PROFILE_TOP;

mod folded;
mod json;
mod out;
mod points;
mod symbols;
mod text;

use out::Out;

use super::advice::{InUse, Shape};
use super::clock;
use super::format::Format;
use super::table::sites::{self, Site, Tally};
use super::table::{self, Counters, Entry, Seen};
use super::units::{Buffer, Time};

/// How many locks the report lists unless `KLOCKS_PROFILE_TOP` says.
pub(in crate::preload) const DEFAULT_TOP: usize = 10;

static TOP: AtomicUsize = AtomicUsize::new(DEFAULT_TOP);
/// How the report is written (`KLOCKS_PROFILE_FORMAT`).
static FORMAT: OnceLock<Format> = OnceLock::new();
/// The locks the program runs under (`KLOCKS_LOCK`, `KLOCKS_RWLOCK`).
static IN_USE: OnceLock<InUse> = OnceLock::new();
/// Below this share of the threads' time spent waiting for locks, the report gives
/// no remedy: no lock would win back more.
const NEGLIGIBLE_SHARE: f64 = 0.01;
static CPUS: AtomicUsize = AtomicUsize::new(1);
/// Whether a report is being written (a second one, from a signal, is skipped).
static WRITING: AtomicBool = AtomicBool::new(false);

/// Sets the report's length, destination (`None`: stderr) and format, and the locks
/// in use.
pub(super) fn configure(top: usize, file: Option<&str>, in_use: InUse, format: Format) {
    let _ = IN_USE.set(in_use);
    let _ = FORMAT.set(format);
    // Relaxed: set before the profile is switched on, whose Release publishes them.
    TOP.store(top.min(MAX_PROFILE_TOP), Relaxed);
    CPUS.store(
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        Relaxed,
    );
    out::set_destination(file);
}

/// How sites are printed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Sites {
    /// As files and lines (or symbols): allocates.
    Resolved,
    /// As return addresses: safe in a signal handler.
    Raw,
}

/// Makes `SIGUSR2` print the report (sites unresolved).
pub(super) fn on_sigusr2() {
    extern "C" fn handler(_: c_int) {
        // SAFETY: the calling thread's errno, saved and restored around the report's
        // system calls, as a signal handler must.
        let errno = unsafe { *libc::__errno_location() };
        print(Sites::Raw);
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
    }
    // SAFETY: a zeroed sigaction is valid; the handler is a plain function that
    // lives as long as the process and does only async-signal-safe work (atomics,
    // formatting into fixed buffers, open/write/close system calls).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as extern "C" fn(c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut()) != 0 {
            super::super::stderr::say(
                "could not install the SIGUSR2 handler: the profile prints at exit only",
            );
        }
    }
}

/// One listed lock.
#[derive(Clone, Copy)]
struct Row {
    seen: Seen,
    wait: u64,
    /// Its contended acquisitions.
    waits: u64,
}

/// Every lock's total wait, in ticks.
fn total_wait(entry: &Entry) -> u64 {
    Counters::get(&entry.exclusive.wait_total)
        .saturating_add(Counters::get(&entry.shared.wait_total))
}

fn acquisitions(entry: &Entry) -> u64 {
    Counters::get(&entry.exclusive.acquisitions) + Counters::get(&entry.shared.acquisitions)
}

fn contended(entry: &Entry) -> u64 {
    Counters::get(&entry.exclusive.contended) + Counters::get(&entry.shared.contended)
}

/// Keeps the `top` largest of what `insert` is given by `key`, without allocating.
struct Top<T, const N: usize> {
    items: [Option<T>; N],
    top: usize,
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

    fn iter(&self) -> impl Iterator<Item = &T> {
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
struct SiteSum {
    site: &'static Site,
    /// How many of its locks were destroyed.
    destroyed: u64,
    /// Its locks, live and destroyed.
    tally: Tally,
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
    fn rwlock(&self) -> bool {
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

/// Prints the report. A report asked for while another is being printed (a signal's
/// on another thread, or one interrupted by a signal on this thread) waits up to a
/// second for it and then goes ahead when `sites` is [`Sites::Resolved`] (the one at
/// exit, which must not be lost), and is skipped otherwise (a signal handler must not
/// wait).
pub(super) fn print(sites: Sites) {
    let patience = if sites == Sites::Resolved { 100 } else { 0 };
    // Acquire: pairs with the Release below, after the previous report.
    let mut busy = WRITING.swap(true, Acquire);
    for _ in 0..patience {
        if !busy {
            break;
        }
        super::super::nap(std::time::Duration::from_millis(10));
        busy = WRITING.swap(true, Acquire);
    }
    if busy && sites == Sites::Raw {
        return;
    }
    let mut out = Out::open();
    let _ = write_report(&mut out, sites);
    drop(out);
    // Release: pairs with the Acquire of the next report's swap.
    WRITING.store(false, Release);
}

/// What every format reports: the run's totals and the locks listed.
struct Summary {
    ns_per_tick: f64,
    /// Nanoseconds since the profile started.
    elapsed: u64,
    top: usize,
    cpus: usize,
    in_use: InUse,
    /// All locks' wait, destroyed ones included, in ticks.
    all_wait: u64,
    rows: Top<Row, MAX_PROFILE_TOP>,
    /// The `top` locks by number of waits ([`ranked`]).
    by_waits: Top<Row, MAX_PROFILE_TOP>,
    /// How many live locks were acquired at all.
    seen: usize,
    /// The sites of many or destroyed locks ([`by_site`]).
    sites: Option<Top<SiteSum, MAX_PROFILE_TOP>>,
    /// The process's CPU time, in nanoseconds.
    cpu_ns: f64,
    /// The share of the threads' time spent waiting for locks.
    share: f64,
    untracked: u64,
}

impl Summary {
    fn take() -> Summary {
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

    fn ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick
    }

    /// The rank of the lock at `address` by number of waits, if in the top.
    fn waits_rank(&self, address: usize) -> Option<usize> {
        let mut ranks = self.by_waits.iter().enumerate();
        ranks
            .find(|(_, row)| row.seen.address == address)
            .map(|(i, _)| i + 1)
    }

    /// The locks in the top by number of waits but not by wait time, with their rank
    /// by waits: the "most often waited for" list.
    fn often(&self) -> impl Iterator<Item = (usize, &Row)> {
        let by_time = |address| self.rows.iter().any(|row| row.seen.address == address);
        let ranks = self.by_waits.iter().enumerate();
        ranks
            .filter(move |(_, row)| !by_time(row.seen.address))
            .map(|(i, row)| (i + 1, row))
    }
}

fn write_report(out: &mut Out, sites: Sites) -> fmt::Result {
    let summary = Summary::take();
    match FORMAT.get().copied().unwrap_or(Format::Text) {
        Format::Text => text::write(out, &summary, sites),
        Format::Json => {
            out.columns = usize::MAX;
            json::write(out, &summary, sites)
        }
        Format::Folded => {
            out.columns = usize::MAX;
            folded::write(out, &summary, sites)
        }
    }
}

/// The measured shape of locks whose counts are `tally`, for
/// [`super::advice::advise`]: one lock's, or a site's (its locks summed), read alike.
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
fn lock_shape(entry: &Entry, summary: &Summary) -> Shape {
    // Relaxed: a snapshot for the report.
    shape(&Tally::of(entry), entry.rwlock.load(Relaxed), summary)
}

/// A site's shape: its locks, live and destroyed, as one.
fn site_shape(site: &SiteSum, summary: &Summary) -> Shape {
    shape(&site.tally, site.rwlock(), summary)
}

/// The program's name (glibc's `program_invocation_short_name`).
fn program() -> &'static str {
    extern "C" {
        static program_invocation_short_name: *const std::ffi::c_char;
    }
    // SAFETY: glibc sets it before any constructor runs, to a NUL-terminated string
    // that lives as long as the process.
    unsafe { CStr::from_ptr(program_invocation_short_name) }
        .to_str()
        .unwrap_or("?")
}
