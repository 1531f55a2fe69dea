//! One shift common to many cells: the stratified Hodges–Lehmann estimate with the
//! interval of the stratified Mann–Whitney test (a sum of rank sums over strata, as
//! van Elteren's, with equal weight per pair of runs).
//!
//! Each cell c holds two samples, a_c and b_c (log throughputs, or per-round values
//! relative to the other locks). If in every cell b_c is a_c shifted by the same θ,
//! then U_c(θ), the count of pairs (i, j) with b_ci − θ > a_cj, has the Mann–Whitney
//! null distribution of (n_c, m_c) runs, the cells are independent (separate
//! measurements), and U(θ) = Σ_c U_c(θ) has the convolution of those distributions:
//! exact, computed, whatever the noise of each cell. U(θ) is the number of the pooled
//! within-cell differences b_ci − a_cj above θ, so, as for one cell, the interval runs
//! from the k-th smallest to the k-th largest of all cells' pairwise differences, k
//! the largest count with P(U < k) ≤ the error asked of each side, and the estimate is
//! their median.
//!
//! Why not a test over the cells' estimates (a sign or signed-rank test): a lock has
//! 10 to 30 cells, most of them contended and noisy; such a test weighs a cell by its
//! estimate's sign or rank, so the noisy cells decide and a 20% loss that the quiet
//! cells show plainly is missed. Here a quiet cell's 25 pairs all lie on one side of
//! a θ near the truth and a noisy cell's straddle it: each cell counts as much as its
//! runs separate.

/// The shift common to some cells, and its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Common {
    /// The median of every cell's pairwise differences b − a.
    pub estimate: f64,
    /// The interval's ends; `None` when no interval reaches the asked error.
    pub bounds: Option<(f64, f64)>,
    /// The interval's exact confidence, 1 − 2·P(U < k).
    pub confidence: f64,
}

/// The shift of b over a common to `cells` ((a, b) each) and its interval with an
/// error of at most `error` each side; `None` without a pair of runs.
pub fn common_shift(cells: &[(&[f64], &[f64])], error: f64) -> Option<Common> {
    let mut differences: Vec<f64> = cells
        .iter()
        .flat_map(|(a, b)| b.iter().flat_map(move |y| a.iter().map(move |x| y - x)))
        .collect();
    if differences.is_empty() {
        return None;
    }
    differences.sort_by(f64::total_cmp);
    let count = differences.len();
    let estimate = match count % 2 {
        1 => differences[count / 2],
        _ => (differences[count / 2 - 1] + differences[count / 2]) / 2.0,
    };
    let null = sum_null(cells);
    let mut below = 0.0; // P(U < k)
    let mut k = 0;
    while k < count / 2 && below + null[k] <= error + 1e-12 {
        below += null[k];
        k += 1;
    }
    Some(Common {
        estimate,
        bounds: (k >= 1).then(|| (differences[k - 1], differences[count - k])),
        confidence: 1.0 - 2.0 * below,
    })
}

/// P(U = u) for U the sum of the cells' independent Mann–Whitney counts; a cell of
/// more than [`super::interval::EXACT_UP_TO`] runs a side takes the normal
/// distribution with its mean and variance, rounded to counts.
fn sum_null(cells: &[(&[f64], &[f64])]) -> Vec<f64> {
    let mut sum = vec![1.0];
    for (a, b) in cells {
        let (m, n) = (b.len(), a.len());
        if m == 0 || n == 0 {
            continue;
        }
        let cell = match m.max(n) <= super::interval::EXACT_UP_TO {
            true => super::interval::mann_whitney_null(m, n),
            false => {
                let mean = (m * n) as f64 / 2.0;
                let sd = ((m * n * (m + n + 1)) as f64 / 12.0).sqrt();
                let cdf = |u: f64| super::interval::normal_cdf((u - mean) / sd);
                (0..=m * n)
                    .map(|u| cdf(u as f64 + 0.5) - cdf(u as f64 - 0.5))
                    .collect()
            }
        };
        let mut next = vec![0.0; sum.len() + cell.len() - 1];
        for (i, p) in sum.iter().enumerate() {
            for (j, q) in cell.iter().enumerate() {
                next[i + j] += p * q;
            }
        }
        sum = next;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, Exp, Normal};

    #[test]
    fn one_cell_gives_the_mann_whitney_interval() {
        let a = [0.0, 0.11, 0.05, -0.03, 0.02];
        let b = [0.31, 0.22, 0.4, 0.25, 0.18];
        let one = common_shift(&[(&a, &b)], 0.025).unwrap();
        let single = super::super::shift_interval(&b, &a, 0.95).unwrap();
        assert_eq!(one.bounds, single.bounds);
        assert!((one.confidence - single.confidence).abs() < 1e-12);
        assert_eq!(one.estimate, single.estimate);
    }

    #[test]
    fn the_interval_covers_a_common_shift_at_its_stated_rate() {
        // 12 cells of 5 runs a side, spreads from 0.02 to 0.5 and skewed delays, all
        // shifted by 0.2; 2000 seeded trials at 99% (the error a lock gets when the
        // family's 5% is shared).
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let trials = 2000;
        let mut covered = 0;
        let mut level = 0.0;
        for _ in 0..trials {
            let cells: Vec<(Vec<f64>, Vec<f64>)> = (0..12)
                .map(|i| {
                    let sigma = [0.02, 0.05, 0.1, 0.5][i % 4];
                    let noise = Normal::new(0.0, sigma).unwrap();
                    let delay = Exp::new(10.0).unwrap();
                    let mut draw = |shift: f64| -> Vec<f64> {
                        (0..5)
                            .map(|_| shift + noise.sample(&mut rng) - delay.sample(&mut rng))
                            .collect()
                    };
                    (draw(0.0), draw(0.2))
                })
                .collect();
            let views: Vec<(&[f64], &[f64])> =
                cells.iter().map(|(a, b)| (&a[..], &b[..])).collect();
            let common = common_shift(&views, 0.005).unwrap();
            let (low, high) = common.bounds.unwrap();
            covered += usize::from(low <= 0.2 && 0.2 <= high);
            level = common.confidence;
        }
        let rate = covered as f64 / trials as f64;
        assert!(level >= 0.99, "{level}");
        assert!((rate - level).abs() < 0.01, "{rate} vs {level}");
    }
}
