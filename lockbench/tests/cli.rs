//! lockbench's command line: usage errors, verification, outputs, time caps.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Tests that measure take turns: side by side on a 2-CPU machine they would
/// measure each other.
static MACHINE: Mutex<()> = Mutex::new(());

fn lockbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(args)
        .output()
        .expect("lockbench starts")
}

fn measure(args: &[&str]) -> Output {
    let _turn = MACHINE.lock().unwrap_or_else(PoisonError::into_inner);
    lockbench(args)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()))
}

#[test]
fn an_unknown_lock_is_a_usage_error() {
    let out = lockbench(&["loop", "--locks", "qspinlock,no-such-lock"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-lock"));
}

#[test]
fn zero_threads_is_a_usage_error() {
    let out = lockbench(&["loop", "--threads", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn bad_values_are_usage_errors() {
    let cases: &[&[&str]] = &[
        &["loop", "--iterations", "0"],
        &["loop", "--threads", "two"],
        &["loop", "--cap-secs", "0"],
        &["--runs", "0"],
        &["false-sharing", "--threads", "9"],
        &["false-sharing", "--duration-ms", "1"],
        &["c2c", "--round-trips", "lots"],
    ];
    for args in cases {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn the_hidden_negative_control_is_not_listed() {
    let out = lockbench(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("qspinlock-cmpxchg"));
    assert!(!stdout(&out).contains("busted"));
}

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
    assert!(text.contains("%change"), "{text}");
}

/// The busted lock lets two threads in at once; lockbench must refuse the result.
/// A violation needs the threads to overlap, which a busy host can deny a single
/// short run, so the test gives it a few attempts (each well under a second).
#[test]
fn the_busted_lock_fails_verification() {
    const ATTEMPTS: usize = 5;
    let args = [
        "loop",
        "--locks",
        "busted",
        "--threads",
        "2",
        "--iterations",
        "200000",
    ];
    let caught = (0..ATTEMPTS).find_map(|_| {
        let out = measure(&args);
        match out.status.code() {
            Some(1) => Some(out),
            Some(0) => None,
            other => panic!("exit {other:?}: {}", stderr(&out)),
        }
    });
    let out = caught.expect("lockbench never caught the busted lock");
    assert!(
        stderr(&out).contains("verification failed"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("busted"));
    assert!(
        !stdout(&out).contains("busted"),
        "a wrong result reached a table"
    );
}

#[test]
fn json_and_csv_hold_the_machine_and_every_run() {
    let (json, csv) = (scratch("out.json"), scratch("out.csv"));
    let out = measure(&[
        "uncontended",
        "--locks",
        "qspinlock,std",
        "--iterations",
        "10000",
        "--runs",
        "2",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("valid JSON");
    let machine = &report["machine"];
    assert!(machine["cpu_model"].is_string(), "{machine}");
    assert!(machine["online_cpus"].as_u64().unwrap() >= 1);
    assert!(machine["pause_ns"].as_f64().unwrap() > 0.0);
    let cells = report["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for cell in cells {
        assert_eq!(cell["runs"].as_array().unwrap().len(), 2, "{cell}");
        assert!(cell["summary"]["median"].as_f64().unwrap() > 0.0);
    }
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), 3, "{rows}");
    assert!(rows.starts_with("scenario,lock,threads"));
    let _ = (std::fs::remove_file(json), std::fs::remove_file(csv));
}

/// A run that cannot finish within its cap (a billion pairs per thread cannot, even
/// uncontended) is stopped, verified and reported, not awaited.
#[test]
fn a_capped_cell_is_reported_as_not_finished() {
    let start = Instant::now();
    let out = measure(&[
        "loop",
        "--locks",
        "ticket",
        "--threads",
        "4",
        "--iterations",
        "1000000000",
        "--cap-secs",
        "0.5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    let text = stdout(&out);
    assert!(text.contains("not finished ("), "{text}");
    assert!(text.contains("DNF"), "{text}");
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

#[test]
fn c2c_reports_a_latency() {
    let out = measure(&["c2c", "--round-trips", "1000", "--runs", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("one-way"), "{}", stdout(&out));
}
