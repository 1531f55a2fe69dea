//! Fixed-window runs in a child process: the harness that overcommit (seed 003),
//! mutex-load (seed 004), rwsem and rw-fair (seed 001) share, and the table pieces
//! they print.
//!
//! T threads loop for a fixed window: take the lock, spin `inside` pauses and
//! increment a plain counter inside it, release it, then spin `outside` pauses.
//! Beside them `hogs` threads may spin without touching any lock (overcommit's
//! stand-in for other VMs' vCPUs). With a reader-writer lock the first `readers`
//! threads take it shared and the others exclusive, around the critical sections of
//! [`super::rw`].
//!
//! The clock starts before the start gate opens; at the end of the window the stop
//! flag is raised and only the operations finished before a thread saw it count. The
//! threads then drain: each finishes its operation in flight, and a thread queued on
//! a FIFO lock must still take it once. The drain time is reported; every run is
//! verified (the guarded counter must equal every operation, counted or late).
//!
//! Each run happens in a child process (this binary, re-executed with the hidden
//! `__window-cell` subcommand, printing JSON lines), because a pure FIFO spinlock
//! with dozens of threads on 2 CPUs can take minutes to drain (every handoff to a
//! preempted waiter costs a time slice), and its spinning threads would pollute every
//! later cell. The parent gives the drain a cap, kills the child when it runs out and
//! reports the cell as not finished.
//!
//! The locks of a row run interleaved: round 1 runs each lock once, then round 2, and
//! so on. Run one lock's repetitions back to back instead and a row compares locks
//! measured minutes apart: in one mutex-load run spinfutex's five runs of 64 threads
//! at load 1 all fell in a "far" vCPU placement (29.9k ops/s) and parking_lot's mostly
//! in a "near" one (34.1k), a 0.88× ratio where other runs measured 1.00–1.12×.
//!
//! Here: the grid of rows and locks and the rounds that measure it; [`plan`] what a
//! run is made of (plan, locks, work, a cell's spec); [`child`] runs a
//! cell's process and reads its report, [`cell`](mod@cell) is that process's side, [`tables`]
//! the table pieces the scenarios print.

mod cell;
mod child;
mod plan;
mod tables;
mod versus;

pub use cell::{cell, CellArgs};
pub use plan::{CellLock, Plan, WindowArgs, Work, CELL_COMMAND};
// The default drain cap, for the scenarios' tests that build a `Plan` by hand.
use plan::Spec;
#[cfg(test)]
pub use plan::DRAIN_CAP;
pub use tables::*;
pub use versus::{versus_peers, VersusRow};

use std::time::Duration;

use super::rounds;
use super::rw;
use super::stats::{self, Counts};
use super::watch::CellWatch;
use super::{verify_count, Error};
use crate::adaptive::Drive;
use crate::cells::{Cell, Drain, PerThread, Progress, Run, Unfinished};

use child::CellProcess;

/// A scenario made of windowed cells: its rows (a cell's parameters but the lock)
/// and how a cell of a row runs. [`run`] measures the grid it spans.
pub trait Grid {
    /// A row of the tables.
    type Row: Copy;
    /// The kind of lock its cells run.
    type Lock: CellLock;
    /// The scenario's name, as cells record it.
    const SCENARIO: &'static str;
    /// The locks, window, drain cap and runs.
    fn plan(&self) -> &Plan<Self::Lock>;
    /// Every row, in table order.
    fn rows(&self) -> Vec<Self::Row>;
    /// Names a cell on the progress bar and in errors.
    fn describe(&self, lock: Self::Lock, row: &Self::Row) -> String;
    /// What the threads of a row's cells do.
    fn work(&self, row: &Self::Row) -> Work;
    /// Records the row's parameters in its cell (the scenario's own field).
    fn annotate(&self, row: &Self::Row, cell: &mut Cell);
    /// The comparisons among the plan's locks that drive a row's extra rounds
    /// ([`crate::adaptive`]); none by default.
    fn drives(&self) -> Vec<Drive> {
        Vec::new()
    }
}

/// Cells `grid` measures.
pub fn cells(grid: &impl Grid) -> u64 {
    (grid.rows().len() * grid.plan().locks.len()) as u64
}

/// Measures every cell, rows in table order. Within a row the locks take turns, one
/// run each per round ([`rounds`]), so that the host's drift (where it places our
/// vCPUs, what a `pause` costs: both move within seconds here) falls on every lock of
/// the row alike; one [`CellWatch`] spans the row, and each of its cells carries its
/// conditions.
pub fn run<G: Grid>(grid: &G, progress: &Progress) -> Result<Vec<Cell>, Error> {
    let plan = grid.plan();
    let mut cells = Vec::new();
    for row in grid.rows() {
        let work = grid.work(&row);
        let watch = CellWatch::start()?;
        let describe: Vec<String> = plan
            .locks
            .iter()
            .map(|&lock| grid.describe(lock, &row))
            .collect();
        let rounds_plan = rounds::Plan {
            runs: plan.runs,
            adaptive: &plan.adaptive,
            drives: grid.drives(),
            row: row_name(&describe[0], plan.locks[0]),
            lower_is_better: false,
        };
        let mut unfinished: Vec<Option<Unfinished>> = vec![None; plan.locks.len()];
        let measured = rounds::rounds(plan.locks.len(), &rounds_plan, |at, round| {
            let context = format!("{}, run {round}", describe[at]);
            progress.start(context.clone());
            let spec = Spec {
                lock: plan.locks[at],
                work,
                window: plan.window,
                drain_cap: plan.drain_cap,
                stats: plan.stats,
                wait_every: plan.wait_every,
            };
            let run = run_once(&spec, &context)?;
            if run.is_none() {
                // Every repetition would cost the whole cap again: the slot ends.
                unfinished[at] = Some(Unfinished::Undrained {
                    cap_secs: plan.drain_cap.as_secs_f64(),
                });
            }
            Ok(run.map(|(run, counts)| Windowed(run, counts)))
        })?;
        let conditions = watch.finish()?;
        let results = measured.results.into_iter().zip(unfinished);
        for (&lock, (runs, unfinished)) in plan.locks.iter().zip(results) {
            let mut counts = None;
            let verified: Vec<Run> = runs
                .into_iter()
                .map(|Windowed(run, more)| {
                    stats::add(&mut counts, more);
                    run
                })
                .collect();
            let one = Cell::of_runs(
                G::SCENARIO,
                lock.name(),
                work.threads,
                None,
                "ops/s",
                verified,
            );
            let mut cell = Cell {
                summary: one.summary.filter(|_| unfinished.is_none()),
                unfinished,
                conditions: Some(conditions.clone()),
                stats: counts,
                repeated: measured.repeated.clone(),
                ..one
            };
            grid.annotate(&row, &mut cell);
            cells.push(cell);
            progress.done();
        }
    }
    Ok(cells)
}

/// A row's name for the note: a cell's description without its lock
/// (`overcommit: 16 threads, cs short, overcommit 2`).
fn row_name<L: CellLock>(describe: &str, lock: L) -> String {
    describe.replacen(&format!("{}, ", lock.name()), "", 1)
}

/// A verified run in its child process, with what its lock counted (`--stats`).
struct Windowed(Run, Option<Counts>);

impl rounds::Outcome for Windowed {
    fn ends(&self) -> bool {
        false
    }

    fn value(&self) -> f64 {
        self.0.value
    }
}

/// `values`, or `default` when it is empty.
pub fn or_default<T: Clone>(values: &[T], default: &[T]) -> Vec<T> {
    if values.is_empty() { default } else { values }.to_vec()
}

/// One run in a child process, verified, with what its lock counted (`--stats`);
/// `None` when it did not drain in time.
fn run_once<L: CellLock>(
    spec: &Spec<L>,
    context: &str,
) -> Result<Option<(Run, Option<Counts>)>, Error> {
    let process = CellProcess::spawn(spec, context)?;
    let Some(measured) = process.result(spec.window + spec.drain_cap)? else {
        return Ok(None);
    };
    let window = Duration::from_nanos(measured.window_ns);
    let counted: u64 = measured.counted.iter().sum();
    let rw = match (L::READER_WRITER, &measured.rw) {
        (false, None) => {
            verify_count(
                || context.to_owned(),
                measured.count,
                counted + measured.late,
            )?;
            None
        }
        (true, Some(counts)) => Some(rw::verify(context, counts, &measured.counted, window)?),
        (true, None) | (false, Some(_)) => {
            return Err(Error::Child(format!(
                "{context}: the cell process reported the wrong kind of lock's counts"
            )))
        }
    };
    let run = Run {
        value: counted as f64 / window.as_secs_f64(),
        wall_ns: measured.window_ns + measured.drain_ns,
        operations: counted,
        target: None,
        handoffs: None,
        finished: true,
        per_thread: PerThread::of(&measured.counted),
        drain: Some(Drain {
            ms: measured.drain_ns as f64 / 1e6,
            operations: measured.late,
        }),
        last_start_ms: Some(measured.last_start_ns as f64 / 1e6),
        rw,
        wait: measured.wait.filter(|waits| waits.every > 0),
    };
    Ok(Some((run, measured.stats)))
}
