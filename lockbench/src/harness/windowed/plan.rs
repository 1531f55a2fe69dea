//! What a windowed run is made of: the plan of a scenario (its locks, window, drain
//! cap and runs, from `--window-ms` and `--drain-cap-secs`), the locks a cell can run,
//! a row's work, one cell's spec as its process runs it, and the windows and caps
//! that bound them.

use std::fmt;
use std::time::Duration;

use crate::adaptive::Adaptive;
use crate::harness::{parse_secs, Common};
use crate::locks::LockName;
use crate::rwlocks::RwLockName;

/// The hidden subcommand that runs one window in a child process.
pub const CELL_COMMAND: &str = "__window-cell";

/// Windows shorter than this flatter collapsing FIFO locks (BENCHMARKS.md).
pub const TRUSTED_WINDOW: Duration = Duration::from_secs(3);

/// The window with --seed-scale: one to trust.
pub const SEED_WINDOW: Duration = TRUSTED_WINDOW;

/// The default drain cap, hundreds of times what the sleeping locks need (about 10 ms
/// for 256 threads on the development VM).
pub const DRAIN_CAP: Duration = Duration::from_secs(3);

/// How long a cell process may take to spawn its threads and open its start gate.
pub(super) const SETUP_CAP: Duration = Duration::from_secs(30);

/// `--window-ms` and `--drain-cap-secs`, shared by the windowed scenarios.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WindowArgs {
    /// Measurement window of each run, in milliseconds. Short windows flatter
    /// collapsing FIFO locks (start-up burst) [default: 200 for overcommit, 1000 for
    /// mutex-load, 500 for rwsem, 1000 for rw-fair; 3000 with --seed-scale]
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub window_ms: Option<u64>,

    /// How long the threads may take to return after the window, in seconds, before
    /// the run's process is killed and the cell reported as "DNF (drain > N s)"
    /// [default: 3]
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub drain_cap_secs: Option<Duration>,

    /// Time one lock acquisition in N, at random intervals averaging N (1: every
    /// acquisition; 0: none, and no wait columns): from just before the lock call to
    /// just after it returns, into a histogram per thread, merged after the window
    /// [default: 16]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub wait_every: Option<u32>,
}

/// A lock a windowed cell can run: a mutex ([`LockName`]) or a reader-writer lock
/// ([`RwLockName`]).
pub trait CellLock: Copy + PartialEq + fmt::Debug + 'static {
    /// The cell subcommand's option that names it.
    const OPTION: &'static str;
    /// Whether its cells split their threads into readers and writers.
    const READER_WRITER: bool;
    /// Its name in tables and on the command line.
    fn name(self) -> &'static str;
}

impl CellLock for LockName {
    const OPTION: &'static str = "--lock";
    const READER_WRITER: bool = false;
    fn name(self) -> &'static str {
        LockName::name(self)
    }
}

impl CellLock for RwLockName {
    const OPTION: &'static str = "--rwlock";
    const READER_WRITER: bool = true;
    fn name(self) -> &'static str {
        RwLockName::name(self)
    }
}

/// What a windowed scenario is configured with besides its rows.
#[derive(Debug, Clone)]
pub struct Plan<L = LockName> {
    /// The locks: one cell each per row.
    pub locks: Vec<L>,
    /// The measurement window of each run.
    pub window: Duration,
    /// How long the threads may take to return after the window.
    pub drain_cap: Duration,
    /// Repetitions per cell.
    pub runs: u32,
    /// `--stats`: each run's process reports what its lock counted.
    pub stats: bool,
    /// `--budget`: extra rounds for rows still undecided.
    pub adaptive: Adaptive,
    /// `--wait-every`: one acquisition in this many is timed (0: none).
    pub wait_every: u32,
}

impl Plan {
    /// From the command line: `--locks`, else `locks`; `--window-ms`, else
    /// [`SEED_WINDOW`] with --seed-scale, else `window`; `--drain-cap-secs`, else
    /// [`DRAIN_CAP`].
    pub fn new(args: &WindowArgs, common: &Common, locks: &[LockName], window: Duration) -> Self {
        let locks = common.locks.clone().unwrap_or_else(|| locks.to_vec());
        Self::with_locks(args, common, locks, window)
    }
}

impl<L: CellLock> Plan<L> {
    /// `locks`, and the rest as in [`Plan::new`].
    pub fn with_locks(args: &WindowArgs, common: &Common, locks: Vec<L>, window: Duration) -> Self {
        Self {
            locks,
            window: match (args.window_ms, common.seed_scale) {
                (Some(ms), _) => Duration::from_millis(ms),
                (None, true) => SEED_WINDOW,
                (None, false) => window,
            },
            drain_cap: args.drain_cap_secs.unwrap_or(DRAIN_CAP),
            runs: common.runs,
            stats: common.stats,
            adaptive: common.adaptive.clone(),
            wait_every: args.wait_every.unwrap_or(crate::harness::wait::EVERY),
        }
    }

    /// `kops/s of all threads in a 1000 ms window (median of up to 3 runs)`, with
    /// `unit` for kops/s.
    pub fn scale(&self, unit: &str) -> String {
        format!(
            "{unit} of all threads in a {} ms window (median of up to {} runs)",
            self.window.as_millis(),
            self.runs
        )
    }
}

/// What a row's threads do, per operation and beside them.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    /// Lock threads.
    pub threads: usize,
    /// Of the lock threads, how many take a reader-writer lock shared (the first
    /// ones; the others take it exclusive); 0 for a mutex.
    pub readers: usize,
    /// `spin_loop()` pauses inside the lock, per operation.
    pub inside: u32,
    /// `spin_loop()` pauses after releasing it, per operation.
    pub outside: u32,
    /// CPU hog threads beside the lock threads.
    pub hogs: usize,
}

/// One cell's work, as the child process runs it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spec<L> {
    pub(super) lock: L,
    pub(super) work: Work,
    pub(super) window: Duration,
    pub(super) drain_cap: Duration,
    pub(super) stats: bool,
    pub(super) wait_every: u32,
}
