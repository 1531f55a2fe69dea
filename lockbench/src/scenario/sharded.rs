//! A hash map of mutexes: T threads, each doing operations on locks picked at random
//! among K, with a short critical section and some work outside, as a sharded map, a
//! connection table or a per-bucket cache does. Wall time for a fixed number of
//! operations per thread.
//!
//! K = 1 is one hot lock; K = 2 two hot locks that each thread alternates between at
//! random; K = 64 and 1000 spread the threads so that most operations find their lock
//! free, and the lock's uncontended cost and its footprint (the K locks sit packed
//! side by side with their data, as in a `Vec<Mutex<u64>>`) decide.

use std::cell::UnsafeCell;
use std::time::Duration;

use klocks::catalog::MutexKind;

use crate::html_report::figures::{self, Chart, Kind, Panel, Threads};
use crate::harness::stats::Counting;
use crate::adaptive::{Adaptive, Drive};
use crate::harness::rounds::{rounds, Plan};
use crate::harness::versus::{leak, pauses, race_to_finish, Versus};
use crate::harness::{Common, Error};
use crate::locks::{BenchLock, LockName, LockVisitor, ALTERNATIVES, DEFAULT};
use crate::cells::{num, Cell, Progress, Run, Table};

/// A hash map of mutexes: T threads × random operations on K locks, wall ms
///
/// T threads each do --ops operations, each on a lock picked at random among K
/// (--shards: 1, 2, 64 and 1000 by default), as a sharded map or a per-bucket
/// cache does: a short critical section (--cs-pauses) increments that lock's
/// counter, and some work follows outside (--outside-pauses). The K locks sit
/// packed beside their counters, as in a Vec<Mutex<u64>>. Wall time from the start
/// gate to the last thread's end; the locks of a row run interleaved, --runs
/// times. Verified: the counters must add up to T × ops. Table: wall ms per lock
/// and, with default among the locks, its ratio to the best of std, parking_lot,
/// glibc and glibc-adaptive. Default locks: default, spinfutex, pvqspinlock and
/// those four; threads 2,8,32.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Thread counts, comma-separated [default: 2,8,32]
    #[arg(long, value_delimiter = ',', value_name = "N,...", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Vec<u32>,

    /// Lock counts K, comma-separated [default: 1,2,64,1000]
    #[arg(long, value_delimiter = ',', value_name = "K,...", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub shards: Vec<u32>,

    /// Operations per thread [default: 100000]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub ops: Option<u64>,

    /// `pause` instructions inside each critical section [default: 5]
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub cs_pauses: Option<u32>,

    /// `pause` instructions between two operations of a thread [default: 20]
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub outside_pauses: Option<u32>,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    locks: Vec<LockName>,
    threads: Vec<usize>,
    shards: Vec<usize>,
    ops: u64,
    cs_pauses: u32,
    outside_pauses: u32,
    runs: u32,
    stats: bool,
    adaptive: Adaptive,
}


impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        let or = |given: &[u32], default: &[usize]| {
            if given.is_empty() {
                default.to_vec()
            } else {
                given.iter().map(|&n| n as usize).collect()
            }
        };
        Self {
            locks: common.locks.clone().unwrap_or_else(|| {
                [
                    MutexKind::Default,
                    MutexKind::SpinFutex,
                    MutexKind::PvQSpinLock,
                ]
                .map(LockName::Klocks)
                .into_iter()
                .chain(ALTERNATIVES)
                .collect()
            }),
            threads: or(&args.threads, &[2, 8, 32]),
            shards: or(&args.shards, &[1, 2, 64, 1000]),
            ops: args.ops.unwrap_or(100_000),
            cs_pauses: args.cs_pauses.unwrap_or(5),
            outside_pauses: args.outside_pauses.unwrap_or(20),
            runs: common.runs,
            stats: common.stats,
            adaptive: common.adaptive.clone(),
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        (self.locks.len() * self.threads.len() * self.shards.len()) as u64
    }
}

/// Measures every cell, the locks of a row one after another (interleaved per run,
/// so that a slow spell of the machine hits them alike).
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    let mut cells = Vec::new();
    for &shards in &config.shards {
        for &threads in &config.threads {
            // Each lock type of the row counts in its own cell only.
            let counting = Counting::start(config.stats);
            let plan = Plan {
                runs: config.runs,
                adaptive: &config.adaptive,
                drives: Drive::best_peer(&config.locks, &DEFAULT, &ALTERNATIVES)
                    .into_iter()
                    .collect(),
                row: format!("sharded, {threads} threads × {shards} locks"),
                lower_is_better: true,
            };
            let measured = rounds(config.locks.len(), &plan, |at, run| {
                config.locks[at].visit(Measure {
                    config,
                    threads,
                    shards,
                    run,
                })
                .map(Some)
            })?;
            for (lock, runs) in config.locks.iter().zip(measured.results) {
                progress.start(format!("sharded {} {threads}×{shards}", lock.name()));
                let mut cell = Cell::of_runs(
                    "sharded",
                    lock.name(),
                    threads,
                    Some(shards_label(shards)),
                    "ms",
                    runs,
                );
                counting.attach(&mut cell);
                cell.repeated = measured.repeated.clone();
                cells.push(cell);
                progress.done();
            }
        }
    }
    Ok(cells)
}

/// "K locks".
fn shards_label(shards: usize) -> &'static str {
    leak(format!("{shards} locks"))
}

/// One lock and the counter it guards, packed as in a `Vec<Mutex<u64>>`.
struct Shard<L> {
    lock: L,
    count: UnsafeCell<u64>,
}

// SAFETY: `count` is only touched inside `lock.with` (and, after the threads are
// joined, through `&mut`); the totals check verifies the exclusion.
unsafe impl<L: BenchLock> Sync for Shard<L> {}

/// One run of one cell.
struct Measure<'a> {
    config: &'a Config,
    threads: usize,
    shards: usize,
    run: u32,
}

impl LockVisitor for Measure<'_> {
    type Output = Result<Run, Error>;

    fn visit<L: BenchLock>(self) -> Result<Run, Error> {
        let Measure {
            config,
            threads,
            shards,
            run,
        } = self;
        let mut table: Vec<Shard<L>> = (0..shards)
            .map(|_| Shard {
                lock: L::new(),
                count: UnsafeCell::new(0),
            })
            .collect();
        let locks = &table;
        let wall = race_to_finish(threads, |seed| {
            let mut rng =
                0x9E37_79B9_7F4A_7C15_u64 ^ (seed as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            for _ in 0..config.ops {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let shard = &locks[(rng % shards as u64) as usize];
                shard.lock.with(|| {
                    // SAFETY: under the shard's lock.
                    unsafe { *shard.count.get() += 1 };
                    pauses(config.cs_pauses);
                });
                pauses(config.outside_pauses);
            }
        })
        .wall;
        let total: u64 = table.iter_mut().map(|shard| *shard.count.get_mut()).sum();
        let expected = threads as u64 * config.ops;
        if total != expected {
            return Err(Error::Verification(format!(
                "sharded: {}, {threads} threads × {shards} locks, run {run}: the counters add up to {total}, not {expected} (lost updates)",
                L::NAME
            )));
        }
        Ok(Run::timed(ms(wall), wall, expected))
    }
}

fn ms(wall: Duration) -> f64 {
    wall.as_secs_f64() * 1e3
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
            "sharded: T threads × {} operations each on locks picked at random among K; {} pauses inside, {} outside; wall ms, median [min–max] of {} runs (the locks of a row interleaved, in rotating order)",
            config.ops, config.cs_pauses, config.outside_pauses, config.runs
        ),
        &headers,
    );
    for &shards in &config.shards {
        let label = format!("{shards} locks");
        for &threads in &config.threads {
            let row_cells: Vec<&Cell> = cells
                .iter()
                .filter(|c| c.threads == threads && c.layout == Some(label.as_str()))
                .collect();
            let mut row = vec![shards.to_string(), threads.to_string()];
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
    vec![table]
}

/// A chart per lock count.
const CHART: Chart = Chart {
    panel: |cell, _| {
        let layout = cell.layout.unwrap_or_default();
        Some(Panel::new(
            figures::slug(layout),
            format!("sharded: random operations on {layout}"),
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

    /// A tiny cell runs and verifies for a klocks lock and a peer; the test also runs
    /// in debug builds, where arithmetic overflow panics (a worker that panicked before
    /// the start gate once hung the run).
    #[test]
    fn a_tiny_cell_runs_and_verifies() {
        let args = Args {
            ops: Some(300),
            ..Default::default()
        };
        let common = Common {
            locks: None,
            rwlocks: None,
            runs: 1,
            seed_scale: false,
            stats: false,
            adaptive: crate::adaptive::Adaptive::new(crate::adaptive::Budget::Off),
        };
        let config = Config::new(&args, &common);
        for lock in [DEFAULT, LockName::Std] {
            let measure = Measure {
                config: &config,
                threads: 3,
                shards: 2,
                run: 1,
            };
            let run = lock.visit(measure).expect("verified");
            assert_eq!(run.operations, 900, "{}", lock.name());
            assert!(run.wall_ns > 0, "{}", lock.name());
        }
    }
}
