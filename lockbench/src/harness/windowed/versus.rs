//! A klocks lock against the best of the locks a user would otherwise pick, row by
//! row of a windowed scenario: throughput ratio and fairness, with the summary a bar
//! is judged on (geometric means, the lowest ratio, the unfair cells).

use super::tables::{fairest, fairness, fastest, short, show_fairness};
use crate::report::{Cell, Table};

/// The throughput ratio below which a cell counts as lost to the best peer.
const LOST_BELOW: f64 = 0.9;
/// The fairness (slowest thread ÷ mean) below which a cell counts as unfair.
const UNFAIR_BELOW: f64 = 0.5;

/// One row: its parameter columns, our cell and the peers' cells that ran.
pub type VersusRow<'a> = (Vec<String>, &'a Cell, Vec<&'a Cell>);

/// `label_headers`, ours (`1.23M f0.97`), the fastest peer, ours ÷ its median
/// throughput, our fairness and the fairest peer's; notes: the geometric mean and
/// the lowest of the ratios, the cells below [`LOST_BELOW`], both fairness
/// geometric means and our cells below [`UNFAIR_BELOW`]. `None` without rows.
pub fn versus_peers<'a>(
    title: String,
    label_headers: &[&str],
    ours: &str,
    rows: impl IntoIterator<Item = VersusRow<'a>>,
    format: fn(f64) -> String,
) -> Option<Table> {
    let ratio_header = format!("{ours} ÷ best");
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
    let mut summary = Summary::default();
    let mut rows_seen = 0;
    for (labels, cell, peers) in rows {
        rows_seen += 1;
        let best = fastest(&peers);
        let ratio = cell
            .summary
            .zip(best)
            .filter(|(_, (best, _))| *best > 0.0)
            .map(|(s, (best, _))| s.median / best);
        let ours_fair = fairness(cell);
        let fairest_peer = fairest(&peers);
        summary.add(
            &labels,
            label_headers,
            ratio,
            ours_fair.zip(fairest_peer.map(|(f, _)| f)),
        );
        table.row(
            labels
                .into_iter()
                .chain([
                    short(cell, format),
                    best.map_or_else(
                        || "-".to_owned(),
                        |(ops, lock)| format!("{} {lock}", format(ops)),
                    ),
                    ratio.map_or_else(|| "-".to_owned(), |r| format!("{r:.2}×")),
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
    for note in summary.notes(ours) {
        table.note(note);
    }
    Some(table)
}

/// What the notes under a versus table say, gathered row by row.
#[derive(Default)]
struct Summary {
    /// Ours ÷ the best peer, per row where both finished.
    ratios: Vec<f64>,
    /// The lowest ratio and its row, as `header value, ...`.
    lowest: Option<(f64, String)>,
    /// (ours, the fairest peer's), per row where both have a fairness.
    fairness: Vec<(f64, f64)>,
}

impl Summary {
    fn add(
        &mut self,
        labels: &[String],
        headers: &[&str],
        ratio: Option<f64>,
        fairness: Option<(f64, f64)>,
    ) {
        if let Some(ratio) = ratio {
            self.ratios.push(ratio);
            if self
                .lowest
                .as_ref()
                .is_none_or(|(lowest, _)| ratio < *lowest)
            {
                let row: Vec<String> = headers
                    .iter()
                    .zip(labels)
                    .map(|(header, label)| format!("{header} {label}"))
                    .collect();
                self.lowest = Some((ratio, row.join(", ")));
            }
        }
        self.fairness.extend(fairness);
    }

    fn notes(&self, ours: &str) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some((lowest, row)) = &self.lowest {
            let lost = self.ratios.iter().filter(|&&r| r < LOST_BELOW).count();
            notes.push(format!(
                "{ours} ÷ best peer = {ours}'s median throughput ÷ the fastest peer's (above 1: \
                 {ours} is faster): geometric mean {:.2}× over {n} cells, lowest {lowest:.2}× \
                 ({row}); below {LOST_BELOW:.2}× in {lost} of {n} cells",
                geometric_mean(self.ratios.iter().copied()),
                n = self.ratios.len(),
            ));
        }
        if !self.fairness.is_empty() {
            let unfair = self
                .fairness
                .iter()
                .filter(|(f, _)| *f < UNFAIR_BELOW)
                .count();
            notes.push(format!(
                "fairness (slowest thread ÷ mean): {ours}'s geometric mean {:.2}, the fairest \
                 peer's of each row {:.2}; {ours} below {UNFAIR_BELOW:.2} in {unfair} of {} cells",
                geometric_mean(self.fairness.iter().map(|(f, _)| *f)),
                geometric_mean(self.fairness.iter().map(|(_, f)| *f)),
                self.fairness.len(),
            ));
        }
        notes
    }
}

/// The geometric mean of positive values (0 if any is 0).
fn geometric_mean(values: impl Iterator<Item = f64> + Clone) -> f64 {
    let n = values.clone().count() as f64;
    (values.map(f64::ln).sum::<f64>() / n).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{si, PerThread, Run};

    /// A finished one-run cell at `ops` ops/s whose threads did `per_thread`.
    fn cell(lock: &'static str, ops: f64, per_thread: &[u64]) -> Cell {
        let run = Run {
            per_thread: PerThread::of(per_thread),
            ..Run::timed(
                ops,
                std::time::Duration::from_secs(1),
                per_thread.iter().sum(),
            )
        };
        Cell::of_runs(
            "overcommit",
            lock,
            per_thread.len(),
            None,
            "ops/s",
            vec![run],
        )
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
        assert_eq!(
            row("1 "),
            ["1", "80.0", "f0.80", "100", "std", "0.80×", "0.80", "0.90", "pthread"]
        );
        assert_eq!(
            row("2 "),
            ["2", "125", "f1.00", "100", "std", "1.25×", "1.00", "1.00", "std"]
        );
        // sqrt(0.8 × 1.25) = 1; the lowest is the first row; one cell below 0.90.
        assert!(
            text.contains("geometric mean 1.00× over 2 cells, lowest 0.80× (threads 1); below 0.90× in 1 of 2 cells"),
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
