//! The probes on the command line: owner-probe, torture, preload and its pthread pairs
//! child.

mod common;

use std::process::Command;

use common::{lockbench, measure, scratch, stderr, stdout};

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
