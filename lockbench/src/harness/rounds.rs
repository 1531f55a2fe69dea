//! The rounds of a row of cells, the one loop every scenario that compares locks runs
//! its repetitions through: each round runs every cell (slot) of the row once,
//! starting one slot later than the round before, `--runs` rounds, then more while
//! adaptive repetition ([`crate::adaptive`]) asks for them.
//!
//! Interleaved, because the host drifts: where it places our vCPUs and what a `pause`
//! costs move within seconds here, so a lock's repetitions run back to back would be
//! compared with another's measured a minute later. Rotating, because the first slot
//! of a round runs slower (measured: ~5% with 8 threads and 1000 locks in `sharded`,
//! whichever lock it is), so every slot takes that turn.
//!
//! A slot ends when its run hits its cap (or does not drain): it is not run again,
//! and it drives nothing, since every repetition would cost the whole cap again.

use std::time::{Duration, Instant};

use super::Error;
use crate::adaptive::{Adaptive, Drive, Next, Repeated, Stopping};
use crate::cells::Run;
use crate::verdict::{log_throughput, Judgement, Settings};

/// How a row repeats.
pub struct Plan<'a> {
    /// `--runs`: the rounds every row runs.
    pub runs: u32,
    /// The run's budget of extra rounds.
    pub adaptive: &'a Adaptive,
    /// The comparisons that may ask for more rounds.
    pub drives: Vec<Drive>,
    /// The row's name in the note (`loop, threads 4`).
    pub row: String,
    /// Whether the slots' values are times (lower is better) rather than throughputs.
    pub lower_is_better: bool,
}

/// What a row's rounds measured.
pub struct Rounds<T> {
    /// Each slot's results, in slot order, in the order they ran.
    pub results: Vec<Vec<T>>,
    /// What adaptive repetition did, when there is something to report.
    pub repeated: Option<Repeated>,
}

/// One run's result as the rounds see it.
pub trait Outcome {
    /// Whether this run ends its slot (it hit its cap).
    fn ends(&self) -> bool;
    /// The run's value in the slot's unit.
    fn value(&self) -> f64;
}

impl Outcome for Run {
    fn ends(&self) -> bool {
        !self.finished
    }

    fn value(&self) -> f64 {
        self.value
    }
}

/// Runs `plan`'s rounds over `slots` slots: `measure(slot, round)` runs one, giving
/// its result or `None` when it ended the slot without one (a run that did not drain).
pub fn rounds<T: Outcome>(
    slots: usize,
    plan: &Plan<'_>,
    mut measure: impl FnMut(usize, u32) -> Result<Option<T>, Error>,
) -> Result<Rounds<T>, Error> {
    let mut results: Vec<Vec<T>> = (0..slots).map(|_| Vec::new()).collect();
    let mut ended = vec![false; slots];
    let mut round = |number: u32,
                     results: &mut Vec<Vec<T>>,
                     ended: &mut Vec<bool>|
     -> Result<Duration, Error> {
        let start = Instant::now();
        for i in 0..slots {
            let at = (i + number as usize - 1) % slots;
            if ended[at] {
                continue;
            }
            match measure(at, number)? {
                Some(result) => {
                    ended[at] = result.ends();
                    results[at].push(result);
                }
                None => ended[at] = true,
            }
        }
        Ok(start.elapsed())
    };
    let mut took = Duration::ZERO;
    for number in 1..=plan.runs {
        took += round(number, &mut results, &mut ended)?;
    }
    if !plan.adaptive.is_on() || plan.drives.is_empty() {
        return Ok(Rounds {
            results,
            repeated: None,
        });
    }
    let mut stopping = Stopping::new(plan.runs, took, plan.adaptive.row_budget(took));
    let ended_how = loop {
        let judged = judgements(&results, &ended, plan);
        match stopping.next(&judged) {
            Next::Round => {
                let took = round(stopping.rounds() + 1, &mut results, &mut ended)?;
                stopping.counted(took);
            }
            Next::Stop(how) => break how,
        }
    };
    plan.adaptive.charge(stopping.extra());
    let repeated = ended_how.map(|ended| Repeated {
        row: plan.row.clone(),
        planned: plan.runs,
        rounds: stopping.rounds(),
        ended,
    });
    Ok(Rounds { results, repeated })
}

/// The driving comparisons' judgements now; a slot that ended has no runs to judge.
fn judgements<T: Outcome>(results: &[Vec<T>], ended: &[bool], plan: &Plan<'_>) -> Vec<Judgement> {
    let logs: Vec<Vec<f64>> = results
        .iter()
        .zip(ended)
        .map(|(runs, &ended)| match ended {
            true => Vec::new(),
            false => runs
                .iter()
                .filter_map(|run| log_throughput(run.value(), plan.lower_is_better))
                .collect(),
        })
        .collect();
    plan.drives
        .iter()
        .filter_map(|drive| drive.judge(&logs, Settings::default()))
        .collect()
}
