//! Seed 000's "5M loop": N threads each do L lock/unlock pairs on one lock, and the
//! wall time from opening the start gate to the last thread finishing is the result.
//!
//! The critical section increments a plain counter that only the lock protects and
//! records the owner, so the run counts handoffs (acquisitions from another thread)
//! and verifies the counter against the completed iterations. A run that exceeds the
//! cap is stopped (FIFO spinlocks collapse when threads outnumber CPUs), verified all
//! the same, and reported as not finished.

use crate::adaptive::Drive;
use crate::harness::rounds::{rounds, Plan};
use crate::html_report::figures::{Chart, Kind, Panel, Threads};
use crate::harness::stats::Counting;
use crate::harness::watch::{CellWatch, Conditions};
use crate::harness::{race, verify_count, Common, Error, Guarded, Stop};
use crate::locks::{BenchLock, LockName, LockVisitor, ALTERNATIVES, DEFAULT};
use crate::cells::{Cell, HandoffCost, Progress, Run, Summary, Unfinished};

mod config;
mod tables;
pub use config::{Args, Config};
use config::{SUITE_CAP, SUITE_THREADS};
use tables::{tables, PV_QSPINLOCK, SEED_000, SEED_003};

/// Measures every (threads, lock) cell, thread counts outermost; within a row the
/// locks take turns, one run each per round ([`rounds`]), so that they are compared
/// under the same drift of the host. One [`CellWatch`] spans the row.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    let mut cells = Vec::with_capacity(config.locks.len() * config.threads.len());
    for &threads in &config.threads {
        progress.start(format!("loop × {threads} threads"));
        let watch = (threads > 1).then(CellWatch::start).transpose()?;
        // Each lock type of the row counts in its own cell only.
        let counting = Counting::start(config.stats);
        let plan = Plan {
            runs: config.runs,
            adaptive: &config.adaptive,
            drives: drives(&config.locks),
            row: format!("loop, threads {threads}"),
            lower_is_better: true,
        };
        let measured = rounds(config.locks.len(), &plan, |at, index| {
            let lock = config.locks[at];
            progress.start(format!("loop {} × {threads} threads, run {index}", lock.name()));
            lock.visit(Measure {
                config,
                threads,
                index,
            })
            .map(Some)
        })?;
        let conditions = watch.map(CellWatch::finish).transpose()?;
        for (lock, runs) in config.locks.iter().zip(measured.results) {
            let mut cell = cell(lock.name(), threads, runs, conditions.clone());
            counting.attach(&mut cell);
            cell.repeated = measured.repeated.clone();
            cells.push(cell);
            progress.done();
        }
    }
    Ok(cells)
}

impl Config {
    /// The default suite's share (the seed's sizes with --seed-scale): a 1 s cap,
    /// [`SUITE_THREADS`], and the locks its tables show (the seeds' pairs,
    /// `klocks::Mutex` and the alternatives) unless --locks names others.
    pub fn suite(common: &Common) -> Self {
        if common.seed_scale {
            return Self::new(&Args::default(), common);
        }
        let args = Args {
            cap_secs: Some(SUITE_CAP),
            threads: SUITE_THREADS.to_vec(),
            ..Args::default()
        };
        let mut config = Self::new(&args, common);
        if common.locks.is_none() {
            config.locks = tables::shown_locks();
        }
        config
    }
}

/// The comparisons that drive a row's extra rounds: default against the best peer,
/// and each seed's patched lock against its base.
fn drives(locks: &[LockName]) -> Vec<Drive> {
    let pairs = [&SEED_000, &SEED_003, &PV_QSPINLOCK]
        .map(|pair| Drive::pair(locks, &pair.patched, &pair.base));
    pairs
        .into_iter()
        .chain([Drive::best_peer(locks, &DEFAULT, &ALTERNATIVES)])
        .flatten()
        .collect()
}

/// Measures one run of one cell: race the threads, then verify the counter before
/// reporting anything. A run that hits the cap ends its cell ([`rounds`]).
struct Measure<'a> {
    config: &'a Config,
    threads: usize,
    index: u32,
}

impl LockVisitor for Measure<'_> {
    type Output = Result<Run, Error>;

    fn visit<L: BenchLock>(self) -> Result<Run, Error> {
        let (threads, iterations, index) = (self.threads, self.config.iterations, self.index);
        let guarded = Guarded::<L>::unlocked();
        let race = race(threads, self.config.cap, |me, stop| {
            iterate(&guarded, me, iterations, stop)
        });
        let completed = race.results.iter().map(|t| t.completed).sum();
        let context = || format!("loop: {}, {threads} threads, run {index}", L::NAME);
        verify_count(context, guarded.into_count(), completed)?;
        let target = iterations * threads as u64;
        Ok(Run {
            value: race.wall.as_secs_f64() * 1e3,
            wall_ns: u64::try_from(race.wall.as_nanos()).unwrap_or(u64::MAX),
            operations: completed,
            target: Some(target),
            handoffs: Some(race.results.iter().map(|t| t.handoffs).sum()),
            finished: completed == target,
            per_thread: None,
            drain: None,
            last_start_ms: None,
            rw: None,
            wait: None,
        })
    }
}

/// One thread's count of its own work.
struct Tally {
    completed: u64,
    handoffs: u64,
}

/// Thread `me`'s loop: up to `iterations` critical sections, checking `stop` each time.
fn iterate<L: BenchLock>(guarded: &Guarded<L>, me: usize, iterations: u64, stop: &Stop) -> Tally {
    let mut tally = Tally {
        completed: 0,
        handoffs: 0,
    };
    while tally.completed < iterations && !stop.requested() {
        tally.handoffs += u64::from(guarded.enter(me));
        tally.completed += 1;
    }
    tally
}

/// Summarises a cell's runs.
fn cell(
    lock: &'static str,
    threads: usize,
    runs: Vec<Run>,
    conditions: Option<Conditions>,
) -> Cell {
    let unfinished = runs
        .last()
        .filter(|run| !run.finished)
        .map(|run| Unfinished::Capped {
            progress: run.operations as f64 / run.target.unwrap_or(run.operations).max(1) as f64,
            after_secs: run.value / 1e3,
        });
    let reported: Vec<&Run> = runs
        .iter()
        .filter(|run| run.finished == unfinished.is_none())
        .collect();
    Cell {
        scenario: "loop",
        lock,
        threads,
        layout: None,
        unit: "ms",
        summary: unfinished
            .is_none()
            .then(|| Summary::of(reported.iter().map(|run| run.value)))
            .flatten(),
        unfinished,
        handoff: handoff_cost(threads, &reported, conditions.as_ref()),
        conditions,
        overcommit: None,
        mutex_load: None,
        rw: None,
        rw_mix: None,
        stats: None,
        repeated: None,
        runs,
    }
}

/// A finished contended run whose lock changed hands fewer times than this per
/// thread did not contend: its threads ran one after another (`threads - 1`
/// handoffs), or nearly so.
const CONTENDED_MIN_HANDOFFS_PER_THREAD: u64 = 10;

/// Wall ns per handoff (median over the reported runs) and its ratio to c2c.
fn handoff_cost(
    threads: usize,
    runs: &[&Run],
    conditions: Option<&Conditions>,
) -> Option<HandoffCost> {
    let per_handoff = Summary::of(runs.iter().filter_map(|run| {
        let handoffs = run.handoffs.filter(|&h| h > 0)?;
        Some(run.wall_ns as f64 / handoffs as f64)
    }))?;
    let handoffs = Summary::of(runs.iter().filter_map(|run| run.handoffs.map(|h| h as f64)))?;
    let handoffs = handoffs.median as u64;
    let finished = runs.iter().all(|run| run.finished);
    Some(HandoffCost {
        handoffs,
        ns_per_handoff: per_handoff.median,
        per_c2c: conditions
            .and_then(Conditions::c2c_ns)
            .map(|c2c| per_handoff.median / c2c),
        serialized: finished && handoffs < threads as u64 * CONTENDED_MIN_HANDOFFS_PER_THREAD,
    })
}

/// One chart: wall time against threads, a line per lock.
const CHART: Chart = Chart {
    panel: |_, _| Some(Panel::new("", "loop: N threads × L lock/unlock pairs")),
    kind: Kind::Lines(Threads::PLAIN),
};

scenario! {
    takes: Mutexes,
    chart: CHART,
    configure: |args, common| Ok(Config::new(args, common)),
    tables: |config, cells, _| tables(config, cells),
}
