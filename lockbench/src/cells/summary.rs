//! The summary at the end of a run: in each scenario, `klocks::Mutex` (`default`)
//! and `klocks::RwLock` (`default-rw`) against the fastest of the locks a user would
//! otherwise pick, cell by cell, with the verdicts of [`crate::verdict`]: throughput
//! and fairness, and where the cells timed their lock waits the p99.9 wait against
//! the peer whose p99.9 is the shortest; and whether the machine was quiet while it
//! measured.

use serde::Serialize;

use super::{Cell, Table};
use crate::harness::versus::{against_best, against_shortest_tail, STARVED};
use crate::harness::windowed::{against_fairest, fairness};
use crate::locks::{LockName, ALTERNATIVES, DEFAULT};
use crate::rwlocks::{RwLockName, RW_ALTERNATIVES, RW_DEFAULT};
use crate::verdict::{self, Judgement, Ledger, Settings, Tally, WAIT};

/// One cell of ours against the best peer of its row.
#[derive(Debug, Clone, Serialize)]
pub struct Versus {
    /// The scenario.
    pub scenario: &'static str,
    /// Ours, as lockbench names it (`default`, `default-rw`).
    pub lock: &'static str,
    /// The row: `threads 4, short cs, 2×`.
    pub row: String,
    /// The fastest peer of the row.
    pub best_peer: &'static str,
    /// Ours ÷ the best peer, as throughput.
    pub judgement: Judgement,
    /// Our fairness (slowest thread ÷ mean) and the fairest peer's, where counted.
    pub fairness: Option<(f64, f64)>,
    /// Ours against the fairest peer by the fairness of the runs (above 1: ours is
    /// fairer), where both counted per thread.
    pub fairness_judgement: Option<Judgement>,
    /// Our runs' and the best peer's log throughputs, for the geometric mean's
    /// interval.
    #[serde(skip)]
    pub runs: (Vec<f64>, Vec<f64>),
    /// Where the cells timed their waits: ours against the peer with the shortest
    /// p99.9 wait.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait: Option<TailVersus>,
}

/// One cell of ours against the peer of its row whose p99.9 wait is the shortest.
#[derive(Debug, Clone, Serialize)]
pub struct TailVersus {
    /// The peer with the shortest median p99.9 wait.
    pub shortest_peer: &'static str,
    /// That peer's p99.9 ÷ ours, run by run (above 1: ours is shorter).
    pub judgement: Judgement,
    /// Our runs' and that peer's p99.9 waits as log throughputs (`-ln`), for the
    /// geometric mean's interval.
    #[serde(skip)]
    pub runs: (Vec<f64>, Vec<f64>),
}

/// The row a cell belongs to: every parameter but the lock.
pub(crate) fn row_of(cell: &Cell) -> String {
    let mut parts = vec![format!("threads {}", cell.threads)];
    if let Some(layout) = cell.layout {
        parts.push(layout.to_owned());
    }
    if let Some(o) = cell.overcommit {
        parts.push(format!("{} cs, {}×", o.cs, o.ratio));
    }
    if let Some(m) = cell.mutex_load {
        parts.push(format!("load {}", m.load_pauses));
    }
    if let Some(rw) = cell.rw {
        parts.push(format!(
            "{}R+{}W, load {}",
            rw.readers, rw.writers, rw.load_pauses
        ));
    }
    parts.join(", ")
}

/// Every cell of `default` and `default-rw` that ran beside a peer, with the peers of
/// its row (same scenario and row), in the order measured.
fn ours_beside_peers(cells: &[Cell]) -> Vec<(&Cell, String, Vec<&Cell>)> {
    let pairs: [(&str, Vec<&str>); 2] = [
        (DEFAULT.name(), ALTERNATIVES.map(LockName::name).to_vec()),
        (
            RW_DEFAULT.name(),
            RW_ALTERNATIVES.map(RwLockName::name).to_vec(),
        ),
    ];
    let mut found = Vec::new();
    for ours in cells {
        let Some((_, peers)) = pairs.iter().find(|(name, _)| *name == ours.lock) else {
            continue;
        };
        let row = row_of(ours);
        let in_row: Vec<&Cell> = cells
            .iter()
            .filter(|c| c.scenario == ours.scenario && peers.contains(&c.lock))
            .filter(|c| row_of(c) == row)
            .collect();
        if !in_row.is_empty() {
            found.push((ours, row, in_row));
        }
    }
    found
}

/// The cells of ours that ran beside a peer and have no verdict, because ours or
/// every peer of the row did not finish (a run hit its cap): (scenario, lock, row).
pub(crate) fn unjudged(cells: &[Cell]) -> Vec<(&'static str, &'static str, String)> {
    ours_beside_peers(cells)
        .into_iter()
        .filter(|(ours, _, in_row)| {
            against_best(ours, in_row.iter().copied(), Settings::default()).is_none()
        })
        .map(|(ours, row, _)| (ours.scenario, ours.lock, row))
        .collect()
}

/// Every cell of `default` and `default-rw` against the best of its peers in the same
/// scenario and row, in the order measured; a cell that has no verdict (`unjudged`)
/// is left out.
pub fn versus(cells: &[Cell]) -> Vec<Versus> {
    let mut found = Vec::new();
    for (ours, row, in_row) in ours_beside_peers(cells) {
        let Some((best, judgement)) =
            against_best(ours, in_row.iter().copied(), Settings::default())
        else {
            continue;
        };
        let fairest = against_fairest(ours, &in_row);
        let wait = against_shortest_tail(ours, in_row.iter().copied()).map(|(peer, judgement)| {
            TailVersus {
                shortest_peer: peer.lock,
                judgement,
                runs: (ours.log_wait_tails(), peer.log_wait_tails()),
            }
        });
        found.push(Versus {
            scenario: ours.scenario,
            lock: ours.lock,
            row,
            best_peer: best.lock,
            judgement,
            fairness: fairness(ours).zip(fairest.map(|(f, _, _)| f)),
            fairness_judgement: fairest.and_then(|(_, _, judged)| judged),
            runs: (ours.log_throughputs(), best.log_throughputs()),
            wait,
        });
    }
    found
}

/// The summary table: a line per scenario and lock of ours, then the machine's
/// conditions; `None` when neither of ours ran beside a peer. A cell of ours without
/// a verdict (ours or every peer did not finish) is counted on its line and named
/// under the table, so that a run whose every cell of ours hit its cap (a machine
/// stalled for the cap's length) still ends with the summary saying so.
pub fn table(cells: &[Cell]) -> Option<Table> {
    let versus = versus(cells);
    let unjudged = unjudged(cells);
    if versus.is_empty() && unjudged.is_empty() {
        return None;
    }
    let settings = Settings::default();
    let mut table = Table::new(
        format!(
            "summary: klocks::Mutex and klocks::RwLock against the fastest of std, parking_lot, \
             glibc per cell ({:.0}%, ±{:.0}%)",
            settings.confidence * 100.0,
            settings.min_effect * 100.0
        ),
        &[
            "scenario",
            "lock",
            "faster/≈/slower",
            "geometric mean",
            "lowest",
            "fairness",
        ],
    );
    // The lowest cell of each line, named under the table (a row would not fit).
    let mut lowest: Vec<String> = Vec::new();
    let mut groups: Vec<(&str, &str)> = Vec::new();
    let named = versus.iter().map(|v| (v.scenario, v.lock));
    for group in named.chain(
        unjudged
            .iter()
            .map(|(scenario, lock, _)| (*scenario, *lock)),
    ) {
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    let mut all = Ledger::default();
    for (scenario, lock) in groups {
        let mut ledger = Ledger::default();
        let mut fairnesses = Vec::new();
        let mut fair_verdicts = Vec::new();
        let mut runs: Vec<(&[f64], &[f64])> = Vec::new();
        for v in versus
            .iter()
            .filter(|v| v.scenario == scenario && v.lock == lock)
        {
            ledger.add(v.row.clone(), v.judgement);
            all.add(v.row.clone(), v.judgement);
            fairnesses.extend(v.fairness);
            fair_verdicts.extend(v.fairness_judgement);
            runs.push((&v.runs.0, &v.runs.1));
        }
        let mean = verdict::geometric_mean_interval(&runs, settings.confidence);
        let tally = ledger.tally();
        let mut counts = format!(
            "{}/{}/{}",
            tally.faster, tally.no_clear_difference, tally.slower
        );
        if tally.too_few_runs > 0 {
            counts += &format!(" ({} too few runs)", tally.too_few_runs);
        }
        let unfinished = unjudged
            .iter()
            .filter(|(s, l, _)| (*s, *l) == (scenario, lock))
            .count();
        if unfinished > 0 {
            counts += &format!(" ({unfinished} DNF)");
        }
        // A cell where some thread of either lock got no turn (overcommit's 64 threads
        // in a 100 ms window) has a fairness of 0, which would make any geometric mean
        // 0: such cells are counted instead, and the means are over the others.
        let turns: Vec<(f64, f64)> = fairnesses
            .iter()
            .copied()
            .filter(|(ours, peer)| *ours > 0.0 && *peer > 0.0)
            .collect();
        let starved = fairnesses.len() - turns.len();
        let fair = |of: fn(&(f64, f64)) -> f64| {
            verdict::geometric_mean(turns.iter().map(of))
                .map_or("-".to_owned(), |f| format!("{f:.2}"))
        };
        let means = match (turns.is_empty(), starved) {
            (true, 0) => "-".to_owned(),
            (false, 0) => format!("{} / {}", fair(|f| f.0), fair(|f| f.1)),
            (true, n) => format!("- ({n} starved)"),
            (false, n) => format!("{} / {} ({n} starved)", fair(|f| f.0), fair(|f| f.1)),
        };
        // Cells with too few runs for a verdict are counted in the throughput column
        // already (the same runs).
        let fair_tally = Tally::of(&fair_verdicts);
        let fairness = match fair_tally.judged() {
            0 => means,
            _ => format!(
                "{}/{}/{}: {means}",
                fair_tally.faster, fair_tally.no_clear_difference, fair_tally.slower
            ),
        };
        table.row(vec![
            scenario.to_owned(),
            verdict::label(lock).to_owned(),
            counts,
            match (mean, ledger.geometric_mean()) {
                (Some(mean), _) => mean.to_string(),
                (None, Some(mean)) => format!("{mean:.2}×, too few runs"),
                (None, None) => "-".to_owned(),
            },
            ledger.worst().map_or("-".to_owned(), |(row, judgement)| {
                lowest.push(format!("{scenario} {}: {row}", verdict::label(lock)));
                crate::verdict::ratio(judgement)
            }),
            fairness,
        ]);
        let tail_rows = versus
            .iter()
            .filter(|v| v.scenario == scenario && v.lock == lock)
            .filter_map(|v| Some((v.row.as_str(), v.wait.as_ref()?)));
        if let Some(tail) = tail_row(scenario, lock, tail_rows, &mut lowest) {
            table.row(tail);
        }
    }
    table.note(format!(
        "faster/≈/slower: cells where ours is faster than the fastest peer, not clearly \
         different, slower\n  geometric mean: of the ratios, as throughput (above 1: ours is \
         faster), with a bootstrap interval\n  lowest: the cell with the lowest ratio, with \
         its interval; those cells: {}\n  fairness: slowest thread ÷ mean against the \
         fairest peer's, run by run: cells where ours is fairer/≈/less fair\n  (a starved \
         thread counts as {STARVED}); then ours / the fairest peer's, geometric means over \
         the cells where every\n  thread of both got a turn; \"N starved\": cells where a \
         thread of either got none\n  p99.9 wait: the p99.9 lock wait of the peer with the \
         shortest ÷ ours, run by run (above 1: ours is shorter; with\n  readers and \
         writers, the longer role's); its faster/≈/slower: cells where ours is \
         shorter/≈/longer",
        match lowest.is_empty() {
            true => "-".to_owned(),
            false => lowest.join("; "),
        }
    ));
    if !unjudged.is_empty() {
        let named: Vec<String> = unjudged
            .iter()
            .map(|(scenario, lock, row)| format!("{scenario} {}: {row}", verdict::label(lock)))
            .collect();
        table.note(format!(
            "DNF: no verdict, ours or every peer of the row did not finish (a run hit its \
             cap or did not drain): {}",
            named.join("; ")
        ));
    }
    table.note(all.tally().note(settings));
    table.note(machine_note(cells));
    Some(table)
}

/// The p99.9-wait line under a scenario's line, from its cells' verdicts on the tail
/// (`rows`: each cell's row and verdict); `None` when no cell has one. Its lowest cell
/// is named in `lowest`.
fn tail_row<'a>(
    scenario: &str,
    lock: &str,
    rows: impl Iterator<Item = (&'a str, &'a TailVersus)>,
    lowest: &mut Vec<String>,
) -> Option<Vec<String>> {
    let settings = Settings::default();
    let mut ledger = Ledger::default();
    let mut runs: Vec<(&[f64], &[f64])> = Vec::new();
    for (row, tail) in rows {
        ledger.add(row, tail.judgement);
        runs.push((&tail.runs.0, &tail.runs.1));
    }
    let (row, worst) = ledger.worst()?;
    let tally = ledger.tally();
    let mut counts = format!(
        "{}/{}/{}",
        tally.faster, tally.no_clear_difference, tally.slower
    );
    if tally.too_few_runs > 0 {
        counts += &format!(" ({} too few runs)", tally.too_few_runs);
    }
    let mean = verdict::geometric_mean_interval(&runs, settings.confidence);
    let label = verdict::label(lock);
    lowest.push(format!("{scenario} {label} p99.9 wait: {row}"));
    Some(vec![
        scenario.to_owned(),
        format!("{label} p99.9 wait"),
        counts,
        match (mean, ledger.geometric_mean()) {
            (Some(mean), _) => mean.to_string(),
            (None, Some(mean)) => format!("{mean:.2}×, too few runs"),
            (None, None) => "-".to_owned(),
        },
        worst.worded(WAIT.0, WAIT.1),
        "-".to_owned(),
    ])
}

/// Whether the machine was quiet: the contended cells whose placement changed (`*`)
/// or that lost CPU time to others (`!`).
fn machine_note(cells: &[Cell]) -> String {
    let watched: Vec<_> = cells.iter().filter_map(|c| c.conditions.as_ref()).collect();
    if watched.is_empty() {
        return "machine: no contended cell was watched".to_owned();
    }
    let moved = watched.iter().filter(|c| c.placement_changed).count();
    let noisy = watched.iter().filter(|c| c.noisy).count();
    let verdict = match moved + noisy {
        0 => "quiet",
        _ => "noisy: treat the verdicts of marked cells with care",
    };
    format!(
        "machine: {verdict} ({moved} of {} watched cells changed placement *, {noisy} lost CPU \
         time to others !)",
        watched.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::{PerThread, Run, Unfinished};
    use std::time::Duration;

    /// A five-run overcommit cell of `lock` at about `ops` ops/s, threads sharing as
    /// `per_thread`.
    fn cell(lock: &'static str, threads: usize, ops: f64, per_thread: &[u64]) -> Cell {
        let runs = [0.99, 1.0, 1.01, 0.995, 1.005]
            .iter()
            .map(|jitter| Run {
                per_thread: PerThread::of(per_thread),
                ..Run::timed(ops * jitter, Duration::from_secs(1), 1)
            })
            .collect();
        Cell::of_runs("mutex-load", lock, threads, None, "ops/s", runs)
    }

    /// The summary's mutex-load line for `cells`.
    fn mutex_load_line(cells: &[Cell]) -> String {
        let text = table(cells).expect("ours ran").to_string();
        let line = text.lines().find(|l| l.starts_with("mutex-load"));
        line.expect("a mutex-load line").to_owned()
    }

    #[test]
    fn each_of_ours_is_judged_against_the_fastest_peer_of_its_row() {
        let cells = [
            cell("default", 2, 120.0, &[50, 50]),
            cell("std", 2, 100.0, &[40, 60]),
            cell("glibc", 2, 90.0, &[50, 50]),
            cell("default", 4, 80.0, &[25, 75]),
            cell("std", 4, 100.0, &[50, 50]),
            // Not a peer: never the best, whatever its throughput.
            cell("spin", 4, 500.0, &[50, 50]),
            cell("default", 8, 101.0, &[50, 50]),
            cell("parking_lot", 8, 100.0, &[50, 50]),
        ];
        let found = versus(&cells);
        let verdicts: Vec<(&str, &str, verdict::Verdict)> = found
            .iter()
            .map(|v| (v.row.as_str(), v.best_peer, v.judgement.verdict))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("threads 2", "std", verdict::Verdict::Faster),
                ("threads 4", "std", verdict::Verdict::Slower),
                (
                    "threads 8",
                    "parking_lot",
                    verdict::Verdict::NoClearDifference
                ),
            ]
        );
        assert_eq!(found[0].fairness, Some((1.0, 1.0)));
        let text = table(&cells).expect("ours ran").to_string();
        let line = text
            .lines()
            .find(|l| l.starts_with("mutex-load"))
            .expect("a mutex-load line");
        assert!(line.contains("klocks::Mutex"), "{line}");
        assert!(line.contains("1/1/1"), "{line}");
        // The geometric mean of 1.2, 0.8 and 1.01 (0.99) with its interval, then the
        // lowest.
        assert!(line.contains("  0.99× ["), "{line}");
        assert_eq!(line.matches('[').count(), 2, "{line}");
        assert!(line.contains("slower 0.80× ["), "{line}");
        assert!(
            text.contains("those cells: mutex-load klocks::Mutex: threads 4"),
            "{text}"
        );
        assert!(
            text.contains("machine: no contended cell was watched"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 120), "{text}");
    }

    #[test]
    fn a_cell_where_a_thread_got_no_turn_is_counted_not_averaged() {
        // At 2 threads every thread got turns; at 4, one of std's got none.
        let cells = [
            cell("default", 2, 100.0, &[40, 60]),
            cell("std", 2, 100.0, &[50, 50]),
            cell("default", 4, 100.0, &[25, 75, 50, 50]),
            cell("std", 4, 100.0, &[0, 100, 50, 50]),
        ];
        let line = mutex_load_line(&cells);
        // Judged run by run: less fair at 2 threads (0.80 against 1.00), fairer at 4
        // (0.50 against a starved thread's 0.01); the means leave the starved cell out.
        assert!(line.ends_with("  1/0/1: 0.80 / 1.00 (1 starved)"), "{line}");
    }

    #[test]
    fn fairness_without_runs_enough_for_a_verdict_shows_the_means_alone() {
        let two_runs = |mut cell: Cell| {
            cell.runs.truncate(2);
            cell
        };
        let cells = [
            two_runs(cell("default", 2, 100.0, &[40, 60])),
            two_runs(cell("std", 2, 100.0, &[50, 50])),
        ];
        let line = mutex_load_line(&cells);
        assert!(line.contains("(1 too few runs)"), "{line}");
        assert!(line.ends_with("  0.80 / 1.00"), "{line}");
    }

    #[test]
    fn the_widest_rows_fit_in_120_columns() {
        // The longest scenario name, a slower verdict and the longest row name.
        let setup = crate::cells::Overcommit {
            cs: "medium",
            cs_pauses: 200,
            ratio: 2,
            hogs: 2,
            window_ms: 1000.0,
        };
        let long = |cell: Cell| Cell {
            scenario: "false-sharing",
            overcommit: Some(setup),
            ..cell
        };
        let cells = [
            long(cell("default", 128, 80.0, &[20, 80])),
            long(cell("std", 128, 100.0, &[50, 50])),
        ];
        let text = table(&cells).expect("ours ran").to_string();
        assert!(text.contains("slower 0.80× ["), "{text}");
        assert!(text.contains("threads 128, medium cs, 2×"), "{text}");
        for line in text.lines().filter(|l| l.starts_with("false-sharing")) {
            assert!(line.chars().count() <= 120, "{line}");
        }
    }

    #[test]
    fn a_cell_of_ours_that_did_not_finish_is_named_not_dropped() {
        // ours capped at 2 threads: no verdict there, and the summary still ends the
        // run, saying so.
        let mut capped = cell("default", 2, 100.0, &[50, 50]);
        capped.unfinished = Some(Unfinished::Capped {
            progress: 0.5,
            after_secs: 2.0,
        });
        capped.summary = None;
        let only_capped = [capped.clone(), cell("std", 2, 100.0, &[50, 50])];
        let text = table(&only_capped)
            .expect("ours ran beside a peer")
            .to_string();
        let line = text.lines().find(|l| l.starts_with("mutex-load")).unwrap();
        assert!(line.contains("0/0/0 (1 DNF)"), "{line}");
        assert!(
            text.contains("DNF: no verdict, ours or every peer of the row did not finish"),
            "{text}"
        );
        assert!(
            text.contains("mutex-load klocks::Mutex: threads 2"),
            "{text}"
        );
        let with_a_verdict = [
            capped,
            cell("std", 2, 100.0, &[50, 50]),
            cell("default", 4, 100.0, &[50, 50]),
            cell("std", 4, 100.0, &[50, 50]),
        ];
        let text = table(&with_a_verdict).unwrap().to_string();
        assert!(text.contains("0/1/0 (1 DNF)"), "{text}");
    }

    #[test]
    fn no_summary_without_ours_beside_a_peer() {
        assert!(table(&[cell("std", 2, 100.0, &[50, 50])]).is_none());
        assert!(table(&[cell("default", 2, 100.0, &[50, 50])]).is_none());
    }
}
