//! The child's side: the hidden `__window-cell` subcommand runs one window of one cell
//! and prints its reports.

use std::io::{self, Write};
use std::thread;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::cells::Waits;
use crate::harness::rw::{self, RwGuarded};
use crate::harness::stats::Counting;
use crate::harness::wait::{self, WaitClock};
use crate::harness::{join, pause, race_announced, Guarded, Race, Stop, Tallied};
use crate::locks::{BenchLock, LockName, LockVisitor};
use crate::rwlocks::{BenchRwLock, RwLockName, RwLockVisitor};

use super::child::{Measured, Report};

/// The hidden `__window-cell` subcommand: one run of one cell, in this process.
#[derive(Debug, Clone, clap::Args)]
pub struct CellArgs {
    /// The mutex
    #[arg(
        long,
        value_enum,
        required_unless_present = "rwlock",
        conflicts_with = "rwlock"
    )]
    lock: Option<LockName>,

    /// The reader-writer lock
    #[arg(long, value_enum)]
    rwlock: Option<RwLockName>,

    /// Lock threads
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    threads: usize,

    /// Of the threads, how many read (reader-writer locks only; the first ones)
    #[arg(long, default_value_t = 0)]
    readers: usize,

    /// Pauses inside the lock
    #[arg(long)]
    inside: u32,

    /// Pauses outside the lock
    #[arg(long)]
    outside: u32,

    /// CPU hog threads
    #[arg(long)]
    hogs: usize,

    /// Measurement window
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    window_ms: u64,

    /// Time one acquisition in N (0: none)
    #[arg(long, default_value_t = wait::EVERY)]
    wait_every: u32,
}

/// Runs one cell and prints its reports on stdout, one JSON line each: `started` when
/// the clock runs, then `finished` with the counts (the parent verifies them) and,
/// with `stats` (the global `--stats`), what the lock counted.
pub fn cell(args: &CellArgs, stats: bool) {
    let counting = Counting::start(stats);
    let (measured, name) = match (args.lock, args.rwlock) {
        (Some(lock), _) => (lock.visit(CellRun(args)), lock.name()),
        (None, Some(rwlock)) => (rwlock.visit(RwCellRun(args)), rwlock.name()),
        (None, None) => unreachable!("clap requires --lock or --rwlock"),
    };
    let stats = counting.counts(name);
    report(&Report::Finished(Box::new(Measured { stats, ..measured })));
}

/// Prints one report line. A failed write means the parent is gone: nobody is left to
/// tell, and the run still ends by itself after its window.
fn report(report: &Report) {
    let line = serde_json::to_string(report).unwrap_or_else(|err| unreachable!("{err}"));
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// One run, monomorphized for its lock.
struct CellRun<'a>(&'a CellArgs);

impl LockVisitor for CellRun<'_> {
    type Output = Measured;

    fn visit<L: BenchLock>(self) -> Measured {
        let args = self.0;
        let added_ns = {
            let alone = Guarded::<L>::unlocked();
            wait::added_ns(|clock| {
                match clock {
                    Some(clock) => alone.enter_timed(0, clock, || {}),
                    None => alone.enter(0),
                };
            })
        };
        let guarded = Guarded::<L>::unlocked();
        let race = race_with_hogs(args, |me, stop| work(&guarded, me, args, stop));
        let waits = race.results.iter().map(|tally| tally.waits.clone());
        Measured {
            count: guarded.into_count(),
            wait: Some(Waits {
                every: args.wait_every,
                added_ns,
                all: wait::merge(waits).map(|all| wait::quantiles(&all)),
                readers: None,
                writers: None,
            }),
            ..Measured::of(&race)
        }
    }
}

/// One run of a reader-writer lock, monomorphized for it.
struct RwCellRun<'a>(&'a CellArgs);

impl RwLockVisitor for RwCellRun<'_> {
    type Output = Measured;

    fn visit<L: BenchRwLock>(self) -> Measured {
        let args = self.0;
        assert!(
            args.readers <= args.threads,
            "{} readers among {} threads",
            args.readers,
            args.threads
        );
        let added_ns = {
            let alone = RwGuarded::<L>::unlocked();
            wait::added_ns(|clock| match clock {
                Some(clock) => alone.write_timed(0, clock),
                None => alone.write(0),
            })
        };
        let guarded = RwGuarded::<L>::unlocked();
        let race = race_with_hogs(args, |me, stop| {
            let role = if me < args.readers {
                rw::Role::Reader
            } else {
                rw::Role::Writer
            };
            let clock = WaitClock::new(args.wait_every, me as u64);
            guarded.work(role, (args.inside, args.outside), clock, stop)
        });
        let (reading, writing) = race.results.split_at(args.readers);
        let role = |tallies: &[rw::RwTally]| {
            let waits = tallies.iter().map(|tally| tally.waits().clone());
            wait::merge(waits).map(|merged| wait::quantiles(&merged))
        };
        let everyone = race.results.iter().map(|tally| tally.waits().clone());
        Measured {
            rw: Some(guarded.into_counts(args.readers, &race.results)),
            wait: Some(Waits {
                every: args.wait_every,
                added_ns,
                all: wait::merge(everyone).map(|all| wait::quantiles(&all)),
                readers: role(reading),
                writers: role(writing),
            }),
            ..Measured::of(&race)
        }
    }
}

impl Measured {
    /// The per-thread counts and the timing of `race`; no lock's counters yet.
    fn of<T: Tallied>(race: &Race<T>) -> Self {
        // The workers only return once stopped, so `stopped` is always set.
        let window = race.stopped.unwrap_or(race.wall);
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Measured {
            count: 0,
            counted: race.results.iter().map(Tallied::counted).collect(),
            late: race.results.iter().map(Tallied::late).sum(),
            window_ns: nanos(window),
            drain_ns: nanos(race.wall.saturating_sub(window)),
            last_start_ns: nanos(race.last_start),
            rw: None,
            wait: None,
            stats: None,
        }
    }
}

impl Tallied for Tally {
    fn counted(&self) -> u64 {
        self.counted
    }
    fn late(&self) -> u64 {
        self.late
    }
}

/// Races the cell's lock threads through `work` for its window, announcing the start
/// on stdout, with the cell's hogs spinning beside them.
fn race_with_hogs<T: Send>(args: &CellArgs, work: impl Fn(usize, &Stop) -> T + Sync) -> Race<T> {
    let hogs_stop = Stop::new();
    thread::scope(|scope| {
        let hogs: Vec<_> = (0..args.hogs)
            .map(|_| scope.spawn(|| hog(&hogs_stop)))
            .collect();
        let race = race_announced(
            args.threads,
            Duration::from_millis(args.window_ms),
            || report(&Report::Started),
            work,
        );
        hogs_stop.request();
        hogs.into_iter().for_each(join);
        race
    })
}

/// One thread's operations (inside the window, and finished after the stop flag)
/// and its waits.
struct Tally {
    counted: u64,
    late: u64,
    waits: Histogram<u64>,
}

/// A lock thread: the critical section, then the work outside the lock, until
/// stopped, its lock calls timed one in `--wait-every`. An operation that finishes
/// after the thread sees the stop flag is late: it is verified but not counted.
fn work<L: BenchLock>(guarded: &Guarded<L>, me: usize, args: &CellArgs, stop: &Stop) -> Tally {
    let mut clock = WaitClock::new(args.wait_every, me as u64);
    let (mut counted, mut late) = (0, 0);
    while !stop.requested() {
        guarded.enter_timed(me, &mut clock, || pause(args.inside));
        if stop.requested() {
            late += 1;
        } else {
            counted += 1;
        }
        pause(args.outside);
    }
    Tally {
        counted,
        late,
        waits: clock.into_histogram(),
    }
}

/// A CPU hog, the load of another VM's vCPU: spins, touching no lock.
fn hog(stop: &Stop) {
    while !stop.requested() {
        std::hint::spin_loop();
    }
}
