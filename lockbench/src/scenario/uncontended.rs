//! One thread, lock/unlock pairs in a loop: the cost of a lock nobody else wants.

use std::time::Instant;

use crate::harness::stats::Counting;
use crate::harness::{verify_count, Common, Error, Guarded};
use crate::locks::{BenchLock, LockName, LockVisitor};
use crate::report::{num, Cell, Progress, Run, Table};

/// One thread, no contention: ns per lock + increment + unlock
///
/// One thread takes and releases the lock in a loop, incrementing a counter
/// inside. Measures the bare cost of an uncontended acquisition and release
/// (atomic RMWs, fences, function calls), in ns per pair, with the ratio to
/// std::sync::Mutex. Verified: the counter must equal the iterations.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Lock/unlock pairs per run [default: 2000000; 5000000 with --seed-scale]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
}

/// Default pairs per run, and the seed's loop length.
const ITERATIONS: u64 = 2_000_000;
const SEED_ITERATIONS: u64 = 5_000_000;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    locks: Vec<LockName>,
    iterations: u64,
    runs: u32,
    stats: bool,
}

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        let default = if common.seed_scale {
            SEED_ITERATIONS
        } else {
            ITERATIONS
        };
        Self {
            locks: common.locks(),
            iterations: args.iterations.unwrap_or(default),
            runs: common.runs,
            stats: common.stats,
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        self.locks.len() as u64
    }
}

/// Measures every lock.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    config
        .locks
        .iter()
        .map(|lock| {
            progress.start(format!("uncontended {}", lock.name()));
            let counting = Counting::start(config.stats);
            let mut cell = lock.visit(Measure(config))?;
            counting.attach(&mut cell);
            progress.done();
            Ok(cell)
        })
        .collect()
}

/// Measures one lock's cell.
struct Measure<'a>(&'a Config);

impl LockVisitor for Measure<'_> {
    type Output = Result<Cell, Error>;

    fn visit<L: BenchLock>(self) -> Result<Cell, Error> {
        let runs = (1..=self.0.runs)
            .map(|run| {
                pairs::<L>(self.0.iterations, || {
                    format!("uncontended: {}, run {run}", L::NAME)
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(Cell::of_runs(
            "uncontended",
            L::NAME,
            1,
            None,
            "ns/pair",
            runs,
        ))
    }
}

/// One timed run of `iterations` critical sections, verified.
fn pairs<L: BenchLock>(iterations: u64, context: impl FnOnce() -> String) -> Result<Run, Error> {
    let guarded = Guarded::<L>::unlocked();
    // Hide from the optimiser that no other thread can observe the lock or the data.
    let shared = std::hint::black_box(&guarded);
    let start = Instant::now();
    for _ in 0..iterations {
        shared.enter(0);
    }
    let wall = start.elapsed();
    verify_count(context, guarded.into_count(), iterations)?;
    Ok(Run::timed(
        wall.as_secs_f64() * 1e9 / iterations as f64,
        wall,
        iterations,
    ))
}

/// lock | ns/pair | ratio to std.
pub fn tables(cells: &[Cell]) -> Vec<Table> {
    let std_ns = cells
        .iter()
        .find(|cell| cell.lock == <std::sync::Mutex<()> as BenchLock>::NAME)
        .and_then(|cell| cell.summary)
        .map(|summary| summary.median);
    let mut table = Table::new(
        "uncontended: one thread, lock + increment + unlock",
        &["lock", "ns/pair median [min–max]", "vs std"],
    );
    for cell in cells {
        let ratio = cell.summary.zip(std_ns).map_or_else(
            || "-".to_owned(),
            |(s, std)| format!("{:.2}×", s.median / std),
        );
        table.row(vec![cell.lock.to_owned(), cell.long(num), ratio]);
    }
    vec![table]
}

scenario! {
    takes: Mutexes,
    configure: |args, common| Ok(Config::new(args, common)),
    tables: |_, cells, _| tables(cells),
}
