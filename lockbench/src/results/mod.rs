//! Results read back from the `--json` files lockbench writes. The report
//! (`lockbench report`) and the comparison (`lockbench compare`) work from these files,
//! never from a live run's memory, so what they show is exactly what a file holds; the
//! default run writes its report through the same path.
//!
//! The model is deliberately loose: every field a later lockbench added is optional,
//! so results committed by an older one still load.

pub mod chart;
pub mod commands;
pub mod compare;
pub mod figures;
pub mod page;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::report::{PerThread, Summary, Unfinished};

/// One `--json` file.
#[derive(Debug, Deserialize)]
pub struct RunFile {
    /// Where it was read from (empty for a run still in memory).
    #[serde(skip)]
    pub source: PathBuf,
    /// What it was measured on.
    pub machine: MachineInfo,
    /// The command line that measured it.
    pub command: Vec<String>,
    /// When it was measured (RFC 3339, UTC); files from before lockbench wrote it
    /// have none.
    #[serde(default)]
    pub date: Option<String>,
    /// Every cell, in the order measured.
    pub cells: Vec<CellData>,
    /// `default` and `default-rw` against the best peer of each row, as the run's
    /// summary judged them (files from before lockbench wrote them have none).
    #[serde(default)]
    pub verdicts: Vec<VerdictData>,
}

/// One verdict of a run's summary.
#[derive(Debug, Deserialize)]
pub struct VerdictData {
    /// The scenario.
    pub scenario: String,
    /// Ours, as lockbench names it (`default`, `default-rw`).
    pub lock: String,
    /// The row: `threads 4, short cs, 2×`.
    pub row: String,
    /// The fastest peer of the row.
    pub best_peer: String,
    /// Ours ÷ the best peer, as throughput.
    pub judgement: crate::verdict::Judgement,
}

/// The machine metadata of a file.
#[derive(Debug, Deserialize)]
pub struct MachineInfo {
    /// CPU model name.
    pub cpu_model: String,
    /// Online CPUs.
    pub online_cpus: usize,
    /// Kernel release and architecture.
    pub kernel: String,
    /// glibc version.
    pub glibc: String,
    /// The compiler that built lockbench.
    pub rustc: String,
    /// One `pause`, in ns.
    pub pause_ns: f64,
    /// The pv locks' spin budget, in ns.
    pub pv_spin_ns: u64,
    /// `calibrated` or `KLOCKS_SPIN_NS`.
    #[serde(default)]
    pub pv_spin_source: String,
    /// The owner probe klocks used.
    pub owner_probe: String,
}

/// One measured configuration.
#[derive(Debug, Deserialize)]
pub struct CellData {
    /// Scenario name, as on the command line.
    pub scenario: String,
    /// Lock name, as in `--locks`/`--rwlocks`.
    pub lock: String,
    /// Threads (K for false-sharing).
    pub threads: usize,
    /// The scenario's extra dimension, if it has one (`padded`, `64 locks`, …).
    #[serde(default)]
    pub layout: Option<String>,
    /// Unit of the summary and of every run's value.
    pub unit: String,
    /// Over all runs; `None` when the cell did not finish.
    pub summary: Option<Summary>,
    /// Why the cell did not finish.
    #[serde(default)]
    pub unfinished: Option<Unfinished>,
    /// The machine around the cell (contended cells only).
    #[serde(default)]
    pub conditions: Option<ConditionsData>,
    /// Overcommit cells: the critical section and the ratio.
    #[serde(default)]
    pub overcommit: Option<OvercommitData>,
    /// Mutex-load cells: the load.
    #[serde(default)]
    pub mutex_load: Option<MutexLoadData>,
    /// Reader-writer cells: the roles and the load.
    #[serde(default)]
    pub rw: Option<RwData>,
    /// Every repetition.
    #[serde(default)]
    pub runs: Vec<RunData>,
}

/// What the machine did around a cell.
#[derive(Debug, Deserialize)]
pub struct ConditionsData {
    /// c2c placement before the cell: `near` or `far`.
    #[serde(default)]
    pub placement_before: Option<String>,
    /// ... and after.
    #[serde(default)]
    pub placement_after: Option<String>,
    /// CPU time the hypervisor gave to others.
    #[serde(default)]
    pub steal_ms: f64,
    /// Steal plus other processes took over lockbench's threshold.
    #[serde(default)]
    pub noisy: bool,
}

/// An overcommit cell's setup.
#[derive(Debug, Deserialize)]
pub struct OvercommitData {
    /// `short` or `medium`.
    pub cs: String,
    /// The overcommit ratio.
    pub ratio: u32,
}

/// A mutex-load cell's setup.
#[derive(Debug, Deserialize)]
pub struct MutexLoadData {
    /// Pauses inside the critical section.
    pub load_pauses: u32,
}

/// A reader-writer cell's setup.
#[derive(Debug, Deserialize)]
pub struct RwData {
    /// Reader threads.
    pub readers: usize,
    /// Writer threads.
    pub writers: usize,
    /// Pauses inside each section.
    pub load_pauses: u32,
}

/// One repetition.
#[derive(Debug, Deserialize)]
pub struct RunData {
    /// The measurement, in the cell's unit (files from before lockbench wrote every
    /// run may lack it).
    #[serde(default)]
    pub value: Option<f64>,
    /// Whether the run did all its work before its cap.
    #[serde(default = "finished_by_default")]
    pub finished: bool,
    /// Per-thread operations, where the scenario counts them.
    #[serde(default)]
    pub per_thread: Option<PerThread>,
    /// Reader-writer runs: per role.
    #[serde(default)]
    pub rw: Option<RwRunData>,
}

/// A reader-writer run's roles.
#[derive(Debug, Deserialize)]
pub struct RwRunData {
    /// Per reader thread.
    #[serde(default)]
    pub readers: Option<PerThread>,
    /// Per writer thread.
    #[serde(default)]
    pub writers: Option<PerThread>,
}

/// A file that is not a lockbench result.
#[derive(Debug)]
pub struct LoadError {
    path: PathBuf,
    why: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.why)
    }
}

impl RunFile {
    /// Reads a `--json` file.
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let failed = |why: String| LoadError {
            path: path.to_owned(),
            why,
        };
        let text = std::fs::read_to_string(path).map_err(|err| failed(err.to_string()))?;
        let mut file: RunFile = serde_json::from_str(&text)
            .map_err(|err| failed(format!("not a lockbench --json file ({err})")))?;
        file.source = path.to_owned();
        Ok(file)
    }

    /// A run still in memory (`report::to_json`), as its `--json` file would read back.
    pub fn of_run(json: serde_json::Value) -> serde_json::Result<Self> {
        serde_json::from_value(json)
    }

    /// The command as a user would type it: `lockbench ARGS…`.
    pub fn command_line(&self) -> String {
        let args = self.command.iter().skip(1).map(|arg| shell_word(arg));
        std::iter::once("lockbench".to_owned())
            .chain(args)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The file's name for headings, or `this run`.
    pub fn name(&self) -> String {
        match self.source.file_name() {
            Some(name) => name.to_string_lossy().into_owned(),
            None => "this run".to_owned(),
        }
    }

    /// The scenarios of the file, in the order first measured.
    pub fn scenarios(&self) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        for cell in &self.cells {
            if !seen.contains(&cell.scenario.as_str()) {
                seen.push(&cell.scenario);
            }
        }
        seen
    }
}

/// An argument quoted for a POSIX shell when it needs it.
fn shell_word(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_=.,/:+%@".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// A run without a `finished` field finished (older files wrote only finished runs).
fn finished_by_default() -> bool {
    true
}

impl CellData {
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
            .filter_map(|run| run.value)
            .filter_map(|value| crate::verdict::log_throughput(value, self.lower_is_better()))
            .collect()
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell's `stats` (written by `--stats`, not drawn) does not keep a file from
    /// loading, nor does its absence.
    #[test]
    fn cells_with_and_without_stats_load() {
        let machine = serde_json::json!({
            "cpu_model": "cpu", "online_cpus": 2, "kernel": "6.1", "glibc": "2.36",
            "rustc": "1.88", "pause_ns": 30.0, "pv_spin_ns": 20000, "owner_probe": "perf",
        });
        let cell = |stats: Option<serde_json::Value>| {
            let mut cell = serde_json::json!({
                "scenario": "loop", "lock": "pvqspinlock", "threads": 2, "unit": "ms",
                "summary": null,
            });
            if let Some(stats) = stats {
                cell["stats"] = stats;
            }
            cell
        };
        let file = RunFile::of_run(serde_json::json!({
            "machine": machine,
            "command": ["lockbench", "loop", "--stats"],
            "cells": [cell(Some(serde_json::json!({"sleep": 3, "wake": 2}))), cell(None)],
        }))
        .expect("a file with stats loads");
        assert_eq!(file.cells.len(), 2);
        assert_eq!(file.cells[0].lock, "pvqspinlock");
    }
}
