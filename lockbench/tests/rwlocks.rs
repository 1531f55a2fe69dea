//! The reader-writer scenarios on the command line (rw-mix, rwsem, rw-fair): tables,
//! verdicts and verification catching the busted reader-writer lock.

mod common;

use common::{
    assert_busted_is_caught, measure, scratch, stderr, stdout, windowed_outputs, RW_PEERS,
};

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

/// 99.99% reads, in either spelling (one fraction, so one row), reaches the cell
/// exact (parts per million) and the table readable; free placement is the default
/// and says so.
#[test]
fn rw_mix_takes_99_99_percent_reads_exactly() {
    let json = scratch("rw-mix-fractions.json");
    let out = measure(&[
        "rw-mix",
        "--rwlocks",
        "std-rw",
        "--threads",
        "2",
        "--reads",
        "999.9,99.99%,99.999%,500",
        "--ops",
        "2000",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    for label in ["99.99% reads", "99.999% reads", "50% reads"] {
        assert!(table.contains(label), "{label}: {table}");
    }
    assert!(table.contains("threads placed by the scheduler"), "{table}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("valid JSON");
    let cells: Vec<(&str, u64, &str)> = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| {
            (
                cell["layout"].as_str().unwrap(),
                cell["rw_mix"]["reads_per_million"].as_u64().unwrap(),
                cell["rw_mix"]["placement"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        cells,
        [
            ("99.99% reads", 999_900, "free"),
            ("99.999% reads", 999_990, "free"),
            ("50% reads", 500_000, "free"),
        ]
    );
}

/// Spread placement reaches the cell, its layout, the table's title and its note.
#[test]
fn rw_mix_spread_records_its_placement() {
    let json = scratch("rw-mix-spread.json");
    let out = measure(&[
        "rw-mix",
        "--rwlocks",
        "std-rw",
        "--threads",
        "3",
        "--reads",
        "99.99%",
        "--placement",
        "spread",
        "--ops",
        "2000",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(
        table.contains("threads spread: thread i pinned to CPU i mod N"),
        "{table}"
    );
    assert!(table.contains("so every CPU ran readers"), "{table}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("valid JSON");
    let cell = &report["cells"][0];
    assert_eq!(cell["layout"], "99.99% reads, spread", "{cell}");
    assert_eq!(cell["rw_mix"]["placement"], "spread", "{cell}");
    assert_eq!(cell["rw_mix"]["reads_per_million"], 999_900, "{cell}");
}

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
