//! Seed 001's fairness check: does any reader or writer starve?
//!
//! Reader optimistic spinning lets a spinning reader take the rwsem ahead of the
//! sleepers queued before it. Seed 001's last table shows it still shares the lock
//! out: with 40 readers and 40 writers on one rwsem, every thread's iterations in
//! the window ("40 readers, Iterations Min/Mean/Max = a/b/c", and the same for
//! writers) stay within reach of its group's mean. Here R dedicated readers and W
//! dedicated writers loop `lock; load; unlock` on one lock for a fixed window, for
//! each lock and each R+W group, through [`windowed`]'s child processes and
//! [`rw`]'s verified critical sections (writers increment two plain counters around
//! the load, readers check they read equal).
//!
//! Reported per lock and group: each role's per-thread iterations min/mean/max, its
//! fairness (min ÷ mean), and the average reader group (reads per run of readers
//! between writers). The bars then ask, for the three rwsem policies, whether every
//! reader and every writer got at least a quarter of its group's mean (no
//! starvation), and how rwsem-adaptive's mean per reader and per writer compares
//! with the best policy's.

use std::time::Duration;

use klocks::catalog::RwLockKind;

use crate::html_report::figures::{Chart, Kind, Panel};
use crate::harness::rw::{self, per_role, reader_group, role_fairness, show, show_ratio, Role};
use crate::harness::windowed::{self, Grid, Plan, WindowArgs, Work};
use crate::harness::{Common, Error};
use crate::cells::{num, Cell, PerThread, Progress, RwSetup, Table};
use crate::rwlocks::{RwLockName, RW_ALTERNATIVES, RW_DEFAULT};
use crate::verdict::{self, Ledger, Settings};

mod tables;
use tables::tables;

/// Seed 001's fairness check: R dedicated readers + W writers, does any starve?
///
/// For each reader-writer lock and each R+W group (--groups, default 8+8,40+40),
/// R reader threads and W writer threads loop lock; load; unlock on one lock for a
/// fixed window (load default 1 pause), with the same verified critical sections
/// and child processes as rwsem. Reports per lock and group, in the seed's format,
/// "40 readers, Iterations Min/Mean/Max = a/b/c" and the same for the writers
/// (each thread's sections in the window), each role's min ÷ mean, and the
/// average reader group (reads ÷ read phases). Then the bars for the three rwsem
/// policies: whether every reader and every writer reached 25% of its role's
/// mean in every run (no starvation), and each role's mean ÷ the best policy's;
/// a note gives seed 001's bar, rwsem-adaptive at 40+40. Marks * and ! as in
/// rwsem. Default: 7 locks × 2 groups, 1 s windows, 5 runs: about a minute and a half.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Groups of dedicated threads, comma-separated, each READERS+WRITERS (each 1 to
    /// 512) [default: 8+8,40+40]
    #[arg(long, value_delimiter = ',', value_name = "R+W,...", value_parser = parse_group)]
    pub groups: Vec<Group>,

    /// `pause` instructions inside every read and write section [default: 1]
    #[arg(long, value_name = "PAUSES", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub load: Option<u32>,

    #[command(flatten)]
    pub window: WindowArgs,
}

/// R readers and W writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    readers: usize,
    writers: usize,
}

impl Group {
    fn threads(self) -> usize {
        self.readers + self.writers
    }

    /// `40+40`.
    fn name(self) -> String {
        format!("{}+{}", self.readers, self.writers)
    }
}

/// Parses `R+W`.
fn parse_group(text: &str) -> Result<Group, String> {
    let bad =
        || format!("`{text}` is not a group: give READERS+WRITERS, e.g. 40+40, each from 1 to 512");
    let (readers, writers) = text.split_once('+').ok_or_else(bad)?;
    let count = |side: &str| {
        side.trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=512).contains(n))
            .ok_or_else(bad)
    };
    Ok(Group {
        readers: count(readers)?,
        writers: count(writers)?,
    })
}

/// The rwsem policies the bars compare; the first is the seed's.
const POLICIES: &[RwLockName] = &[
    RwLockName::Klocks(RwLockKind::RwSemAdaptive),
    RwLockName::Klocks(RwLockKind::RwSemAlways),
    RwLockName::Klocks(RwLockKind::RwSemNever),
];

/// The seed's group, the one the bars name.
const SEED_GROUP: Group = Group {
    readers: 40,
    writers: 40,
};

/// No thread may get less than this share of its group's mean.
const STARVATION: f64 = 0.25;

/// The defaults: the seed's 40+40 and a smaller group, load 1, 1 s windows (2 groups
/// × 7 locks × 5 runs in about a minute and a half).
const GROUPS: &[Group] = &[
    Group {
        readers: 8,
        writers: 8,
    },
    SEED_GROUP,
];
const LOAD: u32 = 1;
const WINDOW: Duration = Duration::from_millis(1000);

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    plan: Plan<RwLockName>,
    groups: Vec<Group>,
    load: u32,
}

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        Self {
            plan: Plan::with_locks(&args.window, common, common.rwlocks(), WINDOW),
            groups: windowed::or_default(&args.groups, GROUPS),
            load: args.load.unwrap_or(LOAD),
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        windowed::cells(self)
    }
}

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
