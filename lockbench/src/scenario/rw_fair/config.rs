//! rw-fair's command line and configuration: the options ([`Args`]), what a run
//! measures ([`Config`]), a reader/writer group ([`Group`]), the policies and the
//! defaults.

use std::time::Duration;

use klocks::catalog::RwLockKind;

use crate::harness::windowed::{self, Plan, WindowArgs};
use crate::harness::Common;
use crate::rwlocks::RwLockName;

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
/// a note gives seed 001's bar, rwsem-adaptive at 40+40. Each group's table also
/// gives the readers' and the writers' lock waits, p50/p99/p99.9/max (one lock call
/// in --wait-every timed, from just before it to just after it returned), and
/// default-rw is judged against the peer with the shortest p99.9 (the longer
/// role's) beside throughput and fairness. Marks * and ! as in rwsem. Default: 7 locks × 2 groups, 1 s windows, 5 runs: about a minute and a half.
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
    pub(super) readers: usize,
    pub(super) writers: usize,
}

impl Group {
    pub(super) fn threads(self) -> usize {
        self.readers + self.writers
    }

    /// `40+40`.
    pub(super) fn name(self) -> String {
        format!("{}+{}", self.readers, self.writers)
    }
}

/// Parses `R+W`.
pub(super) fn parse_group(text: &str) -> Result<Group, String> {
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
pub(super) const POLICIES: &[RwLockName] = &[
    RwLockName::Klocks(RwLockKind::RwSemAdaptive),
    RwLockName::Klocks(RwLockKind::RwSemAlways),
    RwLockName::Klocks(RwLockKind::RwSemNever),
];

/// The seed's group, the one the bars name.
pub(super) const SEED_GROUP: Group = Group {
    readers: 40,
    writers: 40,
};

/// No thread may get less than this share of its group's mean.
pub(super) const STARVATION: f64 = 0.25;

/// The defaults: the seed's 40+40 and a smaller group, load 1, 1 s windows (2 groups
/// × 7 locks × 5 runs in about a minute and a half).
pub(super) const GROUPS: &[Group] = &[
    Group {
        readers: 8,
        writers: 8,
    },
    SEED_GROUP,
];
pub(super) const LOAD: u32 = 1;
pub(super) const WINDOW: Duration = Duration::from_millis(1000);

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    pub(super) plan: Plan<RwLockName>,
    pub(super) groups: Vec<Group>,
    pub(super) load: u32,
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
