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
/// error shared among the locks.
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
            let samples: Vec<(&[f64], &[f64])> = cells
                .iter()
                .filter(|(l, _)| *l == lock)
                .filter_map(|(_, change)| change.samples.as_ref())
                .map(|(a, b)| (a.as_slice(), b.as_slice()))
                .collect();
            let changes: Vec<f64> = cells
                .iter()
                .filter(|(l, change)| *l == lock && change.samples.is_some())
                .map(|(_, change)| change.judgement.ratio.ln())
                .collect();
            Some(Pooled {
                lock: lock.to_owned(),
                cells: samples.len(),
                centre: common_shift(&samples, error)?,
                geometric_mean: (changes.iter().sum::<f64>() / changes.len() as f64).exp(),
            })
        })
        .collect()
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
