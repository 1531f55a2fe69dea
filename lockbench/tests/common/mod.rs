//! What the command-line tests share: running lockbench, taking turns on the
//! machine, scratch files, and the checks several scenarios' tests make.
// Each test file uses the helpers its tests need, and no file needs all of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, PoisonError};

/// Tests that measure take turns: side by side on a 2-CPU machine they would
/// measure each other.
pub static MACHINE: Mutex<()> = Mutex::new(());

pub fn lockbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(args)
        .output()
        .expect("lockbench starts")
}

/// A measuring run with every table printed in full (`--wide`), as most tests read
/// the per-cell tables.
pub fn measure(args: &[&str]) -> Output {
    let _turn = MACHINE.lock().unwrap_or_else(PoisonError::into_inner);
    let mut args = args.to_vec();
    // torture prints no tables, and refuses the option it does not read.
    if args.first() != Some(&"torture") {
        args.push("--wide");
    }
    lockbench(&args)
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()))
}

/// The busted lock lets two threads in at once; lockbench must refuse the result.
/// A violation needs the threads to overlap, which a busy host can deny a single
/// short run, so the test gives it a few attempts (each well under a second).
/// Runs `args` (which select the busted lock) up to a few times until lockbench
/// exits 1, then checks the failure is reported and no table row shows the lock.
pub fn assert_busted_is_caught(args: &[&str]) {
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

/// Reads and removes a windowed scenario's --json and --csv, checks that they hold
/// `cells` cells whose first runs have a throughput, per-thread counts and a drain,
/// and returns the JSON cells.
pub fn windowed_outputs(json: &Path, csv: &Path, cells: usize) -> Vec<serde_json::Value> {
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

/// The reader-writer locks every machine has; the klocks rwsem policies are tested
/// by name where the seed's tables need them.
pub const RW_PEERS: &str = "std-rw,parking_lot-rw,glibc-rw,glibc-rw-writer";
