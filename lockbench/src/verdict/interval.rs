//! The Hodges–Lehmann shift between two sets of runs and the exact Mann–Whitney
//! interval around it (see the module doc of [`crate::verdict`] for why this interval).

/// The Hodges–Lehmann shift of `x` over `y` and its rank interval.
#[derive(Debug, Clone, Copy)]
pub struct ShiftInterval {
    /// The median of the pairwise differences x_i − y_j.
    pub estimate: f64,
    /// The interval's ends; `None` when no interval reaches the asked confidence.
    pub bounds: Option<(f64, f64)>,
    /// The exact confidence of `bounds`.
    pub confidence: f64,
}

/// The Hodges–Lehmann estimate of the shift x − y and the Mann–Whitney interval at
/// `confidence` or more; `None` when either side is empty.
pub fn shift_interval(x: &[f64], y: &[f64], confidence: f64) -> Option<ShiftInterval> {
    if x.is_empty() || y.is_empty() {
        return None;
    }
    let mut differences: Vec<f64> = x
        .iter()
        .flat_map(|a| y.iter().map(move |b| a - b))
        .collect();
    differences.sort_by(f64::total_cmp);
    let count = differences.len();
    let estimate = match count % 2 {
        1 => differences[count / 2],
        _ => (differences[count / 2 - 1] + differences[count / 2]) / 2.0,
    };
    let (k, exact) = rank_bound(x.len(), y.len(), confidence);
    Some(ShiftInterval {
        estimate,
        bounds: (k >= 1).then(|| (differences[k - 1], differences[count - k])),
        confidence: exact,
    })
}

/// The largest k with 2·P(U < k) ≤ 1 − `confidence` for the Mann–Whitney U of m
/// and n runs under the null, and the interval's exact confidence 1 − 2·P(U < k);
/// k = 0 when even the widest interval (the smallest to the largest difference)
/// falls short. Exact up to 50 runs a side; beyond, the normal approximation with
/// continuity correction.
pub fn rank_bound(m: usize, n: usize, confidence: f64) -> (usize, f64) {
    let tail = (1.0 - confidence) / 2.0;
    if m > EXACT_UP_TO || n > EXACT_UP_TO {
        let mean = (m * n) as f64 / 2.0;
        let sd = ((m * n * (m + n + 1)) as f64 / 12.0).sqrt();
        // P(U < k) = P(U ≤ k − 1) ≈ Φ((k − 1 + 0.5 − mean) / sd).
        let below = |k: usize| normal_cdf((k as f64 - 0.5 - mean) / sd);
        let mut k = 0;
        while k < m * n / 2 && below(k + 1) <= tail {
            k += 1;
        }
        return (k, 1.0 - 2.0 * below(k));
    }
    let distribution = mann_whitney_null(m, n);
    let mut below = 0.0; // P(U < k)
    let mut k = 0;
    while k < m * n / 2 && below + distribution[k] <= tail + 1e-12 {
        below += distribution[k];
        k += 1;
    }
    (k, 1.0 - 2.0 * below)
}

/// The largest one-sided error any rule of lockbench asks of a single comparison:
/// [`upper_bounds`] stops there.
const MAX_ERROR: f64 = 0.05;

/// Every one-sided upper bound on the shift x − y that the runs can give up to
/// [`MAX_ERROR`], as (error, bound) by increasing error: the k-th largest pairwise
/// difference lies above the shift except with probability P(U < k). The smallest
/// error whose bound lies below a value b is the exact one-sided p-value of "the
/// shift is b or more" (the Mann–Whitney test of x + b against y). Empty when a side
/// is.
pub fn upper_bounds(x: &[f64], y: &[f64]) -> Vec<(f64, f64)> {
    let (m, n) = (x.len(), y.len());
    if m == 0 || n == 0 {
        return Vec::new();
    }
    let mut differences: Vec<f64> = x
        .iter()
        .flat_map(|a| y.iter().map(move |b| a - b))
        .collect();
    differences.sort_by(f64::total_cmp);
    let count = differences.len();
    let exact = (m <= EXACT_UP_TO && n <= EXACT_UP_TO).then(|| mann_whitney_null(m, n));
    let (mean, sd) = (
        (m * n) as f64 / 2.0,
        ((m * n * (m + n + 1)) as f64 / 12.0).sqrt(),
    );
    let mut bounds = Vec::new();
    let mut below = 0.0; // P(U < k)
    for k in 1..=count.div_ceil(2) {
        below = match &exact {
            Some(distribution) => below + distribution[k - 1],
            None => normal_cdf((k as f64 - 0.5 - mean) / sd),
        };
        if below > MAX_ERROR + 1e-12 {
            break;
        }
        bounds.push((below, differences[count - k]));
    }
    bounds
}

/// The fewest runs a side (the same on both) that give an interval at `confidence`.
pub fn runs_needed(confidence: f64) -> usize {
    (1..=EXACT_UP_TO)
        .find(|&n| rank_bound(n, n, confidence).0 >= 1)
        .unwrap_or(EXACT_UP_TO)
}

/// Runs a side up to which [`rank_bound`] computes the null distribution exactly.
pub(super) const EXACT_UP_TO: usize = 50;

/// P(U = u) for u in 0..=m·n, U the Mann–Whitney count of (x, y) pairs with x < y
/// among m and n exchangeable values, by whether the largest value is an x (it is
/// below no y: U is that of the other m − 1 and n) or a y (all m x's are below it:
/// m more), p(m, n, u) = m/(m+n)·p(m−1, n, u) + n/(m+n)·p(m, n−1, u−m).
pub(super) fn mann_whitney_null(m: usize, n: usize) -> Vec<f64> {
    // row[j] = the distribution for (i, j), for the current i.
    let mut row: Vec<Vec<f64>> = (0..=n).map(|_| vec![1.0]).collect();
    for i in 1..=m {
        let mut next: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        next.push(vec![1.0]);
        for j in 1..=n {
            let total = (i + j) as f64;
            let mut p = vec![0.0; i * j + 1];
            // The largest is an x: U unchanged, from (i − 1, j).
            for (u, q) in row[j].iter().enumerate() {
                p[u] += q * i as f64 / total;
            }
            // The largest is a y: the i x's lie below it, from (i, j − 1).
            for (u, q) in next[j - 1].iter().enumerate() {
                p[u + i] += q * j as f64 / total;
            }
            next.push(p);
        }
        row = next;
    }
    row.swap_remove(n)
}

/// Φ(z), the standard normal distribution function (Abramowitz & Stegun 7.1.26,
/// error below 1.5e-7).
pub(super) fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    match z >= 0.0 {
        true => 0.5 * (1.0 + erf),
        false => 0.5 * (1.0 - erf),
    }
}

/// P(T > `t`) for Student's t with `df` degrees of freedom (1 or more), in closed
/// form for an integer `df` (Abramowitz & Stegun 26.7.3 and 26.7.4): with θ =
/// atan(|t| ÷ √df), P(|T| ≤ |t|) is (2/π)(θ + sin θ (cos θ + 2/3 cos³ θ + … +
/// (2·4···(df − 3)) ÷ (1·3···(df − 2)) cos^(df − 2) θ)) for an odd `df` (2θ/π at 1)
/// and sin θ (1 + 1/2 cos² θ + … + (1·3···(df − 3)) ÷ (2·4···(df − 2)) cos^(df − 2) θ)
/// for an even one.
pub(super) fn student_t_tail(t: f64, df: usize) -> f64 {
    let df = df.max(1);
    let theta = (t.abs() / (df as f64).sqrt()).atan();
    let (sin, cos) = theta.sin_cos();
    let inside = match df % 2 {
        1 => {
            let mut sum = 0.0;
            if df > 1 {
                let mut term = cos;
                sum = term;
                for k in 1..=(df - 3) / 2 {
                    term *= cos * cos * (2 * k) as f64 / (2 * k + 1) as f64;
                    sum += term;
                }
            }
            2.0 / std::f64::consts::PI * (theta + sin * sum)
        }
        _ => {
            let (mut term, mut sum) = (1.0, 1.0);
            for k in 1..=(df - 2) / 2 {
                term *= cos * cos * (2 * k - 1) as f64 / (2 * k) as f64;
                sum += term;
            }
            sin * sum
        }
    };
    let tail = (1.0 - inside) / 2.0;
    match t >= 0.0 {
        true => tail,
        false => 1.0 - tail,
    }
}

/// The t with P(T ≤ t) = `p` (½ or more) for Student's t with `df` degrees of
/// freedom, by bisection on [`student_t_tail`].
pub(super) fn student_t_quantile(p: f64, df: usize) -> f64 {
    let (mut low, mut high) = (0.0, 1e7);
    for _ in 0..100 {
        let mid = (low + high) / 2.0;
        match student_t_tail(mid, df) > 1.0 - p {
            true => low = mid,
            false => high = mid,
        }
    }
    (low + high) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::Distribution;

    #[test]
    fn the_null_distribution_matches_the_tables() {
        // m = n = 3: U = 0..9 over C(6,3) = 20 arrangements: 1 1 2 3 3 3 3 2 1 1.
        let p = mann_whitney_null(3, 3);
        let counts: Vec<f64> = p.iter().map(|q| (q * 20.0).round()).collect();
        assert_eq!(counts, [1., 1., 2., 3., 3., 3., 3., 2., 1., 1.]);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // Two-sided 5% critical values of U (Mann–Whitney tables): 4+4 → 0, 5+5 → 2,
        // 8+8 → 13, 10+10 → 23; k is one more.
        assert_eq!(rank_bound(3, 3, 0.95).0, 0, "3+3 cannot reach 95%");
        assert_eq!(rank_bound(4, 4, 0.95).0, 1);
        assert_eq!(rank_bound(5, 5, 0.95).0, 3);
        assert_eq!(rank_bound(8, 8, 0.95).0, 14);
        assert_eq!(rank_bound(10, 10, 0.95).0, 24);
        let (_, exact) = rank_bound(5, 5, 0.95);
        assert!((exact - (1.0 - 8.0 / 252.0)).abs() < 1e-9, "{exact}");
        assert_eq!(runs_needed(0.95), 4);
        assert_eq!(runs_needed(0.90), 3);
    }

    #[test]
    fn student_t_matches_its_tables() {
        // 97.5% quantiles (1, 2, 3, 5, 7, 8, 30 degrees of freedom) and 99.95% at 8.
        let table = [
            (1, 12.706),
            (2, 4.303),
            (3, 3.182),
            (5, 2.571),
            (7, 2.365),
            (8, 2.306),
            (30, 2.042),
        ];
        for (df, t) in table {
            assert!((student_t_tail(t, df) - 0.025).abs() < 2e-5, "{df}");
            assert!((student_t_quantile(0.975, df) - t).abs() < 2e-3, "{df}");
        }
        assert!((student_t_quantile(0.9995, 8) - 5.041).abs() < 2e-3);
        assert!((student_t_tail(-2.306, 8) - 0.975).abs() < 2e-5);
    }

    #[test]
    fn the_normal_approximation_agrees_with_the_exact_bound_where_both_apply() {
        // At 50 + 50 the exact count, and 51 + 51 through the approximation, are
        // within one rank of the same ~ mn/2 − 1.96 sd.
        let (exact, _) = rank_bound(50, 50, 0.95);
        let (approx, level) = rank_bound(51, 51, 0.95);
        let expected = 51.0 * 51.0 / 2.0 - 1.96 * (51.0 * 51.0 * 103.0 / 12.0f64).sqrt();
        assert!(
            (approx as f64 - expected).abs() <= 1.5,
            "{approx} vs {expected}"
        );
        assert!(
            exact < approx && (0.95..0.96).contains(&level),
            "{exact} {level}"
        );
    }

    #[test]
    fn the_interval_covers_the_true_ratio_at_its_stated_rate() {
        // Skewed noise (exponential delays, as preemption adds) and several run
        // counts: the coverage must be within 1.5 points of the exact level, which
        // for a shift holds whatever the noise's shape.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let delay = rand_distr::Exp::new(20.0).expect("a valid rate");
        for (m, n) in [(4, 4), (5, 5), (5, 8), (10, 10)] {
            let trials = 4000;
            let truth = 1.3f64.ln();
            let mut covered = 0;
            let mut level = 0.0;
            for _ in 0..trials {
                let x: Vec<f64> = (0..m).map(|_| truth - delay.sample(&mut rng)).collect();
                let y: Vec<f64> = (0..n).map(|_| -delay.sample(&mut rng)).collect();
                let interval = shift_interval(&x, &y, 0.95).unwrap();
                let (low, high) = interval.bounds.expect("enough runs");
                covered += usize::from(low <= truth && truth <= high);
                level = interval.confidence;
            }
            let rate = covered as f64 / trials as f64;
            assert!(level >= 0.95, "{m}+{n}: {level}");
            assert!((rate - level).abs() < 0.015, "{m}+{n}: {rate} vs {level}");
        }
    }
}
