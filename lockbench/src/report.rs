//! Results and their outputs: aligned text tables, `--json`, `--csv`, the progress bar.

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::machine::Machine;
use crate::scenario::watch::Conditions;

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
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// The measurement, in the cell's unit.
    pub value: f64,
    /// Wall time of the run.
    pub wall_ns: u64,
    /// Operations done: lock/unlock pairs, or round trips for c2c.
    pub operations: u64,
    /// Operations a finished run does (capped scenarios only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<u64>,
    /// Times the lock passed from one thread to another (loop only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoffs: Option<u64>,
    /// Whether the run did all its work before its cap.
    pub finished: bool,
    /// Per-thread operations inside the window (overcommit only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_thread: Option<PerThread>,
    /// From the stop flag to the last thread returning (overcommit only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<Drain>,
    /// Reader-writer runs only: the readers' and the writers' shares.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rw: Option<RwRun>,
}

impl Run {
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
            rw: None,
        }
    }
}

/// A reader-writer run (rwsem, rw-fair) split by role. Only the operations inside the
/// window count, except in `reader_group`, whose read phases span the whole run.
#[derive(Debug, Clone, Copy, Serialize)]
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
#[derive(Debug, Clone, Copy, Serialize)]
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
#[derive(Debug, Clone, Copy, Serialize)]
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

/// One measured configuration, with every repetition.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// `uncontended`, `loop`, `false-sharing` or `c2c`.
    pub scenario: &'static str,
    /// Lock name (`-` for c2c).
    pub lock: &'static str,
    /// Threads (K for false-sharing).
    pub threads: usize,
    /// `packed` or `padded` (false-sharing); the measure (owner-probe, whose `lock` is
    /// the probe).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<&'static str>,
    /// Unit of `summary` and of every run's `value`.
    pub unit: &'static str,
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
    /// Every repetition.
    pub runs: Vec<Run>,
}

/// An overcommit cell's setup.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Overcommit {
    /// `short` or `medium`.
    pub cs: &'static str,
    /// `spin_loop()` iterations inside the critical section, and again outside it.
    pub cs_pauses: u32,
    /// The overcommit ratio r.
    pub ratio: u32,
    /// CPU hog threads run beside the lock threads: (r - 1) × online CPUs.
    pub hogs: usize,
    /// The planned measurement window.
    pub window_ms: f64,
}

/// A mutex-load cell's setup.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MutexLoad {
    /// `spin_loop()` iterations (x86 `pause`) inside the critical section; the
    /// machine's `pause_ns` gives their length.
    pub load_pauses: u32,
    /// `spin_loop()` iterations after each unlock, outside the lock.
    pub outside_pauses: u32,
    /// The planned measurement window.
    pub window_ms: f64,
}

/// A reader-writer cell's setup (rwsem, rw-fair).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RwSetup {
    /// Threads that only take the lock shared.
    pub readers: usize,
    /// Threads that only take it exclusive.
    pub writers: usize,
    /// `spin_loop()` iterations inside each read and write section.
    pub load_pauses: u32,
    /// `spin_loop()` iterations after each unlock, outside the lock.
    pub outside_pauses: u32,
    /// The planned measurement window.
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

/// A plain-text table: first column left-aligned, the others right-aligned.
#[derive(Debug)]
pub struct Table {
    title: String,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

impl Table {
    /// An empty table.
    pub fn new(title: impl Into<String>, headers: &[&str]) -> Self {
        Self {
            title: title.into(),
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Appends a row (one entry per header).
    pub fn row(&mut self, row: Vec<String>) {
        assert_eq!(
            row.len(),
            self.headers.len(),
            "a row needs one entry per header"
        );
        self.rows.push(row);
    }

    /// Appends a line under the table, once.
    pub fn note(&mut self, note: impl Into<String>) {
        let note = note.into();
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    fn widths(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        widths
    }
}

fn write_row(f: &mut fmt::Formatter<'_>, row: &[String], widths: &[usize]) -> fmt::Result {
    for (i, (cell, &width)) in row.iter().zip(widths).enumerate() {
        let pad = " ".repeat(width - cell.chars().count());
        match i {
            0 => write!(f, "{cell}{pad}")?,
            _ => write!(f, "  {pad}{cell}")?,
        }
    }
    writeln!(f)
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let widths = self.widths();
        writeln!(f, "{}", self.title)?;
        write_row(f, &self.headers, &widths)?;
        let rule: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
        writeln!(f, "{}", "-".repeat(rule))?;
        for row in &self.rows {
            write_row(f, row, &widths)?;
        }
        for note in &self.notes {
            writeln!(f, "{note}")?;
        }
        Ok(())
    }
}

/// Three significant digits (at least), no exponent: `0.412`, `41.2`, `4120`.
pub fn num(x: f64) -> String {
    let decimals = match x.abs() {
        a if a >= 100.0 => 0,
        a if a >= 10.0 => 1,
        a if a >= 1.0 => 2,
        _ => 3,
    };
    format!("{x:.decimals$}")
}

/// A rate with an SI suffix: `41.2M`.
pub fn si(x: f64) -> String {
    match x.abs() {
        a if a >= 1e9 => format!("{}G", num(x / 1e9)),
        a if a >= 1e6 => format!("{}M", num(x / 1e6)),
        a if a >= 1e3 => format!("{}k", num(x / 1e3)),
        _ => num(x),
    }
}

/// A fraction as a percentage, with more digits when it is small: `0.013%`, `3.2%`, `41%`.
pub fn percent(fraction: f64) -> String {
    let pct = fraction * 100.0;
    match pct {
        p if p >= 10.0 => format!("{p:.0}%"),
        p if p >= 1.0 => format!("{p:.1}%"),
        p if p >= 0.01 => format!("{p:.2}%"),
        p => format!("{p:.4}%"),
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    machine: &'a Machine,
    command: Vec<String>,
    date: String,
    cells: &'a [Cell],
}

/// Every cell with all its runs, plus the machine, the command line and the date: what
/// `--json` writes.
pub fn to_json(machine: &Machine, cells: &[Cell]) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(JsonReport {
        machine,
        command: std::env::args().collect(),
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        cells,
    })
}

/// Writes [`to_json`] to `path`.
pub fn write_json(path: &Path, machine: &Machine, cells: &[Cell]) -> io::Result<()> {
    let report = to_json(machine, cells)?;
    let mut out = BufWriter::new(File::create(path)?);
    serde_json::to_writer_pretty(&mut out, &report)?;
    writeln!(out)?;
    out.flush()
}

const CSV_HEADER: &str = "scenario,lock,threads,layout,unit,median,min,max,runs,finished,\
progress_pct,ns_per_handoff,handoff_per_c2c,c2c_before_ns,c2c_after_ns,placement_changed,\
pause_before_ns,pause_after_ns,steal_ms,others_ms,noisy,cs,overcommit,load_pauses,min_per_mean,max_per_mean,drain_ms,\
readers,writers,reads_per_s,writes_per_s,reader_group";

fn opt(value: Option<f64>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

fn csv_row(cell: &Cell) -> String {
    let summary = cell.summary.as_ref();
    let conditions = cell.conditions.as_ref();
    let fields = [
        cell.scenario.to_owned(),
        cell.lock.to_owned(),
        cell.threads.to_string(),
        cell.layout.unwrap_or_default().to_owned(),
        cell.unit.to_owned(),
        opt(summary.map(|s| s.median)),
        opt(summary.map(|s| s.min)),
        opt(summary.map(|s| s.max)),
        cell.runs.len().to_string(),
        cell.unfinished.is_none().to_string(),
        opt(cell
            .unfinished
            .and_then(|u| u.progress())
            .map(|p| p * 100.0)),
        opt(cell.handoff.map(|h| h.ns_per_handoff)),
        opt(cell.handoff.and_then(|h| h.per_c2c)),
        opt(conditions.and_then(|c| c.c2c_before_ns)),
        opt(conditions.and_then(|c| c.c2c_after_ns)),
        conditions
            .map(|c| c.placement_changed.to_string())
            .unwrap_or_default(),
        opt(conditions.map(|c| c.pause_before_ns)),
        opt(conditions.map(|c| c.pause_after_ns)),
        opt(conditions.map(|c| c.steal_ms)),
        opt(conditions.map(|c| c.others_ms)),
        conditions.map(|c| c.noisy.to_string()).unwrap_or_default(),
        cell.overcommit.map(|o| o.cs).unwrap_or_default().to_owned(),
        cell.overcommit
            .map(|o| o.ratio.to_string())
            .unwrap_or_default(),
        cell.mutex_load
            .map(|m| m.load_pauses)
            .or(cell.rw.map(|rw| rw.load_pauses))
            .map(|pauses| pauses.to_string())
            .unwrap_or_default(),
        opt(cell.median_of(|run| run.per_thread.map(|p| p.min_per_mean()))),
        opt(cell.median_of(|run| run.per_thread.map(|p| p.max_per_mean()))),
        opt(cell.median_of(|run| run.drain.map(|d| d.ms))),
        cell.rw.map(|rw| rw.readers.to_string()).unwrap_or_default(),
        cell.rw.map(|rw| rw.writers.to_string()).unwrap_or_default(),
        opt(cell.median_of(|run| run.rw.map(|rw| rw.reads_per_s))),
        opt(cell.median_of(|run| run.rw.map(|rw| rw.writes_per_s))),
        opt(cell.median_of(|run| run.rw.and_then(|rw| rw.reader_group))),
    ];
    fields.map(|f| csv_field(&f)).join(",")
}

/// Quotes a field that needs it (RFC 4180).
fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

/// Writes one row per cell.
pub fn write_csv(path: &Path, cells: &[Cell]) -> io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(out, "{CSV_HEADER}")?;
    for cell in cells {
        writeln!(out, "{}", csv_row(cell))?;
    }
    out.flush()
}

/// A progress bar on stderr over all cells of a command; invisible when stderr is
/// not a terminal. It only redraws between cells, never while one is measured.
pub struct Progress(ProgressBar);

impl Progress {
    /// A bar over `cells` cells.
    pub fn new(cells: u64) -> Self {
        let bar = ProgressBar::new(cells);
        let style = ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        Self(bar)
    }

    /// Names the cell now being measured.
    pub fn start(&self, label: impl Into<String>) {
        self.0.set_message(label.into());
    }

    /// Counts a cell as done.
    pub fn done(&self) {
        self.0.inc(1);
    }

    /// Prints to stdout without tearing the bar.
    pub fn print(&self, text: &str) {
        self.0.suspend(|| print!("{text}"));
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.finish_and_clear();
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
    fn numbers_keep_three_digits() {
        assert_eq!(num(0.4123), "0.412");
        assert_eq!(num(41.23), "41.2");
        assert_eq!(num(4123.4), "4123");
        assert_eq!(si(41_234_567.0), "41.2M");
        assert_eq!(percent(0.0312), "3.1%");
        assert_eq!(percent(0.000_12), "0.01%");
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

    #[test]
    fn tables_align_columns() {
        let mut table = Table::new("t", &["lock", "ns"]);
        table.row(vec!["std".to_owned(), "4.41".to_owned()]);
        table.row(vec!["qspinlock".to_owned(), "12.3 [11–13]".to_owned()]);
        let text = table.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "lock                 ns");
        assert_eq!(lines[3], "std                4.41");
        assert_eq!(lines[4], "qspinlock  12.3 [11–13]");
    }

    #[test]
    fn csv_quotes_only_what_needs_it() {
        assert_eq!(csv_field("std"), "std");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
