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

use crate::adaptive::Drive;
use crate::html_report::figures::{Chart, Kind, Panel, Threads};
use crate::harness::windowed::{self, Grid, Plan, Work};
use crate::harness::Error;
use crate::locks::{LockName, DEFAULT};
use crate::cells::{Cell, MutexLoad, Progress};

mod config;
mod tables;
pub use config::{Args, Config, Row};
use config::{AFTER, BEFORE, PEERS};
use tables::tables;

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
