//! The verdict's rate of error and power, on simulated runs and on committed ones.

use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// `runs` log throughputs around `ln(level)` with log-normal noise of `sigma`.
pub(crate) fn runs(rng: &mut ChaCha8Rng, level: f64, sigma: f64, runs: usize) -> Vec<f64> {
    let noise = Normal::new(0.0, sigma).expect("a valid sigma");
    (0..runs).map(|_| level.ln() + noise.sample(rng)).collect()
}

#[test]
fn wall_times_become_throughputs() {
    let fast = log_throughput(50.0, true).unwrap();
    let slow = log_throughput(100.0, true).unwrap();
    let judgement = judge(&[fast; 5], &[slow; 5], Settings::default()).unwrap();
    assert!((judgement.ratio - 2.0).abs() < 1e-12);
    assert_eq!(judgement.verdict, Verdict::Faster);
    assert_eq!(log_throughput(0.0, false), None);
}

#[test]
fn verdicts_print_in_their_direction() {
    let judged = |ratio: f64, low: f64, high: f64, verdict| Judgement {
        ratio,
        low: Some(low),
        high: Some(high),
        confidence: Some(0.968),
        verdict,
        runs_x: 5,
        runs_y: 5,
    };
    assert_eq!(
        judged(1.32, 1.2, 1.45, Verdict::Faster).to_string(),
        "1.32× faster [1.20–1.45]"
    );
    assert_eq!(
        judged(0.8, 0.75, 0.86, Verdict::Slower).to_string(),
        "1.25× slower [1.16–1.33]"
    );
    assert_eq!(
        judged(1.0, 0.97, 1.04, Verdict::NoClearDifference).to_string(),
        "≈ [0.97–1.04]"
    );
    assert_eq!(
        judged(0.8, 0.75, 0.86, Verdict::Slower).worded("fairer", "less fair"),
        "1.25× less fair [1.16–1.33]"
    );
    let few = judge(&[0.0, 0.1, 0.2], &[0.0, 0.1, 0.2], Settings::default()).unwrap();
    assert_eq!(few.verdict, Verdict::TooFewRuns);
    assert_eq!(few.to_string(), "1.00×, too few runs (3+3)");
}

#[test]
fn an_interval_inside_the_minimum_effect_is_no_clear_difference() {
    // X 2% faster with almost no noise: the interval excludes 1 but lies inside 5%.
    let x = [0.020, 0.0201, 0.0199, 0.0202, 0.0198];
    let y = [0.0, 0.0001, -0.0001, 0.0002, -0.0002];
    let judgement = judge(&x, &y, Settings::default()).unwrap();
    assert!(judgement.low.unwrap() > 1.0, "{judgement:?}");
    assert_eq!(judgement.verdict, Verdict::NoClearDifference);
    let strict = Settings {
        min_effect: 0.01,
        ..Settings::default()
    };
    assert_eq!(judge(&x, &y, strict).unwrap().verdict, Verdict::Faster);
}

/// The spread of a real contended cell's runs: the median standard deviation of
/// ln(throughput) over the cells of the committed results is 0.03–0.05.
pub(crate) const REAL_SIGMA: f64 = 0.05;

#[test]
fn a_a_pairs_give_no_clear_difference_in_95_percent_of_cells() {
    // 5 runs a side (lockbench's default --runs), 2000 seeded trials.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let trials = 2000;
    let mut quiet = 0;
    for _ in 0..trials {
        let level = rng.gen_range(1e5..1e7);
        let x = runs(&mut rng, level, REAL_SIGMA, 5);
        let y = runs(&mut rng, level, REAL_SIGMA, 5);
        let judgement = judge(&x, &y, Settings::default()).unwrap();
        quiet += usize::from(judgement.verdict == Verdict::NoClearDifference);
    }
    assert!(quiet * 100 >= trials * 95, "{quiet} of {trials}");
}

#[test]
fn a_20_percent_slowdown_is_found_slower_in_95_percent_of_trials() {
    // 5 runs a side, the real cells' spread, 2000 seeded trials.
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let trials = 2000;
    let mut found = 0;
    for _ in 0..trials {
        let x = runs(&mut rng, 0.8, REAL_SIGMA, 5);
        let y = runs(&mut rng, 1.0, REAL_SIGMA, 5);
        let judgement = judge(&x, &y, Settings::default()).unwrap();
        found += usize::from(judgement.verdict == Verdict::Slower);
        assert_ne!(judgement.verdict, Verdict::Faster);
    }
    assert!(found * 100 >= trials * 95, "{found} of {trials}");
}

/// Every finished cell of a committed result with 5 runs, as log throughputs.
fn committed_cells(file: &str) -> Vec<Vec<f64>> {
    let path = format!("{}/../docs/results/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
    let json: serde_json::Value = serde_json::from_str(&text).expect("a result file");
    let cells = json["cells"].as_array().expect("cells");
    cells
        .iter()
        .filter(|cell| cell["unfinished"].is_null() && !cell["summary"].is_null())
        .map(|cell| {
            let lower = !cell["unit"].as_str().unwrap_or("").ends_with("/s");
            let runs = cell["runs"].as_array().expect("runs");
            runs.iter()
                .filter_map(|run| log_throughput(run["value"].as_f64()?, lower))
                .collect::<Vec<f64>>()
        })
        .filter(|runs| runs.len() == 5)
        .collect()
}

#[test]
fn a_a_pairs_resampled_from_committed_runs_give_no_clear_difference() {
    // Each of the 144 five-run cells of the sharded and rw-mix results (committed,
    // measured on the development VM): two sets of 5 runs drawn with replacement
    // from the cell's own runs, 20 seeded trials per cell. The same sets with one
    // made 20% slower are found slower in about 91% of trials (the noisiest tenth
    // of these cells spread by 9% to 15% or more, as the standard deviation of ln):
    // 5 runs detect a 20% loss reliably only in the quieter cells.
    let mut cells = committed_cells("sharded-2026-11-25.json");
    cells.extend(committed_cells("rw-mix-2026-11-25.json"));
    assert_eq!(cells.len(), 144);
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let (mut trials, mut quiet, mut found) = (0, 0, 0);
    for runs in &cells {
        for _ in 0..20 {
            let mut draw =
                || -> Vec<f64> { (0..5).map(|_| runs[rng.gen_range(0..runs.len())]).collect() };
            let (a, b) = (draw(), draw());
            let judgement = judge(&a, &b, Settings::default()).unwrap();
            trials += 1;
            quiet += usize::from(judgement.verdict == Verdict::NoClearDifference);
            let slower: Vec<f64> = a.iter().map(|v| v + 0.8f64.ln()).collect();
            let judgement = judge(&slower, &b, Settings::default()).unwrap();
            found += usize::from(judgement.verdict == Verdict::Slower);
        }
    }
    assert!(quiet * 100 >= trials * 95, "{quiet} of {trials}");
    assert!(found * 100 >= trials * 88, "{found} of {trials}");
}

#[test]
fn the_tally_counts_and_bounds_the_wrong_verdicts() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let judgements: Vec<Judgement> = [1.0, 1.0, 1.5, 0.5]
        .iter()
        .map(|&level| {
            let x = runs(&mut rng, level, 0.01, 5);
            let y = runs(&mut rng, 1.0, 0.01, 5);
            judge(&x, &y, Settings::default()).unwrap()
        })
        .collect();
    let tally = Tally::of(&judgements);
    assert_eq!(
        (tally.faster, tally.no_clear_difference, tally.slower),
        (1, 2, 1)
    );
    assert!((tally.expected_wrong - 4.0 * 8.0 / 252.0).abs() < 1e-9);
    let note = tally.note(Settings::default());
    assert!(
        note.contains("1 faster, 2 no clear difference, 1 slower; chance alone gives at most 0.1 wrong verdicts in these 4 cells"),
        "{note}"
    );
}
