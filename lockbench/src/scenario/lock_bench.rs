//! matklad's lock-bench: T threads, each doing M iterations of "lock a random one of K
//! cache-padded locks, increment its counter, unlock", timed as a whole run. The shape
//! of the benchmark in Aleksey Kladov's "Mutexes Are Faster Than Spinlocks" (2020,
//! <https://matklad.github.io/2020/01/04/mutexes-are-faster-than-spinlocks.html>,
//! `github.com/matklad/lock-bench`), which ran 32 threads × 10 000 iterations on 2 and
//! on 1000 locks and found the sleeping mutexes (std's, parking_lot's) beating the
//! spinlocks: with 32 threads on few CPUs a spinning waiter burns the time slice the
//! preempted owner needs.
//!
//! Unlike `sharded`, whose locks sit packed with their data and whose operations do
//! work inside and outside the lock, each lock here has its cache lines to itself
//! (`CachePadded`, as in lock-bench) and the critical section is the increment
//! alone: what is measured is the lock, handing itself over.
//!
//! A run that takes longer than `--cap-secs` is stopped (each thread checks between
//! iterations) and its cell reported as not finished: a FIFO spinlock's 32 threads on
//! 2 CPUs hand the lock to preempted waiters, a time slice a handoff.

use std::cell::UnsafeCell;
use std::time::Duration;

use crossbeam_utils::CachePadded;
use klocks::catalog::MutexKind;

use crate::adaptive::{Adaptive, Drive};
use crate::cells::{num, Cell, Progress, Run, Table, Unfinished};
use crate::harness::rounds::{rounds, Plan};
use crate::harness::stats::Counting;
use crate::harness::versus::{leak, Versus};
use crate::harness::{parse_secs, race, verify_count, Common, Error};
use crate::html_report::figures::{self, Chart, Kind, Panel, Threads};
use crate::locks::{BenchLock, LockName, LockVisitor, ALTERNATIVES, DEFAULT};

/// matklad's lock-bench: T threads × M iterations on a random one of K padded locks
///
/// The benchmark of "Mutexes Are Faster Than Spinlocks" (matklad, 2020): T threads
/// (--threads, 32 by default) each do --ops iterations (10000) of: pick a random one
/// of K locks (--locks-count: 2 and 1000 by default), lock it, increment its counter,
/// unlock. Each lock sits on cache lines of its own. Reported as the wall time of a
/// run, ms, from the start gate to the last thread's end; the locks of a row run
/// interleaved, --runs times. Verified: the counters must add up to T × ops. A run
/// longer than --cap-secs is stopped and its cell reported as "DNF x%" (the share of
/// the iterations done, still verified), so that every lock can run, a FIFO spinlock
/// with more threads than CPUs included. Table: ms per lock and, with default among
/// the locks, its ratio to the best of std, parking_lot, glibc and glibc-adaptive.
/// Default locks: default, spinfutex, pvqspinlock, std, parking_lot, glibc,
/// glibc-adaptive and spin (lock-bench's spinlock); --locks takes any.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Thread counts, comma-separated [default: 32]
    #[arg(long, value_delimiter = ',', value_name = "N,...", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Vec<u32>,

    /// Lock counts K, comma-separated: each iteration locks one of K at random
    /// [default: 2,1000]
    #[arg(long, value_delimiter = ',', value_name = "K,...", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub locks_count: Vec<u32>,

    /// Iterations per thread [default: 10000]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub ops: Option<u64>,

    /// Seconds a run may take before it is stopped and its cell reported as not
    /// finished [default: 10]
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub cap_secs: Option<Duration>,
}

/// lock-bench's own sizes.
const THREADS: [usize; 1] = [32];
const LOCKS_COUNT: [usize; 2] = [2, 1000];
const OPS: u64 = 10_000;
const CAP: Duration = Duration::from_secs(10);

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    locks: Vec<LockName>,
    threads: Vec<usize>,
    locks_count: Vec<usize>,
    ops: u64,
    cap: Duration,
    runs: u32,
    stats: bool,
    adaptive: Adaptive,
}

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        let or = |given: &[u32], default: &[usize]| match given.is_empty() {
            true => default.to_vec(),
            false => given.iter().map(|&n| n as usize).collect(),
        };
        Self {
            locks: common.locks.clone().unwrap_or_else(|| {
                [MutexKind::Default, MutexKind::SpinFutex, MutexKind::PvQSpinLock]
                    .map(LockName::Klocks)
                    .into_iter()
                    .chain(ALTERNATIVES)
                    .chain([LockName::Spin])
                    .collect()
            }),
            threads: or(&args.threads, &THREADS),
            locks_count: or(&args.locks_count, &LOCKS_COUNT),
            ops: args.ops.unwrap_or(OPS),
            cap: args.cap_secs.unwrap_or(CAP),
            runs: common.runs,
            stats: common.stats,
            adaptive: common.adaptive.clone(),
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        (self.locks.len() * self.threads.len() * self.locks_count.len()) as u64
    }
}

/// Measures every cell, the locks of a row interleaved in rotating order.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    let mut cells = Vec::new();
    for &locks_count in &config.locks_count {
        for &threads in &config.threads {
            // Each lock type of the row counts in its own cell only.
            let counting = Counting::start(config.stats);
            let plan = Plan {
                runs: config.runs,
                adaptive: &config.adaptive,
                drives: Drive::best_peer(&config.locks, &DEFAULT, &ALTERNATIVES)
                    .into_iter()
                    .collect(),
                row: format!("lock-bench, {threads} threads × {locks_count} locks"),
                lower_is_better: true,
            };
            let measured = rounds(config.locks.len(), &plan, |at, run| {
                config.locks[at]
                    .visit(Measure {
                        config,
                        threads,
                        locks_count,
                        run,
                    })
                    .map(Some)
            })?;
            for (lock, runs) in config.locks.iter().zip(measured.results) {
                progress.start(format!(
                    "lock-bench {} {threads}×{locks_count}",
                    lock.name()
                ));
                let mut cell = cell_of(lock.name(), threads, locks_count, runs);
                counting.attach(&mut cell);
                cell.repeated = measured.repeated.clone();
                cells.push(cell);
                progress.done();
            }
        }
    }
    Ok(cells)
}

/// A cell of `runs`; the last run, if it hit the cap, makes it not finished (and
/// the finished ones before it are not reported, as in `loop`).
fn cell_of(lock: &'static str, threads: usize, locks_count: usize, runs: Vec<Run>) -> Cell {
    let unfinished = runs
        .last()
        .filter(|run| !run.finished)
        .map(|run| Unfinished::Capped {
            progress: run.operations as f64 / run.target.unwrap_or(run.operations).max(1) as f64,
            after_secs: run.value / 1e3,
        });
    let reported: Vec<Run> = runs
        .into_iter()
        .filter(|run| run.finished == unfinished.is_none())
        .collect();
    let layout = Some(locks_label(locks_count));
    let cell = Cell::of_runs("lock-bench", lock, threads, layout, "ms", reported);
    Cell {
        summary: cell.summary.filter(|_| unfinished.is_none()),
        unfinished,
        ..cell
    }
}

/// "K locks".
fn locks_label(locks_count: usize) -> &'static str {
    leak(format!("{locks_count} locks"))
}

/// One of the K locks and its counter, alone on its cache lines.
struct PaddedLock<L> {
    lock: L,
    count: UnsafeCell<u64>,
}

// SAFETY: `count` is only touched inside `lock.with` (and, after the threads are
// joined, through `&mut`); the totals check verifies the exclusion.
unsafe impl<L: BenchLock> Sync for PaddedLock<L> {}

/// One run of one cell.
struct Measure<'a> {
    config: &'a Config,
    threads: usize,
    locks_count: usize,
    run: u32,
}

impl LockVisitor for Measure<'_> {
    type Output = Result<Run, Error>;

    fn visit<L: BenchLock>(self) -> Result<Run, Error> {
        let Measure {
            config,
            threads,
            locks_count,
            run,
        } = self;
        let mut locks: Vec<CachePadded<PaddedLock<L>>> = (0..locks_count)
            .map(|_| {
                CachePadded::new(PaddedLock {
                    lock: L::new(),
                    count: UnsafeCell::new(0),
                })
            })
            .collect();
        let shared = &locks;
        let race = race(threads, config.cap, |seed, stop| {
            let mut rng =
                0x9E37_79B9_7F4A_7C15_u64 ^ (seed as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            let mut done = 0;
            while done < config.ops && !stop.requested() {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let padded = &shared[(rng % locks_count as u64) as usize];
                padded.lock.with(|| {
                    // SAFETY: under this lock (see the `Sync` impl).
                    unsafe { *padded.count.get() += 1 };
                });
                done += 1;
            }
            done
        });
        let total: u64 = locks.iter_mut().map(|padded| *padded.count.get_mut()).sum();
        let done: u64 = race.results.iter().sum();
        verify_count(
            || {
                format!(
                    "lock-bench: {}, {threads} threads × {locks_count} locks, run {run}",
                    L::NAME
                )
            },
            total,
            done,
        )?;
        let target = threads as u64 * config.ops;
        Ok(Run {
            target: Some(target),
            finished: done == target,
            ..Run::timed(race.wall.as_secs_f64() * 1e3, race.wall, done)
        })
    }
}

/// Wall ms per lock for each (locks, threads), then the default mutex's ratio to the
/// best peer.
pub fn tables(config: &Config, cells: &[Cell]) -> Vec<Table> {
    let mut versus = config
        .locks
        .contains(&DEFAULT)
        .then(|| Versus::new(DEFAULT.name(), ALTERNATIVES.map(LockName::name).to_vec()));
    let mut headers: Vec<String> = vec!["locks".to_owned(), "threads".to_owned()];
    headers.extend(config.locks.iter().map(|l| l.name().to_owned()));
    if let Some(versus) = &versus {
        headers.extend(versus.headers());
    }
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut table = Table::new(
        format!(
            "lock-bench (matklad's): T threads × {} iterations each of lock a random one of K \
             cache-padded locks, increment, unlock; wall ms per run, median [min–max] of {} \
             runs (the locks of a row interleaved, in rotating order); a run capped at {} s",
            config.ops,
            config.runs,
            config.cap.as_secs_f64()
        ),
        &headers,
    );
    for &locks_count in &config.locks_count {
        let label = locks_label(locks_count);
        for &threads in &config.threads {
            let row_cells: Vec<&Cell> = cells
                .iter()
                .filter(|c| c.threads == threads && c.layout == Some(label))
                .collect();
            let mut row = vec![locks_count.to_string(), threads.to_string()];
            row.extend(config.locks.iter().map(|lock| {
                row_cells
                    .iter()
                    .find(|c| c.lock == lock.name())
                    .map_or_else(|| "-".to_owned(), |c| c.long(num))
            }));
            if let Some(versus) = &mut versus {
                row.extend(versus.row(&format!("{label}, threads {threads}"), &row_cells));
            }
            table.row(row);
        }
    }
    for note in versus.as_ref().map(Versus::notes).unwrap_or_default() {
        table.note(note);
    }
    if cells.iter().any(|cell| cell.unfinished.is_some()) {
        table.note(format!(
            "DNF x%: the run hit the {} s cap (--cap-secs) with x% of its iterations done \
             (verified); the cell is not repeated",
            config.cap.as_secs_f64()
        ));
    }
    vec![table]
}

/// A chart per lock count.
const CHART: Chart = Chart {
    panel: |cell, _| {
        let layout = cell.layout.unwrap_or_default();
        Some(Panel::new(
            figures::slug(layout),
            format!("lock-bench: random locking of {layout}"),
        ))
    },
    kind: Kind::Lines(Threads::PLAIN),
};

scenario! {
    takes: Mutexes,
    chart: CHART,
    configure: |args, common| Ok(Config::new(args, common)),
    tables: |config, cells, _| tables(config, cells),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(ops: u64, cap: Duration) -> Config {
        let args = Args {
            ops: Some(ops),
            cap_secs: Some(cap),
            ..Default::default()
        };
        let common = Common {
            locks: None,
            rwlocks: None,
            runs: 1,
            seed_scale: false,
            stats: false,
            adaptive: Adaptive::new(crate::adaptive::Budget::Off),
        };
        Config::new(&args, &common)
    }

    fn measure(config: &Config, lock: LockName, threads: usize) -> Result<Run, Error> {
        lock.visit(Measure {
            config,
            threads,
            locks_count: 2,
            run: 1,
        })
    }

    /// A tiny cell runs and verifies for a klocks lock, a peer and lock-bench's
    /// spinlock: the counters add up to threads × ops.
    #[test]
    fn a_tiny_cell_runs_and_verifies() {
        let config = config(300, CAP);
        for lock in [DEFAULT, LockName::Std, LockName::Spin] {
            let run = measure(&config, lock, 3).expect("verified");
            assert!(run.finished, "{}", lock.name());
            assert_eq!(run.operations, 900, "{}", lock.name());
            assert_eq!(run.target, Some(900), "{}", lock.name());
        }
    }

    /// The negative control, which lets two threads in at once, loses increments and
    /// is caught.
    #[test]
    fn a_lock_that_does_not_exclude_is_caught() {
        let config = config(200_000, CAP);
        let err = measure(&config, LockName::Busted, 4).expect_err("lost updates");
        assert!(err.to_string().contains("the lock did not exclude"), "{err}");
    }

    /// A run stopped by its cap is verified, marked not finished, and its cell says
    /// how far it got.
    #[test]
    fn a_capped_run_is_a_cell_not_finished() {
        let config = config(u64::MAX / 8, Duration::from_millis(20));
        let run = measure(&config, LockName::Std, 2).expect("verified");
        assert!(!run.finished && run.operations > 0);
        let cell = cell_of("std", 2, 2, vec![run]);
        assert!(cell.summary.is_none());
        let Some(Unfinished::Capped { progress, .. }) = cell.unfinished else {
            panic!("capped: {:?}", cell.unfinished);
        };
        assert!(progress < 1.0);
        let text = tables(&config, &[cell])[0].to_string();
        assert!(text.contains("DNF"), "{text}");
    }
}
