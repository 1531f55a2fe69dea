//! Adaptive repetition: when a row of cells has run its `--runs` rounds and the verdict
//! that row exists for is still open only because its interval is too wide, run more
//! rounds, within a time budget, until it is decided or narrow enough.
//!
//! # The rule (the one place it is written)
//!
//! A row's locks run in interleaved rounds ([`crate::harness::rounds`]). Each row
//! names the comparisons that drive it ([`Drive`]): klocks' lock (`default`,
//! `default-rw`) against the best peer of the row, and the seed's before/after pair
//! where the row has one. After every round from the `--runs`-th on, with m and n
//! runs a side, each comparison is judged ([`crate::verdict::judge`], 95%, ±5%) and
//! its interval [low, high] of X ÷ Y, on the log scale with b = ln 1.05, is
//!
//! - **decided** when the verdict is faster or slower, or the interval lies wholly
//!   inside [−b, b] (no difference worth acting on);
//! - **narrow enough** when it straddles ±b but ln high − ln low ≤ [`NARROW`] × b
//!   (≤ 2 b: no wider than the whole ±5% band, so more runs would only move a ratio
//!   that sits on the boundary across it);
//! - **too wide** otherwise: it straddles −b or b and is wider than 2 b.
//!
//! A comparison without an interval (too few runs, or a side that hit its cap or did
//! not drain) does not drive: such a cell is never repeated. The row runs one more
//! round while any of its comparisons is too wide, unless
//!
//! - the row has run [`MAX_ROUNDS_PER_RUN`] × `--runs` rounds ("round cap reached,
//!   still undecided"), or
//! - one more round, expected to take as long as the mean of the row's rounds so
//!   far, would spend more than the row's budget ("budget spent, still undecided").
//!
//! The budget (`--budget SECONDS`) is the extra time a row may take after its
//! `--runs` rounds. By default it is as long as those first rounds took (a row at
//! most doubles), and all rows' extra rounds together stop at [`RUN_CAP`], so the
//! default suite grows by at most that. `--budget 0` or `--no-adaptive` turns the
//! repetition off: every row runs exactly `--runs` rounds, as before.
//!
//! Why stop at "narrow enough" and not only at a verdict: a true ratio of 1.05 is
//! on the boundary, and its interval straddles b however many runs it gets; without
//! that stop every such row would spend its whole budget. Sequential looks inflate
//! the error a little (each extra look is another chance for a wrong verdict), which
//! the round cap bounds; the printed note names every row that got extra rounds.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cells::Cell;
pub use crate::cells::{Ended, Repeated};
use crate::verdict::{self, Judgement, Settings, Verdict};

/// The widest interval that is narrow enough, in minimum effects on the log scale.
pub const NARROW: f64 = 2.0;

/// A row runs at most this many times `--runs` rounds.
pub const MAX_ROUNDS_PER_RUN: u32 = 4;

/// With the default budget, all rows' extra rounds together stop here.
pub const RUN_CAP: Duration = Duration::from_secs(20);

/// `--budget`'s help: the rule in short.
pub const BUDGET_HELP: &str = "Extra seconds a row of cells may spend after its --runs rounds \
    while the verdict of klocks' lock against the row's best peer (or the seed's before/after \
    pair) is undecided because its 95% interval is too wide: it straddles a ±5% boundary and is \
    wider than the whole ±5% band. Rounds go on, the locks still interleaved, until every such \
    verdict is decided or narrow enough, the row has run 4 × --runs rounds, or the next round \
    would overrun the budget; cells that hit a cap or did not drain are never repeated, and a note \
    under each scenario's tables names the rows repeated, their runs and those that ended \
    \"budget spent, still undecided\" [default: as long as the row's --runs rounds took, and at \
    most 20 s over the whole run; 0 turns repetition off]";

/// How much extra time the rows may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// No repetition beyond `--runs` (`--budget 0`, `--no-adaptive`).
    Off,
    /// As long as the row's first rounds took, within [`RUN_CAP`] over the run.
    Auto,
    /// This much per row (`--budget SECONDS`).
    PerRow(Duration),
}

/// The budget of a whole run, shared by its scenarios (clones share the time spent).
#[derive(Debug, Clone)]
pub struct Adaptive {
    budget: Budget,
    /// Extra time the rows have taken so far, over the whole run.
    spent: Arc<Mutex<Duration>>,
}

impl Adaptive {
    /// A run's budget.
    pub fn new(budget: Budget) -> Self {
        Self {
            budget,
            spent: Arc::default(),
        }
    }

    /// Whether rows may repeat at all.
    pub fn is_on(&self) -> bool {
        self.budget != Budget::Off && self.budget != Budget::PerRow(Duration::ZERO)
    }

    /// The extra time a row whose `--runs` rounds took `first` may take.
    pub fn row_budget(&self, first: Duration) -> Duration {
        match self.budget {
            Budget::Off => Duration::ZERO,
            Budget::PerRow(budget) => budget,
            Budget::Auto => first.min(RUN_CAP.saturating_sub(*self.lock())),
        }
    }

    /// Counts a row's extra time against the run's cap.
    pub fn charge(&self, extra: Duration) {
        *self.lock() += extra;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Duration> {
        self.spent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Parses `--budget`: seconds, 0 or more (fractions allowed).
pub fn parse_budget(text: &str) -> Result<Budget, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !(0.0..=86_400.0).contains(&secs) {
        return Err(format!("{secs} s is out of range: give 0 to 86400"));
    }
    Ok(match secs > 0.0 {
        true => Budget::PerRow(Duration::from_secs_f64(secs)),
        false => Budget::Off,
    })
}

/// One comparison that drives a row, by the row's slot indices.
#[derive(Debug, Clone, PartialEq)]
pub enum Drive {
    /// Slot `ours` against the best (highest median throughput) of `peers`.
    BestPeer { ours: usize, peers: Vec<usize> },
    /// Slot `x` against slot `y` (a seed's after against its before).
    Pair { x: usize, y: usize },
}

impl Drive {
    /// `ours` against the best of `peers`, found among `slots`; `None` when `ours` or
    /// every peer is missing.
    pub fn best_peer<N: PartialEq>(slots: &[N], ours: &N, peers: &[N]) -> Option<Self> {
        let ours = slots.iter().position(|slot| slot == ours)?;
        let peers: Vec<usize> = (0..slots.len())
            .filter(|&at| at != ours && peers.contains(&slots[at]))
            .collect();
        (!peers.is_empty()).then_some(Drive::BestPeer { ours, peers })
    }

    /// `x` against `y`, found among `slots`; `None` unless both are there.
    pub fn pair<N: PartialEq>(slots: &[N], x: &N, y: &N) -> Option<Self> {
        let x = slots.iter().position(|slot| slot == x)?;
        let y = slots.iter().position(|slot| slot == y)?;
        Some(Drive::Pair { x, y })
    }

    /// The comparison's judgement from each slot's log throughputs; `None` when a
    /// side has none.
    pub fn judge(&self, logs: &[Vec<f64>], settings: Settings) -> Option<Judgement> {
        match self {
            Drive::Pair { x, y } => verdict::judge(&logs[*x], &logs[*y], settings),
            Drive::BestPeer { ours, peers } => {
                let median = |at: usize| {
                    crate::cells::Summary::of(logs[at].iter().copied()).map(|s| s.median)
                };
                let best = peers
                    .iter()
                    .filter_map(|&at| Some((at, median(at)?)))
                    .max_by(|a, b| a.1.total_cmp(&b.1))?;
                verdict::judge(&logs[*ours], &logs[best.0], settings)
            }
        }
    }
}

/// Where a judgement's interval stands under the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Faster, slower, or wholly inside ±the minimum effect.
    Decided,
    /// Straddles a boundary, no wider than [`NARROW`] minimum effects.
    Narrow,
    /// Straddles a boundary and is wider: more runs may decide it.
    TooWide,
    /// No interval (too few runs): it does not drive.
    NoInterval,
}

/// The rule of the module's documentation, for one judgement.
pub fn standing(judgement: &Judgement, settings: Settings) -> Standing {
    let (Some(low), Some(high)) = (judgement.low, judgement.high) else {
        return Standing::NoInterval;
    };
    if judgement.verdict != Verdict::NoClearDifference {
        return Standing::Decided;
    }
    let bound = (1.0 + settings.min_effect).ln();
    let (low, high) = (low.ln(), high.ln());
    let straddles = |edge: f64| low < edge && edge < high;
    match (
        straddles(bound) || straddles(-bound),
        high - low > NARROW * bound,
    ) {
        (false, _) => Standing::Decided,
        (true, false) => Standing::Narrow,
        (true, true) => Standing::TooWide,
    }
}

/// The stopping rule's state over one row's rounds.
#[derive(Debug, Clone)]
pub struct Stopping {
    planned: u32,
    rounds: u32,
    budget: Duration,
    /// Time of every round so far.
    took: Duration,
    /// Time of the rounds after the `--runs`-th.
    extra: Duration,
    settings: Settings,
}

/// What the row does after a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Run one more round.
    Round,
    /// Stop; `None` when there is nothing to report (settled within `--runs`).
    Stop(Option<Ended>),
}

impl Stopping {
    /// A row that ran its `planned` rounds in `took`, with `budget` of extra time.
    pub fn new(planned: u32, took: Duration, budget: Duration) -> Self {
        Self {
            planned,
            rounds: planned,
            budget,
            took,
            extra: Duration::ZERO,
            settings: Settings::default(),
        }
    }

    /// Counts one more round, which took `took`.
    pub fn counted(&mut self, took: Duration) {
        self.rounds += 1;
        self.took += took;
        self.extra += took;
    }

    /// Rounds run.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// The extra time spent.
    pub fn extra(&self) -> Duration {
        self.extra
    }

    /// Whether to run another round, given the driving comparisons' judgements now.
    pub fn next(&self, judgements: &[Judgement]) -> Next {
        let standings: Vec<Standing> = judgements
            .iter()
            .map(|j| standing(j, self.settings))
            .collect();
        let repeated = self.rounds > self.planned;
        if !standings.contains(&Standing::TooWide) {
            let ended = match standings.contains(&Standing::Narrow) {
                true => Ended::Narrow,
                false => Ended::Decided,
            };
            return Next::Stop(repeated.then_some(ended));
        }
        if self.rounds >= self.planned.saturating_mul(MAX_ROUNDS_PER_RUN) {
            return Next::Stop(Some(Ended::RoundCap));
        }
        let per_round = self.took / self.rounds.max(1);
        match self.extra + per_round <= self.budget {
            true => Next::Round,
            false => Next::Stop(Some(Ended::BudgetSpent)),
        }
    }
}

/// The lines printed under a scenario's tables: the rows that got extra rounds or
/// ended undecided, with their runs per cell; empty when there were none.
pub fn lines(cells: &[Cell]) -> String {
    let mut rows: Vec<&Repeated> = Vec::new();
    for repeated in cells.iter().filter_map(|cell| cell.repeated.as_ref()) {
        if !rows.contains(&repeated) {
            rows.push(repeated);
        }
    }
    let Some(first) = rows.first() else {
        return String::new();
    };
    let listed: Vec<String> = rows
        .iter()
        .map(|r| format!("{}: {} runs, {}", r.row, r.rounds, r.ended.words()))
        .collect();
    let line = format!(
        "adaptive runs (--budget, see --help): these rows' cells ran past --runs {} while \
         klocks' verdict (or the seed's) was too wide to decide; every other cell ran --runs \
         (fewer where a run hit its cap): {}",
        first.planned,
        listed.join("; ")
    );
    format!("{}\n", crate::cells::wrap(&line, crate::cells::COLUMNS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, Normal};

    const ROUND: Duration = Duration::from_millis(100);

    /// Runs a synthetic row of two slots whose log throughputs are drawn around
    /// `ln x` and 0 with noise `sigma`, `planned` rounds then as the rule says, each
    /// round taking [`ROUND`]; the rounds run and how the row ended.
    fn row(x: f64, sigma: f64, planned: u32, budget: Duration) -> (u32, Option<Ended>) {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let noise = Normal::new(0.0, sigma).expect("a valid sigma");
        let mut draw = |level: f64| level.ln() + noise.sample(&mut rng);
        let mut logs: Vec<Vec<f64>> = vec![Vec::new(), Vec::new()];
        let mut round = |logs: &mut Vec<Vec<f64>>| {
            logs[0].push(draw(x));
            logs[1].push(draw(1.0));
        };
        for _ in 0..planned {
            round(&mut logs);
        }
        let drive = Drive::Pair { x: 0, y: 1 };
        let mut stopping = Stopping::new(planned, ROUND * planned, budget);
        loop {
            let judged: Vec<Judgement> = drive
                .judge(&logs, Settings::default())
                .into_iter()
                .collect();
            match stopping.next(&judged) {
                Next::Round => {
                    round(&mut logs);
                    stopping.counted(ROUND);
                }
                Next::Stop(ended) => return (stopping.rounds(), ended),
            }
        }
    }

    #[test]
    fn a_clearly_different_pair_stops_at_runs() {
        assert_eq!(row(1.5, 0.02, 5, Duration::from_secs(10)), (5, None));
        assert_eq!(row(0.6, 0.02, 5, Duration::from_secs(10)), (5, None));
        // Wholly inside ±5%: decided as no difference, no extra round either.
        assert_eq!(row(1.0, 0.002, 5, Duration::from_secs(10)), (5, None));
    }

    #[test]
    fn a_straddling_pair_keeps_going_until_the_budget() {
        // 1.08× with 10% noise: 5 runs give an interval across 1.05 and wider than
        // ±5%. Half a second of budget buys five rounds of 100 ms.
        let (rounds, ended) = row(1.08, 0.10, 5, Duration::from_millis(500));
        assert_eq!((rounds, ended), (10, Some(Ended::BudgetSpent)));
        // No budget: it stops at --runs, reported as spent.
        let (rounds, ended) = row(1.08, 0.10, 5, Duration::ZERO);
        assert_eq!((rounds, ended), (5, Some(Ended::BudgetSpent)));
    }

    #[test]
    fn a_row_that_never_decides_stops_at_the_round_cap() {
        // 1.05× exactly, with 30% noise: the interval stays wide for 20 rounds.
        let (rounds, ended) = row(1.05, 0.30, 5, Duration::from_secs(3600));
        assert_eq!((rounds, ended), (20, Some(Ended::RoundCap)));
    }

    #[test]
    fn a_pair_that_more_runs_decide_ends_decided() {
        // 1.25× with 15% noise: undecided at 5 runs, decided within the cap.
        let (rounds, ended) = row(1.25, 0.15, 5, Duration::from_secs(3600));
        assert!(rounds > 5 && rounds < 20, "{rounds}");
        assert_eq!(ended, Some(Ended::Decided));
    }

    #[test]
    fn standings_follow_the_rule() {
        let judged = |low: f64, high: f64, verdict| Judgement {
            ratio: (low * high).sqrt(),
            low: Some(low),
            high: Some(high),
            confidence: Some(0.968),
            verdict,
            runs_x: 5,
            runs_y: 5,
        };
        let s = Settings::default();
        let ncd = Verdict::NoClearDifference;
        assert_eq!(
            standing(&judged(1.06, 1.2, Verdict::Faster), s),
            Standing::Decided
        );
        assert_eq!(standing(&judged(0.97, 1.04, ncd), s), Standing::Decided);
        assert_eq!(standing(&judged(1.0, 1.09, ncd), s), Standing::Narrow);
        assert_eq!(standing(&judged(0.98, 1.12, ncd), s), Standing::TooWide);
        assert_eq!(standing(&judged(0.85, 0.99, ncd), s), Standing::TooWide);
        let few = verdict::judge(&[0.0, 0.1], &[0.0, 0.1], s).unwrap();
        assert_eq!(standing(&few, s), Standing::NoInterval);
    }

    #[test]
    fn the_best_peer_drives_and_budgets_parse() {
        let slots = ["default", "std", "parking_lot"];
        let drive = Drive::best_peer(&slots, &"default", &["std", "parking_lot", "spin"]);
        assert_eq!(
            drive,
            Some(Drive::BestPeer {
                ours: 0,
                peers: vec![1, 2]
            })
        );
        let logs = vec![vec![0.0; 5], vec![0.5; 5], vec![1.0, 1.0, 1.0, 1.0, 1.1]];
        let judged = drive.unwrap().judge(&logs, Settings::default()).unwrap();
        assert!((judged.ratio - (-1.0f64).exp()).abs() < 1e-9, "{judged:?}");
        assert_eq!(Drive::pair(&slots, &"ticket", &"std"), None);
        assert_eq!(parse_budget("0"), Ok(Budget::Off));
        assert_eq!(
            parse_budget("1.5"),
            Ok(Budget::PerRow(Duration::from_millis(1500)))
        );
        assert!(parse_budget("-1").is_err() && parse_budget("soon").is_err());
        let auto = Adaptive::new(Budget::Auto);
        assert_eq!(
            auto.row_budget(Duration::from_secs(3)),
            Duration::from_secs(3)
        );
        auto.clone().charge(RUN_CAP - Duration::from_secs(1));
        assert_eq!(
            auto.row_budget(Duration::from_secs(3)),
            Duration::from_secs(1)
        );
    }
}
