//! What the scenarios that compare locks share: the race to a fixed amount of work
//! (`sharded`, `rw-mix`), and the comparison of a klocks lock with the best of its
//! peers.

use std::time::Duration;

use super::spread::Spread;
use super::{race, race_prepared, Error, Race};
use crate::cells::{Cell, Run, Summary};
use crate::verdict::{self, Judgement, Ledger, Settings};

/// Runs `threads` workers `work(id)` from the harness's start gate until each has
/// done its fixed work; the results by id and the wall time from opening the gate to
/// the last worker's end. The clock starts before the gate opens (a start time taken
/// after it, by a thread that the workers can preempt, would miss their work).
pub fn race_to_finish<T: Send>(threads: usize, work: impl Fn(usize) -> T + Sync) -> Race<T> {
    race(threads, NO_LIMIT, |id, _| work(id))
}

/// [`race_to_finish`], each worker first pinned to its CPU of `spread` (before the
/// gate, off the clock), or left where the scheduler puts it without one. A worker
/// that cannot be pinned fails the race before any work.
pub fn race_to_finish_on<T: Send>(
    threads: usize,
    spread: Option<&Spread>,
    work: impl Fn(usize) -> T + Sync,
) -> Result<Race<T>, Error> {
    let prepare = |id| spread.map_or(Ok(()), |spread| spread.pin(id));
    race_prepared(threads, NO_LIMIT, prepare, || {}, |id, _| work(id))
}

/// A race to finish has no stop: the workers do a fixed number of operations (a lock
/// that hangs them hangs the run, as it would any program).
const NO_LIMIT: Duration = Duration::from_secs(365 * 24 * 3600);

/// A row label kept for the life of the program (cells hold `&'static str`s).
pub fn leak(label: String) -> &'static str {
    Box::leak(label.into_boxed_str())
}

/// `n` `pause` instructions: work inside or outside a critical section.
pub fn pauses(n: u32) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

/// The fastest of `peers` by median throughput, among those that finished.
pub fn best_peer<'a>(peers: impl IntoIterator<Item = &'a Cell>) -> Option<&'a Cell> {
    peers
        .into_iter()
        .filter_map(|peer| {
            let median = Summary::of(peer.log_throughputs())?.median;
            Some((peer, median))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(peer, _)| peer)
}

/// `ours` against the fastest of `peers` ([`best_peer`]): that peer and the verdict;
/// `None` when ours or every peer did not finish.
pub fn against_best<'a>(
    ours: &Cell,
    peers: impl IntoIterator<Item = &'a Cell>,
    settings: Settings,
) -> Option<(&'a Cell, Judgement)> {
    let best = best_peer(peers)?;
    let judgement = verdict::judge(&ours.log_throughputs(), &best.log_throughputs(), settings)?;
    Some((best, judgement))
}

/// `x` against `y` as throughput, from their finished runs: X ÷ Y (above 1: X is
/// faster) with its interval and verdict; `None` when either did not finish.
pub fn judge_cells(x: &Cell, y: &Cell) -> Option<Judgement> {
    verdict::judge(
        &x.log_throughputs(),
        &y.log_throughputs(),
        Settings::default(),
    )
}

/// What a starved thread's fairness counts as in [`judge_fairness`]: min ÷ mean is 0
/// there, and a ratio needs a positive value (0.01: a hundred times below the mean).
pub const STARVED: f64 = 0.01;

/// `x` against `y` by the fairness of their runs (the slowest thread's operations ÷
/// the mean, per run, floored at [`STARVED`]): above 1, X is fairer. `None` when
/// either has no run that counted per thread.
pub fn judge_fairness(
    x: &Cell,
    y: &Cell,
    fairness: impl Fn(&Run) -> Option<f64>,
) -> Option<Judgement> {
    let logs = |cell: &Cell| -> Vec<f64> {
        cell.runs
            .iter()
            .filter_map(&fairness)
            .map(|f| f.max(STARVED).ln())
            .collect()
    };
    verdict::judge(&logs(x), &logs(y), Settings::default())
}

/// The peer of `peers` with the shortest median p99.9 wait ([`Cell::log_wait_tails`]),
/// among those that finished and timed their waits.
pub fn shortest_tail_peer<'a>(peers: impl IntoIterator<Item = &'a Cell>) -> Option<&'a Cell> {
    peers
        .into_iter()
        .filter_map(|peer| Some((peer, Summary::of(peer.log_wait_tails())?.median)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(peer, _)| peer)
}

/// `ours` against the peer with the shortest p99.9 wait ([`shortest_tail_peer`]): that
/// peer and the verdict on the runs' p99.9 waits, lower is better (the ratio is the
/// peer's wait ÷ ours: above 1, ours is shorter); `None` when ours or every peer did
/// not finish or timed no wait.
pub fn against_shortest_tail<'a>(
    ours: &Cell,
    peers: impl IntoIterator<Item = &'a Cell>,
) -> Option<(&'a Cell, Judgement)> {
    let best = shortest_tail_peer(peers)?;
    let judgement = verdict::judge(
        &ours.log_wait_tails(),
        &best.log_wait_tails(),
        Settings::default(),
    )?;
    Some((best, judgement))
}

/// One lock against the best of its peers, row by row of a table whose cells are
/// wall times or throughputs.
pub struct Versus {
    ours: &'static str,
    peers: Vec<&'static str>,
    ledger: Ledger,
}

impl Versus {
    /// Compares `ours` with the best of `peers`.
    pub fn new(ours: &'static str, peers: Vec<&'static str>) -> Self {
        Self {
            ours,
            peers,
            ledger: Ledger::default(),
        }
    }

    /// The headers this comparison adds to a table.
    pub fn headers(&self) -> [String; 2] {
        [
            "best peer".to_owned(),
            format!("{} vs best", verdict::label(self.ours)),
        ]
    }

    /// The best peer's name and ours against it for the row `row` of `cells`; dashes
    /// when either side did not finish.
    pub fn row(&mut self, row: &str, cells: &[&Cell]) -> [String; 2] {
        let ours = cells.iter().find(|c| c.lock == self.ours);
        let peers = cells
            .iter()
            .copied()
            .filter(|c| self.peers.contains(&c.lock));
        match ours.and_then(|ours| against_best(ours, peers, Settings::default())) {
            Some((best, judgement)) => {
                self.ledger.add(row, judgement);
                [best.lock.to_owned(), judgement.to_string()]
            }
            None => ["-".to_owned(), "-".to_owned()],
        }
    }

    /// The notes under the table: the geometric mean, the lowest row and the verdicts.
    pub fn notes(&self) -> Vec<String> {
        self.ledger.notes(
            verdict::label(self.ours),
            "the best peer",
            Settings::default(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::Run;

    /// A finished cell of `lock` whose runs took `ms` each.
    fn cell(lock: &'static str, ms: &[f64]) -> Cell {
        let runs = ms
            .iter()
            .map(|&ms| Run::timed(ms, Duration::from_millis(1), 1))
            .collect();
        Cell::of_runs("loop", lock, 2, None, "ms", runs)
    }

    #[test]
    fn the_best_peer_is_the_fastest_and_ratios_are_throughputs() {
        let ours = cell("default", &[50.0, 51.0, 49.0, 50.5, 49.5]);
        let std = cell("std", &[100.0, 101.0, 99.0, 100.5, 99.5]);
        let slow = cell("glibc", &[200.0, 201.0, 199.0, 200.5, 199.5]);
        let mut versus = Versus::new("default", vec!["std", "glibc"]);
        assert_eq!(versus.headers()[1], "klocks::Mutex vs best");
        let [peer, judged] = versus.row("threads 2", &[&ours, &slow, &std]);
        assert_eq!(peer, "std");
        assert!(judged.starts_with("2.00× faster ["), "{judged}");
        let [peer, judged] = versus.row("threads 4", &[&ours]);
        assert_eq!([peer, judged], ["-", "-"], "ours is not its own peer");
        let [_, judged] = versus.row("threads 8", &[&ours, &ours, &std]);
        assert!(judged.starts_with("2.00× faster"));
        let [_, slower] = versus.row("threads 16", &[&std, &slow]);
        assert_eq!(slower, "-", "ours did not run");
        let notes = versus.notes();
        assert!(
            notes[0].contains("geometric mean 2.00× over 2 cells"),
            "{notes:?}"
        );
        assert!(notes[1].contains("2 faster, 0 no clear difference, 0 slower"));
    }

    #[test]
    fn a_slower_lock_reads_slower() {
        let ours = cell("default", &[120.0, 121.0, 119.0, 120.5, 119.5]);
        let std = cell("std", &[100.0, 101.0, 99.0, 100.5, 99.5]);
        let (best, judgement) = against_best(&ours, [&std], Settings::default()).unwrap();
        assert_eq!(best.lock, "std");
        assert_eq!(judgement.verdict, crate::verdict::Verdict::Slower);
        assert!(judgement.to_string().starts_with("1.20× slower ["));
    }
}
