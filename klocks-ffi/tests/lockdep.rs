//! The lock validator under the preload (`KLOCKS_LOCKDEP=1`), on `tests/c/lockdep.c`:
//! each found case's report names its headline and both functions that took the
//! orders; each clean case reports nothing; class churn keeps one class and bounded
//! memory; each with glibc's locks and with the default pair (klocks' spinlocks too).

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

fn program() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::compile("lockdep", false))
}

/// The locks each case runs on.
const LOCKS: [&[(&str, &str)]; 2] = [
    &[("KLOCKS_LOCK", "glibc")],
    &[("KLOCKS_LOCK", "default"), ("KLOCKS_SPIN", "pvqspinlock")],
];

/// `lockdep CASE` under the validator with `locks` and `more` settings.
fn run(case: &str, locks: &[(&str, &str)], more: &[(&str, &str)]) -> common::Run {
    let mut command = Command::new(program());
    command
        .arg(case)
        .env("LD_PRELOAD", common::library())
        .env("KLOCKS_LOCKDEP", "1");
    for (var, value) in locks.iter().chain(more) {
        command.env(var, value);
    }
    let run = common::run(command);
    common::assert_ok(&format!("lockdep {case}"), &run);
    run
}

/// Asserts that `case` reports `headline` once, and names every one of `names`.
fn found(case: &str, headline: &str, names: &[&str]) {
    for locks in LOCKS {
        let run = run(case, locks, &[]);
        let reports = run.stderr.matches(&format!("WARNING: {headline}")).count();
        assert_eq!(reports, 1, "{case} {locks:?}: {}", run.stderr);
        assert!(
            run.said().contains(&format!("klocks: lockdep: {headline}")),
            "{case} {locks:?}: no line when found: {}",
            run.stderr
        );
        for name in names {
            assert!(
                run.stderr.contains(name),
                "{case} {locks:?}: no {name}: {}",
                run.stderr
            );
        }
    }
}

/// Asserts that `case` reports nothing.
fn clean(case: &str) {
    for locks in LOCKS {
        let run = run(case, locks, &[]);
        assert!(
            !run.stderr.contains("klocks"),
            "{case} {locks:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn ab_ba_taken_apart_is_a_circular_dependency() {
    found(
        "abba",
        "possible circular locking dependency detected",
        &[
            "take_a_then_b",
            "take_b_then_a",
            "Thread A",
            "Thread B",
            "lockdep.c:",
        ],
    );
}

#[test]
fn a_three_lock_cycle_is_found() {
    found(
        "three",
        "possible circular locking dependency detected",
        &["take_a_then_b", "take_b_then_c", "take_c_then_a"],
    );
}

#[test]
fn a_write_lock_and_mutex_cycle_through_an_rwlock_is_found() {
    found(
        "rwcycle",
        "possible circular locking dependency detected",
        &["write_rw_then_a", "a_then_read_rw"],
    );
}

#[test]
fn a_spinlock_cycle_is_found() {
    found(
        "spin",
        "possible circular locking dependency detected",
        &["spin_a_then_b", "spin_b_then_a"],
    );
}

#[test]
fn two_objects_of_one_class_nested_is_recursive_locking() {
    found(
        "recursive",
        "possible recursive locking detected",
        &["nest_two_nodes", "node_new"],
    );
}

#[test]
fn locks_named_as_one_class_through_the_c_api_nested_is_recursive_locking() {
    found(
        "named",
        "possible recursive locking detected",
        &["pair of globals", "take_a_then_b"],
    );
}

#[test]
fn a_lock_held_at_thread_exit_and_one_destroyed_while_held_are_warned_of() {
    found(
        "exit-held",
        "lock held when its thread exited",
        &["exit_holding_a"],
    );
    found("destroy-held", "lock destroyed while held", &["node_new"]);
}

#[test]
fn a_consistent_order_under_contention_is_clean() {
    clean("ordered");
}

#[test]
fn a_reversed_trylock_with_back_off_is_clean() {
    clean("trylock");
}

#[test]
fn short_lived_heap_locks_nested_under_a_global_are_clean() {
    clean("heap");
}

/// A million locks made at one site and destroyed: one class for all of them (the
/// program's globals make the others), and the process's memory stays within the
/// validator's stated bound (its tables: under 20 MiB, see `klocks::lockdep`).
#[test]
fn class_churn_keeps_one_class_and_bounded_memory() {
    for locks in LOCKS {
        let run = run("churn", locks, &[("KLOCKS_VERBOSE", "1")]);
        let said = run.said();
        let classes: usize = said
            .lines()
            .find_map(|line| line.strip_prefix("klocks lockdep: "))
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no usage line: {said}"));
        // a, b, c, rw, spin_a, spin_b, and the nodes' site.
        assert_eq!(classes, 7, "{said}");
        let grew: i64 = run
            .stdout
            .lines()
            .find_map(|line| line.strip_prefix("lockdep churn: rss grew "))
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no rss line: {}", run.stdout));
        assert!(grew < 20 * 1024, "{locks:?}: rss grew {grew} kB");
    }
}

/// `KLOCKS_LOCKDEP=json` to `KLOCKS_LOCKDEP_FILE`: one object a report, with the
/// chain's classes, sites and stacks.
#[test]
fn json_reports_go_to_the_file() {
    let path = std::env::temp_dir().join(format!("klocks-lockdep-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let file = path.to_str().unwrap();
    let run = run(
        "abba",
        LOCKS[1],
        &[("KLOCKS_LOCKDEP", "json"), ("KLOCKS_LOCKDEP_FILE", file)],
    );
    assert!(!run.stderr.contains("WARNING"), "{}", run.stderr);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert_eq!(lines[0]["lockdep"], "circular-locking-dependency");
    let chain = lines[0]["chain"].as_array().unwrap();
    assert_eq!(chain.len(), 2);
    let stacks = text.matches("take_a_then_b").count() + text.matches("take_b_then_a").count();
    assert!(stacks >= 2, "{text}");
    assert!(chain[0]["stack"].as_array().is_some_and(|s| !s.is_empty()));
}
