//! A lock's change between two result files, measured against the other locks of its
//! cell group (same scenario, setup and threads) so that a change of the machine,
//! which moves every lock of the group together, cancels out.
//!
//! Two ways, by what the files allow:
//!
//! - **Per round.** Every comparing scenario runs a row's locks in interleaved rounds
//!   (`harness::rounds`): run i of every lock of the row comes from round i, measured
//!   within the same second or so. When the judged lock X and a reference lock have
//!   the same number of runs in a file, run i of each is paired, and X's run i is
//!   taken relative to the reference: `d_i = x_i − median over the references of
//!   r_i` (log throughputs). The change is then the Mann–Whitney comparison of the
//!   d's of B with the d's of A, exact as any of [`crate::verdict::judge`]'s for the
//!   runs: under no change, the d's of both files are exchangeable but for each
//!   execution's own level, which [`super::executions`] adds. The reference's noise
//!   is in every d (a round in which the references ran fast lowers X's d), so the
//!   interval carries it without a separate term, and a drift within a file, from
//!   round to round, cancels too.
//! - **Per group.** Otherwise (files from before the rounds, run counts that differ
//!   between locks), the reference's change is the Hodges–Lehmann shift of the
//!   references' runs pooled, each reference's runs first centred on its own median
//!   over both files; X's change and the reference's each get their interval at half
//!   the error, and their difference the union bound of the two. Pooling runs of locks
//!   of unequal spread makes the reference's level approximate; the union bound is
//!   conservative.
//!
//! The references never include X, so X's own change cannot move them; with three or
//! more references their median also withstands one of them having changed, but not
//! two (std and pthread at 4 threads, each in one mode in one process and another in
//! the next, made klocks::Mutex, 1.24× slower in wall time, look 1.66× faster against
//! its three references), and with two the median is their mean, which any one of
//! them moves. So a change carries the references' own movement as a term
//! ([`Change::reference`], [`super::executions::reference_term`]): the spread of the
//! references' changes between the files beyond what their runs' noise explains,
//! divided by √k, at the t quantile of k − 1 degrees of freedom (a spread read from
//! two or three values is itself uncertain). A drift of the machine moves them alike
//! and costs nothing; references that disagree widen the judged lock's interval by as
//! much as they could have moved its verdict. A group with X alone has no reference:
//! the caller judges it directly and says so.

use super::interval::{shift_interval, student_t_quantile, upper_bounds};
use super::{judge, verdict_of, Judgement, Settings};

/// How a change was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Correction {
    /// B against A directly.
    Absolute,
    /// Each run relative to the references' median in the same round.
    PerRound,
    /// X's change minus the references' pooled change.
    PerGroup,
}

/// A change with the evidence the fail rule needs: for each interval the data can
/// give, its one-sided error and its upper end (a log throughput ratio).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// B ÷ A as throughput, with its interval and verdict.
    pub judgement: Judgement,
    /// How the machine's drift was removed.
    pub correction: Correction,
    /// (one-sided error, upper end of the log change), by increasing error: "the
    /// change is below `upper` except with probability `error`".
    pub upper_bounds: Vec<(f64, f64)>,
    /// The two samples compared, A's and B's (log throughputs, or per round relative
    /// to the references), when one Mann–Whitney comparison judged the change; `None`
    /// per group.
    pub samples: Option<(Vec<f64>, Vec<f64>)>,
    /// The standard deviation of the references' own movement between the files
    /// ([`super::executions::reference_term`]); 0 for a change judged directly.
    pub reference: f64,
    /// The standard deviation of the change's term between executions
    /// ([`super::executions::term`]), once the ratio of the judged lock is known; 0
    /// until then. The fail rule's tests carry it as the intervals do.
    pub execution: f64,
}

impl Change {
    /// The smallest one-sided error at which the change lies wholly below `bound` (a
    /// log ratio): the p-value of "the change is `bound` or more"; 1 when no
    /// interval the data can give lies below it. Each upper end of the runs, at error
    /// e, is widened by the term between executions at the same error (its normal
    /// quantile times [`Change::execution`], added in quadrature as
    /// [`super::executions::widened`] does): with no such term, the exact
    /// Mann–Whitney p-value. Where even the runs' smallest error, 1 ÷ C(m + n, m),
    /// leaves the bound out, the runs' upper end below it is the normal model's
    /// ([`Change::below_the_ranks`]).
    pub fn p_below(&self, bound: f64) -> f64 {
        let estimate = self.judgement.ratio.ln();
        let exact = self
            .upper_bounds
            .iter()
            .find(|(error, upper)| self.widened(*error, upper - estimate) < bound)
            .map(|(error, _)| *error);
        match (exact, self.upper_bounds.first()) {
            (Some(p), Some(&(smallest, upper))) if p == smallest => self
                .below_the_ranks(bound, smallest, upper - estimate)
                .unwrap_or(p),
            (Some(p), _) => p,
            (None, _) => 1.0,
        }
    }

    /// The upper end of the change at one-sided `error` whose runs' part lies `runs`
    /// above the estimate, widened by the term between executions at that error.
    fn widened(&self, error: f64, runs: f64) -> f64 {
        let extra = super::executions::normal_quantile(1.0 - error) * self.execution;
        self.judgement.ratio.ln() + runs.max(0.0).hypot(extra)
    }

    /// The p-value below the ranks' smallest error `smallest`, whose runs' upper end
    /// lies `at_smallest` above the estimate: 5 runs a side cannot give an exact
    /// p-value below 1/252, while Holm's correction over 140 cells asks 0.00018, so
    /// a cell slower in every run by 30%, 25 times its runs' spread, could never fail
    /// on its own. Below that error the runs' part of the upper end is the normal
    /// model's, as the execution term already is: the Hodges–Lehmann shift's standard
    /// error from the runs' robust spread ([`super::executions::shift_variance`])
    /// times Student's t quantile of m + n − 2 degrees of freedom (the spread is read
    /// from those runs), and never less than the exact end at `smallest`. The smallest
    /// error at which that end, widened as [`Change::p_below`]'s, lies below `bound`,
    /// down to one in a million (the normal quantile's accuracy ends there). Only for
    /// a change judged per round against references, which removed the machine's own
    /// change: a cell judged directly carries it, neither normal nor in its term (the
    /// third A/A pair's c2c, alone in its group, ran 34 ns in A and 151 in B, its
    /// vCPUs placed apart, 4.4× in every run). `None` there, or without samples or
    /// spread: the exact floor stands.
    fn below_the_ranks(&self, bound: f64, smallest: f64, at_smallest: f64) -> Option<f64> {
        const LEAST: f64 = 1e-6;
        if self.correction != Correction::PerRound {
            return None;
        }
        let (a, b) = self.samples.as_ref()?;
        let sd = super::executions::shift_variance(a, b).sqrt();
        if sd <= 0.0 {
            return None;
        }
        let df = a.len() + b.len() - 2;
        let below = |error: f64| {
            let runs = at_smallest.max(student_t_quantile(1.0 - error, df) * sd);
            self.widened(error, runs) < bound
        };
        if !below(smallest) {
            return Some(smallest);
        }
        if below(LEAST) {
            return Some(LEAST);
        }
        // On the log of the error: below at `high`, not at `low`.
        let (mut low, mut high) = (LEAST.ln(), smallest.ln());
        for _ in 0..60 {
            let mid = (low + high) / 2.0;
            match below(mid.exp()) {
                true => high = mid,
                false => low = mid,
            }
        }
        Some(high.exp())
    }
}

/// B against A with no reference.
pub fn absolute(a: &[f64], b: &[f64], settings: Settings) -> Option<Change> {
    Some(Change {
        judgement: judge(b, a, settings)?,
        correction: Correction::Absolute,
        upper_bounds: upper_bounds(b, a),
        samples: Some((a.to_vec(), b.to_vec())),
        reference: 0.0,
        execution: 0.0,
    })
}

/// X's change from A to B relative to `references` (each a lock's runs in A and in
/// B): per round where every reference has as many runs as X in each file, else per
/// group. `None` when X or every reference lacks runs in a file.
pub fn relative<'a>(
    x: (&'a [f64], &'a [f64]),
    references: &[(&'a [f64], &'a [f64])],
    settings: Settings,
) -> Option<Change> {
    if references.is_empty() {
        return None;
    }
    let moved: Vec<(f64, f64)> = references
        .iter()
        .filter_map(|(a, b)| {
            let change = shift_interval(b, a, 0.0)?.estimate;
            Some((change, super::executions::shift_variance(a, b)))
        })
        .collect();
    let reference = super::executions::reference_term(&moved);
    let change = relative_to(x, references, settings)?;
    Some(Change {
        reference,
        ..change
    })
}

/// [`relative`] before the references' own movement is known.
fn relative_to<'a>(
    x: (&'a [f64], &'a [f64]),
    references: &[(&'a [f64], &'a [f64])],
    settings: Settings,
) -> Option<Change> {
    // Side 0 is A, side 1 is B.
    let side = |r: &(&'a [f64], &'a [f64]), which: usize| -> &'a [f64] {
        match which {
            0 => r.0,
            _ => r.1,
        }
    };
    let aligned = |which: usize| {
        let runs = side(&x, which).len();
        references.iter().all(|r| side(r, which).len() == runs)
    };
    if aligned(0) && aligned(1) {
        let relative = |which: usize| -> Vec<f64> {
            side(&x, which)
                .iter()
                .enumerate()
                .map(|(i, run)| {
                    let round: Vec<f64> = references.iter().map(|r| side(r, which)[i]).collect();
                    run - median(round).expect("a reference")
                })
                .collect()
        };
        let (a, b) = (relative(0), relative(1));
        return Some(Change {
            correction: Correction::PerRound,
            ..absolute(&a, &b, settings)?
        });
    }
    per_group(x, references, settings)
}

/// X's change minus the references' pooled change, with the union bound.
fn per_group(
    x: (&[f64], &[f64]),
    references: &[(&[f64], &[f64])],
    settings: Settings,
) -> Option<Change> {
    let (mut pooled_a, mut pooled_b) = (Vec::new(), Vec::new());
    for (a, b) in references {
        let centre = median(a.iter().chain(b.iter()).copied().collect())?;
        pooled_a.extend(a.iter().map(|v| v - centre));
        pooled_b.extend(b.iter().map(|v| v - centre));
    }
    let half = 1.0 - (1.0 - settings.confidence) / 2.0;
    let own = shift_interval(x.1, x.0, half)?;
    let reference = shift_interval(&pooled_b, &pooled_a, half)?;
    let bounds = own
        .bounds
        .zip(reference.bounds)
        .map(|((low, high), (r_low, r_high))| (low - r_high, high - r_low));
    let judgement = verdict_of(
        own.estimate - reference.estimate,
        bounds,
        1.0 - (1.0 - own.confidence) - (1.0 - reference.confidence),
        settings,
        (x.1.len(), x.0.len()),
    );
    // The union bound: X's upper end at error e1 minus the reference's lower end at
    // error e2 holds except with probability e1 + e2. The reference's lower ends are
    // its upper ends of A against B, negated.
    let reference_low: Vec<(f64, f64)> = upper_bounds(&pooled_a, &pooled_b)
        .into_iter()
        .map(|(error, upper)| (error, -upper))
        .collect();
    let mut bounds: Vec<(f64, f64)> = upper_bounds(x.1, x.0)
        .iter()
        .flat_map(|&(e1, upper)| {
            reference_low
                .iter()
                .map(move |&(e2, low)| (e1 + e2, upper - low))
        })
        .collect();
    bounds.sort_by(|p, q| p.0.total_cmp(&q.0));
    Some(Change {
        judgement,
        correction: Correction::PerGroup,
        upper_bounds: bounds,
        samples: None,
        reference: 0.0,
        execution: 0.0,
    })
}

/// The median; `None` of nothing.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}
