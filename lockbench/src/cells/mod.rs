//! The cells a scenario measures and the runs in them (this module): what a run
//! prints, what `--json` writes, and what `lockbench report` and `compare` read back
//! ([`crate::html_report`]), the one definition of a result file's cells. Every field a
//! later lockbench added reads back from older files as absent or zero ([`decode`]).
//! Their outputs: aligned text tables ([`table`]), `--json` and `--csv` ([`output`]),
//! the summary of the defaults against their peers ([`summary`]), the progress bar
//! ([`progress`]), and what the machine did around a cell ([`conditions`]).

mod conditions;
pub(crate) mod decode;
pub mod output;
mod progress;
mod repeated;
mod rw_mix;
pub mod summary;
mod table;
mod wait;

pub use conditions::{Conditions, Placement, NEAR_MAX_NS};
pub use progress::Progress;
pub use repeated::{Ended, Repeated};
pub use rw_mix::{RwMix, ThreadPlacement};
pub use table::{num, percent, si, wrap, Table, COLUMNS};
pub use wait::{Wait, Waits};

use serde::{Deserialize, Serialize};

/// Median and range of a cell's runs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Summary {
    /// Median (mean of the middle two for an even count).
    pub median: f64,
    /// Smallest run.
    pub min: f64,
    /// Largest run.
    pub max: f64,
}

impl Summary {
    /// The summary of `values`; `None` when there are none.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Self> {
        let mut sorted: Vec<f64> = values.into_iter().collect();
        sorted.sort_by(f64::total_cmp);
        let (&min, &max) = (sorted.first()?, sorted.last()?);
        let mid = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 {
            sorted[mid]
        } else {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        };
        Some(Self { median, min, max })
    }

    /// `median [min–max]`, each through `format`.
    pub fn show(&self, format: fn(f64) -> String) -> String {
        if self.min == self.max {
            return format(self.median);
        }
        format!(
            "{} [{}–{}]",
            format(self.median),
            format(self.min),
            format(self.max)
        )
    }
}

/// One repetition of a cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    /// The measurement, in the cell's unit (NaN when a file holds none).
    #[serde(deserialize_with = "decode::value", default = "decode::no_value")]
    pub value: f64,
    /// Wall time of the run.
    #[serde(default)]
    pub wall_ns: u64,
    /// Operations done: lock/unlock pairs, or round trips for c2c.
    #[serde(default)]
    pub operations: u64,
    /// Operations a finished run does (capped scenarios only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<u64>,
    /// Times the lock passed from one thread to another (loop only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoffs: Option<u64>,
    /// Whether the run did all its work before its cap.
    #[serde(default = "decode::finished")]
    pub finished: bool,
    /// Per-thread operations inside the window (overcommit only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_thread: Option<PerThread>,
    /// From the stop flag to the last thread returning (overcommit only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<Drain>,
    /// From the clock's start to the last thread passing the start gate (windowed
    /// scenarios only): that thread's operations are low by this share of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_start_ms: Option<f64>,
    /// Reader-writer runs only: the readers' and the writers' shares.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rw: Option<RwRun>,
    /// The scenarios that time their acquisitions (mutex-load, overcommit, rw-fair,
    /// rw-mix): the run's lock waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<Waits>,
}

impl Run {
    /// How evenly the run's threads shared the lock: the slowest thread's operations ÷
    /// the mean, or with readers and writers, the lower of the two roles' (each thread
    /// against its own role's mean; 0 for a role that did nothing). `None` for a run
    /// that did not count per thread.
    pub fn fairness(&self) -> Option<f64> {
        let Some(rw) = self.rw else {
            return self.per_thread.map(|p| p.min_per_mean());
        };
        let role = |threads: PerThread| match threads.mean > 0.0 {
            true => threads.min_per_mean(),
            false => 0.0,
        };
        [rw.readers, rw.writers]
            .into_iter()
            .flatten()
            .map(role)
            .reduce(f64::min)
    }

    /// A finished run measured as a whole: `value` in the cell's unit, over `wall`,
    /// with `operations` done, and nothing per thread or per role.
    pub fn timed(value: f64, wall: std::time::Duration, operations: u64) -> Self {
        Self {
            value,
            wall_ns: u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX),
            operations,
            target: None,
            handoffs: None,
            finished: true,
            per_thread: None,
            drain: None,
            last_start_ms: None,
            rw: None,
            wait: None,
        }
    }

    /// The run's p99.9 wait ([`Waits::tail_ns`]), where it timed its acquisitions.
    pub fn wait_tail_ns(&self) -> Option<f64> {
        self.wait.and_then(|w| w.tail_ns())
    }
}

/// A reader-writer run (rwsem, rw-fair) split by role. Only the operations inside the
/// window count, except in `reader_group`, whose read phases span the whole run.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RwRun {
    /// Read sections finished inside the window, all readers.
    pub reads: u64,
    /// Write sections finished inside the window, all writers.
    pub writes: u64,
    /// `reads` per second of the window.
    pub reads_per_s: f64,
    /// `writes` per second of the window.
    pub writes_per_s: f64,
    /// Per reader thread.
    pub readers: Option<PerThread>,
    /// Per writer thread.
    pub writers: Option<PerThread>,
    /// Runs of readers between two writers: the times a writer found the read-phase
    /// flag set, plus one if it was still set at the end.
    pub read_phases: u64,
    /// Every read section of the run (late ones included) ÷ `read_phases`: how many
    /// reads one reader group did on average; `None` without reads.
    pub reader_group: Option<f64>,
}

/// How evenly the threads of a run shared the lock: their operations inside the window.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct PerThread {
    /// The slowest thread's operations.
    pub min: u64,
    /// Operations per thread on average.
    pub mean: f64,
    /// The fastest thread's operations.
    pub max: u64,
}

impl PerThread {
    /// Summarises per-thread counts; `None` when nothing was counted.
    pub fn of(counts: &[u64]) -> Option<Self> {
        let total: u64 = counts.iter().sum();
        let mean = total as f64 / counts.len() as f64;
        (total > 0).then(|| Self {
            min: counts.iter().copied().min().unwrap_or(0),
            mean,
            max: counts.iter().copied().max().unwrap_or(0),
        })
    }

    /// Fairness: min ÷ mean, 1.0 when every thread did as much as the others.
    pub fn min_per_mean(&self) -> f64 {
        self.min as f64 / self.mean
    }

    /// max ÷ mean: how far the luckiest thread got ahead.
    pub fn max_per_mean(&self) -> f64 {
        self.max as f64 / self.mean
    }
}

/// The drain after a window: the threads finish their operation in flight, and a
/// thread queued on a FIFO lock must take it once more.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Drain {
    /// From the stop flag to the last thread returning.
    pub ms: f64,
    /// Operations completed after the stop flag: verified, not counted.
    pub operations: u64,
}

/// Why a cell did not finish.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum Unfinished {
    /// A loop run hit its time cap (its counter was still verified).
    Capped {
        /// Fraction of the target operations done, 0 to 1.
        progress: f64,
        /// Wall time when the run stopped.
        after_secs: f64,
    },
    /// An overcommit run's threads were still draining (every queued waiter takes the
    /// lock once after the stop flag) when the drain cap ran out; its process was
    /// killed, so nothing of the run could be verified or reported.
    Undrained {
        /// The drain cap, in seconds.
        cap_secs: f64,
    },
}

impl Unfinished {
    /// `DNF 3.2%` or `DNF (drain > 3 s)`, for matrix tables.
    pub fn short(&self) -> String {
        match self {
            Unfinished::Capped { progress, .. } => format!("DNF {}", percent(*progress)),
            Unfinished::Undrained { cap_secs } => format!("DNF (drain > {cap_secs} s)"),
        }
    }

    /// `not finished (3.2% done after 1.0 s)` or `not finished (drain > 3 s, killed)`.
    pub fn long(&self) -> String {
        match self {
            Unfinished::Capped {
                progress,
                after_secs,
            } => format!(
                "not finished ({} done after {after_secs:.1} s)",
                percent(*progress)
            ),
            Unfinished::Undrained { cap_secs } => {
                format!("not finished (drain > {cap_secs} s, killed)")
            }
        }
    }

    /// The loop progress, 0 to 1; `None` for an undrained cell.
    pub fn progress(&self) -> Option<f64> {
        match self {
            Unfinished::Capped { progress, .. } => Some(*progress),
            Unfinished::Undrained { .. } => None,
        }
    }
}

/// What a lock handoff cost in a loop cell.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct HandoffCost {
    /// Handoffs in the median run.
    pub handoffs: u64,
    /// Wall ns per handoff, median over runs.
    pub ns_per_handoff: f64,
    /// `ns_per_handoff` over the c2c one-way latency probed around the cell.
    pub per_c2c: Option<f64>,
    /// The run finished with so few handoffs that its threads took turns instead of
    /// contending (the scheduler ran them one after another).
    pub serialized: bool,
}

/// A name a cell holds: its scenario, lock, unit or setup. Spelled as an alias so
/// that serde does not borrow it from the JSON text (read back, it is interned: see
/// [`decode`]).
pub type Name = &'static str;

/// One cell's counts of its lock (`--stats`): event name (`sleep`, `wake`, ...) to count.
pub type Counts = std::collections::BTreeMap<String, u64>;

/// One measured configuration, with every repetition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    /// The scenario's subcommand: `uncontended`, `loop`, `false-sharing`, ...
    #[serde(deserialize_with = "decode::name")]
    pub scenario: Name,
    /// Lock name, as in `--locks`/`--rwlocks` (`-` for c2c); an older file's older
    /// name reads as the current one.
    #[serde(deserialize_with = "decode::lock_name")]
    pub lock: Name,
    /// Threads (K for false-sharing).
    pub threads: usize,
    /// `packed` or `padded` (false-sharing); the measure (owner-probe, whose `lock` is
    /// the probe).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "decode::optional_name",
        default
    )]
    pub layout: Option<Name>,
    /// Unit of `summary` and of every run's `value`.
    #[serde(deserialize_with = "decode::name")]
    pub unit: Name,
    /// Over all runs; `None` when the cell did not finish.
    pub summary: Option<Summary>,
    /// Set when a run hit its cap (then it is the last run) or, in overcommit, did
    /// not drain (then it is not in `runs`: nothing of it was verified).
    pub unfinished: Option<Unfinished>,
    /// Loop cells only.
    pub handoff: Option<HandoffCost>,
    /// Contended loop cells only: c2c placement and other load around the cell.
    pub conditions: Option<Conditions>,
    /// Overcommit cells only: the critical section and the machine's load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overcommit: Option<Overcommit>,
    /// Mutex-load cells only: the critical section's load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutex_load: Option<MutexLoad>,
    /// Reader-writer cells (rwsem, rw-fair) only: the roles and the load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rw: Option<RwSetup>,
    /// rw-mix cells only: the exact read fraction and the threads' placement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rw_mix: Option<RwMix>,
    /// `--stats` only, klocks' locks only: what the cell's lock counted, event name
    /// (`lock_slowpath`, `sleep`, `wake`, ...) to count, summed over the runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<Counts>,
    /// Set when adaptive repetition ([`crate::adaptive`]) gave the cell's row extra
    /// rounds or left it undecided: the row, its rounds and why they ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeated: Option<Repeated>,
    /// Every repetition.
    #[serde(default)]
    pub runs: Vec<Run>,
}

/// An overcommit cell's setup.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Overcommit {
    /// `short` or `medium`.
    #[serde(deserialize_with = "decode::name")]
    pub cs: Name,
    /// `spin_loop()` iterations inside the critical section, and again outside it.
    #[serde(default)]
    pub cs_pauses: u32,
    /// The overcommit ratio r.
    pub ratio: u32,
    /// CPU hog threads run beside the lock threads: (r - 1) × online CPUs.
    #[serde(default)]
    pub hogs: usize,
    /// The planned measurement window.
    #[serde(default)]
    pub window_ms: f64,
}

/// A mutex-load cell's setup.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct MutexLoad {
    /// `spin_loop()` iterations (x86 `pause`) inside the critical section; the
    /// machine's `pause_ns` gives their length.
    pub load_pauses: u32,
    /// `spin_loop()` iterations after each unlock, outside the lock.
    #[serde(default)]
    pub outside_pauses: u32,
    /// The planned measurement window.
    #[serde(default)]
    pub window_ms: f64,
}

/// A reader-writer cell's setup (rwsem, rw-fair).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct RwSetup {
    /// Threads that only take the lock shared.
    pub readers: usize,
    /// Threads that only take it exclusive.
    pub writers: usize,
    /// `spin_loop()` iterations inside each read and write section.
    pub load_pauses: u32,
    /// `spin_loop()` iterations after each unlock, outside the lock.
    #[serde(default)]
    pub outside_pauses: u32,
    /// The planned measurement window.
    #[serde(default)]
    pub window_ms: f64,
}

impl Cell {
    /// A cell of finished whole runs and no scenario-specific setup, summarised over
    /// the runs' values (set `conditions` with struct update where there are some).
    pub fn of_runs(
        scenario: &'static str,
        lock: &'static str,
        threads: usize,
        layout: Option<&'static str>,
        unit: &'static str,
        runs: Vec<Run>,
    ) -> Self {
        Self {
            scenario,
            lock,
            threads,
            layout,
            unit,
            summary: Summary::of(runs.iter().map(|r| r.value)),
            unfinished: None,
            handoff: None,
            conditions: None,
            overcommit: None,
            mutex_load: None,
            rw: None,
            rw_mix: None,
            stats: None,
            repeated: None,
            runs,
        }
    }

    /// Marks for tables: `~` (threads ran one after another), then the conditions'
    /// `*` (placement changed) and `!` (noisy).
    pub fn marks(&self) -> String {
        let serial = self.handoff.is_some_and(|h| h.serialized);
        let conditions = self.conditions.as_ref().map_or("", Conditions::marks);
        format!("{}{conditions}", if serial { "~" } else { "" })
    }

    /// The cell's median with its marks, or `DNF x%`.
    pub fn short(&self, format: fn(f64) -> String) -> String {
        let value = match (&self.summary, &self.unfinished) {
            (_, Some(unfinished)) => unfinished.short(),
            (Some(summary), None) => format(summary.median),
            (None, None) => "-".to_owned(),
        };
        format!("{value}{}", self.marks())
    }

    /// The median over the runs of something some runs have.
    pub fn median_of(&self, of: impl Fn(&Run) -> Option<f64>) -> Option<f64> {
        Summary::of(self.runs.iter().filter_map(of)).map(|s| s.median)
    }

    /// Whether a smaller value is the better one (wall times and costs; not rates, nor
    /// the number `app --metric` reads from a program, a throughput).
    pub fn lower_is_better(&self) -> bool {
        !(self.unit.ends_with("/s") || self.unit == "metric")
    }

    /// Every finished run as a log throughput ([`crate::verdict::log_throughput`]);
    /// none when the cell did not finish.
    pub fn log_throughputs(&self) -> Vec<f64> {
        if self.unfinished.is_some() || self.summary.is_none() {
            return Vec::new();
        }
        self.runs
            .iter()
            .filter(|run| run.finished)
            .filter_map(|run| crate::verdict::log_throughput(run.value, self.lower_is_better()))
            .collect()
    }

    /// Every finished run's p99.9 wait ([`Run::wait_tail_ns`]) as a log throughput
    /// (lower is better: `-ln`), for the verdicts on the tail; none when the cell did
    /// not finish or timed no acquisition.
    pub fn log_wait_tails(&self) -> Vec<f64> {
        if self.unfinished.is_some() || self.summary.is_none() {
            return Vec::new();
        }
        self.runs
            .iter()
            .filter(|run| run.finished)
            .filter_map(Run::wait_tail_ns)
            .filter_map(|ns| crate::verdict::log_throughput(ns, true))
            .collect()
    }

    /// The median over runs of one histogram's quantiles (p50, p99, p99.9, max, in
    /// ns), `pick` choosing the histogram of a run's waits; `None` where no run has it.
    pub fn wait_quantiles(&self, pick: impl Fn(&Waits) -> Option<Wait>) -> Option<[f64; 4]> {
        let quantiles: Vec<[f64; 4]> = self
            .runs
            .iter()
            .filter_map(|run| run.wait.as_ref().and_then(&pick))
            .map(|wait| wait.quantiles())
            .collect();
        let median = |at: usize| Summary::of(quantiles.iter().map(|q| q[at])).map(|s| s.median);
        Some([median(0)?, median(1)?, median(2)?, median(3)?])
    }

    /// The median over runs of the slowest thread's operations ÷ the mean; `None`
    /// where the scenario does not count per thread.
    pub fn fairness(&self) -> Option<Summary> {
        Summary::of(
            self.runs
                .iter()
                .filter_map(|run| run.per_thread.map(|p| p.min_per_mean())),
        )
    }

    /// The cell's `median [min–max]` with its marks, or the long not-finished text.
    pub fn long(&self, format: fn(f64) -> String) -> String {
        let value = match (&self.summary, &self.unfinished) {
            (_, Some(unfinished)) => unfinished.long(),
            (Some(summary), None) => summary.show(format),
            (None, None) => "-".to_owned(),
        };
        format!("{value}{}", self.marks())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_takes_the_middle() {
        let odd = Summary::of([3.0, 1.0, 2.0]).unwrap();
        assert_eq!((odd.median, odd.min, odd.max), (2.0, 1.0, 3.0));
        assert_eq!(Summary::of([4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert!(Summary::of([]).is_none());
    }

    #[test]
    fn fairness_divides_by_the_mean() {
        let spread = PerThread::of(&[1, 2, 3]).unwrap();
        assert_eq!((spread.min_per_mean(), spread.max_per_mean()), (0.5, 1.5));
        assert!(
            PerThread::of(&[0, 0]).is_none(),
            "no operations, no fairness"
        );
    }

    #[test]
    fn unfinished_cells_say_why() {
        let capped = Unfinished::Capped {
            progress: 0.032,
            after_secs: 1.0,
        };
        assert_eq!(capped.short(), "DNF 3.2%");
        assert_eq!(capped.long(), "not finished (3.2% done after 1.0 s)");
        let undrained = Unfinished::Undrained { cap_secs: 0.5 };
        assert_eq!(undrained.short(), "DNF (drain > 0.5 s)");
        assert_eq!(undrained.progress(), None);
    }
}
