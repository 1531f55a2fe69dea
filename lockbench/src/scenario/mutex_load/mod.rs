//! Seed 004: mutex throughput and fairness as the critical section grows.
//!
//! Waiman Long's RFC "futex: introduce an optimistic spinning futex" (2014) ran a
//! userspace mutex microbenchmark, each thread looping `lock; load pauses; unlock`,
//! with 2, 10 and 256 threads and loads of 1, 10, 50 and 100 `pause` instructions,
//! and compared the waiting futex (a waiter sleeps at once: the "before") with the
//! spinning futex (a waiter spins while the owner runs: the "after"). Spinning won
//! by up to 248% with long critical sections and lost up to 24% with load 1. Here
//! the two sides are klocks' userspace ports, `futex` and `spinfutex`, next to
//! pvqspinlock and the peers.
//!
//! A cell is T threads at load L for a fixed window, each run in a child process by
//! [`windowed`] (clock before the gate, only operations inside the window count, a
//! drain cap, the guarded counter verified against every operation). By default a
//! thread does nothing between unlock and its next lock, as in the seed's loop, so
//! every thread always holds or wants the lock; `--outside-pauses` adds work outside.
//!
//! No lock can run two critical sections at once, so a cell's ceiling is
//! 1 ÷ (L × pause ns) critical sections per second, with the pause probed just before
//! and after the cell's row (its cost drifts by up to 10% within seconds on this host: with
//! the start-up pause, one thread alone reached only 88% of the load-50 ceiling). With
//! load 1 the critical section (one pause) is shorter than passing the lock between
//! CPUs, so the lock's own overhead, not the ceiling, bounds those cells.

use std::time::Duration;

use klocks::catalog::MutexKind;

use crate::adaptive::Drive;
use crate::html_report::figures::{Chart, Kind, Panel, Threads};
use crate::harness::versus::{against_best, judge_cells};
use crate::harness::watch::Conditions;
use crate::harness::windowed::{
    self, fairest, fairness, or_default, show_fairness, Grid, Plan, WindowArgs, Work,
};
use crate::harness::{Common, Error};
use crate::locks::{LockName, ALTERNATIVES, DEFAULT};
use crate::cells::{num, Cell, MutexLoad, Progress, Table};
use crate::verdict::{Judgement, Ledger, Settings};

mod tables;
use tables::tables;

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
/// Then spinfutex as a % of the ceiling, the best peer (std, parking_lot, pthread,
/// pthread-adaptive) and spinfutex against the best peer and against futex (each a
/// throughput ratio, above 1: faster, with its 95% interval and verdict), the
/// fairness of spinfutex and of the fairest peer, with the geometric means, the
/// lowest ratio and the verdicts' counts. Then default (`klocks::Mutex`) against the
/// same peers: its throughput against the best peer's and its fairness against the
/// fairest peer's, cell by cell, each with its verdict.
///
/// Default locks: default, futex, spinfutex, pvqspinlock, std, parking_lot, pthread,
/// pthread-adaptive. The default grid (threads 2,10,64,256 × loads 1,10,50,100 × 8
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
const BEFORE: LockName = LockName::Klocks(MutexKind::Futex);
const AFTER: LockName = LockName::Klocks(MutexKind::SpinFutex);

/// The locks a user would otherwise pick, for the bars.
const PEERS: &[LockName] = &ALTERNATIVES;

/// The defaults: the seed's grid plus 64 threads, 1 s windows (the whole default
/// table, 128 cells × 5 runs, in about twelve minutes on 2 CPUs); the seed-scale window.
const THREADS: &[usize] = &[2, 10, 64, 256];
const LOADS: &[u32] = &[1, 10, 50, 100];
const WINDOW: Duration = Duration::from_millis(1000);
const LOCKS: &[LockName] = &[
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
    plan: Plan,
    threads: Vec<usize>,
    loads: Vec<u32>,
    outside: u32,
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

impl Grid for Config {
    type Row = Row;
    type Lock = LockName;
    const SCENARIO: &'static str = "mutex-load";

    fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Threads outermost, then load.
    fn rows(&self) -> Vec<Row> {
        self.threads
            .iter()
            .flat_map(|&threads| self.loads.iter().map(move |&load| Row { threads, load }))
            .collect()
    }

    fn describe(&self, lock: LockName, row: &Row) -> String {
        format!(
            "mutex-load: {}, {} threads, load {}",
            lock.name(),
            row.threads,
            row.load
        )
    }

    /// The load inside the lock, `--outside-pauses` after it, no hogs.
    fn work(&self, row: &Row) -> Work {
        Work {
            threads: row.threads,
            readers: 0,
            inside: row.load,
            outside: self.outside,
            hogs: 0,
        }
    }

    fn annotate(&self, row: &Row, cell: &mut Cell) {
        cell.mutex_load = Some(MutexLoad {
            load_pauses: row.load,
            outside_pauses: self.outside,
            window_ms: self.plan.window.as_secs_f64() * 1e3,
        });
    }

    /// Default against the best peer, and seed 004's after against its before.
    fn drives(&self) -> Vec<Drive> {
        let locks = &self.plan.locks;
        [
            Drive::best_peer(locks, &DEFAULT, PEERS),
            Drive::pair(locks, &AFTER, &BEFORE),
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
    /// The critical section's length, in ns.
    fn load_ns(&self, pause_ns: f64) -> f64 {
        f64::from(self.load) * pause_ns
    }

    /// The serialization ceiling, in ops/s: one critical section after another.
    fn ceiling(&self, pause_ns: f64) -> f64 {
        1e9 / self.load_ns(pause_ns)
    }

    /// threads, load, and the load in ns.
    fn labels(&self, pause_ns: f64) -> Vec<String> {
        vec![
            self.threads.to_string(),
            self.load.to_string(),
            format!("{} ns", num(self.load_ns(pause_ns))),
        ]
    }
}

/// Measures every cell, each run in its own process.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    windowed::run(config, progress)
}

/// A chart per load, under the serialisation ceiling: one critical section after
/// another, nothing in between, is `1 s ÷ hold` operations per second.
const CHART: Chart = Chart {
    panel: |cell, pause_ns| {
        let load = cell.mutex_load.as_ref()?.load_pauses;
        Some(Panel::new(
            format!("{load}-pauses"),
            format!(
                "mutex-load: {load} pauses held (≈ {:.0} ns)",
                f64::from(load) * pause_ns
            ),
        ))
    },
    kind: Kind::Lines(Threads {
        ceiling: Some(|cell, pause_ns| {
            let load = cell.mutex_load.as_ref()?;
            (pause_ns > 0.0).then(|| 1e9 / (f64::from(load.load_pauses) * pause_ns))
        }),
        ..Threads::PLAIN
    }),
};

scenario! {
    takes: Mutexes,
    chart: CHART,
    configure: |args, common| Ok(Config::new(args, common)),
    tables: |config, cells, machine| tables(config, cells, machine.pause_ns),
}
