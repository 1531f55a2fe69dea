//! Seed 001's fairness check: does any reader or writer starve?
//!
//! Reader optimistic spinning lets a spinning reader take the rwsem ahead of the
//! sleepers queued before it. Seed 001's last table shows it still shares the lock
//! out: with 40 readers and 40 writers on one rwsem, every thread's iterations in
//! the window ("40 readers, Iterations Min/Mean/Max = a/b/c", and the same for
//! writers) stay within reach of its group's mean. Here R dedicated readers and W
//! dedicated writers loop `lock; load; unlock` on one lock for a fixed window, for
//! each lock and each R+W group, through [`windowed`]'s child processes and
//! [`rw`](crate::harness::rw)'s verified critical sections (writers increment two plain counters around
//! the load, readers check they read equal).
//!
//! Reported per lock and group: each role's per-thread iterations min/mean/max, its
//! fairness (min ÷ mean), and the average reader group (reads per run of readers
//! between writers). The bars then ask, for the three rwsem policies, whether every
//! reader and every writer got at least a quarter of its group's mean (no
//! starvation), and how rwsem-adaptive's mean per reader and per writer compares
//! with the best policy's.

use crate::html_report::figures::{Chart, Kind, Panel};
use crate::harness::windowed::{self, Grid, Plan, Work};
use crate::harness::Error;
use crate::cells::{Cell, Progress, RwSetup};
use crate::rwlocks::RwLockName;

mod config;
mod tables;
pub use config::{Args, Config, Group};
use tables::tables;

impl Grid for Config {
    type Row = Group;
    type Lock = RwLockName;
    const SCENARIO: &'static str = "rw-fair";

    fn plan(&self) -> &Plan<RwLockName> {
        &self.plan
    }

    fn rows(&self) -> Vec<Group> {
        self.groups.clone()
    }

    fn describe(&self, lock: RwLockName, group: &Group) -> String {
        format!(
            "rw-fair: {}, {} readers + {} writers, load {}",
            lock.name(),
            group.readers,
            group.writers,
            self.load
        )
    }

    fn work(&self, group: &Group) -> Work {
        Work {
            threads: group.threads(),
            readers: group.readers,
            inside: self.load,
            outside: 0,
            hogs: 0,
        }
    }

    fn annotate(&self, group: &Group, cell: &mut Cell) {
        cell.rw = Some(RwSetup {
            readers: group.readers,
            writers: group.writers,
            load_pauses: self.load,
            outside_pauses: 0,
            window_ms: self.plan.window.as_secs_f64() * 1e3,
        });
    }
}

/// Measures every cell, each run in its own process.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    windowed::run(config, progress)
}

/// A range chart per group of readers and writers.
const CHART: Chart = Chart {
    panel: |cell, _| {
        let rw = cell.rw.as_ref()?;
        Some(Panel::new(
            format!("{}-{}", rw.readers, rw.writers),
            format!(
                "rw-fair: {} readers + {} writers, per-thread sections",
                rw.readers, rw.writers
            ),
        ))
    },
    kind: Kind::Ranges,
};

scenario! {
    takes: RwLocks,
    chart: CHART,
    configure: |args, common| Ok(Config::new(args, common)),
    tables: |config, cells, machine| tables(config, cells, machine.pause_ns),
}
