//! rwsem's command line and configuration: the options ([`Args`]), what a run
//! measures ([`Config`]), a row of its grid ([`Row`]), the seed's sides, the peers and
//! the defaults.

use std::time::Duration;

use klocks::catalog::RwLockKind;

use crate::harness::windowed::{self, or_default, Plan, WindowArgs};
use crate::harness::Common;
use crate::cells::num;
use crate::rwlocks::RwLockName;

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
/// std-rw, parking_lot-rw, glibc-rw and glibc-rw-writer, and the geometric
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
pub(super) fn parse_threads(text: &str) -> Result<usize, String> {
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
pub(super) const BEFORE: RwLockName = RwLockName::Klocks(RwLockKind::RwSemAlways);
pub(super) const AFTER: RwLockName = RwLockName::Klocks(RwLockKind::RwSemAdaptive);
pub(super) const NEVER: RwLockName = RwLockName::Klocks(RwLockKind::RwSemNever);

/// The reader-writer locks a user would otherwise pick, for the bars.
pub(super) const PEERS: &[RwLockName] = &[
    RwLockName::Std,
    RwLockName::ParkingLot,
    RwLockName::Pthread,
    RwLockName::PthreadWriter,
];

/// The defaults: the microbenchmark's thread counts on a small machine and its three
/// loads, 500 ms windows (147 cells × 5 runs in about seven and a half minutes on 2
/// CPUs).
pub(super) const THREADS: &[usize] = &[2, 4, 8, 16, 32, 64, 80];
pub(super) const LOADS: &[u32] = &[1, 20, 100];
pub(super) const WINDOW: Duration = Duration::from_millis(500);

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    pub(super) plan: Plan<RwLockName>,
    pub(super) threads: Vec<usize>,
    pub(super) loads: Vec<u32>,
    pub(super) outside: u32,
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

    pub(super) fn has(&self, lock: RwLockName) -> bool {
        self.plan.locks.contains(&lock)
    }
}

/// A row of the tables: a cell's parameters but the lock.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub(super) threads: usize,
    pub(super) load: u32,
}

impl Row {
    /// threads, load, and the load in ns.
    pub(super) fn labels(&self, pause_ns: f64) -> Vec<String> {
        vec![
            self.threads.to_string(),
            self.load.to_string(),
            format!("{} ns", num(f64::from(self.load) * pause_ns)),
        ]
    }
}
