//! Seed 001: reader-writer semaphore throughput, readers and writers mixed.
//!
//! Waiman Long's "locking/rwsem: Enable reader optimistic spinning" (2019, merged in
//! Linux 5.3) ran the kernel's rwsem locking microbenchmark: equal numbers of reader
//! and writer threads, each looping `lock; load; unlock` on one rwsem, with a "CS
//! load" of 1 (extremely short), 20 (moderate) and 100 (long) pause instructions, at
//! rising thread counts. The "before" lets readers spin on a writer owner
//! unconditionally; the "after" adds the adaptive bits (a reader that spun in vain
//! marks the writer nonspinnable, so later readers sleep at once). Linux 5.11
//! removed reader spinning altogether: readers get one steal attempt, then sleep,
//! because spinning readers split into small groups between writers. Here the three
//! are klocks' `RwSem` policies, `rwsem-always`, `rwsem-adaptive` and `rwsem-never`,
//! next to std, parking_lot and glibc's two kinds of rwlock.
//!
//! A cell is T threads (T/2 readers, T/2 writers) at load L for a fixed window, each
//! run in a child process by [`windowed`] (clock before the gate, only sections
//! inside the window count, a drain cap). The sections and their verification are
//! [`crate::harness::rw`]'s: writers increment two plain counters around the load, readers check
//! they read equal; at the end both must equal every write section and no read may
//! be torn, or the lock's result is refused. Each cell also counts read phases
//! (runs of readers between writers), so the tables give the average reader group,
//! the fragmentation that 5.11's removal argued against.

use std::time::Duration;

use klocks::catalog::RwLockKind;

use crate::adaptive::Drive;
use crate::html_report::figures::{Chart, Kind, Panel, Threads};
use crate::harness::rw::{geometric_mean, kops, reader_group, role_fairness, show, show_ratio, times, Role};
use crate::harness::versus::{against_best, judge_cells};
use crate::harness::watch::Conditions;
use crate::harness::windowed::{self, or_default, Grid, Plan, WindowArgs, Work};
use crate::harness::{Common, Error};
use crate::cells::{num, si, Cell, Progress, RwRun, RwSetup, Table};
use crate::rwlocks::RwLockName;
use crate::verdict::{self, Judgement, Ledger, Settings};

mod tables;
use tables::tables;

/// Seed 001: reader-writer lock throughput, half readers and half writers
///
/// Waiman Long's reader optimistic spinning for rwsems (2019) was measured with
/// the kernel's rwsem locking microbenchmark: equal numbers of reader and writer
/// threads, each looping lock; load pause instructions; unlock, with a CS load of
/// 1 (extremely short), 20 (moderate) and 100 (long). The "before" lets readers
/// spin on a writer owner unconditionally (rwsem-always), the "after" adds the
/// adaptive bits (rwsem-adaptive); Linux 5.11 removed reader spinning
/// (rwsem-never). For each lock × threads (T/2 readers, T/2 writers) × load, the
/// threads loop for a fixed window with no work outside the lock (--outside-pauses
/// adds some). A writer increments two plain counters a and b around the load; a
/// reader reads a, the load, then b. The clock starts before the start gate
/// opens; only sections finished inside the window count.
///
/// Every run happens in a child process: one whose threads do not drain within
/// --drain-cap-secs is killed and its cell reported as "DNF (drain > N s)"; the
/// others are verified: a and b must both equal every write section, counted or
/// late, and no read may have seen a ≠ b, or lockbench refuses the lock's result
/// (exit status 1).
///
/// Tables: the seed-001 comparison (before = rwsem-always, after = rwsem-adaptive,
/// the throughput verdict of after against before, and rwsem-never); all locks (kops/s, reads + writes); the
/// rwsem-adaptive bars (÷ the better of always and never, ÷ the best peer of
/// std-rw, parking_lot-rw, pthread-rw and pthread-rw-writer, and the geometric
/// mean of ÷ best peer over the thread counts per load); per-cell detail (reads/s,
/// writes/s, fairness f = min ÷ mean for readers and writers separately, the
/// average reader group = reads ÷ read phases, drain, c2c placement, foreign CPU
/// time). A read phase is a run of readers between two writers: small groups are
/// the fragmentation that reader spinning causes. Marks: * the c2c placement
/// changed during the cell; ! steal or other processes took over 5% of the CPU
/// time. Loads are also given in ns, from the pause measured at start-up.
///
/// Default: all seven reader-writer locks, threads 2,4,8,16,32,64,80, loads
/// 1,20,100, 500 ms windows, 5 runs: about eight minutes on 2 CPUs. Not part of the
/// default suite.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Threads per cell, comma-separated, each even: half read, half write
    /// [default: 2,4,8,16,32,64,80]
    #[arg(long, value_delimiter = ',', value_name = "N,...", value_parser = parse_threads)]
    pub threads: Vec<usize>,

    /// Loads, comma-separated: `pause` instructions inside every read and write
    /// section (the tables also give them in ns, from the pause measured at start-up)
    /// [default: 1,20,100]
    #[arg(long, value_delimiter = ',', value_name = "PAUSES,...",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub load: Vec<u32>,

    /// `pause` instructions each thread spins after every unlock, outside the lock
    /// [default: 0, the microbenchmark's loop: lock; load; unlock]
    #[arg(long, value_name = "PAUSES", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub outside_pauses: Option<u32>,

    #[command(flatten)]
    pub window: WindowArgs,
}

/// Parses a thread count that splits evenly into readers and writers.
fn parse_threads(text: &str) -> Result<usize, String> {
    let threads: usize = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of threads"))?;
    if !(2..=1024).contains(&threads) || !threads.is_multiple_of(2) {
        return Err(format!(
            "{threads} threads cannot be split into equal numbers of readers and writers: \
             give an even number from 2 to 1024"
        ));
    }
    Ok(threads)
}

/// The seed's two sides, reader spinning without and with the adaptive bits, and
/// Linux 5.11's policy without reader spinning.
const BEFORE: RwLockName = RwLockName::Klocks(RwLockKind::RwSemAlways);
const AFTER: RwLockName = RwLockName::Klocks(RwLockKind::RwSemAdaptive);
const NEVER: RwLockName = RwLockName::Klocks(RwLockKind::RwSemNever);

/// The reader-writer locks a user would otherwise pick, for the bars.
const PEERS: &[RwLockName] = &[
    RwLockName::Std,
    RwLockName::ParkingLot,
    RwLockName::Pthread,
    RwLockName::PthreadWriter,
];

/// The defaults: the microbenchmark's thread counts on a small machine and its three
/// loads, 500 ms windows (147 cells × 5 runs in about seven and a half minutes on 2
/// CPUs).
const THREADS: &[usize] = &[2, 4, 8, 16, 32, 64, 80];
const LOADS: &[u32] = &[1, 20, 100];
const WINDOW: Duration = Duration::from_millis(500);

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    plan: Plan<RwLockName>,
    threads: Vec<usize>,
    loads: Vec<u32>,
    outside: u32,
}

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        Self {
            plan: Plan::with_locks(&args.window, common, common.rwlocks(), WINDOW),
            threads: or_default(&args.threads, THREADS),
            loads: or_default(&args.load, LOADS),
            outside: args.outside_pauses.unwrap_or(0),
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        windowed::cells(self)
    }

    fn has(&self, lock: RwLockName) -> bool {
        self.plan.locks.contains(&lock)
    }
}

impl Grid for Config {
    type Row = Row;
    type Lock = RwLockName;
    const SCENARIO: &'static str = "rwsem";

    fn plan(&self) -> &Plan<RwLockName> {
        &self.plan
    }

    /// Threads outermost, then load.
    fn rows(&self) -> Vec<Row> {
        self.threads
            .iter()
            .flat_map(|&threads| self.loads.iter().map(move |&load| Row { threads, load }))
            .collect()
    }

    fn describe(&self, lock: RwLockName, row: &Row) -> String {
        format!(
            "rwsem: {}, {} readers + {} writers, load {}",
            lock.name(),
            row.threads / 2,
            row.threads / 2,
            row.load
        )
    }

    /// Half the threads read, half write; the load inside, `--outside-pauses` after.
    fn work(&self, row: &Row) -> Work {
        Work {
            threads: row.threads,
            readers: row.threads / 2,
            inside: row.load,
            outside: self.outside,
            hogs: 0,
        }
    }

    fn annotate(&self, row: &Row, cell: &mut Cell) {
        cell.rw = Some(RwSetup {
            readers: row.threads / 2,
            writers: row.threads / 2,
            load_pauses: row.load,
            outside_pauses: self.outside,
            window_ms: self.plan.window.as_secs_f64() * 1e3,
        });
    }

    /// Seed 001's after against its before, and the after against the best peer.
    fn drives(&self) -> Vec<Drive> {
        let locks = &self.plan.locks;
        [
            Drive::pair(locks, &AFTER, &BEFORE),
            Drive::best_peer(locks, &AFTER, PEERS),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// A row of the tables: a cell's parameters but the lock.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    threads: usize,
    load: u32,
}

impl Row {
    /// threads, load, and the load in ns.
    fn labels(&self, pause_ns: f64) -> Vec<String> {
        vec![
            self.threads.to_string(),
            self.load.to_string(),
            format!("{} ns", num(f64::from(self.load) * pause_ns)),
        ]
    }
}

/// Measures every cell, each run in its own process.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    windowed::run(config, progress)
}

/// A chart per load.
const CHART: Chart = Chart {
    panel: |cell, _| {
        let load = cell.rw.as_ref()?.load_pauses;
        Some(Panel::new(
            format!("{load}-pauses"),
            format!("rwsem: half readers, half writers, {load} pauses held"),
        ))
    },
    kind: Kind::Lines(Threads::PLAIN),
};

scenario! {
    takes: RwLocks,
    chart: CHART,
    configure: |args, common| Ok(Config::new(args, common)),
    tables: |config, cells, machine| tables(config, cells, machine.pause_ns),
}
