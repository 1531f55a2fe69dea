//! The in-process mutex scenarios on the command line (loop, sharded, false-sharing):
//! their tables, and verification catching the busted lock.

mod common;

use common::{assert_busted_is_caught, measure, stderr, stdout};

#[test]
fn a_tiny_loop_prints_its_tables() {
    let out = measure(&[
        "loop",
        "--locks",
        "qspinlock,std",
        "--threads",
        "2",
        "--iterations",
        "2000",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("loop, all locks"), "{text}");
    assert!(text.contains("ns/handoff"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("qspinlock ") && l.contains(" 2 ")),
        "{text}"
    );
    assert!(text.lines().any(|l| l.starts_with("std ")), "{text}");
}

#[test]
fn the_seed_000_table_compares_before_and_after() {
    let out = measure(&[
        "loop",
        "--locks",
        "qspinlock-cmpxchg,qspinlock",
        "--threads",
        "1,2",
        "--iterations",
        "2000",
        "--runs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("seed 000"), "{text}");
    // One run a side gives a ratio but no interval, and says so.
    assert!(text.contains("qspinlock vs qspinlock-cmpxchg"), "{text}");
    assert!(text.contains("×, too few runs (1+1)"), "{text}");
}

#[test]
fn the_seed_003_tables_compare_base_and_patched() {
    let out = measure(&[
        "loop",
        "--locks",
        "ticket,pvticket,qspinlock,pvqspinlock",
        "--threads",
        "1,2",
        "--iterations",
        "2000",
        "--runs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("seed 003 (base = ticket, patched = pvticket)"),
        "{text}"
    );
    assert!(
        text.contains("(base = qspinlock, patched = pvqspinlock)"),
        "{text}"
    );
    assert!(text.contains("pvticket vs ticket"), "{text}");
    assert!(text.contains("pvqspinlock vs qspinlock"), "{text}");
}

#[test]
fn the_busted_lock_fails_verification() {
    let args = [
        "loop",
        "--locks",
        "busted",
        "--threads",
        "2",
        "--iterations",
        "200000",
    ];
    assert_busted_is_caught(&args);
}

#[test]
fn the_busted_lock_loses_updates_in_a_sharded_map() {
    let args = [
        "sharded",
        "--locks",
        "busted",
        "--threads",
        "2",
        "--shards",
        "1",
        "--ops",
        "200000",
        "--cs-pauses",
        "0",
        "--outside-pauses",
        "0",
        "--runs",
        "1",
    ];
    assert_busted_is_caught(&args);
}

#[test]
fn a_tiny_sharded_run_compares_default_with_the_best_peer() {
    let out = measure(&[
        "sharded",
        "--locks",
        "default,std,parking_lot",
        "--threads",
        "2",
        "--shards",
        "1,64",
        "--ops",
        "2000",
        "--runs",
        "4",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(table.contains("klocks::Mutex vs best"), "{table}");
    assert!(table.contains("geometric mean"), "{table}");
    assert!(
        table.contains("chance alone gives at most 0.1 wrong verdicts in these 2 cells"),
        "{table}"
    );
}

#[test]
fn false_sharing_skips_locks_padded_cannot_wrap() {
    let out = measure(&[
        "false-sharing",
        "--locks",
        "qspinlock,std",
        "--duration-ms",
        "20",
        "--runs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.lines().any(|l| l.starts_with("qspinlock ")), "{text}");
    assert!(text.contains("skipped") && text.contains("std"), "{text}");
}
