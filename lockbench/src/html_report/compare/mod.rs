//! `lockbench compare A.json B.json`: the same cells measured twice (another commit,
//! another machine), B against A.
//!
//! Each cell's runs in B are judged against its runs in A with [`crate::verdict`]:
//! B ÷ A as throughput with its 95% interval, and "faster" or "slower" only when that
//! interval lies wholly beyond ±5%. A cell that finished in one file and not in the
//! other is reported too.
//!
//! A machine drifts between two runs (another tenant's load, a vCPU moved, a warmer
//! CPU): every lock of a cell group (same scenario, setup and threads) gets faster or
//! slower together, and the runs of one file do not cover that (two runs of the same
//! build, back to back, found every single-thread lock 11–24% slower in the second).
//! So by default each lock's change is judged relative to the other locks of its
//! group ([`crate::verdict::drift`]): per round where the runs pair up, the median of
//! the others in the same round; otherwise their pooled change. `--relative-to LOCK`
//! takes one lock as the only reference instead, `--absolute` none. A lock alone in
//! its group is judged directly, and the table says so.
//!
//! The runs of one file are one execution of the suite and share its level, which
//! the next execution does not (see "Between executions" in [`crate::verdict`]): every
//! judged cell's interval is then widened by the spread between executions, each
//! lock's estimated from the other locks' cells ([`crate::verdict::executions`]), and
//! the note under the table states its bound under that condition.
//!
//! `--fail-on-regression` then applies the rule of "Failing on a regression" in
//! [`crate::verdict`]: per lock over all its cells, and per cell with Holm's
//! correction ([`Comparison::failures`]).

#[cfg(test)]
mod real_pairs;
mod render;
#[cfg(test)]
mod tests;

use super::RunFile;
use crate::cells::{Cell, Summary};
use crate::verdict::drift::{self, Correction};
use crate::verdict::executions::{self, Shift};
use crate::verdict::many_cells::{self, Pooled};
use crate::verdict::{Judgement, Settings, Verdict};

/// How a machine's drift between A and B is removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    /// Each lock relative to the other locks of its cell group (the default).
    OtherLocks,
    /// Each lock relative to this lock of its cell group.
    Lock(String),
    /// None: B against A directly.
    Absolute,
}

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

/// What a row's change was judged against.
#[derive(Debug, Clone, PartialEq)]
pub enum Against {
    /// Nothing: `--absolute`, or a cell without a change to judge.
    Nothing,
    /// Nothing, because no other lock of its group finished in both files.
    Alone,
    /// These locks of its group, per round or per group.
    Locks(Correction, Vec<String>),
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
    /// The change with the evidence the fail rule weighs; `None` unless judged.
    pub evidence: Option<drift::Change>,
    /// What the change was judged against.
    pub against: Against,
    /// The spread of the compared runs within one execution
    /// ([`executions::within`]); `None` unless judged with 3 runs or more a side.
    pub within: Option<f64>,
    /// A second measure of the runs of another row (the program's own number that
    /// `app --metric` and the preload scenario read beside the wall time): shown,
    /// but left out of the fail rule's families, which would count those runs twice.
    pub second_measure: bool,
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
    /// How the drift was removed.
    pub drift: Drift,
    /// Shared cells left out because a file has no finished `--relative-to` cell for
    /// them.
    pub unreferenced: usize,
    /// Each judged lock's ratio of the spread between executions to the spread within
    /// one, from the other locks' cells ([`executions::ratios_by_lock`]); `None` where
    /// too few cells give one.
    pub executions: Vec<(String, Option<f64>)>,
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

/// The cell group of a key: the same key without its lock.
fn group(key: &[String; 4]) -> [&str; 3] {
    [&key[0], &key[1], &key[3]]
}

fn finished(cell: &Cell) -> Option<Summary> {
    cell.summary.filter(|_| cell.unfinished.is_none())
}

/// A cell group's locks that finished in both files, with their runs in A and in B.
type Finished<'a> = Vec<(&'a str, Vec<f64>, Vec<f64>)>;

/// Both files' cells, keyed, for the lookups of one comparison.
struct Files<'a> {
    a: Vec<([String; 4], &'a Cell)>,
    b: Vec<([String; 4], &'a Cell)>,
}

impl<'a> Files<'a> {
    fn new(a: &'a RunFile, b: &'a RunFile) -> Self {
        let keyed = |file: &'a RunFile| file.cells.iter().map(|c| (key(c), c)).collect();
        Self {
            a: keyed(a),
            b: keyed(b),
        }
    }

    fn in_b(&self, id: &[String; 4]) -> Option<&'a Cell> {
        self.b.iter().find(|(k, _)| k == id).map(|(_, c)| *c)
    }

    /// The locks of `id`'s group, other than `id`'s, that finished in both files.
    fn others(&self, id: &[String; 4]) -> Finished<'a> {
        self.a
            .iter()
            .filter(|(k, _)| group(k) == group(id) && k[2] != id[2])
            .filter_map(|(k, a)| {
                let b = self.in_b(k)?;
                finished(a)?;
                finished(b)?;
                Some((a.lock, a.log_throughputs(), b.log_throughputs()))
            })
            .filter(|(_, a, b)| !a.is_empty() && !b.is_empty())
            .collect()
    }
}

/// B's change of the lock with runs `x` (in A, in B) against `references`: per round
/// with the references whose runs pair up with X's in both files, else per group
/// with all.
fn against(
    x: (&[f64], &[f64]),
    references: &Finished<'_>,
    settings: Settings,
) -> Option<(drift::Change, Against)> {
    if references.is_empty() {
        return Some((drift::absolute(x.0, x.1, settings)?, Against::Alone));
    }
    let paired: Vec<&(&str, Vec<f64>, Vec<f64>)> = references
        .iter()
        .filter(|(_, a, b)| a.len() == x.0.len() && b.len() == x.1.len())
        .collect();
    let used: Vec<&(&str, Vec<f64>, Vec<f64>)> = match paired.is_empty() {
        true => references.iter().collect(),
        false => paired,
    };
    let runs: Vec<(&[f64], &[f64])> = used
        .iter()
        .map(|(_, a, b)| (a.as_slice(), b.as_slice()))
        .collect();
    let change = drift::relative(x, &runs, settings)?;
    let names = used.iter().map(|(lock, _, _)| (*lock).to_owned()).collect();
    let correction = change.correction;
    Some((change, Against::Locks(correction, names)))
}

/// Compares every cell the two files share, removing the drift as `drift` says.
pub fn compare(a: &RunFile, b: &RunFile, drift: &Drift) -> Comparison {
    let files = Files::new(a, b);
    let settings = Settings::default();
    let mut rows = Vec::new();
    let mut unreferenced = 0;
    for (id, cell) in &files.a {
        let Some(other) = files.in_b(id) else {
            continue;
        };
        let references = match drift {
            Drift::Absolute => None,
            Drift::OtherLocks => Some(files.others(id)),
            Drift::Lock(lock) if *lock == id[2] => {
                // The reference divided by itself: 1 in both files, nothing to judge.
                unreferenced += 1;
                continue;
            }
            Drift::Lock(lock) => {
                let mut reference = files.others(id);
                reference.retain(|(l, _, _)| l == lock);
                if reference.is_empty() {
                    unreferenced += 1;
                    continue;
                }
                Some(reference)
            }
        };
        let (x_a, x_b) = (cell.log_throughputs(), other.log_throughputs());
        let (change, evidence, against_what) = match (finished(cell), finished(other)) {
            (Some(_), Some(_)) => {
                let judged = match &references {
                    None => drift::absolute(&x_a, &x_b, settings).map(|c| (c, Against::Nothing)),
                    Some(references) => against((&x_a, &x_b), references, settings),
                };
                match judged {
                    Some((evidence, what)) => {
                        (Change::Judged(evidence.judgement), Some(evidence), what)
                    }
                    // Files from before lockbench wrote every run hold medians only.
                    None => (Change::Judged(no_runs()), None, Against::Nothing),
                }
            }
            (Some(_), None) => (Change::OnlyAFinished, None, Against::Nothing),
            (None, Some(_)) => (Change::OnlyBFinished, None, Against::Nothing),
            (None, None) => (Change::NeitherFinished, None, Against::Nothing),
        };
        let within = match evidence.as_ref().and_then(|e| e.samples.as_ref()) {
            Some((a, b)) => executions::within(a, b),
            None if evidence.is_some() => executions::within(&x_a, &x_b),
            None => None,
        };
        rows.push(Row {
            cell: id.clone(),
            a: finished(cell),
            b: finished(other),
            change,
            evidence,
            against: against_what,
            within,
            second_measure: cell.unit == "metric",
        });
    }
    let executions = between_executions(&mut rows, settings);
    let (ma, mb) = (&a.machine, &b.machine);
    let machines = (ma.cpu_model != mb.cpu_model || ma.online_cpus != mb.online_cpus).then(|| {
        format!(
            "A ran on {} ({} CPUs), B on {} ({} CPUs)",
            ma.cpu_model, ma.online_cpus, mb.cpu_model, mb.online_cpus
        )
    });
    Comparison {
        only_a: a.cells.len() - rows.len() - unreferenced,
        only_b: files
            .b
            .iter()
            .filter(|(k, _)| !files.a.iter().any(|(id, _)| id == k))
            .count(),
        rows,
        machines,
        drift: drift.clone(),
        unreferenced,
        executions,
    }
}

/// Whose spread between executions a cell's row shares: its lock's, except that
/// glibc's mutex measured as a whole program without the preload (the baseline of
/// `preload` and `app`, a child process's wall time) keeps a spread of its own, apart
/// from the same mutex timed inside lockbench's own loops: the two move between
/// executions differently, and were estimated apart when they had different names.
fn spread_of(cell: &[String; 4]) -> &str {
    const BASELINE: &str = "glibc without the preload";
    match (cell[0].as_str(), cell[2].as_str()) {
        ("preload" | "app", "glibc") => BASELINE,
        (_, lock) => lock,
    }
}

/// Widens every judged row's interval by the spread between executions, each lock's
/// estimated from the other locks' cells judged by one Mann–Whitney comparison (see
/// [`executions`]), and by its references' own movement; records each row's term for
/// the fail rule; the locks' ratios.
fn between_executions(rows: &mut [Row], settings: Settings) -> Vec<(String, Option<f64>)> {
    let shifts: Vec<(&str, Shift)> = rows
        .iter()
        .filter_map(|row| {
            let (a, b) = row.evidence.as_ref()?.samples.as_ref()?;
            Some((spread_of(&row.cell), Shift::of(a, b)?))
        })
        .collect();
    let ratios = executions::ratios_by_lock(&shifts);
    for row in rows.iter_mut() {
        let ratio = ratios
            .iter()
            .find(|(lock, _)| *lock == spread_of(&row.cell))
            .and_then(|(_, ratio)| *ratio);
        let Some(evidence) = row.evidence.as_mut() else {
            continue;
        };
        let sd = executions::term(
            ratio.unwrap_or(0.0),
            row.within.unwrap_or(0.0),
            evidence.reference,
        );
        if sd > 0.0 {
            evidence.execution = sd;
            evidence.judgement = executions::widened(&evidence.judgement, sd, settings);
            row.change = Change::Judged(evidence.judgement);
        }
    }
    ratios
}

/// The judgement of a cell whose files hold no runs.
fn no_runs() -> Judgement {
    Judgement {
        ratio: f64::NAN,
        low: None,
        high: None,
        confidence: None,
        verdict: Verdict::TooFewRuns,
        runs_x: 0,
        runs_y: 0,
    }
}

/// What fails `--fail-on-regression PCT`.
#[derive(Debug, Default)]
pub struct Failures<'a> {
    /// Locks whose pooled change lies wholly below the limit, each with its cells
    /// whose own verdict is "slower".
    pub locks: Vec<(Pooled, Vec<&'a Row>)>,
    /// Cells slower beyond the limit on their own, after Holm's correction.
    pub cells: Vec<&'a Row>,
    /// The other cells of the locks in `cells` (and not in `locks`) whose own verdict
    /// is "slower": named so that the user sees where else the lock lost, though none
    /// of them fails on its own after the correction.
    pub also: Vec<&'a Row>,
}

impl Failures<'_> {
    /// Whether nothing failed (`also` only names cells of a failure).
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty() && self.cells.is_empty()
    }
}

impl Comparison {
    /// The judged rows with their evidence that the fail rule counts: every measure of
    /// a set of runs once.
    fn judged(&self) -> impl Iterator<Item = (&Row, &drift::Change)> {
        self.rows
            .iter()
            .filter(|row| !row.second_measure)
            .filter_map(|row| row.evidence.as_ref().map(|evidence| (row, evidence)))
    }

    /// Every lock's change pooled over its judged cells.
    pub fn pooled(&self) -> Vec<Pooled> {
        let cells: Vec<(&str, &drift::Change)> = self
            .judged()
            .map(|(row, evidence)| (row.cell[2].as_str(), evidence))
            .collect();
        many_cells::pooled(&cells)
    }

    /// What fails `--fail-on-regression pct`: the locks whose pooled change lies
    /// wholly below 1 ÷ (1 + pct/100), and the cells that do on their own after
    /// Holm's correction over every judged cell.
    pub fn failures(&self, pct: f64) -> Failures<'_> {
        let locks: Vec<(Pooled, Vec<&Row>)> = self
            .pooled()
            .into_iter()
            .filter(|pooled| pooled.slower_by_more_than(pct))
            .map(|pooled| {
                let slower = self
                    .judged()
                    .filter(|(row, e)| {
                        row.cell[2] == pooled.lock && e.judgement.verdict == Verdict::Slower
                    })
                    .map(|(row, _)| row)
                    .collect();
                (pooled, slower)
            })
            .collect();
        let judged: Vec<(&Row, &drift::Change)> = self.judged().collect();
        let evidence: Vec<&drift::Change> = judged.iter().map(|(_, e)| *e).collect();
        let cells: Vec<&Row> = many_cells::single_cells(&evidence, pct)
            .into_iter()
            .map(|i| judged[i].0)
            .collect();
        let named_by_lock = |row: &Row| {
            locks
                .iter()
                .any(|(p, _): &(Pooled, _)| p.lock == row.cell[2])
        };
        let also = judged
            .iter()
            .filter(|(row, e)| {
                e.judgement.verdict == Verdict::Slower
                    && !named_by_lock(row)
                    && cells.iter().any(|c| c.cell[2] == row.cell[2])
                    && !cells.iter().any(|c| std::ptr::eq(*c, *row))
            })
            .map(|(row, _)| *row)
            .collect();
        Failures { locks, cells, also }
    }
}
