//! The windowed mutex scenarios on the command line (overcommit, mutex-load), whose
//! cells run in child processes: tables, outputs, undrainable cells, verification.

mod common;

use std::time::{Duration, Instant};

use common::{assert_busted_is_caught, measure, scratch, stderr, stdout, windowed_outputs};

#[test]
fn a_tiny_overcommit_run_prints_its_tables() {
    let (json, csv) = (scratch("overcommit.json"), scratch("overcommit.csv"));
    let out = measure(&[
        "overcommit",
        "--locks",
        "pvqspinlock,std",
        "--threads",
        "4",
        "--cs",
        "short",
        "--overcommit",
        "1",
        "--window-ms",
        "200",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("overcommit, all locks"), "{text}");
    assert!(text.contains("overcommit, per cell"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("4 ") && l.contains("short") && l.contains(" f")),
        "{text}"
    );
    for cell in windowed_outputs(&json, &csv, 2) {
        assert_eq!(cell["overcommit"]["cs"], "short", "{cell}");
    }
}

/// 128 threads on a ticket lock, beside hogs, cannot drain in half a second on a
/// small machine: every waiter must take the lock once more after the window, and
/// each handoff to a preempted waiter costs a time slice. The cell is reported, the
/// child killed, the run goes on.
#[test]
fn an_undrainable_fifo_cell_is_reported_not_awaited() {
    let start = Instant::now();
    let out = measure(&[
        "overcommit",
        "--locks",
        "ticket,pvqspinlock",
        "--threads",
        "128",
        "--cs",
        "short",
        "--overcommit",
        "2",
        "--window-ms",
        "100",
        "--drain-cap-secs",
        "0.5",
        "--runs",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    let text = stdout(&out);
    assert!(text.contains("DNF (drain > 0.5 s)"), "{text}");
    assert!(
        text.contains("not finished (drain > 0.5 s, killed)"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("pvqspinlock ") && l.contains(" 128 ")),
        "{text}"
    );
}

/// As in loop: the busted lock must fail verification, in the parent, from the counts
/// the cell process reports.
#[test]
fn the_busted_lock_fails_overcommit_verification() {
    let args = [
        "overcommit",
        "--locks",
        "busted",
        "--threads",
        "4",
        "--cs",
        "short",
        "--overcommit",
        "1",
        "--window-ms",
        "100",
        "--runs",
        "1",
    ];
    assert_busted_is_caught(&args);
}

#[test]
fn a_tiny_mutex_load_run_prints_its_tables() {
    let (json, csv) = (scratch("mutex-load.json"), scratch("mutex-load.csv"));
    let out = measure(&[
        "mutex-load",
        "--threads",
        "2,4",
        "--load",
        "1,10",
        "--window-ms",
        "100",
        "--runs",
        "1",
        "--locks",
        "std,parking_lot",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("mutex-load, all locks"), "{text}");
    assert!(text.contains("mutex-load, per cell"), "{text}");
    for (threads, load) in [("2", "1"), ("2", "10"), ("4", "1"), ("4", "10")] {
        assert!(
            text.lines().any(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words.starts_with(&[threads, load]) && l.contains(" ns ") && l.contains(" f")
            }),
            "no row for {threads} threads, load {load}: {text}"
        );
    }
    for cell in windowed_outputs(&json, &csv, 8) {
        assert_eq!(cell["scenario"], "mutex-load", "{cell}");
        assert!(
            cell["mutex_load"]["load_pauses"].as_u64().is_some(),
            "{cell}"
        );
    }
}

#[test]
fn the_seed_004_tables_compare_futex_and_spinfutex() {
    let out = measure(&[
        "mutex-load",
        "--locks",
        "futex,spinfutex,std",
        "--threads",
        "2",
        "--load",
        "10",
        "--window-ms",
        "100",
        "--runs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("seed 004 (base = futex, the waiting futex; patched = spinfutex"),
        "{text}"
    );
    assert!(text.contains("spinfutex vs futex"), "{text}");
    assert!(text.contains("mutex-load, bars: spinfutex"), "{text}");
    assert!(text.contains("ceiling kops/s"), "{text}");
    assert!(
        text.contains("spinfutex ÷ the best peer as throughput (above 1: spinfutex is faster)")
            && text.contains(" over 1 cells; lowest "),
        "{text}"
    );
}

/// As in overcommit: the cell processes report counts, the parent verifies them.
#[test]
fn the_busted_lock_fails_mutex_load_verification() {
    let args = [
        "mutex-load",
        "--locks",
        "busted",
        "--threads",
        "4",
        "--load",
        "1",
        "--window-ms",
        "100",
        "--runs",
        "1",
    ];
    assert_busted_is_caught(&args);
}
