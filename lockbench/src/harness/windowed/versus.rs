//! A klocks lock against the best of the locks a user would otherwise pick, row by
//! row of a windowed scenario: the throughput verdict ([`crate::verdict`]) against
//! the fastest peer and the fairness verdict against the fairest, with the summary
//! a bar is judged on (geometric means, the lowest row, the verdicts' counts, the
//! unfair cells).

use super::tables::{against_fairest, fairness, short, show_fairness};
use crate::cells::{Cell, Table};
use crate::harness::versus::{against_best, STARVED};
use crate::verdict::{self, Ledger, Settings, FAIRNESS};

/// The fairness (slowest thread ÷ mean) below which a cell counts as unfair.
const UNFAIR_BELOW: f64 = 0.5;

/// One row: its parameter columns, our cell and the peers' cells that ran.
pub type VersusRow<'a> = (Vec<String>, &'a Cell, Vec<&'a Cell>);

/// Two tables: throughput, then fairness. The first: `label_headers`, ours
/// (`1.23M f0.97`), the fastest peer, ours against it (the throughput ratio with
/// its interval and verdict); notes: the geometric mean and the lowest of the
/// ratios, the verdicts' counts. The second, where the cells counted per thread:
/// `label_headers`, our fairness, the fairest peer's, ours against it (the fairness
/// ratio, above 1: ours is fairer, with its interval and verdict); notes: both
/// geometric means, our cells below [`UNFAIR_BELOW`], the verdicts' counts. Two
/// tables rather than one, so that each fits in 120 columns. `None`s without rows.
pub fn versus_peers(
    title: String,
    label_headers: &[&str],
    ours: &str,
    rows: &[VersusRow],
    format: fn(f64) -> String,
) -> [Option<Table>; 2] {
    if rows.is_empty() {
        return [None, None];
    }
    let name = verdict::label(ours);
    let ratio_header = format!("{name} vs best");
    let headers: Vec<&str> = label_headers
        .iter()
        .copied()
        .chain([name, "best peer", ratio_header.as_str()])
        .collect();
    let mut table = Table::new(title.clone(), &headers);
    let fairness_headers: Vec<&str> = label_headers
        .iter()
        .copied()
        .chain(["f ours", "fairest peer", "f vs fairest"])
        .collect();
    let mut fair_table = Table::new(
        format!("{title}; fairness f = the slowest thread's operations ÷ the mean"),
        &fairness_headers,
    );
    let (mut ledger, mut fair_ledger) = (Ledger::default(), Ledger::default());
    let mut fairnesses: Vec<(f64, f64)> = Vec::new();
    for (labels, cell, peers) in rows {
        let row: Vec<String> = label_headers
            .iter()
            .zip(labels)
            .map(|(header, label)| format!("{header} {label}"))
            .collect();
        let judged = against_best(cell, peers.iter().copied(), Settings::default());
        if let Some((_, judgement)) = judged {
            ledger.add(row.join(", "), judgement);
        }
        table.row(
            labels
                .iter()
                .cloned()
                .chain([
                    short(cell, format),
                    judged.map_or_else(
                        || "-".to_owned(),
                        |(best, _)| match best.summary {
                            Some(s) => format!("{} {}", format(s.median), best.lock),
                            None => best.lock.to_owned(),
                        },
                    ),
                    judged.map_or_else(|| "-".to_owned(), |(_, j)| j.to_string()),
                ])
                .collect(),
        );
        let ours_fair = fairness(cell);
        let against = against_fairest(cell, peers);
        let fairest_peer = against.map(|(f, lock, _)| (f, lock));
        let fair_judged = against.and_then(|(_, _, judged)| judged);
        if let Some(judgement) = fair_judged {
            fair_ledger.add(row.join(", "), judgement);
        }
        fairnesses.extend(ours_fair.zip(fairest_peer.map(|(f, _)| f)));
        fair_table.row(
            labels
                .iter()
                .cloned()
                .chain([
                    show_fairness(ours_fair),
                    fairest_peer
                        .map_or_else(|| "-".to_owned(), |(f, lock)| format!("{f:.2} {lock}")),
                    fair_judged
                        .map_or_else(|| "-".to_owned(), |j| j.worded(FAIRNESS.0, FAIRNESS.1)),
                ])
                .collect(),
        );
    }
    for note in ledger.notes(name, "the best peer", Settings::default()) {
        table.note(note);
    }
    let Some(note) = fairness_note(name, &fairnesses, &fair_ledger) else {
        return [Some(table), None];
    };
    fair_table.note(note);
    [Some(table), Some(fair_table)]
}

/// The fairness note: what the fairness verdict compares, both geometric means over
/// the rows where both have one, our cells below [`UNFAIR_BELOW`], and the fairness
/// verdicts' counts.
fn fairness_note(ours: &str, fairnesses: &[(f64, f64)], verdicts: &Ledger) -> Option<String> {
    let mean = |of: fn(&(f64, f64)) -> f64| verdict::geometric_mean(fairnesses.iter().map(of));
    let unfair = fairnesses.iter().filter(|(f, _)| *f < UNFAIR_BELOW).count();
    Some(format!(
        "f ours = {ours}'s fairness (with readers and writers, the lower of the roles', each \
         thread against its role's mean); f vs fairest = {ours}'s f ÷ the fairest peer's, run \
         by run (above 1: {ours} is fairer; a starved thread counts as {STARVED})\n  {ours}'s \
         geometric mean \
         {:.2}, the fairest peer's of each row {:.2}; {ours} below {UNFAIR_BELOW:.2} in \
         {unfair} of {} cells\n  fairness {}",
        mean(|f| f.0)?,
        mean(|f| f.1)?,
        fairnesses.len(),
        verdicts.tally().note_worded(Settings::default(), FAIRNESS),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::{si, PerThread, Run};

    /// A finished five-run cell at `ops` ops/s (±1%) whose threads did `per_thread`.
    fn cell(lock: &'static str, ops: f64, per_thread: &[u64]) -> Cell {
        let runs = [0.99, 1.0, 1.01, 0.995, 1.005]
            .iter()
            .map(|jitter| Run {
                per_thread: PerThread::of(per_thread),
                ..Run::timed(
                    ops * jitter,
                    std::time::Duration::from_secs(1),
                    per_thread.iter().sum(),
                )
            })
            .collect();
        Cell::of_runs("overcommit", lock, per_thread.len(), None, "ops/s", runs)
    }

    #[test]
    fn each_row_is_judged_against_its_fastest_and_its_fairest_peer() {
        let rows = [
            // Ours 0.80× std (the fastest); glibc is the fairest.
            (
                cell("default", 80.0, &[40, 60]),
                cell("std", 100.0, &[10, 90]),
                cell("glibc", 50.0, &[45, 55]),
            ),
            // Ours 1.25× std; nobody fairer than ours.
            (
                cell("default", 125.0, &[50, 50]),
                cell("std", 100.0, &[50, 50]),
                cell("glibc", 60.0, &[20, 80]),
            ),
        ];
        let rows: Vec<VersusRow> = rows
            .iter()
            .enumerate()
            .map(|(i, (ours, a, b))| (vec![(i + 1).to_string()], ours, vec![a, b]))
            .collect();
        let [Some(table), Some(fair)] =
            versus_peers("t".to_owned(), &["threads"], "default", &rows, si)
        else {
            panic!("two rows, both tables");
        };
        let (text, fair) = (table.to_string(), fair.to_string());
        let row = |text: &str, first: &str| {
            text.lines()
                .find(|line| line.starts_with(first))
                .unwrap_or_else(|| panic!("no row {first}: {text}"))
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        // threads, ours, the fastest peer, the verdict (ratio, word, interval).
        assert_eq!(
            row(&text, "1 ")[..7],
            ["1", "80.0", "f0.80", "100", "std", "1.25×", "slower"]
        );
        assert_eq!(
            row(&text, "2 ")[..7],
            ["2", "125", "f1.00", "100", "std", "1.25×", "faster"]
        );
        // threads, our fairness, the fairest peer, the fairness verdict: 0.80 ÷ 0.90
        // is 1.125× less fair.
        let first = row(&fair, "1 ");
        assert_eq!(first[..4], ["1", "0.80", "0.90", "glibc"]);
        assert!(
            first[4].starts_with("1.1") && first[5..7] == ["less", "fair"],
            "{fair}"
        );
        assert_eq!(
            row(&fair, "2 "),
            ["2", "1.00", "1.00", "std", "≈", "[1.00–1.00]"]
        );
        // sqrt(0.8 × 1.25) = 1; the lowest is the first row, one faster, one slower.
        assert!(
            text.contains("geometric mean 1.00× over 2 cells; lowest 1.25× slower ["),
            "{text}"
        );
        assert!(text.contains("] (threads 1)"), "{text}");
        assert!(
            text.contains("1 faster, 0 no clear difference, 1 slower"),
            "{text}"
        );
        // Ours: sqrt(0.8 × 1.0) = 0.89; the fairest peers': sqrt(0.9 × 1.0) = 0.95.
        assert!(
            fair.contains("klocks::Mutex's geometric mean 0.89, the fairest peer's of each row 0.95; klocks::Mutex below 0.50 in 0 of 2 cells"),
            "{fair}"
        );
        assert!(
            fair.contains("0 fairer, 1 no clear difference, 1 less fair"),
            "{fair}"
        );
    }

    #[test]
    fn rows_without_a_peer_get_dashes_and_no_summary() {
        let ours = cell("default", 80.0, &[40, 60]);
        let rows = [(vec!["2".to_owned()], &ours, vec![])];
        let [Some(table), None] = versus_peers("t".to_owned(), &["threads"], "default", &rows, si)
        else {
            panic!("a throughput table and no fairness one without a peer");
        };
        let text = table.to_string();
        assert!(!text.contains("geometric mean"), "{text}");
        assert!(matches!(
            versus_peers("t".to_owned(), &["threads"], "default", &[], si),
            [None, None]
        ));
    }
}
