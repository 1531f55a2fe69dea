//! The spread between two executions of a suite, estimated from the two files that
//! `compare` judges, and each cell's interval widened by it (see "Between executions"
//! in [`crate::verdict`] for why).
//!
//! # The model
//!
//! A cell's log change from A to B (per round relative to the other locks, or
//! directly) is `shift = change + e_B − e_A + noise`: `noise` is the runs' own
//! sampling error, which the Mann–Whitney interval holds, and `e_A`, `e_B` are the
//! cell's level in each execution (process) of the suite, which every run of that
//! execution shares and so no interval built from the runs of one execution can see.
//! The model takes `e` normal with a standard deviation proportional to the cell's
//! own run spread, `τ = ratio × within`: the cells whose runs spread the most are
//! the ones whose level moves the most between executions (two real A/A pairs of
//! the default suite: the median |shift| ÷ within spread is 0.3–0.8 in every sixth
//! of the cells from the quietest to the noisiest). `within` sees both modes of a
//! lock whose runs fall in two ([`within`]). A cell judged relative to references
//! adds their own movement, `reference` ([`reference_term`]), measured from the
//! references' changes: the cell's term is `√(2 ratio² within² + reference²)`
//! ([`term`]). The ratio is calibrated on the cells' runs alone, without the
//! references' term, and that term is added on top: conservative, as the ratio
//! already absorbs some of the references' movement (calibrated with the term, the
//! ratio fell and the first A/A pair printed 6 verdicts for a bound of 5.5).
//!
//! # The estimate
//!
//! One cell gives one change: no estimate of its own `τ`. The cells of the two files
//! together give `ratio`, as the smallest value at which the widened intervals do
//! what they state: at [`TAIL`] (90% asked, each cell's exact level at least that),
//! the Mann–Whitney intervals widened by their execution terms leave out "no change"
//! in no more cells than their exact levels allow. Under no
//! execution effect the runs' interval alone does (it is exact), so `ratio` is 0;
//! the more the executions move, the larger it must be. The calibration at 90% and
//! not at the verdicts' 95%: a quantile further in the tail rests on fewer cells and
//! on any real change among them; and not at the median either: the A/A pairs'
//! execution effects are heavy-tailed (pvqspinlock's contended loop runs 1.6× faster
//! in every run of one execution than in every run of the next), and a ratio fitted
//! to the bulk of the cells left twice the stated rate of verdicts in one of them.
//!
//! A real change in a cell takes its interval away from "no change": so a lock's
//! cells are judged with the ratio of the *other* locks' cells ([`ratios_by_lock`]),
//! as the drift control never takes the judged lock among its references, and a lock
//! that lost 20% everywhere cannot widen its own intervals. Real changes in more than
//! a tenth of the other locks' cells inflate the ratio: the verdicts get more
//! cautious, never bolder. With fewer than [`MIN_CELLS`] cells there is no tail to
//! read and no ratio: the intervals are the runs' alone, and `compare` says so.
//!
//! # The widened interval
//!
//! The execution term's half-width at the interval's confidence, `q ×` [`term`] (`q`
//! the normal quantile, 1.96 at 95%), is added in quadrature to each
//! side of the Mann–Whitney interval around the estimate: the two errors are
//! independent, and each side keeps the asymmetry the runs gave it. The confidence
//! is then nominal under the model, no longer exact. The fail rule of `compare`
//! widens its p-values and its pooled intervals by the same term
//! ([`crate::verdict::many_cells`]).

use super::interval::{normal_cdf, shift_interval};
use super::{verdict_of, Judgement, Settings};

/// The quantile of the cells' standardized shifts that the ratio fits to the normal.
pub const TAIL: f64 = 0.9;

/// The fewest cells (of the other locks) that give a ratio: at 20, the widened
/// intervals of two of them may leave "no change" out.
pub const MIN_CELLS: usize = 20;

/// What the estimate needs of one judged cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shift {
    /// The Hodges–Lehmann estimate of the log change.
    pub estimate: f64,
    /// The runs' Mann–Whitney interval for it at [`TAIL`] or more.
    pub bounds: (f64, f64),
    /// That interval's exact confidence.
    pub confidence: f64,
    /// The runs' spread within one execution ([`within`]).
    pub within: f64,
}

impl Shift {
    /// A cell's change from A's `a` to B's `b`; `None` without a spread or an
    /// interval at [`TAIL`].
    pub fn of(a: &[f64], b: &[f64]) -> Option<Self> {
        let interval = shift_interval(b, a, TAIL)?;
        Some(Self {
            estimate: interval.estimate,
            bounds: interval.bounds?,
            confidence: interval.confidence,
            within: within(a, b)?,
        })
    }

    /// Whether the interval widened by `ratio` leaves out "no change".
    fn excludes_zero(&self, ratio: f64) -> bool {
        let extra = normal_quantile(0.5 + self.confidence / 2.0) * term(ratio, self.within, 0.0);
        let low = self.estimate - (self.estimate - self.bounds.0).hypot(extra);
        let high = self.estimate + (self.bounds.1 - self.estimate).hypot(extra);
        low > 0.0 || high < 0.0
    }
}

/// The standard deviation of a cell's log change between executions: the judged
/// values' level in each file, `ratio × within` each (so √2 × that for the
/// difference), and the references' own movement `reference`, independent of it.
pub fn term(ratio: f64, within: f64, reference: f64) -> f64 {
    (std::f64::consts::SQRT_2 * ratio * within).hypot(reference)
}

/// How far the level the references set moved between the files on its own, from
/// the references' changes (each the Hodges–Lehmann shift of its B runs over its A
/// runs, log, with that estimate's sampling variance from its runs): the variance of
/// the changes less their mean sampling variance (the method of moments of a
/// random-effects pooling, DerSimonian and Laird: the runs' noise of each reference
/// is already in the judged values, round by round), divided by k for k references,
/// its root times t(k − 1) ÷ z, the 97.5% quantiles of Student's t with k − 1 degrees
/// of freedom and of the normal: a spread estimated from 2 or 3 references is itself
/// uncertain, and the t quantile is what a 95% interval needs for it (6.5× at 2
/// references, 2.2× at 3, 1.1× at 14). A common drift of the machine moves every
/// reference alike and gives 0, the case the references are there for; a reference
/// whose level jumped between executions (a lock bimodal per execution, like std's
/// 8-thread loop at 214 ms in one process and 78 in the next) moves the references'
/// median or mean, and this term carries it into the judged lock's interval instead
/// of into its verdict. 0 with one reference, whose movement cannot be told from the
/// machine's.
pub fn reference_term(changes: &[(f64, f64)]) -> f64 {
    let k = changes.len();
    if k < 2 {
        return 0.0;
    }
    let mean = changes.iter().map(|(c, _)| c).sum::<f64>() / k as f64;
    let spread = changes.iter().map(|(c, _)| (c - mean).powi(2)).sum::<f64>() / (k - 1) as f64;
    let sampling = changes.iter().map(|(_, v)| v).sum::<f64>() / k as f64;
    let moved = (spread - sampling).max(0.0);
    (moved / k as f64).sqrt() * student_t_975(k - 1) / normal_quantile(0.975)
}

/// The sampling variance of the Hodges–Lehmann shift between `a` and `b` for normal
/// runs of spread [`within`]: π σ² ÷ 3 × (1/m + 1/n), its asymptotic variance
/// (Hollander, Wolfe & Chicken, §4.2); 0 without a spread.
pub fn shift_variance(a: &[f64], b: &[f64]) -> f64 {
    within(a, b).map_or(0.0, |sigma| {
        std::f64::consts::PI * sigma.powi(2) / 3.0 * (1.0 / a.len() as f64 + 1.0 / b.len() as f64)
    })
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom (1 or more): the
/// table to 30, then z + (z³ + z) ÷ 4df (Cornish–Fisher), within 0.002 there.
fn student_t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match TABLE.get(df.max(1) - 1) {
        Some(t) => *t,
        None => {
            let z = normal_quantile(0.975);
            z + (z.powi(3) + z) / (4.0 * df as f64)
        }
    }
}

/// The spread of a cell's runs within one execution: each file's spread scaled to a
/// standard deviation, pooled over the two files. A file's spread is the wider of
/// its median absolute deviation (×1.4826) and its inner range, from its second
/// smallest run to its second largest (divided by that range's expectation for
/// normal runs, by Blom's scores): both read a normal spread alike and neither is
/// moved by one run preempted in A, but a file whose runs fall in two modes (ticket's
/// 2-thread loop: 4.4 ms in two runs, 66–69 ms in most) has a MAD of its larger mode
/// alone and an inner range across both, as soon as the smaller mode holds two runs.
/// `None` with fewer than 3 runs in a file.
pub fn within(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 3 || b.len() < 3 {
        return None;
    }
    let spread = |values: &[f64]| {
        let centre = median(values.to_vec());
        let mad = 1.4826 * median(values.iter().map(|v| (v - centre).abs()).collect());
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        // E[x_(n−1)] − E[x_(2)] for n standard normal runs, by Blom's approximation
        // E[x_(i)] ≈ Φ⁻¹((i − 3/8) ÷ (n + 1/4)); 0 at n = 3, whose inner range is empty.
        let expected = 2.0 * normal_quantile((n as f64 - 1.375) / (n as f64 + 0.25));
        let inner = match expected > 0.0 {
            true => (sorted[n - 2] - sorted[1]) / expected,
            false => 0.0,
        };
        mad.max(inner)
    };
    let (m, n) = (a.len() as f64, b.len() as f64);
    Some((((m - 1.0) * spread(a).powi(2) + (n - 1.0) * spread(b).powi(2)) / (m + n - 2.0)).sqrt())
}

/// The ratio of the spread between executions to the spread within one, from
/// `cells` (see the module doc); `None` with fewer than [`MIN_CELLS`] cells that
/// have a spread.
pub fn ratio(cells: &[Shift]) -> Option<f64> {
    let cells: Vec<&Shift> = cells.iter().filter(|c| c.within > 0.0).collect();
    if cells.len() < MIN_CELLS {
        return None;
    }
    // The exclusions the intervals' exact levels allow (5+5 runs reach 94.4% at
    // 90% asked: 5.6% of such cells).
    let allowed = cells
        .iter()
        .map(|c| 1.0 - c.confidence)
        .sum::<f64>()
        .floor() as usize;
    let holds = |ratio: f64| cells.iter().filter(|c| c.excludes_zero(ratio)).count() <= allowed;
    if holds(0.0) {
        return Some(0.0);
    }
    let mut high = 1.0;
    while !holds(high) {
        high *= 2.0;
    }
    let mut low = 0.0;
    for _ in 0..50 {
        let mid = (low + high) / 2.0;
        match holds(mid) {
            true => high = mid,
            false => low = mid,
        }
    }
    Some(high)
}

/// Each lock's ratio from the cells of the other locks ((lock, shift) per judged
/// cell), in the order the locks first appear.
pub fn ratios_by_lock(cells: &[(&str, Shift)]) -> Vec<(String, Option<f64>)> {
    let mut locks: Vec<&str> = Vec::new();
    for (lock, _) in cells {
        if !locks.contains(lock) {
            locks.push(lock);
        }
    }
    locks
        .iter()
        .map(|&lock| {
            let others: Vec<Shift> = cells
                .iter()
                .filter(|(l, _)| *l != lock)
                .map(|(_, shift)| *shift)
                .collect();
            (lock.to_owned(), ratio(&others))
        })
        .collect()
}

/// `judgement` (a log change with its interval) with the spread between executions,
/// a normal term of standard deviation `sd` ([`term`]), added to its interval, and
/// its verdict again. Unchanged without an interval.
pub fn widened(judgement: &Judgement, sd: f64, settings: Settings) -> Judgement {
    let (Some(low), Some(high), Some(confidence)) =
        (judgement.low, judgement.high, judgement.confidence)
    else {
        return *judgement;
    };
    let estimate = judgement.ratio.ln();
    let extra = normal_quantile(0.5 + confidence / 2.0) * sd;
    let low = estimate - (estimate - low.ln()).hypot(extra);
    let high = estimate + (high.ln() - estimate).hypot(extra);
    verdict_of(
        estimate,
        Some((low, high)),
        confidence,
        settings,
        (judgement.runs_x, judgement.runs_y),
    )
}

/// The z with Φ(z) = `p`, by bisection on [`normal_cdf`].
pub fn normal_quantile(p: f64) -> f64 {
    let (mut low, mut high) = (-10.0, 10.0);
    for _ in 0..80 {
        let mid = (low + high) / 2.0;
        match normal_cdf(mid) < p {
            true => low = mid,
            false => high = mid,
        }
    }
    (low + high) / 2.0
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n % 2 {
        1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::judge;
    use crate::verdict::tests::runs;
    use crate::verdict::Verdict;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, Normal};

    /// 150 cells of 5 runs a side, spreads from 2% to 50%, each file's level moved
    /// by an execution effect of `ratio` × the cell's spread.
    fn cells(rng: &mut ChaCha8Rng, ratio: f64) -> Vec<(Vec<f64>, Vec<f64>, f64)> {
        (0..150)
            .map(|i| {
                let sigma = [0.02, 0.05, 0.1, 0.2, 0.5][i % 5];
                let execution = Normal::new(0.0, ratio * sigma).unwrap();
                let (e_a, e_b) = (execution.sample(rng), execution.sample(rng));
                let a = runs(rng, e_a.exp(), sigma, 5);
                let b = runs(rng, e_b.exp(), sigma, 5);
                (a, b, sigma)
            })
            .collect()
    }

    fn shifts(cells: &[(Vec<f64>, Vec<f64>, f64)]) -> Vec<Shift> {
        cells
            .iter()
            .map(|(a, b, _)| Shift::of(a, b).unwrap())
            .collect()
    }

    #[test]
    fn the_ratio_is_found_and_runs_of_one_execution_give_none_to_speak_of() {
        let mut rng = ChaCha8Rng::seed_from_u64(31);
        let none = ratio(&shifts(&cells(&mut rng, 0.0))).unwrap();
        let found = ratio(&shifts(&cells(&mut rng, 0.7))).unwrap();
        // In units of the MAD of 5 runs, which reads a normal spread about 15% low.
        assert!(none < 0.5 && (0.6..1.6).contains(&found), "{none} {found}");
        assert_eq!(ratio(&shifts(&cells(&mut rng, 0.7))[..MIN_CELLS - 1]), None);
    }

    #[test]
    fn a_lock_changed_everywhere_does_not_widen_its_own_intervals() {
        let mut rng = ChaCha8Rng::seed_from_u64(32);
        let mut judged: Vec<(&str, Shift)> = shifts(&cells(&mut rng, 0.0))
            .into_iter()
            .map(|shift| ("other", shift))
            .collect();
        // 30 cells of one lock, each 2× slower in B: they are a sixth of the cells,
        // and make the other locks' intervals cautious.
        let half = 2f64.ln();
        for shift in shifts(&cells(&mut rng, 0.0)).into_iter().take(30) {
            let shift = Shift {
                estimate: shift.estimate - half,
                bounds: (shift.bounds.0 - half, shift.bounds.1 - half),
                ..shift
            };
            judged.push(("slowed", shift));
        }
        let ratios = ratios_by_lock(&judged);
        let of = |lock: &str| ratios.iter().find(|(l, _)| l == lock).unwrap().1.unwrap();
        assert!(of("slowed") < 0.5, "{ratios:?}");
        assert!(of("other") > 1.0, "{ratios:?}");
    }

    #[test]
    fn widened_intervals_hold_the_execution_effect_at_their_stated_rate() {
        // Two executions per cell with an effect of 1.0 × each cell's spread: the runs'
        // interval alone calls 'faster' or 'slower' in more than 5% of cells (its
        // stated error); widened by the estimated ratio, it does not.
        let mut rng = ChaCha8Rng::seed_from_u64(33);
        let settings = Settings::default();
        let (mut trials, mut alone, mut held) = (0, 0, 0);
        for _ in 0..10 {
            let cells = cells(&mut rng, 1.0);
            let ratio = ratio(&shifts(&cells)).unwrap();
            for (a, b, _) in &cells {
                let judgement = judge(b, a, settings).unwrap();
                let sd = term(ratio, within(a, b).unwrap(), 0.0);
                let wide = widened(&judgement, sd, settings);
                trials += 1;
                alone += usize::from(judgement.verdict != Verdict::NoClearDifference);
                held += usize::from(wide.verdict != Verdict::NoClearDifference);
                assert!(wide.low <= judgement.low && wide.high >= judgement.high);
                assert_eq!(wide.ratio, judgement.ratio);
            }
        }
        assert!(alone * 100 > trials * 5, "{alone} of {trials}");
        assert!(held * 100 <= trials * 5, "{held} of {trials}");
    }

    #[test]
    fn a_spread_in_two_modes_is_seen_whole() {
        // The third A/A pair's ticket 2-thread loop in A (ms; two modes and one run
        // between) and in B (one mode): the MAD of A reads its larger mode alone
        // (σ ≈ 0.06), the inner range both (σ ≈ 1.4).
        let a: Vec<f64> = [66.2, 4.38, 64.1, 4.72, 66.9, 68.8, 67.8, 69.2, 33.7]
            .iter()
            .map(|ms: &f64| -ms.ln())
            .collect();
        let b: Vec<f64> = [
            326.8, 326.2, 325.1, 324.8, 330.0, 325.9, 330.7, 332.7, 328.3,
        ]
        .iter()
        .map(|ms: &f64| -ms.ln())
        .collect();
        let spread = within(&a, &b).unwrap();
        assert!(spread > 0.9, "{spread}");
        // One run preempted does not widen a cell by its size.
        let quiet = [0.0, 0.01, -0.01, 0.02, -0.02];
        let preempted = [0.0, 0.01, -0.01, 0.02, -2.0];
        assert!(within(&quiet, &preempted).unwrap() < 0.05);
    }

    #[test]
    fn references_that_move_alike_add_nothing_and_one_that_jumped_adds_its_jump() {
        assert!(reference_term(&[(-0.2, 0.0), (-0.2, 0.0), (-0.2, 0.0)]) < 1e-12);
        assert_eq!(reference_term(&[(0.5, 0.0)]), 0.0);
        // Two references, one 1.8× faster in B: their mean moved by ln 1.8 ÷ 2, a
        // spread read from two values, which the t quantile of 1 degree of freedom
        // widens 6.5-fold.
        let term = reference_term(&[(0.0, 0.0), (1.8f64.ln(), 0.0)]);
        let mean_moved = 1.8f64.ln() / 2.0;
        assert!(
            (term - mean_moved * 12.706 / 1.959964).abs() < 1e-4,
            "{term}"
        );
        // Changes that differ no more than their runs' noise explains: no movement.
        assert_eq!(reference_term(&[(0.0, 0.01), (0.1, 0.01)]), 0.0);
        assert!((student_t_975(40) - 2.021).abs() < 0.002);
    }

    #[test]
    fn the_normal_quantile_inverts_the_distribution() {
        assert!((normal_quantile(0.975) - 1.959964).abs() < 1e-5);
        assert!((normal_quantile(0.95) - 1.644854).abs() < 1e-5);
    }
}
