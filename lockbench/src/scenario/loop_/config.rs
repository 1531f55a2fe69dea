//! loop's command line and configuration: the options ([`Args`]), what a run measures
//! ([`Config`]) and the defaults, the suite's and the seed's.

use std::time::Duration;

use crate::adaptive::Adaptive;
use crate::harness::{parse_secs, Common};
use crate::locks::LockName;

/// Seed 000's loop: N threads × L lock/unlock pairs on one lock, wall ms
///
/// N threads start together from a gate and each does L lock/unlock pairs on one
/// shared lock; the wall time runs from opening the gate to the last thread
/// finishing. The critical section increments a plain (non-atomic) counter and
/// records its owner, so every run counts handoffs (the lock passing to another
/// thread) and reports ns per handoff and its ratio to the c2c one-way latency
/// probed before and after the row (the locks of a thread count run interleaved,
/// one run each per round). Marks: * the c2c placement (near/far)
/// changed during the row; ! steal or other processes took over 5% of the CPU
/// time; ~ serialized, the threads ran one after another instead of contending.
/// A run that exceeds --cap-secs is stopped and reported as "DNF x%". Verified: the counter must equal the sum of the
/// iterations the threads completed. Tables (each comparison a throughput ratio,
/// above 1: faster, with its 95% interval and verdict): the seed-000 one (before =
/// qspinlock-cmpxchg, after = qspinlock), the seed-003 one (base = ticket,
/// patched = pvticket) and the same for
/// qspinlock → pvqspinlock, all locks, default (`klocks::Mutex`) against the best of
/// std, parking_lot, glibc and glibc-adaptive (when both ran), and per-cell detail.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Thread counts, comma-separated [default: 1,2,3,4,8; 1,2,...,8 with --seed-scale]
    #[arg(long, value_delimiter = ',', value_name = "N,...",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub threads: Vec<usize>,

    /// Lock/unlock pairs per thread [default: 1000000; 5000000 with --seed-scale]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000_000))]
    pub iterations: Option<u64>,

    /// Time cap per run, in seconds: a run still going is stopped, verified and
    /// reported as not finished, and its cell is not repeated [default: 2; 60 with
    /// --seed-scale]
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub cap_secs: Option<Duration>,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    pub(super) locks: Vec<LockName>,
    pub(super) threads: Vec<usize>,
    pub(super) iterations: u64,
    pub(super) cap: Duration,
    pub(super) runs: u32,
    pub(super) stats: bool,
    pub(super) adaptive: Adaptive,
}

/// Defaults, sized for a default suite of about a minute on 2 CPUs, and the seed's.
pub(super) const THREADS: &[usize] = &[1, 2, 3, 4, 8];

pub(super) const SEED_THREADS: &[usize] = &[1, 2, 3, 4, 5, 6, 7, 8];

pub(super) const ITERATIONS: u64 = 1_000_000;

pub(super) const SEED_ITERATIONS: u64 = 5_000_000;

pub(super) const CAP: Duration = Duration::from_secs(2);

pub(super) const SEED_CAP: Duration = Duration::from_secs(60);

/// The default suite's cap: the FIFO spinlocks hit it at 4 threads.
pub(super) const SUITE_CAP: Duration = Duration::from_secs(1);

/// The default suite's thread counts: one, as many as the CPUs of a 2-CPU machine,
/// and twice that. 3 and 8 threads would cost the suite more than half a minute (the
/// 8-thread row alone took about 29 s with this lock list): the FIFO spinlocks hit
/// the cap from 3 threads on, so their seed rows there were "DNF" against "DNF" on 2
/// CPUs, without a verdict; `lockbench loop` runs them by default.
pub(super) const SUITE_THREADS: &[usize] = &[1, 2, 4];

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        let seed = common.seed_scale;
        let threads = match (args.threads.is_empty(), seed) {
            (false, _) => args.threads.clone(),
            (true, false) => THREADS.to_vec(),
            (true, true) => SEED_THREADS.to_vec(),
        };
        Self {
            locks: common.locks(),
            threads,
            iterations: args
                .iterations
                .unwrap_or(if seed { SEED_ITERATIONS } else { ITERATIONS }),
            cap: args.cap_secs.unwrap_or(if seed { SEED_CAP } else { CAP }),
            runs: common.runs,
            stats: common.stats,
            adaptive: common.adaptive.clone(),
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        (self.locks.len() * self.threads.len()) as u64
    }
}
