//! lockbench's command line: usage errors, verification, outputs, time caps.

use std::path::{Path, PathBuf};
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

/// A measuring run with every table printed in full (`--wide`), as most tests read
/// the per-cell tables.
fn measure(args: &[&str]) -> Output {
    let _turn = MACHINE.lock().unwrap_or_else(PoisonError::into_inner);
    let mut args = args.to_vec();
    args.push("--wide");
    lockbench(&args)
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

/// A setting the locks would only report (and replace by the automatic one) stops
/// lockbench before it measures anything.
#[test]
fn a_bad_klocks_setting_is_a_usage_error() {
    for (var, value) in [("KLOCKS_SPIN_NS", "5us"), ("KLOCKS_OWNER_PROBE", "ebpf")] {
        let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
            .args(["uncontended"])
            .env(var, value)
            .output()
            .expect("lockbench starts");
        assert_eq!(out.status.code(), Some(2), "{var}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("{var}=\"{value}\"")),
            "{}",
            stderr(&out)
        );
        assert!(stdout(&out).is_empty(), "measured anyway: {}", stdout(&out));
    }
}

/// `uncontended` measures reader-writer locks beside its mutexes when given
/// `--rwlocks`: both sides of each, in their own table.
#[test]
fn uncontended_measures_rwlocks_when_named() {
    let out = measure(&[
        "uncontended",
        "--locks",
        "std",
        "--rwlocks",
        "default-rw,std-rw",
        "--iterations",
        "10000",
        "--runs",
        "4",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let table = text
        .split("uncontended, reader-writer locks")
        .nth(1)
        .unwrap_or_else(|| panic!("no reader-writer table: {text}"));
    let row = |lock: &str| {
        table
            .lines()
            .find(|line| line.starts_with(lock))
            .unwrap_or_else(|| panic!("no {lock} row: {table}"))
    };
    // klocks::RwLock against std-rw on both sides, each a verdict with its interval;
    // std-rw is the reference.
    let ours = row("klocks::RwLock");
    let verdicts: usize = ["faster [", "slower [", "≈ ["]
        .iter()
        .map(|verdict| ours.matches(verdict).count())
        .sum();
    assert_eq!(verdicts, 2, "{ours}");
    assert_eq!(
        ours.matches('[').count(),
        4,
        "two ranges, two intervals: {ours}"
    );
    assert!(!row("std-rw").contains('×'), "{}", row("std-rw"));
    assert!(
        table.contains("verdicts: faster/slower when the 95% interval"),
        "{table}"
    );
}

/// Without `--wide`, the printed text fits in 120 columns: titles and notes wrap, the
/// tables with wider rows are named instead of printed, and the run ends with the
/// summary of klocks::Mutex against its peers.
#[test]
fn the_default_output_fits_in_120_columns_and_ends_with_a_summary() {
    let _turn = MACHINE.lock().unwrap_or_else(PoisonError::into_inner);
    let out = lockbench(&[
        "loop",
        "--threads",
        "1",
        "--iterations",
        "20000",
        "--runs",
        "4",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for line in text.lines() {
        let columns = line.chars().count();
        assert!(columns <= 120, "{columns} columns: {line}");
    }
    // Every lock side by side is wider than 120 columns.
    assert!(
        text.contains("left out, wider than 120 columns (--wide prints them): loop, all locks"),
        "{text}"
    );
    assert!(!text.contains("loop, all locks: N threads"), "{text}");
    let summary = text
        .split("summary: ")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    let line = summary
        .lines()
        .find(|line| line.starts_with("loop "))
        .unwrap_or_else(|| panic!("no loop line: {summary}"));
    assert!(line.contains("klocks::Mutex"), "{line}");
    assert!(summary.contains("wrong verdicts in this cell"), "{summary}");
    assert!(summary.contains("machine: "), "{summary}");
    // The windowed tables with verdicts (the seed's pair, the bars, klocks::Mutex
    // against its peers in throughput and in fairness) fit too, and are printed.
    let out = lockbench(&[
        "overcommit",
        "--locks",
        "default,ticket,pvticket,pvqspinlock,parking_lot",
        "--threads",
        "16",
        "--cs",
        "short",
        "--overcommit",
        "2",
        "--window-ms",
        "50",
        "--drain-cap-secs",
        "0.3",
        "--runs",
        "4",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for line in text.lines() {
        let columns = line.chars().count();
        assert!(columns <= 120, "{columns} columns: {line}");
    }
    for table in [
        "overcommit, seed 003",
        "overcommit, bars",
        "overcommit, klocks::Mutex (default) against the best of the peers that ran",
        "f vs fairest",
        "summary: ",
    ] {
        assert!(text.contains(table), "{table}: {text}");
    }
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
        &["overcommit", "--cs", "long"],
        &["overcommit", "--overcommit", "0"],
        &["overcommit", "--window-ms", "0"],
        &["overcommit", "--drain-cap-secs", "-1"],
        &["mutex-load", "--load", "0"],
        &["mutex-load", "--load", "ten"],
        &["mutex-load", "--threads", "0"],
        &["mutex-load", "--window-ms", "0"],
        &["mutex-load", "--outside-pauses", "-1"],
        &["sharded", "--shards", "0"],
        &["sharded", "--threads", "0"],
        &["sharded", "--ops", "0"],
        &["sharded", "--cs-pauses", "lots"],
        &["rw-mix", "--reads", "1001"],
        &["rw-mix", "--threads", "0"],
        &["rw-mix", "--ops", "0"],
        &["rw-mix", "--locks", "std"],
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
    assert!(stdout(&out).contains("pvqspinlock"));
    assert!(!stdout(&out).contains("busted"));
}

#[test]
fn the_cell_subcommand_is_hidden() {
    for args in [&["--help"][..], &["-h"], &["help"]] {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(0));
        let text = stdout(&out);
        assert!(text.contains("overcommit"), "{text}");
        assert!(text.contains("mutex-load"), "{text}");
        assert!(!text.contains("-cell"), "{text}");
    }
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

/// The busted lock lets two threads in at once; lockbench must refuse the result.
/// A violation needs the threads to overlap, which a busy host can deny a single
/// short run, so the test gives it a few attempts (each well under a second).
/// Runs `args` (which select the busted lock) up to a few times until lockbench
/// exits 1, then checks the failure is reported and no table row shows the lock.
fn assert_busted_is_caught(args: &[&str]) {
    const ATTEMPTS: usize = 5;
    let caught = (0..ATTEMPTS).find_map(|_| {
        let out = measure(args);
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
fn the_busted_rwlock_tears_reads_in_a_read_mostly_table() {
    let args = [
        "rw-mix",
        "--rwlocks",
        "busted-rw",
        "--threads",
        "4",
        "--reads",
        "500",
        "--ops",
        "200000",
        "--cs-pauses",
        "20",
        "--outside-pauses",
        "0",
        "--runs",
        "1",
    ];
    assert_busted_is_caught(&args);
}

#[test]
fn a_tiny_rw_mix_run_compares_default_rw_with_the_best_peer() {
    let out = measure(&[
        "rw-mix",
        "--rwlocks",
        "default-rw,std-rw,parking_lot-rw",
        "--threads",
        "2",
        "--reads",
        "990,500",
        "--ops",
        "2000",
        "--runs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(table.contains("klocks::RwLock vs best"), "{table}");
    assert!(table.contains("99% reads"), "{table}");
    // One run a side is too few for a verdict, and the table says so.
    assert!(table.contains("too few runs (1+1)"), "{table}");
    assert!(table.contains("needs at least 4 runs a side"), "{table}");
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
fn json_and_csv_hold_the_machine_and_every_run() {
    let (json, csv, charts) = (scratch("out.json"), scratch("out.csv"), scratch("charts"));
    let out = measure(&[
        "uncontended",
        "--report",
        charts.to_str().unwrap(),
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
    assert!(
        report["date"].as_str().unwrap().starts_with("20"),
        "{}",
        report["date"]
    );
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
    let chart = std::fs::read_to_string(charts.join("uncontended.svg")).expect("the run's chart");
    assert!(
        chart.contains("qspinlock") && chart.contains("std"),
        "{chart}"
    );
    let page = std::fs::read_to_string(charts.join("index.html")).expect("the run's page");
    assert!(page.contains("<svg"), "{page}");
    assert!(stdout(&out).contains("report: "), "{}", stdout(&out));
    let _ = (
        std::fs::remove_file(json),
        std::fs::remove_file(csv),
        std::fs::remove_dir_all(charts),
    );
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

/// Reads and removes a windowed scenario's --json and --csv, checks that they hold
/// `cells` cells whose first runs have a throughput, per-thread counts and a drain,
/// and returns the JSON cells.
fn windowed_outputs(json: &Path, csv: &Path, cells: usize) -> Vec<serde_json::Value> {
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).expect("valid JSON");
    let cells_json = report["cells"].as_array().unwrap().clone();
    assert_eq!(cells_json.len(), cells, "{report}");
    for cell in &cells_json {
        let run = &cell["runs"][0];
        assert!(run["value"].as_f64().unwrap() > 0.0, "{cell}");
        assert!(run["drain"]["ms"].as_f64().is_some(), "{cell}");
        assert!(run["per_thread"]["min"].as_u64().is_some(), "{cell}");
    }
    let rows = std::fs::read_to_string(csv).unwrap();
    let header = rows.lines().next().unwrap();
    assert!(
        header.contains(",load_pauses,min_per_mean,max_per_mean,drain_ms,"),
        "{rows}"
    );
    assert_eq!(rows.lines().count(), cells + 1, "{rows}");
    let _ = (std::fs::remove_file(json), std::fs::remove_file(csv));
    cells_json
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

#[test]
fn a_tiny_owner_probe_run_prints_its_tables() {
    let json = scratch("owner-probe.json");
    let out = measure(&[
        "owner-probe",
        "--checks",
        "1000",
        "--agreement-ms",
        "20",
        "--switches",
        "200",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.lines().next().unwrap().contains("owner probe "),
        "{text}"
    );
    assert!(text.contains("is the lock owner on a CPU?"), "{text}");
    assert!(text.contains("ns/check owner asleep"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("budget ")), "{text}");
    assert!(text.contains("ns/switch"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("none (clock, budget) ")),
        "{text}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(report["machine"]["owner_probe"].is_string(), "{report}");
    let cells = report["cells"].as_array().unwrap();
    assert!(
        cells
            .iter()
            .any(|c| c["scenario"] == "owner-probe" && c["layout"] == "check-asleep"),
        "{report}"
    );
}

#[test]
fn owner_probe_bad_values_are_usage_errors() {
    let cases: &[&[&str]] = &[
        &["owner-probe", "--checks", "0"],
        &["owner-probe", "--checks", "many"],
        &["owner-probe", "--agreement-ms", "0"],
        &["owner-probe", "--switches", "1"],
        &["owner-probe", "--no-such-option"],
    ];
    for args in cases {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

/// The reader-writer locks every machine has; the klocks rwsem policies are tested
/// by name where the seed's tables need them.
const RW_PEERS: &str = "std-rw,parking_lot-rw,pthread-rw,pthread-rw-writer";

#[test]
fn a_tiny_rwsem_run_prints_its_tables() {
    let (json, csv) = (scratch("rwsem.json"), scratch("rwsem.csv"));
    let out = measure(&[
        "rwsem",
        "--rwlocks",
        "std-rw,parking_lot-rw",
        "--threads",
        "2,4",
        "--load",
        "1,20",
        "--window-ms",
        "100",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("rwsem, all locks"), "{text}");
    assert!(text.contains("rwsem, per cell"), "{text}");
    assert!(text.contains("reader group"), "{text}");
    for (threads, load) in [("2", "1"), ("2", "20"), ("4", "1"), ("4", "20")] {
        assert!(
            text.lines().any(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words.starts_with(&[threads, load]) && l.contains(" ns ")
            }),
            "no row for {threads} threads, load {load}: {text}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("parking_lot-rw ") && l.contains(" 4 ")),
        "{text}"
    );
    for cell in windowed_outputs(&json, &csv, 8) {
        assert_eq!(cell["scenario"], "rwsem", "{cell}");
        assert_eq!(cell["rw"]["readers"], cell["rw"]["writers"], "{cell}");
        let rw = &cell["runs"][0]["rw"];
        assert!(rw["reads"].as_u64().unwrap() > 0, "{cell}");
        assert!(rw["writes"].as_u64().unwrap() > 0, "{cell}");
        assert!(rw["read_phases"].as_u64().unwrap() > 0, "{cell}");
    }
}

#[test]
fn the_seed_001_tables_compare_the_rwsem_policies() {
    let out = measure(&[
        "rwsem",
        "--rwlocks",
        "rwsem-always,rwsem-adaptive,rwsem-never,std-rw,parking_lot-rw",
        "--threads",
        "4",
        "--load",
        "20",
        "--window-ms",
        "100",
        "--runs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("seed 001 (before = rwsem-always")
            && text.contains("rwsem-adaptive vs rwsem-always"),
        "{text}"
    );
    assert!(text.contains("rwsem, bars: rwsem-adaptive"), "{text}");
    assert!(
        text.contains("load 20, geometric mean over the thread counts: rwsem-adaptive ÷ best peer"),
        "{text}"
    );
}

#[test]
fn a_tiny_rw_fair_run_prints_its_tables() {
    let json = scratch("rw-fair.json");
    let rwlocks = format!("default-rw,{RW_PEERS}");
    let out = measure(&[
        "rw-fair",
        "--rwlocks",
        &rwlocks,
        "--groups",
        "2+2,3+1",
        "--window-ms",
        "100",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("rw-fair, 2 readers + 2 writers"), "{text}");
    assert!(
        text.contains("3 readers, Iterations Min/Mean/Max"),
        "{text}"
    );
    assert!(
        text.contains("1 writers, Iterations Min/Mean/Max"),
        "{text}"
    );
    for lock in RW_PEERS.split(',') {
        let rows = text
            .lines()
            .filter(|l| l.starts_with(&format!("{lock} ")))
            .count();
        assert_eq!(rows, 2, "{lock}: {text}");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("valid JSON");
    let cells = report["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 10, "{report}");
    assert!(cells.iter().all(|c| c["scenario"] == "rw-fair"), "{report}");
    // klocks::RwLock against the best peer of each group, in throughput and fairness.
    assert!(
        text.contains("rw-fair, klocks::RwLock (default-rw) against the best of the peers"),
        "{text}"
    );
    assert!(text.contains("klocks::RwLock vs best"), "{text}");
    assert!(text.contains("f vs fairest"), "{text}");
    let _ = std::fs::remove_file(json);
}

#[test]
fn the_rw_fair_bars_judge_the_rwsem_policies() {
    let out = measure(&[
        "rw-fair",
        "--rwlocks",
        "rwsem-adaptive,rwsem-always,rwsem-never",
        "--groups",
        "2+2",
        "--window-ms",
        "100",
        "--runs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("rw-fair, bars for the rwsem policies"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("2+2 ") && l.contains("rwsem-adaptive")),
        "{text}"
    );
}

#[test]
fn rw_bad_values_are_usage_errors_that_say_why() {
    let cases: &[(&[&str], &str)] = &[
        (&["rw-fair", "--groups", "8x8"], "READERS+WRITERS"),
        (&["rw-fair", "--groups", "0+8"], "READERS+WRITERS"),
        (&["rw-fair", "--load", "0"], "--load"),
        (&["rwsem", "--threads", "0"], "even number"),
        (&["rwsem", "--threads", "3"], "even number"),
        (&["rwsem", "--load", "0"], "--load"),
        (&["rwsem", "--window-ms", "0"], "--window-ms"),
        (&["rwsem", "--rwlocks", "no-such-rwlock"], "no-such-rwlock"),
        (&["rwsem", "--locks", "std"], "--rwlocks"),
        (&["rw-fair", "--locks", "std"], "--rwlocks"),
        (&["loop", "--rwlocks", "std-rw"], "--rwlocks applies to"),
    ];
    for (args, says) in cases {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn the_rw_negative_control_is_not_listed() {
    for args in [
        &["--help"][..],
        &["rwsem", "--help"],
        &["rw-fair", "--help"],
    ] {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(0));
        let text = stdout(&out);
        assert!(text.contains("pthread-rw-writer"), "{text}");
        assert!(!text.contains("busted"), "{text}");
    }
}

/// The busted reader-writer lock lets writers in beside readers and each other; the
/// parent must refuse the counts its cell processes report.
#[test]
fn the_busted_rwlock_fails_rwsem_verification() {
    let args = [
        "rwsem",
        "--rwlocks",
        "busted-rw",
        "--threads",
        "4",
        "--load",
        "20",
        "--window-ms",
        "100",
        "--runs",
        "1",
    ];
    assert_busted_is_caught(&args);
}

#[test]
fn the_busted_rwlock_fails_rw_fair_verification() {
    let args = [
        "rw-fair",
        "--rwlocks",
        "busted-rw",
        "--groups",
        "2+2",
        "--window-ms",
        "100",
        "--runs",
        "1",
    ];
    assert_busted_is_caught(&args);
}

/// The broken locks fail torture within a second; real ones pass the same run.
#[test]
fn torture_catches_the_busted_locks_and_passes_real_ones() {
    let out = measure(&[
        "torture",
        "--locks",
        "busted",
        "--rwlocks",
        "busted-rw",
        "--secs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("FAIL: mutual exclusion"),
        "{}",
        stdout(&out)
    );
    let out = measure(&[
        "torture",
        "--locks",
        "pvqspinlock,spinfutex,std",
        "--rwlocks",
        "rwsem-adaptive",
        "--secs",
        "1",
        "--threads",
        "8",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("torture: SUCCESS"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn torture_bad_values_are_usage_errors() {
    for args in [
        &["torture", "--secs", "0"][..],
        &["torture", "--threads", "1"],
        &["torture", "--minutes", "lots"],
    ] {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

/// `--stats` needs the counters, which only a `--features stats` build has.
#[cfg(not(feature = "stats"))]
#[test]
fn stats_without_the_feature_is_a_usage_error() {
    let out = lockbench(&["loop", "--stats"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("built without the `stats` feature")
            && stderr(&out).contains("--features stats"),
        "{}",
        stderr(&out)
    );
}

/// With the counters, a klocks lock's cell carries its counts (in the text and in
/// --json), in-process and in a windowed cell's child process; a peer's carries none.
#[cfg(feature = "stats")]
#[test]
fn stats_are_printed_and_kept_per_klocks_cell() {
    let json = scratch("stats.json");
    let out = measure(&[
        "loop",
        "--stats",
        "--locks",
        "pvticket,std",
        "--threads",
        "2",
        "--iterations",
        "2000",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("klocks slow-path events per cell"), "{text}");
    assert!(text.contains("loop pvticket × 2: "), "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cells = report["cells"].as_array().unwrap();
    let stats_of = |lock: &str| cells.iter().find(|c| c["lock"] == lock).unwrap()["stats"].clone();
    assert!(stats_of("pvticket").is_object(), "{report}");
    assert!(stats_of("std").is_null(), "{report}");

    let out = measure(&[
        "overcommit",
        "--stats",
        "--locks",
        "pvqspinlock",
        "--threads",
        "4",
        "--overcommit",
        "1",
        "--cs",
        "short",
        "--window-ms",
        "50",
        "--runs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.contains("overcommit pvqspinlock × 4: ") && l.contains("lock_slowpath")),
        "{text}"
    );
}

#[cfg(feature = "stats")]
#[test]
fn stats_of_app_are_a_usage_error() {
    let out = lockbench(&["app", "--stats", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--stats"), "{}", stderr(&out));
}

/// `preload` prints one table per thread count with the glibc, glibc+preload and
/// default rows. The library is built by lockbench itself: `cargo test` runs it with
/// `CARGO` set, as `cargo run` does, so it first runs `cargo build -p klocks-ffi`.
#[test]
fn preload_compares_glibc_the_interposer_and_default() {
    if std::env::var_os("CARGO").is_none() {
        println!("skipped: CARGO is not set, so lockbench cannot build libklocks.so");
        return;
    }
    let args = [
        "preload",
        "--threads",
        "1,2",
        "--pairs",
        "20000",
        "--runs",
        "2",
    ];
    let out = measure(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("building libklocks.so for the preload scenario: cargo build"),
        "{}",
        stderr(&out)
    );
    let text = stdout(&out);
    for threads in ["1 thread", "2 threads"] {
        let title = format!("through the interposer (LD_PRELOAD), {threads}\n");
        let table = text
            .split(&title)
            .nth(1)
            .unwrap_or_else(|| panic!("no table for {threads}:\n{text}"));
        let rows: Vec<&str> = table
            .lines()
            .skip(2)
            .take_while(|line| !line.starts_with(char::is_numeric))
            .map(|line| line.split(' ').next().unwrap_or(line))
            .collect();
        assert_eq!(rows, ["glibc", "glibc+preload", "klocks::Mutex"], "{table}");
    }
    assert!(text.contains("in every preloaded run"), "{text}");
}

/// Without libklocks.so beside the executable (and no cargo to build it), asking
/// for `preload` is a usage error that says how to build the library.
#[test]
fn preload_without_the_library_is_a_usage_error() {
    let dir = scratch("preload-no-library");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("lockbench");
    let _ = std::fs::remove_file(&exe);
    if std::fs::hard_link(env!("CARGO_BIN_EXE_lockbench"), &exe).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_lockbench"), &exe).unwrap();
    }
    let out = Command::new(&exe)
        .args(["preload", "--runs", "1"])
        .env_remove("CARGO")
        .output()
        .expect("lockbench starts");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no preload library at")
            && stderr(&out).contains("cargo build --release -p klocks-ffi"),
        "{}",
        stderr(&out)
    );
}

/// The child's counter check is not vacuous: without the lock (`--unlocked`) two
/// threads lose updates. They must overlap for that, which a busy host can deny one
/// run, so the child gets a few attempts.
#[test]
fn the_pthread_pairs_child_catches_lost_updates() {
    let args = ["pthread-pairs", "--threads", "2", "--pairs", "100000"];
    let locked = lockbench(&args);
    assert_eq!(locked.status.code(), Some(0), "{}", stderr(&locked));
    assert!(
        stdout(&locked).starts_with("pairs/s: "),
        "{}",
        stdout(&locked)
    );
    const ATTEMPTS: usize = 5;
    let unlocked = [&args[..], &["--unlocked"]].concat();
    let caught = (0..ATTEMPTS)
        .map(|_| lockbench(&unlocked))
        .find(|out| !out.status.success())
        .expect("the unlocked counter passed every attempt");
    assert_eq!(caught.status.code(), Some(1), "{}", stderr(&caught));
    assert!(
        stderr(&caught).contains("updates lost"),
        "{}",
        stderr(&caught)
    );
}

/// Under a preload that does not define pthread_mutex_lock, the child refuses to
/// measure: its pairs would be glibc's under a klocks name.
#[test]
fn the_pthread_pairs_child_refuses_a_preload_that_does_not_interpose() {
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["pthread-pairs", "--threads", "1", "--pairs", "10"])
        .env("LD_PRELOAD", "libm.so.6")
        .output()
        .expect("lockbench starts");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("pthread_mutex_lock resolves to")
            && stderr(&out).contains("not to the preloaded libm.so.6"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_pthread_pairs_subcommand_is_hidden() {
    let out = lockbench(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("preload"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("pthread-pairs"), "{}", stdout(&out));
}
