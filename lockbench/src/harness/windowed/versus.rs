//! A klocks lock against the best of the locks a user would otherwise pick, row by
//! row of a windowed scenario: the throughput verdict ([`crate::verdict`]) and
//! fairness, with the summary a bar is judged on (geometric mean, the lowest row,
//! the verdicts' counts, the unfair cells).

use super::tables::{fairest, fairness, short, show_fairness};
use crate::harness::versus::against_best;
use crate::report::{Cell, Table};
use crate::verdict::{self, Ledger, Settings};

/// The fairness (slowest thread ÷ mean) below which a cell counts as unfair.
const UNFAIR_BELOW: f64 = 0.5;

/// One row: its parameter columns, our cell and the peers' cells that ran.
pub type VersusRow<'a> = (Vec<String>, &'a Cell, Vec<&'a Cell>);

/// `label_headers`, ours (`1.23M f0.97`), the fastest peer, ours against it (the
/// throughput ratio with its interval and verdict), our fairness and the fairest
/// peer's; notes: the geometric mean and the lowest of the ratios, the verdicts'
/// counts, both fairness geometric means and our cells below [`UNFAIR_BELOW`].
/// `None` without rows.
pub fn versus_peers<'a>(
    title: String,
    label_headers: &[&str],
    ours: &str,
    rows: impl IntoIterator<Item = VersusRow<'a>>,
    format: fn(f64) -> String,
) -> Option<Table> {
    let name = verdict::label(ours);
    let ratio_header = format!("{name} vs best");
    let fairness_header = format!("f {ours}");
    let headers: Vec<&str> = label_headers
        .iter()
        .copied()
        .chain([
            ours,
            "best peer",
            ratio_header.as_str(),
            fairness_header.as_str(),
            "fairest peer",
        ])
        .collect();
    let mut table = Table::new(title, &headers);
    let mut ledger = Ledger::default();
    let mut fairnesses: Vec<(f64, f64)> = Vec::new();
    let mut rows_seen = 0;
    for (labels, cell, peers) in rows {
        rows_seen += 1;
        let judged = against_best(cell, peers.iter().copied(), Settings::default());
        if let Some((_, judgement)) = judged {
            let row: Vec<String> = label_headers
                .iter()
                .zip(&labels)
                .map(|(header, label)| format!("{header} {label}"))
                .collect();
            ledger.add(row.join(", "), judgement);
        }
        let ours_fair = fairness(cell);
        let fairest_peer = fairest(&peers);
        fairnesses.extend(ours_fair.zip(fairest_peer.map(|(f, _)| f)));
        table.row(
            labels
                .into_iter()
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
                    show_fairness(ours_fair),
                    fairest_peer
                        .map_or_else(|| "-".to_owned(), |(f, lock)| format!("{f:.2} {lock}")),
                ])
                .collect(),
        );
    }
    if rows_seen == 0 {
        return None;
    }
    for note in ledger.notes(name, "the best peer", Settings::default()) {
        table.note(note);
    }
    if let Some(note) = fairness_note(ours, &fairnesses) {
        table.note(note);
    }
    Some(table)
}

/// The fairness note: both geometric means over the rows where both have one, and
/// our cells below [`UNFAIR_BELOW`].
fn fairness_note(ours: &str, fairnesses: &[(f64, f64)]) -> Option<String> {
    let mean = |of: fn(&(f64, f64)) -> f64| verdict::geometric_mean(fairnesses.iter().map(of));
    let unfair = fairnesses.iter().filter(|(f, _)| *f < UNFAIR_BELOW).count();
    Some(format!(
        "fairness (slowest thread ÷ mean): {ours}'s geometric mean {:.2}, the fairest peer's of \
         each row {:.2}; {ours} below {UNFAIR_BELOW:.2} in {unfair} of {} cells",
        mean(|f| f.0)?,
        mean(|f| f.1)?,
        fairnesses.len(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{si, PerThread, Run};

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
            // Ours 0.80× std (the fastest); pthread is the fairest.
            (
                cell("default", 80.0, &[40, 60]),
                cell("std", 100.0, &[10, 90]),
                cell("pthread", 50.0, &[45, 55]),
            ),
            // Ours 1.25× std; nobody fairer than ours.
            (
                cell("default", 125.0, &[50, 50]),
                cell("std", 100.0, &[50, 50]),
                cell("pthread", 60.0, &[20, 80]),
            ),
        ];
        let table = versus_peers(
            "t".to_owned(),
            &["threads"],
            "default",
            rows.iter()
                .enumerate()
                .map(|(i, (ours, a, b))| (vec![(i + 1).to_string()], ours, vec![a, b])),
            si,
        )
        .expect("two rows");
        let text = table.to_string();
        let row = |first: &str| {
            text.lines()
                .find(|line| line.starts_with(first))
                .unwrap_or_else(|| panic!("no row {first}: {text}"))
                .split_whitespace()
                .collect::<Vec<_>>()
        };
        let judged = |first: &str| {
            let row = row(first);
            let verdict = row[5..7].join(" ");
            let labels: Vec<&str> = row[..5].iter().chain(&row[8..]).copied().collect();
            (labels, verdict)
        };
        assert_eq!(
            judged("1 "),
            (
                vec!["1", "80.0", "f0.80", "100", "std", "0.80", "0.90", "pthread"],
                "1.25× slower".to_owned()
            )
        );
        assert_eq!(
            judged("2 "),
            (
                vec!["2", "125", "f1.00", "100", "std", "1.00", "1.00", "std"],
                "1.25× faster".to_owned()
            )
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
            text.contains("geometric mean 0.89, the fairest peer's of each row 0.95; default below 0.50 in 0 of 2 cells"),
            "{text}"
        );
    }

    #[test]
    fn rows_without_a_peer_get_dashes_and_no_summary() {
        let ours = cell("default", 80.0, &[40, 60]);
        let table = versus_peers(
            "t".to_owned(),
            &["threads"],
            "default",
            [(vec!["2".to_owned()], &ours, vec![])],
            si,
        )
        .expect("a row");
        let text = table.to_string();
        assert!(!text.contains("geometric mean"), "{text}");
        assert!(versus_peers("t".to_owned(), &["threads"], "default", [], si).is_none());
    }
}
