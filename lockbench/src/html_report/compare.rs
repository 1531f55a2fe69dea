//! `lockbench compare A.json B.json`: the same cells measured twice (another commit,
//! another machine), B against A.
//!
//! Each cell's runs in B are judged against its runs in A with [`crate::verdict`]:
//! B ÷ A as throughput with its 95% interval, and "faster" or "slower" only when that
//! interval lies wholly beyond ±5%. A cell that finished in one file and not in the
//! other is a change too.
//!
//! A machine drifts between two runs (another tenant's load, a vCPU moved, a warmer
//! CPU): every lock gets faster or slower together, and the runs of one file do not
//! cover that. `--relative-to LOCK` divides each cell's change by LOCK's change in the
//! same scenario, setup and threads ([`verdict::judge_relative`]), so that a change of
//! the machine cancels out and a change of the lock under test remains. Its interval
//! holds both changes' noise, so it is wider than a direct comparison's: dividing by
//! a noisy reference cannot invent a difference.

use std::fmt::Write as _;

use super::RunFile;
use crate::adaptive::{self, Standing};
use crate::cells::Cell;
use crate::cells::{num, si, Summary, Table};
use crate::verdict::{self, Judgement, Settings, Tally, Verdict};

/// How B's cell stands against A's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    /// Both finished: B against A.
    Judged(Judgement),
    /// Only A's cell finished: B stopped finishing.
    OnlyAFinished,
    /// Only B's finished.
    OnlyBFinished,
    /// Neither finished.
    NeitherFinished,
}

/// One cell present in both files.
#[derive(Debug)]
pub struct Row {
    /// Scenario, setup, lock, threads.
    pub cell: [String; 4],
    /// A's cell.
    pub a: Option<Summary>,
    /// B's.
    pub b: Option<Summary>,
    /// B against A.
    pub change: Change,
}

/// The comparison of two files.
#[derive(Debug)]
pub struct Comparison {
    /// Cells in both, in A's order.
    pub rows: Vec<Row>,
    /// Cells only A has.
    pub only_a: usize,
    /// Cells only B has.
    pub only_b: usize,
    /// The machines differ (CPU model or count).
    pub machines: Option<String>,
    /// The lock every cell was divided by, if any.
    pub reference: Option<String>,
    /// Shared cells left out because a file has no finished reference cell for them.
    pub unreferenced: usize,
}

/// What identifies a cell across files: scenario, its setup, lock, threads.
fn key(cell: &Cell) -> [String; 4] {
    let setup = match (&cell.overcommit, &cell.mutex_load, &cell.rw) {
        (Some(o), _, _) => format!("{} cs, {}×", o.cs, o.ratio),
        (_, Some(m), _) => format!("{} pauses", m.load_pauses),
        (_, _, Some(rw)) => format!("{}R+{}W, {} pauses", rw.readers, rw.writers, rw.load_pauses),
        _ => String::new(),
    };
    let setup = match &cell.layout {
        Some(layout) if setup.is_empty() => (*layout).to_owned(),
        Some(layout) => format!("{setup}, {layout}"),
        None => setup,
    };
    [
        cell.scenario.to_owned(),
        setup,
        cell.lock.to_owned(),
        cell.threads.to_string(),
    ]
}

fn finished(cell: &Cell) -> Option<Summary> {
    cell.summary.filter(|_| cell.unfinished.is_none())
}

/// The finished reference cell of `lock` beside `cell` in `file`.
fn reference_of<'a>(file: &'a RunFile, cell: &Cell, lock: &str) -> Option<&'a Cell> {
    let mut id = key(cell);
    id[2] = lock.to_owned();
    file.cells
        .iter()
        .find(|c| key(c) == id)
        .filter(|c| finished(c).is_some())
}

/// B's cell against A's, each divided by its file's `reference` cell if one is given;
/// `Err` when a file has no finished reference cell beside it.
fn change(
    files: (&RunFile, &RunFile),
    cells: (&Cell, &Cell),
    reference: Option<&str>,
    settings: Settings,
) -> Result<Change, ()> {
    let (a, b) = cells;
    let (ra, rb) = match reference {
        None => (None, None),
        Some(lock) => {
            let ra = reference_of(files.0, a, lock).ok_or(())?;
            let rb = reference_of(files.1, b, lock).ok_or(())?;
            (Some(ra), Some(rb))
        }
    };
    let judged = match (finished(a), finished(b)) {
        (Some(_), Some(_)) => match ra.zip(rb) {
            None => verdict::judge(&b.log_throughputs(), &a.log_throughputs(), settings),
            Some((ra, rb)) => verdict::judge_relative(
                &a.log_throughputs(),
                &b.log_throughputs(),
                &ra.log_throughputs(),
                &rb.log_throughputs(),
                settings,
            ),
        },
        (Some(_), None) => return Ok(Change::OnlyAFinished),
        (None, Some(_)) => return Ok(Change::OnlyBFinished),
        (None, None) => return Ok(Change::NeitherFinished),
    };
    // Files from before lockbench wrote every run hold medians only: no interval.
    let judged = judged.unwrap_or(Judgement {
        ratio: f64::NAN,
        low: None,
        high: None,
        confidence: None,
        verdict: Verdict::TooFewRuns,
        runs_x: 0,
        runs_y: 0,
    });
    Ok(Change::Judged(judged))
}

/// Compares every cell the two files share, each divided by `reference`'s cell of
/// its run if one is named.
pub fn compare(a: &RunFile, b: &RunFile, reference: Option<&str>) -> Comparison {
    let b_keys: Vec<[String; 4]> = b.cells.iter().map(key).collect();
    let mut rows = Vec::new();
    let mut unreferenced = 0;
    for cell in &a.cells {
        let id = key(cell);
        let Some(other) = b_keys.iter().position(|k| *k == id).map(|i| &b.cells[i]) else {
            continue;
        };
        if reference == Some(cell.lock) {
            // The reference divided by itself: 1 in both files, nothing to judge.
            unreferenced += 1;
            continue;
        }
        match change((a, b), (cell, other), reference, Settings::default()) {
            Ok(change) => rows.push(Row {
                cell: id,
                a: finished(cell),
                b: finished(other),
                change,
            }),
            Err(()) => unreferenced += 1,
        }
    }
    let a_keys: Vec<[String; 4]> = a.cells.iter().map(key).collect();
    let (ma, mb) = (&a.machine, &b.machine);
    let machines = (ma.cpu_model != mb.cpu_model || ma.online_cpus != mb.online_cpus).then(|| {
        format!(
            "A ran on {} ({} CPUs), B on {} ({} CPUs)",
            ma.cpu_model, ma.online_cpus, mb.cpu_model, mb.online_cpus
        )
    });
    Comparison {
        only_a: a.cells.len() - rows.len() - unreferenced,
        only_b: b_keys.iter().filter(|k| !a_keys.contains(k)).count(),
        rows,
        machines,
        reference: reference.map(str::to_owned),
        unreferenced,
    }
}

impl Comparison {
    /// The cells B made worse by more than `pct` percent: those whose interval of
    /// B ÷ A lies wholly below 1 ÷ (1 + pct/100), and those that stopped finishing.
    pub fn regressions(&self, pct: f64) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|row| match row.change {
                Change::Judged(judgement) => judgement.slower_by_more_than(pct),
                Change::OnlyAFinished => true,
                Change::OnlyBFinished | Change::NeitherFinished => false,
            })
            .collect()
    }

    /// The verdicts of the judged rows.
    fn tally(&self) -> Tally {
        Tally::of(self.rows.iter().filter_map(|row| match &row.change {
            Change::Judged(judgement) => Some(judgement),
            _ => None,
        }))
    }

    /// The table of every shared cell, then a summary line.
    pub fn render(&self) -> String {
        let title = match &self.reference {
            None => "compare: B against A, cell by cell".to_owned(),
            Some(lock) => format!(
                "compare: B against A, each cell's change divided by {lock}'s in the same \
                 scenario, setup and threads (a change of the machine cancels out)"
            ),
        };
        let mut table = Table::new(
            title,
            &[
                "scenario",
                "setup",
                "lock",
                "threads",
                "A median [min–max]",
                "B median [min–max]",
                "B vs A (throughput)",
            ],
        );
        let show = |s: Option<Summary>, unit_format: fn(f64) -> String| {
            s.map_or("DNF".to_owned(), |s| s.show(unit_format))
        };
        let settings = Settings::default();
        for row in &self.rows {
            let format = if row.a.or(row.b).is_some_and(|s| s.median >= 1000.0) {
                si
            } else {
                num
            };
            let change = match row.change {
                Change::Judged(judgement) if judgement.ratio.is_nan() => {
                    "no runs in a file".to_owned()
                }
                Change::Judged(judgement) => match adaptive::standing(&judgement, settings) {
                    Standing::TooWide => format!("{judgement}, too wide to decide"),
                    _ => judgement.to_string(),
                },
                Change::OnlyAFinished => "only A finished".to_owned(),
                Change::OnlyBFinished => "only B finished".to_owned(),
                Change::NeitherFinished => "neither finished".to_owned(),
            };
            let mut cells: Vec<String> = row.cell.to_vec();
            cells[2] = verdict::label(&cells[2]).to_owned();
            cells.extend([show(row.a, format), show(row.b, format), change]);
            table.row(cells);
        }
        table.note(self.tally().note(Settings::default()));
        let too_wide = self
            .rows
            .iter()
            .filter(|row| match &row.change {
                Change::Judged(judgement) => {
                    adaptive::standing(judgement, settings) == Standing::TooWide
                }
                _ => false,
            })
            .count();
        if too_wide > 0 {
            table.note(format!(
                "too wide to decide: {too_wide} of the ≈ cells, whose interval straddles ±{:.0}% \
                 and is wider than the whole ±{:.0}% band; more runs in both files may decide \
                 them (the rule of --budget, see lockbench --help)",
                settings.min_effect * 100.0,
                settings.min_effect * 100.0
            ));
        }
        let mut out = table.to_string();
        let count = |change: fn(&Change) -> bool| {
            self.rows.iter().filter(|row| change(&row.change)).count()
        };
        let tally = self.tally();
        let _ = writeln!(
            out,
            "{} cells in both: B {} faster, {} no clear difference, {} slower, {} too few runs; \
             {} stopped finishing, {} started; {} only in A, {} only in B",
            self.rows.len(),
            tally.faster,
            tally.no_clear_difference,
            tally.slower,
            tally.too_few_runs,
            count(|c| *c == Change::OnlyAFinished),
            count(|c| *c == Change::OnlyBFinished),
            self.only_a,
            self.only_b
        );
        if let Some(lock) = self.reference.as_deref().filter(|_| self.unreferenced > 0) {
            let _ = writeln!(
                out,
                "{} shared cells left out: {lock}'s own, or a run has no finished {lock} cell \
                 beside them",
                self.unreferenced
            );
        }
        if let Some(machines) = &self.machines {
            let _ = writeln!(out, "note: {machines}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html_report::RunFile;

    /// A file of one mutex-load cell per (lock, runs).
    fn file(cells: &[(&str, &[f64])]) -> RunFile {
        let machine = serde_json::json!({
            "cpu_model": "cpu", "online_cpus": 2, "kernel": "6.1", "glibc": "2.36",
            "rustc": "1.88", "pause_ns": 30.0, "pv_spin_ns": 20000, "owner_probe": "perf",
        });
        let cells: Vec<serde_json::Value> = cells
            .iter()
            .map(|(lock, runs)| {
                let summary = Summary::of(runs.iter().copied()).unwrap();
                serde_json::json!({
                    "scenario": "mutex-load", "lock": lock, "threads": 2, "unit": "ops/s",
                    "summary": summary,
                    "runs": runs.iter().map(|v| serde_json::json!({"value": v})).collect::<Vec<_>>(),
                })
            })
            .collect();
        RunFile::of_run(serde_json::json!({
            "machine": machine, "command": ["lockbench"], "cells": cells,
        }))
        .unwrap()
    }

    const RUNS: [f64; 5] = [100.0, 103.0, 97.0, 101.0, 99.0];

    fn scaled(by: f64) -> Vec<f64> {
        RUNS.iter().map(|v| v * by).collect()
    }

    #[test]
    fn only_an_interval_beyond_the_limit_is_a_regression() {
        let a = file(&[("pthread", &RUNS), ("std", &RUNS)]);
        let b = file(&[("pthread", &scaled(0.6)), ("std", &scaled(1.02))]);
        let comparison = compare(&a, &b, None);
        let verdicts: Vec<Verdict> = comparison
            .rows
            .iter()
            .map(|row| match row.change {
                Change::Judged(j) => j.verdict,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(verdicts, [Verdict::Slower, Verdict::NoClearDifference]);
        assert_eq!(comparison.regressions(10.0).len(), 1);
        assert!(
            comparison.regressions(100.0).is_empty(),
            "0.6× is not 2× slower"
        );
    }

    #[test]
    fn a_cell_too_wide_to_decide_says_so() {
        // std's B runs spread from 0.6× to 1.5× A's: ≈, its interval far wider than
        // ±5%; pthread's stay within 2%: ≈ and decided.
        let spread = [60.0, 150.0, 100.0, 80.0, 130.0];
        let a = file(&[("pthread", &RUNS), ("std", &RUNS)]);
        let b = file(&[("pthread", &scaled(1.01)), ("std", &spread)]);
        let text = compare(&a, &b, None).render();
        let line = |lock: &str| {
            let found = text.lines().find(|l| l.contains(lock) && l.contains('≈'));
            found.unwrap_or_else(|| panic!("{text}")).to_owned()
        };
        assert!(line("std").ends_with(", too wide to decide"), "{text}");
        assert!(!line("pthread").contains("too wide"), "{text}");
        assert!(
            text.contains("too wide to decide: 1 of the ≈ cells"),
            "{text}"
        );
    }

    #[test]
    fn a_reference_cancels_a_drift_but_not_a_change() {
        let a = file(&[
            ("pthread", &RUNS),
            ("default", &RUNS),
            ("std", &scaled(2.0)),
        ]);
        let b = file(&[
            ("pthread", &scaled(0.5 * 0.7)),
            ("default", &scaled(0.7)),
            ("std", &scaled(2.0 * 0.7)),
        ]);
        assert_eq!(compare(&a, &b, None).regressions(5.0).len(), 3, "the drift");
        let relative = compare(&a, &b, Some("std"));
        assert_eq!(relative.unreferenced, 1, "std against itself");
        let regressed: Vec<&str> = relative
            .regressions(5.0)
            .iter()
            .map(|row| row.cell[2].as_str())
            .collect();
        assert_eq!(regressed, ["pthread"]);
    }
}
