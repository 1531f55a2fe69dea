//! The table pieces the windowed scenarios print: cells as `median f…`, changes,
//! matrices, comparisons, per-cell detail and footnotes.

use super::plan::{CellLock, Plan, TRUSTED_WINDOW};
use crate::cells::{num, si, Cell, PerThread, Run, Table, Unfinished, Wait, Waits};
use crate::harness::versus::{judge_cells, judge_fairness};
use crate::harness::watch::{self, Conditions};
use crate::verdict::{self, Judgement, Ledger, Settings};

/// The median fairness ([`crate::cells::Run::fairness`]: the slowest thread ÷ the
/// mean, per role with readers and writers) over a cell's runs.
pub fn fairness(cell: &Cell) -> Option<f64> {
    cell.median_of(crate::cells::Run::fairness)
}

/// A fairness, or `-`.
pub fn show_fairness(fairness: Option<f64>) -> String {
    fairness.map_or_else(|| "-".to_owned(), |f| format!("{f:.2}"))
}

/// `1.23M f0.97` (the median through `format`), or `DNF (drain > 3 s)`, with the
/// cell's marks.
pub fn short(cell: &Cell, format: fn(f64) -> String) -> String {
    match (cell.summary, cell.unfinished) {
        (Some(summary), None) => format!(
            "{} f{}{}",
            format(summary.median),
            show_fairness(fairness(cell)),
            cell.marks()
        ),
        _ => cell.short(format),
    }
}

/// The header of a column of [`waits`].
pub const WAIT_HEADER: &str = "wait µs p50/p99/p99.9/max";

/// A cell's waits, `p50/p99/p99.9/max` in µs (medians over its runs of each run's
/// quantiles), `pick` choosing the histogram (every thread's, a role's); `-` without.
pub fn waits(cell: &Cell, pick: impl Fn(&Waits) -> Option<Wait>) -> String {
    cell.wait_quantiles(pick).map_or_else(
        || "-".to_owned(),
        |quantiles| quantiles.map(|ns| num(ns / 1e3)).join("/"),
    )
}

/// What timing one acquisition added to a cell's lock, uncontended (median over its
/// runs), `+41.2`; `-` for a cell that timed none.
pub fn timing_cost(cell: &Cell) -> String {
    cell.median_of(|run| run.wait.map(|w| w.added_ns))
        .map_or_else(|| "-".to_owned(), |ns| format!("+{}", num(ns)))
}

/// The note under a table with wait columns: what a wait is, how many were timed,
/// and what timing cost.
pub fn wait_note(cells: &[Cell]) -> Option<String> {
    let every = cells
        .iter()
        .flat_map(|cell| &cell.runs)
        .find_map(|run| run.wait.map(|w| w.every))?;
    let timed = match every {
        1 => "every acquisition".to_owned(),
        n => format!("one acquisition in {n}, at random intervals (--wait-every)"),
    };
    Some(format!(
        "wait = from just before the lock call to just after it returned (one clock read \
         included), {timed}, into a histogram per thread merged after the window; \
         p50/p99/p99.9/max are medians over the runs of each run's quantiles; timing ns = \
         what timing one acquisition added, uncontended, in each run's process (the same \
         code for every lock)"
    ))
}

/// A table row: the row's parameter columns, then the cell of each lock (`None`
/// where it did not run).
pub type MatrixRow<'a> = (Vec<String>, Vec<Option<&'a Cell>>);

/// `label_headers`, then one column per lock of `locks`: `1.23M f0.97` (the median
/// through `format`, and the fairness), `DNF ...`, or `-`.
pub fn matrix<'a, L: CellLock>(
    title: String,
    label_headers: &[&str],
    locks: &[L],
    rows: impl IntoIterator<Item = MatrixRow<'a>>,
    format: fn(f64) -> String,
) -> Table {
    let headers: Vec<&str> = label_headers
        .iter()
        .copied()
        .chain(locks.iter().map(|lock| lock.name()))
        .collect();
    let mut table = Table::new(
        format!(
            "{title}; f = fairness, the slowest thread's operations ÷ the mean (1.00 = \
             even)"
        ),
        &headers,
    );
    for (labels, cells) in rows {
        let entries = cells
            .into_iter()
            .map(|cell| cell.map_or_else(|| "-".to_owned(), |cell| short(cell, format)));
        table.row(labels.into_iter().chain(entries).collect());
    }
    table
}

/// A seed's before/after table: `headers` are the row's parameter columns and the
/// two cells' (base, then patched), shown through `show`; the last column judges
/// patched against base as throughput ([`judge_cells`]), and the notes under the
/// table say what the ratio is and count the verdicts.
pub fn comparison<'a>(
    title: String,
    headers: &[&str],
    (base, patched): (&str, &str),
    rows: impl IntoIterator<Item = (Vec<String>, &'a Cell, &'a Cell)>,
    show: impl Fn(&Cell) -> String,
) -> Table {
    let (base, patched) = (verdict::label(base), verdict::label(patched));
    let judged = format!("{patched} vs {base}");
    let headers: Vec<&str> = headers.iter().copied().chain([judged.as_str()]).collect();
    let mut table = Table::new(title, &headers);
    let mut ledger = Ledger::default();
    for (labels, base_cell, patched_cell) in rows {
        let judgement = judge_cells(patched_cell, base_cell);
        if let Some(judgement) = judgement {
            let row: Vec<String> = (headers.iter().zip(&labels))
                .map(|(header, label)| format!("{header} {label}"))
                .collect();
            ledger.add(row.join(", "), judgement);
        }
        let compared = [
            show(base_cell),
            show(patched_cell),
            judgement.map_or_else(|| "-".to_owned(), |j| j.to_string()),
        ];
        table.row(labels.into_iter().chain(compared).collect());
    }
    for note in ledger.notes(patched, base, Settings::default()) {
        table.note(note);
    }
    table
}

/// Among `cells`, the fairest: (min ÷ mean, lock).
pub fn fairest(cells: &[&Cell]) -> Option<(f64, &'static str)> {
    cells
        .iter()
        .filter_map(|cell| fairness(cell).map(|f| (f, cell.lock)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// `ours` against the fairest of `peers`: that peer's fairness and lock, and the
/// verdict of the two cells' runs ([`judge_fairness`]), which a cell of ours that did
/// not finish does not get; `None` when no peer has a fairness.
pub fn against_fairest(
    ours: &Cell,
    peers: &[&Cell],
) -> Option<(f64, &'static str, Option<Judgement>)> {
    let (f, lock) = fairest(peers)?;
    let judged = peers
        .iter()
        .find(|peer| peer.lock == lock)
        .filter(|_| ours.unfinished.is_none())
        .and_then(|peer| judge_fairness(ours, peer, Run::fairness));
    Some((f, lock, judged))
}

/// One row per cell: `labels` (the cell's parameters, under `label_headers`; `None`
/// skips the cell), throughput in `unit` through `format` with its range, fairness
/// both ways, drain, conditions.
pub fn detail(
    title: &str,
    label_headers: &[&str],
    cells: &[Cell],
    labels: impl Fn(&Cell) -> Option<Vec<String>>,
    (unit, format): (&str, fn(f64) -> String),
) -> Table {
    let throughput = format!("{unit} median [min–max]");
    let headers: Vec<&str> = ["lock"]
        .into_iter()
        .chain(label_headers.iter().copied())
        .chain([
            throughput.as_str(),
            "ops/thread min/mean/max",
            "f min",
            "f max",
            "drain ms",
            WAIT_HEADER,
            "timing ns",
            "placement",
            "steal+others ms",
        ])
        .collect();
    let mut table = Table::new(
        format!(
            "{title}, per cell: ops/thread = the slowest thread's, the mean and the \
             fastest thread's operations in the window; f min/max = the slowest/fastest \
             thread's operations ÷ the mean; drain = from the stop flag to the last thread returning (medians \
             over the verified runs)"
        ),
        &headers,
    );
    let show = |value: Option<f64>, format: fn(f64) -> String| {
        value.map_or_else(|| "-".to_owned(), format)
    };
    for cell in cells {
        let Some(labels) = labels(cell) else {
            continue;
        };
        let conditions = cell.conditions.as_ref();
        let per_thread = |of: fn(&PerThread) -> f64| {
            show(
                cell.median_of(|run| run.per_thread.as_ref().map(of)),
                operations,
            )
        };
        let measured = [
            cell.long(format),
            format!(
                "{}/{}/{}",
                per_thread(|p| p.min as f64),
                per_thread(|p| p.mean),
                per_thread(|p| p.max as f64)
            ),
            show_fairness(fairness(cell)),
            show_fairness(cell.median_of(|run| run.per_thread.map(|p| p.max_per_mean()))),
            show(cell.median_of(|run| run.drain.map(|d| d.ms)), num),
            waits(cell, |w| w.all),
            timing_cost(cell),
            conditions.map_or_else(|| "-".to_owned(), Conditions::placement),
            conditions.map_or_else(
                || "-".to_owned(),
                |c| format!("{}+{}", num(c.steal_ms), num(c.others_ms)),
            ),
        ];
        table.row(
            [cell.lock.to_owned()]
                .into_iter()
                .chain(labels)
                .chain(measured)
                .collect(),
        );
    }
    table
}

/// A count of operations: `0`, `214`, `2.46k`.
fn operations(count: f64) -> String {
    if count < 1e3 {
        format!("{count:.0}")
    } else {
        si(count)
    }
}

/// The tables that apply (`None` for one that does not), each with the footnotes its
/// cells call for.
pub fn with_footnotes<L: CellLock>(
    tables: impl IntoIterator<Item = Option<Table>>,
    cells: &[Cell],
    plan: &Plan<L>,
) -> Vec<Table> {
    let mut tables: Vec<Table> = tables.into_iter().flatten().collect();
    for table in &mut tables {
        footnotes(table, cells, plan);
    }
    tables
}

/// The footnotes for undrained cells, short windows and the conditions' marks.
fn footnotes<L: CellLock>(table: &mut Table, cells: &[Cell], plan: &Plan<L>) {
    if cells
        .iter()
        .any(|cell| matches!(cell.unfinished, Some(Unfinished::Undrained { .. })))
    {
        table.note(format!(
            "DNF (drain > {} s): after the window the threads were still draining (each \
             waiter queued on a FIFO lock takes it once more, and each handoff to a \
             preempted waiter costs a time slice); the run's process was killed, so \
             nothing of it could be verified and the cell is not repeated",
            plan.drain_cap.as_secs_f64()
        ));
    }
    if plan.window < TRUSTED_WINDOW && L::READER_WRITER {
        table.note(format!(
            "windows under {} s leave each thread's share to the scheduler's first time \
             slices (with more threads than CPUs, some run late or not at all): use \
             --seed-scale or --window-ms 3000 for numbers to quote",
            TRUSTED_WINDOW.as_secs()
        ));
    } else if plan.window < TRUSTED_WINDOW {
        table.note(format!(
            "windows under {} s flatter collapsing FIFO locks (their first handoffs \
             happen before the scheduler interleaves the waiters): use --seed-scale or \
             --window-ms 3000 for numbers to quote",
            TRUSTED_WINDOW.as_secs()
        ));
    }
    if let Some(note) = late_start_note(cells, plan.window) {
        table.note(note);
    }
    let timed_waits = table.parts().1.iter().any(|h| h.contains(WAIT_HEADER));
    if let Some(note) = wait_note(cells).filter(|_| timed_waits) {
        table.note(note);
    }
    watch::explain_marks(table, cells);
}

/// A run's last thread may pass the start gate this share of the window late before
/// a note says so.
const LATE_START_SHARE: f64 = 0.05;

/// The note for runs whose last thread passed the start gate more than
/// [`LATE_START_SHARE`] of the window after the clock started: its share of the
/// operations, and the run's fairness, are low by about that much.
fn late_start_note(cells: &[Cell], window: std::time::Duration) -> Option<String> {
    let bound_ms = window.as_secs_f64() * 1e3 * LATE_START_SHARE;
    let starts = cells.iter().flat_map(|cell| &cell.runs);
    let late: Vec<f64> = starts
        .filter_map(|run| run.last_start_ms)
        .filter(|&ms| ms > bound_ms)
        .collect();
    let latest = late.iter().copied().reduce(f64::max)?;
    Some(format!(
        "late start: in {} run(s) a thread passed the start gate more than {:.0}% of \
         the window after the clock started (the latest {latest:.0} ms late; with more \
         threads than CPUs a thread starts when the scheduler first runs it): that \
         thread's operations, and the run's f, are low by up to that share",
        late.len(),
        LATE_START_SHARE * 100.0
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cell_starting(last_starts_ms: &[f64]) -> Cell {
        let runs = last_starts_ms
            .iter()
            .map(|&ms| Run {
                last_start_ms: Some(ms),
                ..Run::timed(1.0, Duration::from_secs(1), 1)
            })
            .collect();
        Cell::of_runs("mutex-load", "default", 256, None, "ops/s", runs)
    }

    #[test]
    fn runs_whose_last_thread_started_late_are_named_in_a_note() {
        let window = Duration::from_secs(1);
        let prompt = [cell_starting(&[2.0, 19.0, 50.0])];
        assert_eq!(late_start_note(&prompt, window), None, "5% of 1 s is 50 ms");
        let late = [cell_starting(&[2.0, 51.0]), cell_starting(&[900.0, 3.0])];
        let note = late_start_note(&late, window).expect("two runs started late");
        assert!(note.starts_with("late start: in 2 run(s)"), "{note}");
        assert!(note.contains("the latest 900 ms late"), "{note}");
    }

    #[test]
    fn runs_that_do_not_time_their_start_need_no_note() {
        let untimed = Cell::of_runs(
            "mutex-load",
            "default",
            2,
            None,
            "ops/s",
            vec![Run::timed(1.0, Duration::from_secs(1), 1)],
        );
        assert_eq!(late_start_note(&[untimed], Duration::from_millis(1)), None);
    }
}
