//! Adaptive repetition from the command line: `--budget 0` runs every cell exactly
//! `--runs` times, a row whose verdict is too wide to decide gets extra rounds until
//! its budget or the round cap, and a decided row gets none.
//!
//! The undecided row is made on purpose with `app`: a shell script that sleeps 60 ms
//! under glibc and, under the klocks lock, alternately 20 ms and 150 ms (a counter file
//! keeps the turn), so the lock's runs are half faster and half much slower, whatever
//! the preloaded library adds to a start (about 20 ms here): its interval against
//! glibc straddles 1 by far however many runs it gets.

// The helpers that build libklocks.so for the klocks-ffi tests.
#[path = "../../klocks-ffi/tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, PoisonError};

/// Tests that measure take turns: side by side on a 2-CPU machine they would
/// measure each other.
static MACHINE: Mutex<()> = Mutex::new(());

fn lockbench(args: &[&str]) -> Output {
    let _turn = MACHINE.lock().unwrap_or_else(PoisonError::into_inner);
    Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(args)
        .output()
        .expect("lockbench starts")
}

/// Stdout with every run of whitespace one space, so that a wrapped note reads whole.
fn stdout(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()))
}

/// The cells of a `--json` file.
fn cells(json: &PathBuf) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(json).expect("the JSON was written");
    let value: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    value["cells"].as_array().expect("cells").clone()
}

/// The script of the module's documentation: glibc sleeps `glibc` s; the klocks
/// lock sleeps `fast` and `slow` s in turn.
fn script(name: &str, glibc: &str, fast: &str, slow: &str) -> String {
    let turn = scratch(name);
    let _ = std::fs::remove_file(&turn);
    format!(
        "if [ -z \"$KLOCKS_LOCK\" ]; then sleep {glibc}; exit 0; fi; \
         n=$(cat {turn} 2>/dev/null || echo 0); echo $((n + 1)) > {turn}; \
         if [ $((n % 2)) = 0 ]; then sleep {fast}; else sleep {slow}; fi",
        turn = turn.display()
    )
}

/// `app` on `script` under glibc and futex, with `args` before the command; the
/// output and the cells of its JSON.
fn app(name: &str, script: &str, args: &[&str]) -> (Output, Vec<serde_json::Value>) {
    let json = scratch(&format!("{name}.json"));
    let library = common::library();
    let library = library.to_str().expect("a UTF-8 path");
    let json_arg = json.to_str().expect("a UTF-8 path");
    let mut all = vec!["app", "--preload", library, "--with", "futex"];
    all.extend(args);
    all.extend(["--json", json_arg, "--", "sh", "-c", script]);
    let out = lockbench(&all);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    (out, cells(&json))
}

/// Each cell's run count, and every cell's `repeated.ended` (`None` without one).
fn runs_and_ended(cells: &[serde_json::Value]) -> Vec<(usize, Option<String>)> {
    cells
        .iter()
        .map(|cell| {
            let runs = cell["runs"].as_array().expect("runs").len();
            let ended = cell["repeated"]["ended"].as_str().map(str::to_owned);
            (runs, ended)
        })
        .collect()
}

#[test]
fn budget_zero_runs_every_cell_exactly_runs_times() {
    let undecided = script("zero", "0.06", "0.02", "0.15");
    for off in [&["--budget", "0"][..], &["--no-adaptive"][..]] {
        let mut args = vec!["--runs", "4"];
        args.extend(off);
        let (out, cells) = app("zero", &undecided, &args);
        let text = stdout(&out);
        assert_eq!(
            runs_and_ended(&cells),
            [(4, None), (4, None)],
            "{off:?}: {text}"
        );
        assert!(!text.contains("adaptive runs"), "{off:?}: {text}");
        assert!(
            text.contains("4 runs per lock, interleaved"),
            "{off:?}: {text}"
        );
    }
    // The same with an in-process scenario: uncontended's cells keep --runs.
    let json = scratch("uncontended.json");
    let out = lockbench(&[
        "uncontended",
        "--locks",
        "default,std,parking_lot",
        "--iterations",
        "1000",
        "--runs",
        "5",
        "--budget",
        "0",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(runs_and_ended(&cells(&json)), vec![(5, None); 3]);
}

#[test]
fn an_undecided_row_repeats_until_its_budget_is_spent() {
    let undecided = script("budget", "0.06", "0.02", "0.15");
    let (out, cells) = app("budget", &undecided, &["--runs", "4", "--budget", "0.6"]);
    let text = stdout(&out);
    let counted = runs_and_ended(&cells);
    let runs = counted[0].0;
    assert!(runs > 4 && runs < 16, "{counted:?}");
    assert_eq!(
        counted,
        vec![(runs, Some("budget-spent".to_owned())); 2],
        "{text}"
    );
    assert!(text.contains("budget spent, still undecided"), "{text}");
    assert!(
        text.contains(&format!(
            "{runs} runs per lock (--runs 4 and adaptive rounds"
        )),
        "{text}"
    );
}

#[test]
fn a_row_that_never_decides_stops_at_the_round_cap() {
    let undecided = script("cap", "0.06", "0.02", "0.15");
    let (out, cells) = app("cap", &undecided, &["--runs", "4", "--budget", "600"]);
    let text = stdout(&out);
    assert_eq!(
        runs_and_ended(&cells),
        vec![(16, Some("round-cap".to_owned())); 2],
        "{text}"
    );
    assert!(
        text.contains("16 runs, round cap reached, still undecided"),
        "{text}"
    );
}

#[test]
fn a_decided_row_gets_no_extra_rounds() {
    // The lock sleeps 5 ms where glibc sleeps 100: decided at the first look, with
    // 6 runs a side so that a start the loaded machine delays cannot undo it.
    let decided = script("decided", "0.1", "0.005", "0.005");
    let (out, cells) = app("decided", &decided, &["--runs", "6", "--budget", "600"]);
    let text = stdout(&out);
    assert_eq!(runs_and_ended(&cells), [(6, None), (6, None)], "{text}");
    assert!(text.contains("faster"), "{text}");
    assert!(!text.contains("adaptive runs"), "{text}");
}

#[test]
fn budget_misuse_is_a_usage_error() {
    for args in [
        &["uncontended", "--budget", "-1"][..],
        &["uncontended", "--budget", "soon"],
        &["uncontended", "--budget", "1", "--no-adaptive"],
        &["compare", "a.json", "b.json", "--budget", "1"],
    ] {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}
