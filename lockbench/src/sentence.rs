//! The first lines of a run's summary and of its report: one sentence per lock of
//! ours (`klocks::Mutex`, `klocks::RwLock`) counting its cells against the best peer,
//! naming its worst cell, and saying when the machine was too noisy to decide; and a
//! headline that names the lock to use.
//!
//! Every ratio here, as in the report, is one convention: ours ÷ the best peer as
//! throughput (above 1: ours is faster), the estimate first and its interval after,
//! with the verdict as a word (`slower 0.87× [0.80–0.93]`, `≈ 0.98× [0.90–1.07]`). A
//! slower cell is never turned around into "1.15× slower": read beside a geometric
//! mean of 0.93×, the same cell would read as two numbers.

use crate::cells::summary::{row_of, unjudged, versus};
use crate::cells::Cell;
use crate::locks::DEFAULT;
use crate::rwlocks::RW_DEFAULT;
use crate::verdict::{self, Judgement, Verdict};

/// What one lock of ours did in a run, cell by cell against the best peer.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    /// Ours, as lockbench prints it (`klocks::Mutex`).
    pub label: &'static str,
    /// Cells where ours is faster.
    pub faster: usize,
    /// Cells with no clear difference.
    pub no_clear_difference: usize,
    /// Of those, cells whose watch saw the machine busy with others (steal, other
    /// processes: `!`) or a vCPU moved (`*`): the machine was too noisy to decide them.
    pub noisy: usize,
    /// Cells where ours is slower.
    pub slower: usize,
    /// Cells with too few runs for a verdict.
    pub too_few_runs: usize,
    /// Cells without a verdict because ours or every peer did not finish.
    pub unfinished: usize,
    /// The cell with the lowest ratio (`loop, threads 2`) and its judgement.
    pub worst: Option<(String, Judgement)>,
    /// The peer that was best in most of the cells where ours was slower.
    pub beaten_by: Option<&'static str>,
}

impl Standing {
    /// Cells with a verdict.
    pub fn judged(&self) -> usize {
        self.faster + self.no_clear_difference + self.slower
    }

    /// `klocks::Mutex: faster than the best peer in 3 of 14 cells, no clear difference
    /// in 9, slower in 2 (worst: 0.87× in loop, threads 2).`, with what kept cells from
    /// a verdict after it.
    pub fn sentence(&self) -> String {
        let cells = |n: usize| match n {
            1 => "1 cell".to_owned(),
            n => format!("{n} cells"),
        };
        let mut text = match self.judged() {
            0 => format!(
                "{}: no cell with a verdict against the best peer",
                self.label
            ),
            judged => format!(
                "{}: faster than the best peer in {} of {}, no clear difference in {}, slower \
                 in {}",
                self.label,
                self.faster,
                cells(judged),
                self.no_clear_difference,
                self.slower
            ),
        };
        if let Some((cell, judgement)) = &self.worst {
            text += &format!(" (worst: {:.2}× in {cell})", judgement.ratio);
        }
        if self.noisy > 0 {
            text += &format!(
                "; the machine was too noisy to decide {} of the {} without a clear \
                 difference (they lost CPU time to other processes or a vCPU moved)",
                self.noisy, self.no_clear_difference
            );
        }
        if self.too_few_runs > 0 {
            text += &format!(
                "; {} had too few runs for a verdict",
                cells(self.too_few_runs)
            );
        }
        if self.unfinished > 0 {
            text += &format!(
                "; {} had no verdict, ours or every peer did not finish",
                cells(self.unfinished)
            );
        }
        text + "."
    }

    /// Whether a user should take a peer instead: ours was slower in more than half
    /// of its cells with a verdict.
    fn outrun(&self) -> bool {
        self.slower * 2 > self.judged()
    }

    /// The headline's part for this lock: `klocks::Mutex` or `parking_lot rather than
    /// klocks::Mutex (slower in 3 of 4 cells)`.
    fn choice(&self) -> String {
        match (self.outrun(), self.beaten_by) {
            (true, Some(peer)) => format!(
                "{peer} rather than {} (slower in {} of {} cells)",
                self.label,
                self.slower,
                self.judged()
            ),
            _ => self.label.to_owned(),
        }
    }
}

/// Our locks' standings in `cells`, `klocks::Mutex` first; a lock of ours that never
/// ran beside a peer has none.
pub fn standings(cells: &[Cell]) -> Vec<Standing> {
    let judged = versus(cells);
    let unfinished = unjudged(cells);
    let mut standings = Vec::new();
    for ours in [DEFAULT.name(), RW_DEFAULT.name()] {
        let mine: Vec<_> = judged.iter().filter(|v| v.lock == ours).collect();
        let unfinished = unfinished.iter().filter(|(_, l, _)| *l == ours).count();
        if mine.is_empty() && unfinished == 0 {
            continue;
        }
        let count = |verdict: Verdict| {
            mine.iter()
                .filter(|v| v.judgement.verdict == verdict)
                .count()
        };
        let noisy = mine
            .iter()
            .filter(|v| v.judgement.verdict == Verdict::NoClearDifference)
            .filter(|v| {
                cells
                    .iter()
                    .filter(|c| c.scenario == v.scenario && c.lock == ours)
                    .filter(|c| row_of(c) == v.row)
                    .filter_map(|c| c.conditions.as_ref())
                    .any(|c| c.noisy || c.placement_changed)
            })
            .count();
        let worst = mine
            .iter()
            .min_by(|a, b| a.judgement.ratio.total_cmp(&b.judgement.ratio))
            .map(|v| (format!("{}, {}", v.scenario, v.row), v.judgement));
        let mut peers: Vec<(&'static str, usize)> = Vec::new();
        for v in mine
            .iter()
            .filter(|v| v.judgement.verdict == Verdict::Slower)
        {
            match peers.iter_mut().find(|(peer, _)| *peer == v.best_peer) {
                Some((_, n)) => *n += 1,
                None => peers.push((v.best_peer, 1)),
            }
        }
        // The first peer seen wins a tie: the cells are in the order measured.
        let beaten_by = peers
            .iter()
            .rev()
            .max_by_key(|(_, n)| *n)
            .map(|(peer, _)| verdict::label(peer));
        standings.push(Standing {
            label: verdict::label(ours),
            faster: count(Verdict::Faster),
            no_clear_difference: count(Verdict::NoClearDifference),
            noisy,
            slower: count(Verdict::Slower),
            too_few_runs: count(Verdict::TooFewRuns),
            unfinished,
            worst,
            beaten_by,
        });
    }
    standings
}

/// `Which lock to use: klocks::Mutex; klocks::RwLock.`, a peer named instead of ours
/// where ours was slower in most cells; `None` without standings.
pub fn headline(standings: &[Standing]) -> Option<String> {
    if standings.is_empty() {
        return None;
    }
    let choices: Vec<String> = standings.iter().map(Standing::choice).collect();
    Some(format!(
        "Which lock to use, from this run: {}.",
        choices.join("; ")
    ))
}

/// The headline, then a sentence per lock of ours; empty without standings.
pub fn lines(cells: &[Cell]) -> Vec<String> {
    let standings = standings(cells);
    headline(&standings)
        .into_iter()
        .chain(standings.iter().map(Standing::sentence))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::{Conditions, Run};
    use crate::verdict::ratio;
    use std::time::Duration;

    /// A five-run cell of `lock` in `scenario` at about `ops` ops/s, with its runs
    /// spread by ±1%.
    fn cell(scenario: &'static str, lock: &'static str, threads: usize, ops: f64) -> Cell {
        let runs = [0.99, 1.0, 1.01, 0.995, 1.005]
            .iter()
            .map(|jitter| Run::timed(ops * jitter, Duration::from_secs(1), 1))
            .collect();
        Cell::of_runs(scenario, lock, threads, None, "ops/s", runs)
    }

    /// A cell whose runs spread over ±30%: no verdict can clear ±5%.
    fn wide(scenario: &'static str, lock: &'static str, threads: usize, ops: f64) -> Cell {
        let runs = [0.7, 1.0, 1.3, 0.85, 1.15]
            .iter()
            .map(|jitter| Run::timed(ops * jitter, Duration::from_secs(1), 1))
            .collect();
        Cell::of_runs(scenario, lock, threads, None, "ops/s", runs)
    }

    fn watched(mut cell: Cell, noisy: bool) -> Cell {
        cell.conditions = Some(Conditions {
            c2c_before_ns: None,
            c2c_after_ns: None,
            placement_before: None,
            placement_after: None,
            placement_changed: false,
            pause_before_ns: 1.0,
            pause_after_ns: 1.0,
            span_ms: 100.0,
            steal_ms: 0.0,
            others_ms: if noisy { 80.0 } else { 0.0 },
            noisy,
        });
        cell
    }

    #[test]
    fn ratios_keep_ours_over_the_peer_whatever_the_verdict() {
        let cells = [
            cell("loop", "default", 2, 80.0),
            cell("loop", "std", 2, 100.0),
            cell("loop", "default", 4, 120.0),
            cell("loop", "std", 4, 100.0),
            wide("loop", "default", 8, 100.0),
            wide("loop", "std", 8, 100.0),
        ];
        let shown: Vec<String> = versus(&cells).iter().map(|v| ratio(&v.judgement)).collect();
        assert!(shown[0].starts_with("slower 0.80× [0.7"), "{shown:?}");
        assert!(shown[1].starts_with("faster 1.20× [1.1"), "{shown:?}");
        assert!(shown[2].starts_with("≈ 1.00× [0."), "{shown:?}");
        assert!(shown.iter().all(|s| s.contains("× [")), "{shown:?}");
    }

    #[test]
    fn the_sentence_counts_the_cells_and_names_the_worst() {
        let cells = [
            cell("uncontended", "default", 1, 101.0),
            cell("uncontended", "glibc", 1, 100.0),
            cell("loop", "default", 2, 87.0),
            cell("loop", "parking_lot", 2, 100.0),
            cell("loop", "std", 2, 60.0),
            cell("loop", "default", 4, 130.0),
            cell("loop", "std", 4, 100.0),
            cell("loop", "default", 8, 90.0),
            cell("loop", "parking_lot", 8, 100.0),
        ];
        let standings = standings(&cells);
        assert_eq!(standings.len(), 1, "no rwlock ran: {standings:?}");
        let mutex = &standings[0];
        assert_eq!(
            (mutex.faster, mutex.no_clear_difference, mutex.slower),
            (1, 1, 2)
        );
        assert_eq!(mutex.beaten_by, Some("parking_lot"));
        assert_eq!(
            mutex.sentence(),
            "klocks::Mutex: faster than the best peer in 1 of 4 cells, no clear difference \
             in 1, slower in 2 (worst: 0.87× in loop, threads 2)."
        );
        // Slower in 2 of 4: not most, so ours is still the one to use.
        assert_eq!(
            headline(&standings).as_deref(),
            Some("Which lock to use, from this run: klocks::Mutex.")
        );
    }

    #[test]
    fn a_peer_is_named_where_ours_was_slower_in_most_cells() {
        let cells = [
            cell("rw-mix", "default-rw", 2, 80.0),
            cell("rw-mix", "parking_lot-rw", 2, 100.0),
            cell("rw-mix", "default-rw", 8, 70.0),
            cell("rw-mix", "parking_lot-rw", 8, 100.0),
            cell("rw-mix", "std-rw", 8, 90.0),
            cell("rw-mix", "default-rw", 32, 100.0),
            cell("rw-mix", "std-rw", 32, 100.0),
            cell("loop", "default", 2, 100.0),
            cell("loop", "std", 2, 100.0),
        ];
        let standings = standings(&cells);
        let labels: Vec<&str> = standings.iter().map(|s| s.label).collect();
        assert_eq!(labels, ["klocks::Mutex", "klocks::RwLock"]);
        assert_eq!(
            headline(&standings).as_deref(),
            Some(
                "Which lock to use, from this run: klocks::Mutex; parking_lot-rw rather than \
                 klocks::RwLock (slower in 2 of 3 cells)."
            )
        );
    }

    #[test]
    fn the_sentence_says_when_the_machine_was_too_noisy_to_decide() {
        let quiet = [
            watched(wide("loop", "default", 2, 100.0), false),
            watched(wide("loop", "std", 2, 100.0), false),
        ];
        let sentence = standings(&quiet)[0].sentence();
        assert!(!sentence.contains("noisy"), "{sentence}");
        let noisy = [
            watched(wide("loop", "default", 2, 100.0), true),
            watched(wide("loop", "std", 2, 100.0), true),
            watched(wide("loop", "default", 4, 100.0), false),
            watched(wide("loop", "std", 4, 100.0), false),
        ];
        let standing = &standings(&noisy)[0];
        assert_eq!((standing.no_clear_difference, standing.noisy), (2, 1));
        assert!(
            standing.sentence().contains(
                "the machine was too noisy to decide 1 of the 2 without a clear difference"
            ),
            "{}",
            standing.sentence()
        );
    }

    #[test]
    fn cells_without_a_verdict_are_counted_apart() {
        let mut capped = cell("overcommit", "default", 4, 100.0);
        capped.unfinished = Some(crate::cells::Unfinished::Capped {
            progress: 0.5,
            after_secs: 1.0,
        });
        capped.summary = None;
        let cells = [
            capped,
            cell("overcommit", "std", 4, 100.0),
            cell("overcommit", "default", 32, 100.0),
            cell("overcommit", "std", 32, 100.0),
        ];
        let sentence = standings(&cells)[0].sentence();
        assert!(sentence.contains("in 0 of 1 cell,"), "{sentence}");
        assert!(
            sentence.ends_with("; 1 cell had no verdict, ours or every peer did not finish."),
            "{sentence}"
        );
        assert!(lines(&[cell("loop", "std", 2, 1.0)]).is_empty());
    }
}
