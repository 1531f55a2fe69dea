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

use crate::adaptive::Drive;
use crate::html_report::figures::{Chart, Kind, Panel, Threads};
use crate::harness::windowed::{self, Grid, Plan, Work};
use crate::harness::Error;
use crate::cells::{Cell, Progress, RwSetup};
use crate::rwlocks::RwLockName;

mod config;
mod tables;
pub use config::{Args, Config, Row};
use config::{AFTER, BEFORE, PEERS};
use tables::tables;

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
