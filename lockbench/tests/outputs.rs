//! lockbench's outputs: the printed text and its summary, --json, --csv, --stats, and cells
//! reported as not finished.

mod common;

use std::sync::PoisonError;
use std::time::{Duration, Instant};

use common::{lockbench, measure, scratch, stderr, stdout, MACHINE};

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
fn c2c_reports_a_latency() {
    let out = measure(&["c2c", "--round-trips", "1000", "--runs", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("one-way"), "{}", stdout(&out));
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
