//! What `sharded` and `rw-mix` share: rounds of runs with the locks of a row
//! interleaved in rotating order, and the comparison of a klocks lock with the best
//! of its peers.

use std::time::Duration;

use super::{race, Error, Race};
use crate::report::{Cell, Run};

/// Runs `measure(lock, round)` for `rounds` rounds over `locks` locks, each round
/// starting one lock later: the first lock of a round runs slower (measured: ~5% with
/// 8 threads and 1000 locks in `sharded`, whichever lock it is), so every lock takes
/// that turn. The runs of each lock, in lock order.
pub fn rotating_rounds(
    locks: usize,
    rounds: u32,
    mut measure: impl FnMut(usize, u32) -> Result<Run, Error>,
) -> Result<Vec<Vec<Run>>, Error> {
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); locks];
    for round in 1..=rounds {
        for i in 0..locks {
            let at = (i + round as usize - 1) % locks;
            runs[at].push(measure(at, round)?);
        }
    }
    Ok(runs)
}

/// Runs `threads` workers `work(id)` from the harness's start gate until each has
/// done its fixed work; the results by id and the wall time from opening the gate to
/// the last worker's end. The clock starts before the gate opens (a start time taken
/// after it, by a thread that the workers can preempt, would miss their work).
pub fn race_to_finish<T: Send>(threads: usize, work: impl Fn(usize) -> T + Sync) -> Race<T> {
    // No stop: the workers do a fixed number of operations (a lock that hangs them
    // hangs the run, as it would any program).
    const NO_LIMIT: Duration = Duration::from_secs(365 * 24 * 3600);
    race(threads, NO_LIMIT, |id, _| work(id))
}

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

/// The ratios of one lock's wall time to the best peer's, row by row.
pub struct Versus {
    ours: &'static str,
    peers: Vec<&'static str>,
    ratios: Vec<f64>,
}

impl Versus {
    /// Compares `ours` with the best of `peers`.
    pub fn new(ours: &'static str, peers: Vec<&'static str>) -> Self {
        Self {
            ours,
            peers,
            ratios: Vec::new(),
        }
    }

    /// The headers this comparison adds to a table.
    pub fn headers(&self) -> [String; 2] {
        ["best peer".to_owned(), format!("{} ÷ best", self.ours)]
    }

    /// The best peer's name and the speed ratio (the best peer's wall ÷ ours) for a
    /// row of cells in wall ms; dashes when either side did not run.
    pub fn row(&mut self, row: &[&Cell]) -> [String; 2] {
        let median = |name: &str| {
            row.iter()
                .find(|c| c.lock == name)
                .and_then(|c| c.summary)
                .map(|s| s.median)
        };
        let best = self
            .peers
            .iter()
            .filter_map(|&peer| median(peer).map(|ms| (peer, ms)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        match (best, median(self.ours)) {
            (Some((peer, best_ms)), Some(ms)) => {
                let ratio = best_ms / ms;
                self.ratios.push(ratio);
                [peer.to_owned(), format!("{ratio:.2}×")]
            }
            _ => ["-".to_owned(), "-".to_owned()],
        }
    }

    /// The note under the table: the geometric mean and the lowest ratio.
    pub fn note(&self) -> Option<String> {
        if self.ratios.is_empty() {
            return None;
        }
        let geomean =
            (self.ratios.iter().map(|r| r.ln()).sum::<f64>() / self.ratios.len() as f64).exp();
        Some(format!(
            "{ours} ÷ best peer = the best peer's wall ÷ {ours}'s (above 1: {ours} is faster); geometric mean {geomean:.2}× over {} cells, lowest {:.2}×",
            self.ratios.len(),
            self.ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ours = self.ours,
        ))
    }
}
