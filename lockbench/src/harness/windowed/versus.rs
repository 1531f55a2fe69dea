//! A klocks lock against the best of the locks a user would otherwise pick, row by
//! row of a windowed scenario: the throughput verdict ([`crate::verdict`]) against
//! the fastest peer and the fairness verdict against the fairest, with the summary
//! a bar is judged on (geometric means, the lowest row, the verdicts' counts, the
//! unfair cells).

use super::tables::{against_fairest, fairness, short, show_fairness, waits, WAIT_HEADER};
use crate::cells::{num, Cell, Table};
use crate::harness::versus::{against_best, against_shortest_tail, STARVED};
use crate::verdict::{self, Ledger, Settings, FAIRNESS, WAIT};

/// The fairness (slowest thread ÷ mean) below which a cell counts as unfair.
const UNFAIR_BELOW: f64 = 0.5;

/// One row: its parameter columns, our cell and the peers' cells that ran.
pub type VersusRow<'a> = (Vec<String>, &'a Cell, Vec<&'a Cell>);

/// Three tables: throughput, fairness, then the tail of the waits. The first: `label_headers`, ours
/// (`1.23M f0.97`), the fastest peer, ours against it (the throughput ratio with
/// its interval and verdict); notes: the geometric mean and the lowest of the
/// ratios, the verdicts' counts. The second, where the cells counted per thread:
/// `label_headers`, our fairness, the fairest peer's, ours against it (the fairness
/// ratio, above 1: ours is fairer, with its interval and verdict); notes: both
/// geometric means, our cells below [`UNFAIR_BELOW`], the verdicts' counts. The
/// third, where the cells timed their waits ([`wait_versus`]). Three tables rather
/// than one, so that each fits in 120 columns. `None`s without rows.
pub fn versus_peers(
    title: String,
    label_headers: &[&str],
    ours: &str,
    rows: &[VersusRow],
    format: fn(f64) -> String,
) -> [Option<Table>; 3] {
    if rows.is_empty() {
        return [None, None, None];
    }
    let wait = wait_versus(&title, label_headers, ours, rows);
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
        return [Some(table), None, wait];
    };
    fair_table.note(note);
    [Some(table), Some(fair_table), wait]
}

/// The tail of the waits: `label_headers`, our p50/p99/p99.9/max, the peer with the
/// shortest p99.9 and its p99.9, ours against it (the peer's p99.9 ÷ ours, run by
/// run: above 1, ours is shorter, with its interval and verdict); notes: the
/// geometric mean and the longest of the ratios, the verdicts' counts. `None` when no
/// row's cells timed their waits.
fn wait_versus(
    title: &str,
    label_headers: &[&str],
    ours: &str,
    rows: &[VersusRow],
) -> Option<Table> {
    let name = verdict::label(ours);
    let ours_header = format!("{name} {WAIT_HEADER}");
    let headers: Vec<&str> = label_headers
        .iter()
        .copied()
        .chain([
            ours_header.as_str(),
            "shortest p99.9 peer",
            "p99.9 vs shortest",
        ])
        .collect();
    let mut table = Table::new(
        format!("{title}; wait = one lock call, from just before it to just after it returned"),
        &headers,
    );
    let mut ledger = Ledger::default();
    let mut timed = false;
    for (labels, cell, peers) in rows {
        let ours_waits = waits(cell, |w| w.all);
        timed |= ours_waits != "-";
        let judged = against_shortest_tail(cell, peers.iter().copied());
        if let Some((_, judgement)) = judged {
            let row: Vec<String> = label_headers
                .iter()
                .zip(labels)
                .map(|(header, label)| format!("{header} {label}"))
                .collect();
            ledger.add(row.join(", "), judgement);
        }
        let peer = judged.and_then(|(peer, _)| {
            let tail = peer.median_of(crate::cells::Run::wait_tail_ns)?;
            Some(format!("{} {}", num(tail / 1e3), peer.lock))
        });
        table.row(
            labels
                .iter()
                .cloned()
                .chain([
                    ours_waits,
                    peer.unwrap_or_else(|| "-".to_owned()),
                    judged.map_or_else(|| "-".to_owned(), |(_, j)| j.worded(WAIT.0, WAIT.1)),
                ])
                .collect(),
        );
    }
    if !timed {
        return None;
    }
    if let (Some(mean), Some((row, worst))) = (ledger.geometric_mean(), ledger.worst()) {
        table.note(format!(
            "p99.9 vs shortest = the p99.9 wait of the peer whose p99.9 is the shortest ÷ \
             {name}'s, run by run (above 1: {name}'s tail is shorter; with readers and \
             writers, the longer of the roles' p99.9), {:.0}% interval\n  geometric mean \
             {mean:.2}× over {} cells; lowest {} ({row})",
            Settings::default().confidence * 100.0,
            ledger.entries.len(),
            worst.worded(WAIT.0, WAIT.1),
        ));
        table.note(ledger.tally().note_worded(Settings::default(), WAIT));
    }
    Some(table)
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
        let [Some(table), Some(fair), None] =
            versus_peers("t".to_owned(), &["threads"], "default", &rows, si)
        else {
            panic!("two rows, both tables, no waits");
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

    /// `cell`, each run's p99.9 wait `p999_ns` (±1%).
    fn timed(cell: Cell, p999_ns: u64) -> Cell {
        let runs = cell
            .runs
            .into_iter()
            .zip([99, 100, 101, 100, 99])
            .map(|(run, percent)| Run {
                wait: Some(crate::cells::Waits {
                    every: 16,
                    added_ns: 40.0,
                    all: Some(crate::cells::Wait {
                        samples: 1_000,
                        p50_ns: 100,
                        p99_ns: 1_000,
                        p999_ns: p999_ns * percent / 100,
                        max_ns: p999_ns * 10,
                    }),
                    readers: None,
                    writers: None,
                }),
                ..run
            })
            .collect();
        Cell { runs, ..cell }
    }

    #[test]
    fn the_tail_is_judged_against_the_peer_whose_p999_wait_is_the_shortest() {
        // Ours waits 2 µs at p99.9; glibc 4 µs (the shortest peer), std 40 µs.
        let ours = timed(cell("default", 80.0, &[40, 60]), 2_000);
        let std = timed(cell("std", 100.0, &[10, 90]), 40_000);
        let glibc = timed(cell("glibc", 50.0, &[45, 55]), 4_000);
        let rows = [(vec!["1".to_owned()], &ours, vec![&std, &glibc])];
        let [_, _, Some(wait)] = versus_peers("t".to_owned(), &["threads"], "default", &rows, si)
        else {
            panic!("the cells timed their waits");
        };
        let text = wait.to_string();
        let line = text.lines().find(|l| l.starts_with("1 ")).expect("the row");
        assert!(line.contains("0.100/1.00/2.00/20.0"), "{text}");
        assert!(line.contains("4.00 glibc"), "{text}");
        assert!(line.contains("2.00× shorter ["), "{text}");
        assert!(
            text.contains("1 shorter, 0 no clear difference, 0 longer"),
            "{text}"
        );
        // A longer tail than the shortest peer's reads longer.
        let slow = timed(cell("default", 80.0, &[40, 60]), 8_000);
        let rows = [(vec!["1".to_owned()], &slow, vec![&std, &glibc])];
        let [_, _, Some(wait)] = versus_peers("t".to_owned(), &["threads"], "default", &rows, si)
        else {
            panic!("timed");
        };
        assert!(wait.to_string().contains("2.00× longer ["), "{wait}");
    }

    #[test]
    fn rows_without_a_peer_get_dashes_and_no_summary() {
        let ours = cell("default", 80.0, &[40, 60]);
        let rows = [(vec!["2".to_owned()], &ours, vec![])];
        let [Some(table), None, None] =
            versus_peers("t".to_owned(), &["threads"], "default", &rows, si)
        else {
            panic!("a throughput table and no fairness one without a peer");
        };
        let text = table.to_string();
        assert!(!text.contains("geometric mean"), "{text}");
        assert!(matches!(
            versus_peers("t".to_owned(), &["threads"], "default", &[], si),
            [None, None, None]
        ));
    }
}
