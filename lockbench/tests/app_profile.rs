//! `lockbench app --profile [--try]`: the contention profile of an unmodified program,
//! read from the preload's real JSON report, printed short with its advice; the
//! advice measured against the locks in use; and nothing to gain from a program
//! whose locks never wait.

// The helpers that build libklocks.so and the C programs for the klocks-ffi tests.
#[path = "../../klocks-ffi/tests/common/mod.rs"]
mod common;

use std::process::{Command, Output};

/// `lockbench app --preload libklocks.so ARGS -- PROGRAM PROGRAM_ARGS`, PROGRAM one
/// of klocks-ffi's C test programs.
fn app_on(args: &[&str], program: &str, program_args: &[&str]) -> (Output, String) {
    let binary = common::compile(program, false);
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("app")
        .arg("--preload")
        .arg(common::library())
        .args(args)
        .args(["--output-varies", "--"])
        .arg(&binary)
        .args(program_args)
        .output()
        .expect("lockbench starts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out, stdout)
}

/// `profile ranks` (klocks-ffi's tests/c/profile.c): its long-held mutex, 3 threads
/// holding it 5 ms 8 times each, waits longest; the profile names it (`held_long`),
/// advises `KLOCKS_LOCK=default` with the command that measures it, and `--try` runs
/// that setting against glibc's locks, its row judged.
#[test]
fn the_advice_is_printed_and_measured() {
    let args = ["--profile", "--try", "--runs", "5"];
    let (_, stdout) = app_on(&args, "profile", &["ranks"]);
    let headline = stdout
        .lines()
        .find(|l| l.starts_with("threads spent "))
        .unwrap_or_else(|| panic!("no headline:\n{stdout}"));
    assert!(
        headline.contains("% of their time waiting for locks"),
        "{headline}"
    );
    let long = stdout
        .lines()
        .find(|l| l.starts_with("   1  held_long "))
        .unwrap_or_else(|| panic!("profile.c's held_long is not first:\n{stdout}"));
    assert!(long.contains(" 24 "), "three threads × 8 holds: {long}");
    // The advice wraps at 120 columns: compared with its spaces and line ends joined.
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert!(
        words.join(" ").contains(
            "try KLOCKS_LOCK=default (unmeasured: measure it with `lockbench app --profile --try -- PROGRAM`)"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("measured advice: `"), "{stdout}");
    let tried = stdout
        .lines()
        .find(|l| l.starts_with("KLOCKS_LOCK=default KLOCKS_RWLOCK=glibc "))
        .unwrap_or_else(|| panic!("no row for the advised setting:\n{stdout}"));
    assert!(
        ["× faster [", "× slower [", "≈ ["]
            .iter()
            .any(|verdict| tried.contains(verdict)),
        "no verdict: {tried}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("glibc ")),
        "no row for the locks in use:\n{stdout}"
    );
}

/// One thread (klocks-ffi's tests/c/pairs.c): its lock never waits, so there is
/// nothing to gain and `--try` runs no rounds.
#[test]
fn an_uncontended_program_has_nothing_to_gain() {
    let args = ["--profile", "--try", "--runs", "5"];
    let (_, stdout) = app_on(&args, "pairs", &["1", "20000"]);
    assert!(
        stdout.contains("threads spent 0.00% of their time waiting for locks"),
        "{stdout}"
    );
    assert!(
        stdout.contains("nothing to gain here: locks cost under 1%"),
        "{stdout}"
    );
    assert!(stdout.contains("no --try rounds run"), "{stdout}");
    assert!(!stdout.contains("measured advice"), "{stdout}");
    assert!(!stdout.contains("try KLOCKS_LOCK"), "{stdout}");
}

/// `--try` without `--profile`, and more than one lock in use, are usage errors.
#[test]
fn try_needs_the_profile_and_one_lock_in_use() {
    for args in [
        &["--try", "--", "true"][..],
        &["--profile", "--with", "futex,default", "--", "true"],
        &["--profile", "--profile-cost", "--", "true"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
            .arg("app")
            .arg("--preload")
            .arg(common::library())
            .args(args)
            .output()
            .expect("lockbench starts");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
