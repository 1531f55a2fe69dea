//! mutex-load's command line and configuration: the options ([`Args`]), what a run
//! measures ([`Config`]), a row of its grid ([`Row`]), the seed's two sides, the peers
//! and the defaults.

use std::time::Duration;

use klocks::catalog::MutexKind;

use crate::harness::windowed::{self, or_default, Plan, WindowArgs};
use crate::harness::Common;
use crate::locks::{LockName, ALTERNATIVES, DEFAULT};
use crate::cells::num;

/// Seed 004: throughput and fairness against the critical section's length
///
/// Waiman Long's spinning-futex RFC (2014) timed a userspace mutex loop (lock; load
/// pause instructions; unlock) with 2, 10 and 256 threads and loads of 1, 10, 50 and
/// 100 pauses, and compared the waiting futex (the "before": a waiter sleeps at
/// once) with the spinning futex (the "after": a waiter spins while the owner
/// runs). For each lock × threads × load, T threads run that loop for a fixed
/// window with no work outside the lock, as in the seed (--outside-pauses adds
/// some); the critical section also increments a plain counter only the lock
/// protects. The clock starts before the start gate opens; only operations
/// finished inside the window count. Reports throughput in kops/s (all threads)
/// and fairness f = the slowest thread's operations ÷ the mean (per-thread
/// min/mean/max in --json); each load is also given in ns, from the pause measured
/// at start-up (header: "pause").
///
/// Every run happens in a child process: one whose threads do not drain within
/// --drain-cap-secs is killed and its cell reported as "DNF (drain > N s)"; the
/// others are verified: the counter must equal every operation, counted or late.
///
/// Tables: the seed-004 comparison (base = futex, patched = spinfutex, and the
/// throughput verdict of spinfutex against futex);
/// all locks (kops/s with f); the spinfutex bars; per-cell detail (range, f
/// min/max, drain, c2c placement, foreign CPU time). The bars give each cell's
/// ceiling, 1 ÷ (load × pause ns) critical sections per second, since no lock runs
/// two at once; where the critical section is shorter than two cache-line
/// transfers (load 1) the lock's own handoff bounds the cell instead (marked †).
/// Then spinfutex as a % of the ceiling, the best peer (std, parking_lot, glibc,
/// glibc-adaptive) and spinfutex against the best peer and against futex (each a
/// throughput ratio, above 1: faster, with its 95% interval and verdict), the
/// fairness of spinfutex and of the fairest peer, with the geometric means, the
/// lowest ratio and the verdicts' counts. Then default (`klocks::Mutex`) against the
/// same peers: its throughput against the best peer's and its fairness against the
/// fairest peer's, cell by cell, each with its verdict.
///
/// The lock waits (one lock call in --wait-every timed, from just before it to just
/// after it returned, into a histogram per thread merged after the window) give
/// p50/p99/p99.9/max per cell in the detail table and a third table of default
/// against the peer with the shortest p99.9 wait, run by run, with its verdict.
///
/// Default locks: default, futex, spinfutex, pvqspinlock, std, parking_lot, glibc,
/// glibc-adaptive. The default grid (threads 2,10,64,256 × loads 1,10,50,100 × 8
/// locks, 1 s windows, 5 runs) takes about twelve minutes on 2 CPUs; it is not part of
/// the default suite.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Lock threads per cell, comma-separated [default: 2,10,64,256]
    #[arg(long, value_delimiter = ',', value_name = "N,...",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub threads: Vec<usize>,

    /// Loads, comma-separated: `pause` instructions inside the critical section (the
    /// tables also give them in ns, from the pause measured at start-up)
    /// [default: 1,10,50,100]
    #[arg(long, value_delimiter = ',', value_name = "PAUSES,...",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub load: Vec<u32>,

    /// `pause` instructions each thread spins after every unlock, outside the lock
    /// [default: 0, the seed's loop: lock; load; unlock]
    #[arg(long, value_name = "PAUSES", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub outside_pauses: Option<u32>,

    #[command(flatten)]
    pub window: WindowArgs,
}

/// The seed's two sides: the waiting futex mutex ("before") and the spinning one
/// ("after").
pub(super) const BEFORE: LockName = LockName::Klocks(MutexKind::Futex);
pub(super) const AFTER: LockName = LockName::Klocks(MutexKind::SpinFutex);

/// The locks a user would otherwise pick, for the bars.
pub(super) const PEERS: &[LockName] = &ALTERNATIVES;

/// The defaults: the seed's grid plus 64 threads, 1 s windows (the whole default
/// table, 128 cells × 5 runs, in about twelve minutes on 2 CPUs); the seed-scale window.
pub(super) const THREADS: &[usize] = &[2, 10, 64, 256];
pub(super) const LOADS: &[u32] = &[1, 10, 50, 100];
pub(super) const WINDOW: Duration = Duration::from_millis(1000);
pub(super) const LOCKS: &[LockName] = &[
    DEFAULT,
    BEFORE,
    AFTER,
    LockName::Klocks(MutexKind::PvQSpinLock),
    LockName::Std,
    LockName::ParkingLot,
    LockName::Pthread,
    LockName::PthreadAdaptive,
];

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    pub(super) plan: Plan,
    pub(super) threads: Vec<usize>,
    pub(super) loads: Vec<u32>,
    pub(super) outside: u32,
}

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        Self {
            plan: Plan::new(&args.window, common, LOCKS, WINDOW),
            threads: or_default(&args.threads, THREADS),
            loads: or_default(&args.load, LOADS),
            outside: args.outside_pauses.unwrap_or(0),
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        windowed::cells(self)
    }
}

/// A row of the tables: a cell's parameters but the lock.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub(super) threads: usize,
    pub(super) load: u32,
}

impl Row {
    /// The critical section's length, in ns.
    pub(super) fn load_ns(&self, pause_ns: f64) -> f64 {
        f64::from(self.load) * pause_ns
    }

    /// The serialization ceiling, in ops/s: one critical section after another.
    pub(super) fn ceiling(&self, pause_ns: f64) -> f64 {
        1e9 / self.load_ns(pause_ns)
    }

    /// threads, load, and the load in ns.
    pub(super) fn labels(&self, pause_ns: f64) -> Vec<String> {
        vec![
            self.threads.to_string(),
            self.load.to_string(),
            format!("{} ns", num(self.load_ns(pause_ns))),
        ]
    }
}
