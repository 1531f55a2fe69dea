//! `lockbench app`: usage errors, the comparison table, and its verification.

// The helpers that build libklocks.so for the klocks-ffi tests.
#[path = "../../klocks-ffi/tests/common/mod.rs"]
mod common;

use std::process::{Command, Output};

fn app(args: &[&str]) -> Output {
    let library = common::library();
    Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("app")
        .arg("--preload")
        .arg(&library)
        .args(args)
        .output()
        .expect("lockbench starts")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_input_is_a_usage_error() {
    let cases: &[&[&str]] = &[
        &["--", "no-such-program-klocks"],
        &["--", "./no/such/file"],
        &["--metric", "rate: [0-9]+", "--", "true"],
        &["--metric", "(unclosed", "--", "true"],
        &["--with", "qspinlock-cmpxchg", "--", "true"],
        &["--locks", "futex", "--", "true"],
        &["--rwlocks", "rwsem-never", "--", "true"],
        &["--peer", "flexguard", "--", "true"],
        &["--peer", "glibc=/bin/true", "--", "true"],
        &["--peer", "fg=/no/such/interpose.so", "--", "true"],
        &[
            "--peer",
            "fg=/bin/true",
            "--peer",
            "fg=/bin/sh",
            "--",
            "true",
        ],
        &["--peer", "fg=/bin/true", "--profile", "--", "true"],
        &[],
    ];
    for args in cases {
        let out = app(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["app", "--preload", "/no/such/libklocks.so", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cargo build --release -p klocks-ffi"),
        "{}",
        stderr(&out)
    );
}

/// A peer's row runs under its library alone (here libklocks.so itself, which with no
/// `KLOCKS_LOCK` passes every lock to glibc), and the second table judges each klocks
/// lock against the best of glibc and the peer.
#[test]
fn a_peer_runs_beside_glibc_and_klocks_is_judged_against_the_best() {
    let library = common::library();
    let peer = format!("again={}", library.display());
    let out = app(&[
        "--runs",
        "4",
        "--no-adaptive",
        "--with",
        "futex",
        "--peer",
        &peer,
        "--output-varies",
        "--metric",
        r"preloaded: (\S+)",
        "--",
        "sh",
        "-c",
        "case \"$LD_PRELOAD\" in *libklocks*) echo preloaded: 2;; *) echo preloaded: 1;; esac",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", stderr(&out));
    assert!(
        stdout.lines().any(|l| l.starts_with("again ")),
        "no peer row:\n{stdout}"
    );
    assert!(stdout.contains("klocks against the best"), "{stdout}");
    // glibc's runs print 1, the peer's and futex's 2: the best peer is the one that
    // ran under the library, and futex ties it.
    let verdict = stdout
        .lines()
        .find(|l| l.starts_with("futex ") && l.contains("again"))
        .unwrap_or_else(|| panic!("no futex row against the peer:\n{stdout}"));
    assert!(verdict.contains("≈ [1.00–1.00]"), "{verdict}");
}

#[test]
fn it_compares_a_command_under_glibc_and_each_lock() {
    let out = app(&[
        "--runs",
        "2",
        "--with",
        "futex,pvqspinlock",
        "--metric",
        r"rate: ([0-9]+)",
        "--",
        "sh",
        "-c",
        "echo rate: 42",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", stderr(&out));
    for row in ["glibc", "futex", "pvqspinlock"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(row)),
            "no {row} row:\n{stdout}"
        );
    }
    assert!(stdout.contains(" 42.0 "), "{stdout}");
    // The same metric in every run: a ratio of 1, but two runs a side are too few
    // for an interval.
    assert!(stdout.contains("1.00×, too few runs (2+2)"), "{stdout}");
    assert!(stdout.contains("needs at least 4 runs a side"), "{stdout}");
    assert!(stdout.contains("printed the same output"), "{stdout}");
}

#[test]
fn different_output_under_a_lock_fails_verification() {
    // glibc's run prints an empty line, the preloaded one the lock's name.
    let out = app(&[
        "--runs",
        "1",
        "--with",
        "futex",
        "--",
        "sh",
        "-c",
        "echo $KLOCKS_LOCK",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("printed different output under futex"),
        "{}",
        stderr(&out)
    );
    let varies = app(&[
        "--runs",
        "1",
        "--with",
        "futex",
        "--output-varies",
        "--",
        "sh",
        "-c",
        "echo $KLOCKS_LOCK",
    ]);
    assert!(varies.status.success(), "{}", stderr(&varies));
}

#[test]
fn a_failing_command_fails_verification() {
    let out = app(&["--runs", "1", "--", "sh", "-c", "echo oops >&2; exit 3"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("exited with exit status: 3"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("oops"), "{}", stderr(&out));
}

#[test]
fn a_metric_that_does_not_match_fails_verification() {
    let out = app(&["--runs", "1", "--metric", r"rate: ([0-9]+)", "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("matched no number"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_preload_that_did_not_take_fails_verification() {
    // Not a shared library: the dynamic linker says so and runs the program anyway.
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["app", "--runs", "1", "--with", "futex", "--preload"])
        .arg(env!("CARGO_MANIFEST_DIR").to_owned() + "/Cargo.toml")
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the preload did not take"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn profile_rows_and_report_come_with_the_table() {
    let pairs = common::compile("pairs", false);
    let out = app(&[
        "--runs",
        "1",
        "--with",
        "default",
        "--profile-cost",
        "--output-varies",
        "--",
        pairs.to_str().unwrap(),
        "2",
        "20000",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", stderr(&out));
    for row in [
        "glibc ",
        "klocks::Mutex ",
        "glibc+preload ",
        "glibc+profile ",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(row)),
            "no {row}row:\n{stdout}"
        );
    }
    assert!(stdout.contains("klocks profile of pid"), "{stdout}");
    // Each lock's row, then a line under it that names where it was first locked.
    let lines: Vec<&str> = stdout.lines().collect();
    let site = lines
        .iter()
        .position(|l| l.contains("first locked at pairs.c:"))
        .unwrap_or_else(|| panic!("no pairs.c lock in the profile:\n{stdout}"));
    assert!(site > 0, "a site line without its lock's row:\n{stdout}");
    let row = lines[site - 1];
    assert!(row.contains(" 40000 "), "two threads × 20000 pairs: {row}");
}

/// The spinlock recipe of docs/preload.md: `spin-pairs` (pthread_spin_* pairs on one
/// spinlock) under glibc and under `KLOCKS_SPIN=pvqspinlock`, which the command sets
/// with `env` (app sets only `KLOCKS_LOCK`): a table with the pairs per second, and
/// its count check catches a lock that excludes nothing.
#[test]
fn spin_pairs_compare_a_spinlock_under_glibc_and_klocks_spin() {
    let spin_pairs = common::compile("spin-pairs", false);
    let spin_pairs = spin_pairs.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--runs",
            "1",
            "--with",
            "pvqspinlock",
            "--metric",
            r"pairs/s: (\S+)",
            "--output-varies",
            "--",
            "env",
            "KLOCKS_SPIN=pvqspinlock",
            spin_pairs,
            "4",
            "20000",
        ];
        args.extend_from_slice(extra);
        app(&args)
    };
    let out = run(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", stderr(&out));
    for row in ["glibc ", "pvqspinlock "] {
        assert!(
            stdout.lines().any(|l| l.starts_with(row)),
            "no {row}row:\n{stdout}"
        );
    }
    let busted = (0..5)
        .map(|_| run(&["busted"]))
        .find(|out| !out.status.success())
        .expect("the busted spin-pairs passed every attempt");
    assert!(
        stderr(&busted).contains("counter mismatch"),
        "{}",
        stderr(&busted)
    );
}
