//! compare's verdicts on small files, and on files drawn from a real run.

use super::*;
use crate::html_report::RunFile;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A file of one mutex-load cell at 2 threads per (lock, runs).
fn file(cells: &[(&str, &[f64])]) -> RunFile {
    let at_two: Vec<(&str, usize, &[f64])> = cells.iter().map(|&(l, r)| (l, 2, r)).collect();
    file_at(&at_two)
}

/// A file of one mutex-load cell per (lock, threads, runs).
fn file_at(cells: &[(&str, usize, &[f64])]) -> RunFile {
    let machine = serde_json::json!({
        "cpu_model": "cpu", "online_cpus": 2, "kernel": "6.1", "glibc": "2.36",
        "rustc": "1.88", "pause_ns": 30.0, "pv_spin_ns": 20000, "owner_probe": "perf",
    });
    let cells: Vec<serde_json::Value> = cells
        .iter()
        .map(|(lock, threads, runs)| {
            let summary = Summary::of(runs.iter().copied()).unwrap();
            serde_json::json!({
                "scenario": "mutex-load", "lock": lock, "threads": threads, "unit": "ops/s",
                "summary": summary,
                "runs": runs.iter().map(|v| serde_json::json!({"value": v})).collect::<Vec<_>>(),
            })
        })
        .collect();
    RunFile::of_run(serde_json::json!({
        "machine": machine, "command": ["lockbench"], "cells": cells,
    }))
    .unwrap()
}

const RUNS: [f64; 5] = [100.0, 103.0, 97.0, 101.0, 99.0];

fn scaled(by: f64) -> Vec<f64> {
    RUNS.iter().map(|v| v * by).collect()
}

#[test]
fn only_an_interval_beyond_the_limit_is_a_regression() {
    let a = file(&[("glibc", &RUNS), ("std", &RUNS)]);
    let b = file(&[("glibc", &scaled(0.6)), ("std", &scaled(1.02))]);
    let comparison = compare(&a, &b, &Drift::Absolute);
    let verdicts: Vec<Verdict> = comparison
        .rows
        .iter()
        .map(|row| match row.change {
            Change::Judged(j) => j.verdict,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(verdicts, [Verdict::Slower, Verdict::NoClearDifference]);
    assert_eq!(comparison.failures(10.0).cells.len(), 1);
    assert!(
        comparison.failures(100.0).is_empty(),
        "0.6× is not 2× slower"
    );
}

/// A cell that fails alone after Holm names its lock's other cells that are slower by
/// their own verdict, which do not fail alone, and no cell of another lock.
#[test]
fn a_failing_cell_names_its_locks_other_slower_cells() {
    let six: Vec<f64> = RUNS.iter().copied().chain([100.5]).collect();
    let six_slow: Vec<f64> = six.iter().map(|v| v * 0.6).collect();
    let mut a_cells: Vec<(&str, usize, &[f64])> = vec![("glibc", 2, &six), ("glibc", 4, &RUNS)];
    let mut b_cells: Vec<(&str, usize, Vec<f64>)> =
        vec![("glibc", 2, six_slow), ("glibc", 4, scaled(0.8))];
    for threads in 1..=6 {
        a_cells.push(("std", threads, &RUNS));
        b_cells.push(("std", threads, scaled(1.01)));
    }
    // glibc unchanged in four more cells: over its six, it is not clearly slower.
    for threads in 5..=8 {
        a_cells.push(("glibc", threads, &RUNS));
        b_cells.push(("glibc", threads, scaled(1.0)));
    }
    let b_cells: Vec<(&str, usize, &[f64])> = b_cells
        .iter()
        .map(|(l, t, r)| (*l, *t, r.as_slice()))
        .collect();
    let comparison = compare(&file_at(&a_cells), &file_at(&b_cells), &Drift::Absolute);
    let failures = comparison.failures(5.0);
    let names = |rows: &[&Row]| -> Vec<String> { rows.iter().map(|r| r.cell[3].clone()).collect() };
    assert!(failures.locks.is_empty(), "{:?}", failures.locks);
    assert_eq!(names(&failures.cells), ["2"]);
    assert_eq!(names(&failures.also), ["4"]);
    assert!(failures.also.iter().all(|row| row.cell[2] == "glibc"));
}

#[test]
fn a_cell_too_wide_to_decide_says_so() {
    // std's B runs spread from 0.6× to 1.5× A's: ≈, its interval far wider than
    // ±5%; glibc's stay within 2%: ≈ and decided.
    let spread = [60.0, 150.0, 100.0, 80.0, 130.0];
    let a = file(&[("glibc", &RUNS), ("std", &RUNS)]);
    let b = file(&[("glibc", &scaled(1.01)), ("std", &spread)]);
    let text = compare(&a, &b, &Drift::Absolute).render();
    let line = |lock: &str| {
        let found = text.lines().find(|l| l.contains(lock) && l.contains('≈'));
        found.unwrap_or_else(|| panic!("{text}")).to_owned()
    };
    assert!(line("std").ends_with(", too wide to decide"), "{text}");
    assert!(!line("glibc").contains("too wide"), "{text}");
    assert!(
        text.contains("too wide to decide: 1 of the ≈ cells"),
        "{text}"
    );
}

#[test]
fn a_reference_cancels_a_drift_but_not_a_change() {
    let a = file(&[("glibc", &RUNS), ("default", &RUNS), ("std", &scaled(2.0))]);
    let b = file(&[
        ("glibc", &scaled(0.5 * 0.7)),
        ("default", &scaled(0.7)),
        ("std", &scaled(2.0 * 0.7)),
    ]);
    assert_eq!(
        compare(&a, &b, &Drift::Absolute).failures(5.0).cells.len(),
        3,
        "the drift"
    );
    let relative = compare(&a, &b, &Drift::Lock("std".to_owned()));
    assert_eq!(relative.unreferenced, 1, "std against itself");
    let regressed: Vec<&str> = relative
        .failures(5.0)
        .cells
        .iter()
        .map(|row| row.cell[2].as_str())
        .collect();
    assert_eq!(regressed, ["glibc"]);
}

#[test]
fn by_default_each_lock_is_judged_against_the_other_locks_of_its_cell() {
    // The machine 30% slower in B; glibc lost 40% of its own on top.
    let a = file(&[
        ("glibc", &RUNS),
        ("default", &scaled(1.5)),
        ("std", &scaled(2.0)),
        ("parking_lot", &scaled(1.8)),
    ]);
    let b = file(&[
        ("glibc", &scaled(0.6 * 0.7)),
        ("default", &scaled(1.5 * 0.7)),
        ("std", &scaled(2.0 * 0.7)),
        ("parking_lot", &scaled(1.8 * 0.7)),
    ]);
    let comparison = compare(&a, &b, &Drift::OtherLocks);
    let verdicts: Vec<(&str, Verdict)> = comparison
        .rows
        .iter()
        .map(|row| match row.change {
            Change::Judged(j) => (row.cell[2].as_str(), j.verdict),
            other => panic!("{other:?}"),
        })
        .collect();
    // The others' median is unmoved by glibc's own loss.
    assert_eq!(
        verdicts,
        [
            ("glibc", Verdict::Slower),
            ("default", Verdict::NoClearDifference),
            ("std", Verdict::NoClearDifference),
            ("parking_lot", Verdict::NoClearDifference),
        ]
    );
    let glibc = &comparison.rows[0];
    assert_eq!(
        glibc.against,
        Against::Locks(
            Correction::PerRound,
            vec!["default".into(), "std".into(), "parking_lot".into()]
        ),
        "never itself"
    );
    let text = comparison.render();
    assert!(
        text.contains("each of glibc, klocks::Mutex, std, parking_lot relative to the other locks"),
        "{text}"
    );
    // Alone in its group: judged directly, and said so.
    let alone = compare(
        &file(&[("std", &RUNS)]),
        &file(&[("std", &RUNS)]),
        &Drift::OtherLocks,
    );
    assert_eq!(alone.rows[0].against, Against::Alone);
    assert!(alone
        .render()
        .contains("alone in its cell group, judged directly"));
}

#[test]
fn a_reference_that_jumped_between_executions_is_not_taken_for_a_change() {
    // Three locks, so two references each, whose median is their mean: default runs
    // 1.8× faster in every run of B (its mode decided per execution), glibc and std
    // are unchanged. Taken relative to the mean of default and the other, each of
    // glibc and std looks 1.34× slower in every round; the references' disagreement
    // (one moved by 1.8×, the other not) is carried as a term and neither fails.
    let a = file(&[("glibc", &RUNS), ("std", &RUNS), ("default", &RUNS)]);
    let b = file(&[
        ("glibc", &scaled(1.0)),
        ("std", &scaled(1.0)),
        ("default", &scaled(1.8)),
    ]);
    let comparison = compare(&a, &b, &Drift::OtherLocks);
    let failures = comparison.failures(5.0);
    assert!(failures.is_empty(), "{:?}", failures.cells);
    for row in &comparison.rows[..2] {
        match row.change {
            Change::Judged(j) => assert_eq!(j.verdict, Verdict::NoClearDifference, "{j}"),
            other => panic!("{other:?}"),
        }
    }
    // References that move alike (the machine's drift) cost nothing.
    let drifted = file(&[
        ("glibc", &scaled(0.5)),
        ("std", &scaled(0.7)),
        ("default", &scaled(0.7)),
    ]);
    let comparison = compare(&a, &drifted, &Drift::OtherLocks);
    let regressed: Vec<&str> = comparison
        .failures(5.0)
        .cells
        .iter()
        .map(|row| row.cell[2].as_str())
        .collect();
    assert_eq!(regressed, ["glibc"]);
}

/// A file of the preload scenario at one thread: per (lock, wall times in seconds,
/// metric runs), a wall-time cell and a metric cell read from the same runs.
fn preload(cells: &[(&str, &[f64], &[f64])]) -> RunFile {
    let machine = serde_json::json!({
        "cpu_model": "cpu", "online_cpus": 2, "kernel": "6.1", "glibc": "2.36",
        "rustc": "1.88", "pause_ns": 30.0, "pv_spin_ns": 20000, "owner_probe": "perf",
    });
    let cell = |lock: &str, layout: Option<&str>, unit: &str, runs: &[f64]| {
        serde_json::json!({
            "scenario": "preload", "lock": lock, "threads": 1, "unit": unit,
            "layout": layout, "summary": Summary::of(runs.iter().copied()).unwrap(),
            "runs": runs.iter().map(|v| serde_json::json!({"value": v})).collect::<Vec<_>>(),
        })
    };
    let cells: Vec<serde_json::Value> = cells
        .iter()
        .flat_map(|(lock, wall, metric)| {
            [
                cell(lock, None, "s", wall),
                cell(lock, Some("metric"), "metric", metric),
            ]
        })
        .collect();
    RunFile::of_run(serde_json::json!({
        "machine": machine, "command": ["lockbench"], "cells": cells,
    }))
    .unwrap()
}

#[test]
fn a_second_measure_of_the_same_runs_counts_once_in_the_fail_rule() {
    // glibc+preload's wall time and its program's metric are two readings of the
    // same runs: the table shows both, the fail rule's families hold one.
    let wall: Vec<f64> = RUNS.iter().map(|v| v / 1000.0).collect();
    let slower: Vec<f64> = wall.iter().map(|v| v * 1.3).collect();
    let a = preload(&[
        ("glibc", &wall, &RUNS),
        ("glibc+preload", &wall, &RUNS),
        ("default", &wall, &RUNS),
        ("std", &wall, &RUNS),
    ]);
    let b = preload(&[
        ("glibc", &wall, &RUNS),
        ("glibc+preload", &slower, &scaled(1.0 / 1.3)),
        ("default", &wall, &RUNS),
        ("std", &wall, &RUNS),
    ]);
    let comparison = compare(&a, &b, &Drift::OtherLocks);
    assert_eq!(comparison.rows.len(), 8, "both measures shown");
    let pooled = comparison.pooled();
    assert!(pooled.iter().all(|p| p.cells == 1), "{pooled:?}");
    let text = comparison.render();
    assert!(text.contains("among 4"), "{text}");
}

#[test]
fn runs_that_do_not_pair_up_are_judged_per_group() {
    // std has 6 runs in B: its runs no longer pair with glibc's by round.
    let mut six = scaled(0.7);
    six.push(70.0);
    let a = file(&[("glibc", &RUNS), ("std", &RUNS)]);
    let b = file(&[("glibc", &scaled(0.7)), ("std", &six)]);
    let comparison = compare(&a, &b, &Drift::OtherLocks);
    let glibc = &comparison.rows[0];
    assert!(matches!(
        glibc.against,
        Against::Locks(Correction::PerGroup, _)
    ));
    match glibc.change {
        Change::Judged(j) => assert_eq!(j.verdict, Verdict::NoClearDifference, "{j}"),
        other => panic!("{other:?}"),
    }
}

/// The committed default run (trimmed to what compare reads), measured with
/// `lockbench --json` on the development VM on 2026-11-27, while other builds ran.
fn default_run() -> RunFile {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/default-run.json"
    );
    RunFile::load(std::path::Path::new(path)).expect("the committed default run")
}

/// The drift a draw adds to a file: ±20% to the whole file, a further σ = 10% per
/// cell group and σ = 3% per round of a group, as a VM whose vCPUs move does.
const FILE_DRIFT: f64 = 0.2;
const GROUP_DRIFT: f64 = 0.1;
const ROUND_DRIFT: f64 = 0.03;

/// A run drawn from `base`: each finished cell keeps its run count, each run is one
/// of the cell's own runs at random with noise of half the cell's own spread (so that
/// no two draws tie), and the drift of [`FILE_DRIFT`] on top; `default`'s throughput
/// times `default_speed`.
fn drawn(base: &RunFile, rng: &mut ChaCha8Rng, default_speed: f64) -> RunFile {
    use rand_distr::{Distribution, Normal};
    let mut file = base.clone();
    let file_drift = rng.gen_range(-FILE_DRIFT..FILE_DRIFT);
    let mut groups: Vec<([String; 3], f64, Vec<f64>)> = Vec::new();
    for cell in &mut file.cells {
        let logs = cell.log_throughputs();
        if logs.is_empty() {
            continue;
        }
        let id = key(cell);
        let group_id = [id[0].clone(), id[1].clone(), id[3].clone()];
        let at = match groups.iter().position(|(g, _, _)| *g == group_id) {
            Some(at) => at,
            None => {
                let drift = Normal::new(0.0, GROUP_DRIFT).unwrap().sample(rng);
                let rounds = Normal::new(0.0, ROUND_DRIFT).unwrap();
                let rounds = (0..64).map(|_| rounds.sample(rng)).collect();
                groups.push((group_id, drift, rounds));
                groups.len() - 1
            }
        };
        let (_, group_drift, rounds) = &groups[at];
        let mut sorted = logs.clone();
        sorted.sort_by(f64::total_cmp);
        let spread = ((sorted[sorted.len() - 1] - sorted[0]) / 4.0).max(0.005);
        let noise = Normal::new(0.0, spread / 2.0).unwrap();
        let speed = match cell.lock {
            "default" => default_speed.ln(),
            _ => 0.0,
        };
        let lower = cell.lower_is_better();
        for (i, run) in cell.runs.iter_mut().enumerate() {
            let log = logs[rng.gen_range(0..logs.len())]
                + noise.sample(rng)
                + file_drift
                + group_drift
                + rounds[i % rounds.len()]
                + speed;
            run.value = match lower {
                true => (-log).exp(),
                false => log.exp(),
            };
        }
    }
    file
}

/// In how many of `trials` seeded pairs drawn from the default run (B's `default`
/// at `default_speed`) `--fail-on-regression pct` fails, and in how many it names
/// `default` among the locks.
fn fail_rate(
    drift: &Drift,
    pct: f64,
    default_speed: f64,
    trials: usize,
    seed: u64,
) -> (usize, usize) {
    let base = default_run();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut failed, mut named) = (0, 0);
    for _ in 0..trials {
        let a = drawn(&base, &mut rng, 1.0);
        let b = drawn(&base, &mut rng, default_speed);
        let comparison = compare(&a, &b, drift);
        let failures = comparison.failures(pct);
        failed += usize::from(!failures.is_empty());
        named += usize::from(failures.locks.iter().any(|(p, _)| p.lock == "default"));
    }
    (failed, named)
}

#[test]
fn two_runs_of_the_same_build_pass_in_95_percent_of_trials() {
    // At the limit of 5%, and at 0, where any lock or cell found slower at all
    // fails: the family-wise error itself.
    let trials = 100;
    for pct in [5.0, 0.0] {
        let (failed, _) = fail_rate(&Drift::OtherLocks, pct, 1.0, trials, 21);
        assert!(
            failed * 100 <= trials * 5,
            "limit {pct}%: {failed} of {trials} failed"
        );
    }
}

#[test]
fn a_lock_20_percent_slower_everywhere_fails_and_is_named_in_95_percent_of_trials() {
    let trials = 100;
    let (_, named) = fail_rate(&Drift::OtherLocks, 5.0, 0.8, trials, 22);
    assert!(
        named * 100 >= trials * 95,
        "default named in {named} of {trials}"
    );
}

#[test]
fn relative_to_one_lock_does_not_turn_two_runs_of_the_same_build_into_a_regression() {
    let trials = 50;
    for lock in ["std", "glibc"] {
        let (failed, _) = fail_rate(&Drift::Lock(lock.to_owned()), 5.0, 1.0, trials, 23);
        assert!(
            failed * 100 <= trials * 5,
            "{lock}: {failed} of {trials} failed"
        );
    }
}

#[test]
fn a_20_percent_loss_in_one_execution_of_the_default_run_is_called_in_its_single_thread_cells() {
    // Pairs drawn from the committed default run (runs of one execution, no effect
    // between executions to widen by): `default` 20% slower in B is called slower in
    // its single-thread cells in 95% of them or more, as before the widening.
    let base = default_run();
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let (mut cells, mut called) = (0, 0);
    for _ in 0..40 {
        let a = drawn(&base, &mut rng, 1.0);
        let b = drawn(&base, &mut rng, 0.8);
        let comparison = compare(&a, &b, &Drift::OtherLocks);
        for row in &comparison.rows {
            if row.cell[2] != "default" || row.cell[3] != "1" {
                continue;
            }
            if let Change::Judged(j) = row.change {
                cells += 1;
                called += usize::from(j.verdict == Verdict::Slower);
            }
        }
    }
    assert!(cells >= 80, "{cells}");
    assert!(
        called * 100 >= cells * 95,
        "{called} of {cells} called slower"
    );
}
