//! The fail rule of `compare --fail-on-regression PCT` over many cells: a lock's
//! pooled change, one test per lock, and a single cell's change, corrected together
//! so that two runs of the same build fail at most 5% of the time (see "Failing on a
//! regression" in [`crate::verdict`]).

use super::drift::Change;
use super::stratified::{common_shift, Common};

/// The family-wise error of the fail rule: the chance that two runs of the same
/// build fail it.
pub const FAMILY_ERROR: f64 = 0.05;

/// One lock's changes pooled over its cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Pooled {
    /// The lock.
    pub lock: String,
    /// Its judged cells.
    pub cells: usize,
    /// The shift common to its cells (log), with the stratified Mann–Whitney
    /// interval at the lock's share of the error.
    pub centre: Common,
    /// The geometric mean of its cells' changes (B ÷ A as throughput).
    pub geometric_mean: f64,
}

impl Pooled {
    /// Whether the whole interval lies below 1 ÷ (1 + `pct`/100).
    pub fn slower_by_more_than(&self, pct: f64) -> bool {
        self.centre
            .bounds
            .is_some_and(|(_, high)| high < -(1.0 + pct / 100.0).ln())
    }
}

impl std::fmt::Display for Pooled {
    /// `0.80× [0.77–0.83] over 31 cells (99.8%), geometric mean 0.81×`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let estimate = self.centre.estimate.exp();
        match self.centre.bounds {
            Some((low, high)) => write!(
                f,
                "{estimate:.2}× [{:.2}–{:.2}] over {} cells ({:.1}%), geometric mean {:.2}×",
                low.exp(),
                high.exp(),
                self.cells,
                self.centre.confidence * 100.0,
                self.geometric_mean
            ),
            None => write!(
                f,
                "{estimate:.2}× over {} cells, too few runs for an interval at this level, \
                 geometric mean {:.2}×",
                self.cells, self.geometric_mean
            ),
        }
    }
}

/// Every lock's pooled change, in the order the locks first appear in `cells`
/// ((lock, change) per judged cell), each at a one-sided error of half the family's
/// error shared among the locks, its interval widened by the term between executions
/// ([`execution_term`]).
pub fn pooled(cells: &[(&str, &Change)]) -> Vec<Pooled> {
    let mut locks: Vec<&str> = Vec::new();
    for (lock, _) in cells {
        if !locks.contains(lock) {
            locks.push(lock);
        }
    }
    let error = lock_error(locks.len());
    locks
        .iter()
        .filter_map(|&lock| {
            let judged: Vec<&Change> = cells
                .iter()
                .filter(|(l, change)| *l == lock && change.samples.is_some())
                .map(|(_, change)| *change)
                .collect();
            let samples: Vec<(&[f64], &[f64])> = judged
                .iter()
                .filter_map(|change| change.samples.as_ref())
                .map(|(a, b)| (a.as_slice(), b.as_slice()))
                .collect();
            let changes: Vec<f64> = judged.iter().map(|c| c.judgement.ratio.ln()).collect();
            let runs = common_shift(&samples, error)?;
            let extra = super::executions::normal_quantile(1.0 - error) * execution_term(&judged);
            let centre = Common {
                bounds: runs.bounds.map(|(low, high)| {
                    (
                        runs.estimate - (runs.estimate - low).hypot(extra),
                        runs.estimate + (high - runs.estimate).hypot(extra),
                    )
                }),
                ..runs
            };
            Some(Pooled {
                lock: lock.to_owned(),
                cells: samples.len(),
                centre,
                geometric_mean: (changes.iter().sum::<f64>() / changes.len() as f64).exp(),
            })
        })
        .collect()
}

/// The standard deviation of the pooled shift's term between executions: the
/// stratified estimate moves with each cell's level as a weighted mean of the cells'
/// shifts would, each cell weighted by its pairs of runs over the spread of its
/// pairwise differences (the density of U_c around the shift), so its variance is
/// Σ w_c² σ_c² ÷ (Σ w_c)², σ_c the cell's [`Change::execution`]. The cells' execution
/// effects are independent, so a lock of 30 quiet cells keeps a term near a fifth of
/// one cell's, and a lock of 2 cells nearly one cell's.
pub fn execution_term(cells: &[&Change]) -> f64 {
    let (mut weights, mut variance) = (0.0, 0.0);
    for change in cells {
        let Some((a, b)) = &change.samples else {
            continue;
        };
        let mut differences: Vec<f64> = b
            .iter()
            .flat_map(|y| a.iter().map(move |x| y - x))
            .collect();
        if differences.is_empty() {
            continue;
        }
        differences.sort_by(f64::total_cmp);
        let at = |q: f64| differences[(q * (differences.len() - 1) as f64).round() as usize];
        let spread = (at(0.75) - at(0.25)).max(1e-9);
        let weight = differences.len() as f64 / spread;
        weights += weight;
        variance += (weight * change.execution).powi(2);
    }
    match weights > 0.0 {
        true => variance.sqrt() / weights,
        false => 0.0,
    }
}

/// The one-sided error each of `locks` pooled tests gets: half the family's error,
/// shared equally (Bonferroni).
pub fn lock_error(locks: usize) -> f64 {
    FAMILY_ERROR / 2.0 / locks.max(1) as f64
}

/// The cells slower by more than `pct` percent each on its own, by Holm's step-down
/// procedure at half the family's error over all `cells`: their indices, by
/// increasing p-value.
pub fn single_cells(cells: &[&Change], pct: f64) -> Vec<usize> {
    let bound = -(1.0 + pct / 100.0).ln();
    let mut p: Vec<(usize, f64)> = cells
        .iter()
        .enumerate()
        .map(|(i, change)| (i, change.p_below(bound)))
        .collect();
    p.sort_by(|a, b| a.1.total_cmp(&b.1));
    let family = FAMILY_ERROR / 2.0;
    p.iter()
        .enumerate()
        .take_while(|(rank, (_, p))| *p <= family / (cells.len() - rank) as f64)
        .map(|(_, (i, _))| *i)
        .collect()
}

/// The smallest one-sided p-value a single cell needs to fail among `cells`, the
/// first step of Holm's procedure.
pub fn single_cell_level(cells: usize) -> f64 {
    FAMILY_ERROR / 2.0 / cells.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::drift::absolute;
    use crate::verdict::Settings;

    /// A cell whose B runs are A's 20% slower, with a term between executions `sd`.
    fn slowed(base: f64, sd: f64) -> Change {
        let a: Vec<f64> = [0.0, 0.01, -0.01, 0.02, -0.02]
            .iter()
            .map(|v| base + v)
            .collect();
        let b: Vec<f64> = a.iter().map(|v| v - 0.2).collect();
        Change {
            execution: sd,
            ..absolute(&a, &b, Settings::default()).unwrap()
        }
    }

    #[test]
    fn a_lock_of_few_cells_is_judged_with_their_spread_between_executions() {
        // Two cells, 20% slower in every run of B: the runs alone say so at any
        // level; if two executions of a cell differ by 15% (σ), two cells cannot.
        let quiet = [slowed(0.0, 0.0), slowed(1.0, 0.0)];
        let moving = [slowed(0.0, 0.15), slowed(1.0, 0.15)];
        let of = |cells: &[Change]| {
            let cells: Vec<(&str, &Change)> = cells.iter().map(|c| ("lock", c)).collect();
            pooled(&cells).remove(0)
        };
        assert!(of(&quiet).slower_by_more_than(5.0), "{}", of(&quiet));
        assert!(!of(&moving).slower_by_more_than(5.0), "{}", of(&moving));
        // Thirty such cells average their execution effects out.
        let many: Vec<Change> = (0..30).map(|i| slowed(f64::from(i), 0.15)).collect();
        assert!(of(&many).slower_by_more_than(5.0), "{}", of(&many));
        assert_eq!(execution_term(&[&quiet[0]]), 0.0);
        let term = execution_term(&many.iter().collect::<Vec<_>>());
        assert!((term - 0.15 / 30f64.sqrt()).abs() < 1e-9, "{term}");
    }

    #[test]
    fn a_single_cell_fails_only_beyond_its_spread_between_executions() {
        // 10 runs a side, 1.5× slower in every run: an exact p-value of 1 in 184756,
        // failing Holm among 150 cells; with a term of 0.3 between executions (σ, log),
        // 1.5× is 1.3σ from no change and fails nothing.
        let a: Vec<f64> = (0..10).map(|i| f64::from(i) * 0.001).collect();
        let b: Vec<f64> = a.iter().map(|v| v - 1.5f64.ln()).collect();
        let exact = absolute(&a, &b, Settings::default()).unwrap();
        let widened = Change {
            execution: 0.3,
            ..exact.clone()
        };
        let others = absolute(&a, &a, Settings::default()).unwrap();
        let mut cells = vec![&others; 149];
        cells.push(&exact);
        assert_eq!(single_cells(&cells, 5.0), [149]);
        cells[149] = &widened;
        assert!(single_cells(&cells, 5.0).is_empty());
    }
}
