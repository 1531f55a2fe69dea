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
    app_on_command(args, &[], program, program_args)
}

/// As [`app_on`], PROGRAM run through `wrapper` (`taskset -c 0,1`).
fn app_on_command(
    args: &[&str],
    wrapper: &[&str],
    program: &str,
    program_args: &[&str],
) -> (Output, String) {
    let binary = common::compile(program, false);
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("app")
        .arg("--preload")
        .arg(common::library())
        .args(args)
        .args(["--output-varies", "--"])
        .args(wrapper)
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
        .find(|l| l.starts_with("KLOCKS_LOCK=default "))
        .unwrap_or_else(|| panic!("no row for the advised setting:\n{stdout}"));
    // The advice names KLOCKS_LOCK alone, and so does the run that measures it (which
    // leaves KLOCKS_RWLOCK unset: `default` moves the rwlocks too).
    assert!(!stdout.contains("KLOCKS_RWLOCK"), "{stdout}");
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

/// `profile destroyed` (klocks-ffi's tests/c/profile.c): its one contended mutex is
/// made on the heap and destroyed before exit, as sysbench's are. The profile advises
/// through the lock's site (`s1`), and `--try` measures that advice.
#[test]
fn the_advice_for_a_site_of_destroyed_locks_is_measured() {
    let args = ["--profile", "--try", "--runs", "3"];
    let (_, stdout) = app_on(&args, "profile", &["destroyed"]);
    let site = stdout
        .lines()
        .find(|l| l.starts_with("  s1  1 locks (1 destroyed): 24 acquired, "))
        .unwrap_or_else(|| panic!("no site of the destroyed lock:\n{stdout}"));
    assert!(site.contains("profile.c:"), "{site}");
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert!(
        words.join(" ").contains("s1 long holds (mean "),
        "no advice for the site:\n{stdout}"
    );
    assert!(!stdout.contains("no --try rounds run"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("KLOCKS_LOCK=default ")),
        "the site's advice was not measured:\n{stdout}"
    );
}

/// The advice measured is reported as it came out, a win only when it is one: 8
/// threads of klocks-ffi's tests/c/convoy.c on 2 CPUs (contended under glibc's
/// mutex) measured under `KLOCKS_LOCK=pvticket`, which hands the lock to sleeping
/// waiters in FIFO order, so that every handoff waits for a waiter to be scheduled
/// (about ten times slower here), put in place of the advice (`KLOCKS_LOCK=default`)
/// by the test-only `--test-advice`; the runs are real.
#[test]
fn a_slower_advice_is_reported_slower() {
    let args = [
        "--profile",
        "--try",
        "--runs",
        "5",
        "--test-advice",
        "KLOCKS_LOCK=pvticket",
    ];
    let (_, stdout) = app_on_command(&args, &["taskset", "-c", "0,1"], "convoy", &["8", "2000"]);
    assert!(
        stdout.contains("--try measures KLOCKS_LOCK=pvticket instead of the advice (for tests)"),
        "{stdout}"
    );
    let effect = stdout
        .lines()
        .find(|l| l.starts_with("KLOCKS_LOCK=pvticket: "))
        .unwrap_or_else(|| panic!("no effect line:\n{stdout}"));
    assert!(
        effect.contains("× slower [")
            && effect.contains("the advice does not hold here; keep glibc")
            || effect.contains("no clear difference ≈ ["),
        "{effect}"
    );
    assert!(
        !effect.contains("faster") && !effect.contains("pays"),
        "{effect}"
    );
}
