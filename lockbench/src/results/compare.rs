//! `lockbench compare A.json B.json`: the same cells measured twice (another commit,
//! another machine), B against A.
//!
//! A change counts as real only when the two cells' min–max ranges do not overlap:
//! with a few runs per cell, anything less is within the noise the runs themselves
//! show. A cell that finished in one file and not in the other is a real change too.
//!
//! A machine drifts between two runs (another tenant's load, a vCPU moved, a warmer
//! CPU): every lock gets faster or slower together, and the ranges of one run do not
//! cover that. `--relative-to LOCK` compares each cell as a ratio to LOCK's cell of
//! the same scenario, setup and threads in the same file, so that a change of the
//! machine cancels out and a change of the lock under test remains.

use std::fmt::Write as _;

use super::{CellData, RunFile};
use crate::report::{num, percent, si, Summary, Table};

/// How B's cell stands against A's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// The ranges overlap.
    Noise,
    /// B is better and the ranges do not overlap (or only B finished).
    Better,
    /// B is worse and the ranges do not overlap (or only A finished).
    Worse,
    /// Neither finished.
    NeitherFinished,
}

/// One cell present in both files.
#[derive(Debug)]
pub struct Row {
    /// Scenario, setup, lock, threads.
    pub cell: [String; 4],
    /// A's and B's cells.
    pub a: Option<Summary>,
    /// B's.
    pub b: Option<Summary>,
    /// B's gain over A, in the direction that is better (negative: B is worse);
    /// `None` unless both finished.
    pub gain: Option<f64>,
    /// Whether the change is real.
    pub verdict: Verdict,
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
fn key(cell: &CellData) -> [String; 4] {
    let setup = match (&cell.overcommit, &cell.mutex_load, &cell.rw) {
        (Some(o), _, _) => format!("{} cs, {}×", o.cs, o.ratio),
        (_, Some(m), _) => format!("{} pauses", m.load_pauses),
        (_, _, Some(rw)) => format!("{}R+{}W, {} pauses", rw.readers, rw.writers, rw.load_pauses),
        _ => String::new(),
    };
    let setup = match &cell.layout {
        Some(layout) if setup.is_empty() => layout.clone(),
        Some(layout) => format!("{setup}, {layout}"),
        None => setup,
    };
    [
        cell.scenario.clone(),
        setup,
        cell.lock.clone(),
        cell.threads.to_string(),
    ]
}

fn finished(cell: &CellData) -> Option<Summary> {
    cell.summary.filter(|_| cell.unfinished.is_none())
}

/// `cell`'s summary ÷ the reference lock's cell of the same scenario, setup and
/// threads in `file`: median ÷ median, and a range that holds every ratio of a run of
/// one to a run of the other. `Err` when `file` has no finished reference cell there.
fn relative(file: &RunFile, cell: &CellData, lock: &str) -> Result<Option<Summary>, ()> {
    let mut id = key(cell);
    id[2] = lock.to_owned();
    let reference = file.cells.iter().find(|c| key(c) == id).and_then(finished);
    let reference = reference.ok_or(())?;
    Ok(finished(cell).map(|s| Summary {
        median: s.median / reference.median,
        min: s.min / reference.max,
        max: s.max / reference.min,
    }))
}

/// Compares every cell the two files share, each as a ratio to `reference`'s cell
/// of its run if one is named.
pub fn compare(a: &RunFile, b: &RunFile, reference: Option<&str>) -> Comparison {
    let b_keys: Vec<[String; 4]> = b.cells.iter().map(key).collect();
    let mut rows = Vec::new();
    let mut unreferenced = 0;
    for cell in &a.cells {
        let id = key(cell);
        let Some(other) = b_keys.iter().position(|k| *k == id).map(|i| &b.cells[i]) else {
            continue;
        };
        let (sa, sb) = match reference {
            None => (finished(cell), finished(other)),
            Some(lock) => match (relative(a, cell, lock), relative(b, other, lock)) {
                (Ok(sa), Ok(sb)) => (sa, sb),
                _ => {
                    unreferenced += 1;
                    continue;
                }
            },
        };
        let (gain, verdict) = match (sa, sb) {
            (Some(x), Some(y)) => judge(x, y, cell.lower_is_better()),
            (Some(_), None) => (None, Verdict::Worse),
            (None, Some(_)) => (None, Verdict::Better),
            (None, None) => (None, Verdict::NeitherFinished),
        };
        rows.push(Row {
            cell: id,
            a: sa,
            b: sb,
            gain,
            verdict,
        });
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

/// B's gain over A and whether it is real: the ranges must not overlap.
fn judge(a: Summary, b: Summary, lower_is_better: bool) -> (Option<f64>, Verdict) {
    let gain = match lower_is_better {
        true => a.median / b.median - 1.0,
        false => b.median / a.median - 1.0,
    };
    let apart = b.min > a.max || b.max < a.min;
    let verdict = match (apart, gain > 0.0) {
        (false, _) => Verdict::Noise,
        (true, true) => Verdict::Better,
        (true, false) => Verdict::Worse,
    };
    (Some(gain), verdict)
}

impl Comparison {
    /// Real changes for the worse by more than `pct` percent (every cell that stopped
    /// finishing counts).
    pub fn regressions(&self, pct: f64) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|row| row.verdict == Verdict::Worse)
            .filter(|row| row.gain.is_none_or(|gain| -gain * 100.0 > pct))
            .collect()
    }

    /// The table of every shared cell, then a summary line.
    pub fn render(&self) -> String {
        let title = match &self.reference {
            None => {
                "compare: B against A (a change is real when the min–max ranges do not overlap)"
                    .to_owned()
            }
            Some(lock) => format!(
                "compare: B against A, each cell ÷ {lock}'s cell of its run (a change is real \
                 when the min–max ranges do not overlap)"
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
                "B vs A",
                "verdict",
            ],
        );
        let format = if self.reference.is_some() { num } else { si };
        let show = |s: Option<Summary>| s.map_or("DNF".to_owned(), |s| s.show(format));
        for row in &self.rows {
            let gain = row.gain.map_or(String::new(), |g| {
                format!("{}{}", if g >= 0.0 { "+" } else { "-" }, percent(g.abs()))
            });
            let verdict = match row.verdict {
                Verdict::Noise => "within noise",
                Verdict::Better => "better",
                Verdict::Worse => "WORSE",
                Verdict::NeitherFinished => "neither finished",
            };
            let mut cells: Vec<String> = row.cell.to_vec();
            cells.extend([show(row.a), show(row.b), gain, verdict.to_owned()]);
            table.row(cells);
        }
        table.note("B vs A: how much better B is (negative: worse), for the cell's unit");
        let mut out = table.to_string();
        let count = |v: Verdict| self.rows.iter().filter(|r| r.verdict == v).count();
        let _ = writeln!(
            out,
            "{} cells in both: {} better, {} worse, {} within noise; {} only in A, {} only in B",
            self.rows.len(),
            count(Verdict::Better),
            count(Verdict::Worse),
            count(Verdict::Noise),
            self.only_a,
            self.only_b
        );
        if let Some(lock) = self.reference.as_deref().filter(|_| self.unreferenced > 0) {
            let _ = writeln!(
                out,
                "{} shared cells left out: a run has no finished {lock} cell beside them",
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

    fn summary(median: f64, min: f64, max: f64) -> Summary {
        Summary { median, min, max }
    }

    #[test]
    fn only_ranges_apart_are_real() {
        let a = summary(100.0, 95.0, 105.0);
        assert_eq!(
            judge(a, summary(104.0, 98.0, 110.0), false).1,
            Verdict::Noise
        );
        assert_eq!(
            judge(a, summary(120.0, 110.0, 125.0), false).1,
            Verdict::Better
        );
        assert_eq!(
            judge(a, summary(120.0, 110.0, 125.0), true).1,
            Verdict::Worse
        );
        let (gain, verdict) = judge(a, summary(50.0, 45.0, 55.0), false);
        assert_eq!((gain, verdict), (Some(-0.5), Verdict::Worse));
    }
}
