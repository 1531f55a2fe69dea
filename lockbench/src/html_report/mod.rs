//! `lockbench report` (an HTML page and SVG charts: [`page`], [`figures`], [`chart`])
//! and `lockbench compare` ([`compare`]), from the `--json` files lockbench writes,
//! read back here. Both work from these files,
//! never from a live run's memory, so what they show is exactly what a file holds; the
//! default run writes its report through the same path.
//!
//! The cells are [`crate::cells::Cell`], the type the scenarios measure and `--json`
//! writes. The model is deliberately loose: every field a later lockbench added is
//! optional, so results committed by an older one still load.

pub mod chart;
pub mod commands;
pub mod compare;
pub mod figures;
pub mod page;
pub mod scenario_chart;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::cells::Cell;

/// One `--json` file.
#[derive(Debug, Clone, Deserialize)]
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
    pub cells: Vec<Cell>,
    /// `default` and `default-rw` against the best peer of each row, as the run's
    /// summary judged them (files from before lockbench wrote them have none).
    #[serde(default)]
    pub verdicts: Vec<VerdictData>,
}

/// One verdict of a run's summary.
#[derive(Debug, Clone, Deserialize)]
pub struct VerdictData {
    /// The scenario.
    pub scenario: String,
    /// Ours, as lockbench names it (`default`, `default-rw`).
    #[serde(deserialize_with = "crate::cells::decode::lock_string")]
    pub lock: String,
    /// The row: `threads 4, short cs, 2×`.
    pub row: String,
    /// The fastest peer of the row (an older file's older name read as the current
    /// one).
    #[serde(deserialize_with = "crate::cells::decode::lock_string")]
    pub best_peer: String,
    /// Ours ÷ the best peer, as throughput.
    pub judgement: crate::verdict::Judgement,
    /// Ours against the fairest peer, as fairness, where both counted per thread
    /// (files from before lockbench judged fairness here have none).
    #[serde(default)]
    pub fairness_judgement: Option<crate::verdict::Judgement>,
}

/// The machine metadata of a file.
#[derive(Debug, Clone, Deserialize)]
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
    /// The owner probe klocks used (files from before lockbench wrote it have none).
    #[serde(default)]
    pub owner_probe: String,
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

    /// A run still in memory (`cells::to_json`), as its `--json` file would read back.
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
            if !seen.contains(&cell.scenario) {
                seen.push(cell.scenario);
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

    /// Every result file committed under docs/results loads, and every field its cells
    /// hold reads back into the cell type: written again, the cell holds it with its
    /// value. A field renamed in the type would read back as absent and fail here.
    #[test]
    fn committed_results_read_back_every_field() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/results");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).expect("docs/results") {
            let path = entry.expect("a directory entry").path();
            if path.extension().is_none_or(|ext| ext != "json") {
                continue;
            }
            let file = RunFile::load(&path).unwrap_or_else(|err| panic!("{err}"));
            let text = std::fs::read_to_string(&path).expect("readable");
            let written: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            let cells = written["cells"].as_array().expect("cells");
            assert_eq!(cells.len(), file.cells.len(), "{}", path.display());
            for (index, (written, read)) in cells.iter().zip(&file.cells).enumerate() {
                // An older name reads back as the current one.
                let mut written = written.clone();
                if let Some(new) = written["lock"].as_str().and_then(crate::locks::renamed) {
                    written["lock"] = new.into();
                }
                let written = &written;
                let again = serde_json::to_value(read).expect("a cell writes");
                let at = format!("{} cells[{index}]", path.display());
                holds(&again, written, &at);
            }
            files += 1;
        }
        assert!(files >= 10, "{files} result files in {}", dir.display());
    }

    /// Panics unless `again` holds every field of `written`, with its value.
    fn holds(again: &serde_json::Value, written: &serde_json::Value, at: &str) {
        use serde_json::Value;
        match (written, again) {
            (Value::Object(written), Value::Object(again)) => {
                for (field, value) in written {
                    let Some(read) = again.get(field) else {
                        panic!("{at}: `{field}` did not read back");
                    };
                    holds(read, value, &format!("{at}.{field}"));
                }
            }
            (Value::Array(written), Value::Array(again)) => {
                assert_eq!(written.len(), again.len(), "{at}");
                for (index, (written, read)) in written.iter().zip(again).enumerate() {
                    holds(read, written, &format!("{at}[{index}]"));
                }
            }
            (Value::Number(written), Value::Number(again)) => {
                let (written, again) = (written.as_f64(), again.as_f64());
                let (Some(written), Some(again)) = (written, again) else {
                    panic!("{at}: not a number");
                };
                let close = (written - again).abs() <= 1e-12 * written.abs().max(1.0);
                assert!(close, "{at}: {written} read back as {again}");
            }
            _ => assert_eq!(written, again, "{at}"),
        }
    }
}
