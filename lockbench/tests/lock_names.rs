//! One name per lock: every name `--locks` and `--rwlocks` accept is the name a run's
//! tables, `--json` file and report print (the crate's two picks shown as the type
//! users know, `klocks::Mutex`), and, for klocks' locks and glibc's, the name the
//! preload's `KLOCKS_LOCK` and `KLOCKS_RWLOCK` take. Names ignore case; the older
//! names of glibc's locks are still read, from the command line and from older
//! `--json` files.

// The helpers that build libklocks.so for the klocks-ffi tests.
#[path = "../../klocks-ffi/tests/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Output};

use klocks::catalog::{MutexKind, RwLockKind};

fn lockbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(args)
        .output()
        .expect("lockbench starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()))
}

/// The values `option` lists in `args`' short help (`[possible values: a, b]`).
fn possible_values(args: &[&str], option: &str) -> Vec<String> {
    let help = text(&lockbench(args).stdout);
    let line = help
        .lines()
        .find(|line| line.trim_start().starts_with(&format!("{option} <")))
        .unwrap_or_else(|| panic!("{args:?} lists no {option}:\n{help}"));
    let list = line
        .split("[possible values: ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("no possible values: {line}"));
    list.split(", ").map(str::to_owned).collect()
}

/// The name a table prints for `name`: the type users know, for the crate's picks.
fn shown(name: &str) -> &str {
    let mutex = MutexKind::from_name(name).and_then(MutexKind::known_as);
    let rwlock = || RwLockKind::from_name(name).and_then(RwLockKind::known_as);
    mutex.or_else(rwlock).unwrap_or(name)
}

/// The lock names of a `--json` file's cells.
fn json_locks(path: &PathBuf) -> BTreeSet<String> {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the run wrote its JSON"))
            .expect("JSON");
    json["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|cell| cell["lock"].as_str().expect("a lock name").to_owned())
        .collect()
}

/// One short uncontended run of every lock both lists accept.
#[test]
fn every_accepted_name_is_the_name_printed_everywhere() {
    let mutexes = possible_values(&["uncontended", "-h"], "--locks");
    let rwlocks = possible_values(&["uncontended", "-h"], "--rwlocks");
    for name in ["default", "glibc", "glibc-adaptive", "std", "parking_lot"] {
        assert!(mutexes.iter().any(|m| m == name), "{name}: {mutexes:?}");
    }
    for name in ["default-rw", "glibc-rw", "glibc-rw-writer", "std-rw"] {
        assert!(rwlocks.iter().any(|r| r == name), "{name}: {rwlocks:?}");
    }
    let json = scratch("names.json");
    let report = scratch("names-report");
    let (locks, rws) = (mutexes.join(","), rwlocks.join(","));
    let out = lockbench(&[
        "uncontended",
        "--runs",
        "1",
        "--no-adaptive",
        "--iterations",
        "2000",
        "--wide",
        "--locks",
        &locks,
        "--rwlocks",
        &rws,
        "--json",
        json.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let accepted: BTreeSet<String> = mutexes.iter().chain(&rwlocks).cloned().collect();
    assert_eq!(
        json_locks(&json),
        accepted,
        "the JSON names the locks as --locks does"
    );
    let tables = text(&out.stdout);
    let page = std::fs::read_to_string(report.join("index.html")).expect("the report");
    for name in &accepted {
        let word = |haystack: &str, word: &str| {
            haystack
                .split(|c: char| !(c.is_ascii_alphanumeric() || "-_:".contains(c)))
                .any(|token| token == word)
        };
        assert!(
            word(&tables, shown(name)),
            "the tables do not name {name}:\n{tables}"
        );
        assert!(word(&page, shown(name)), "the report does not name {name}");
    }
    for old in ["pthread", "pthread-adaptive", "pthread-rw"] {
        assert!(!tables.contains(old), "{old} printed:\n{tables}");
    }
}

/// The names of klocks' locks and glibc's that lockbench accepts are the values the
/// preload takes: `KLOCKS_VERBOSE=1`'s line names the same lock back.
#[test]
fn the_preload_takes_the_names_lockbench_takes() {
    let mutexes = possible_values(&["uncontended", "-h"], "--locks");
    let rwlocks = possible_values(&["uncontended", "-h"], "--rwlocks");
    let preloaded = MutexKind::C_KINDS.map(MutexKind::name);
    let mut checked = Vec::new();
    let at_load = |var: &str, value: &str| {
        let mut command = Command::new("/bin/true");
        command.env("LD_PRELOAD", common::library());
        for var in [
            "KLOCKS_LOCK",
            "KLOCKS_RWLOCK",
            "KLOCKS_SPIN",
            "KLOCKS_PROFILE",
        ] {
            command.env_remove(var);
        }
        command.env(var, value).env("KLOCKS_VERBOSE", "1");
        common::run(command).said()
    };
    for name in mutexes
        .iter()
        .filter(|m| preloaded.contains(&m.as_str()) || *m == "glibc")
    {
        let said = at_load("KLOCKS_LOCK", name);
        assert!(
            said.contains(&format!("active: mutexes {name},")),
            "{name}: {said}"
        );
        assert_eq!(said.lines().count(), 1, "{name}: {said}");
        checked.push(name.as_str());
    }
    for name in rwlocks
        .iter()
        .filter(|r| RwLockKind::from_name(r).is_some() || *r == "glibc-rw")
    {
        let said = at_load("KLOCKS_RWLOCK", name);
        let runs = if name == "glibc-rw" { "glibc" } else { name };
        assert!(
            said.contains(&format!(", rwlocks {runs},")),
            "{name}: {said}"
        );
        assert_eq!(said.lines().count(), 1, "{name}: {said}");
        checked.push(name.as_str());
    }
    for name in ["default", "glibc", "default-rw", "glibc-rw"] {
        assert!(checked.contains(&name), "{name} not checked: {checked:?}");
    }
}

/// Names in any case, and the older names of glibc's locks (with one line saying what
/// they are now), run the locks under their current names.
#[test]
fn any_case_and_the_older_names_are_read_as_the_current_names() {
    let json = scratch("old-names.json");
    let out = lockbench(&[
        "uncontended",
        "--runs",
        "1",
        "--no-adaptive",
        "--iterations",
        "2000",
        "--locks",
        "Default,PTHREAD,pthread-adaptive",
        "--rwlocks",
        "Pthread-Rw,DEFAULT-RW",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let expected: BTreeSet<String> = [
        "default",
        "glibc",
        "glibc-adaptive",
        "glibc-rw",
        "default-rw",
    ]
    .map(str::to_owned)
    .into();
    assert_eq!(json_locks(&json), expected);
    let stderr = text(&out.stderr);
    for note in [
        "`PTHREAD` is now `glibc`",
        "`pthread-adaptive` is now `glibc-adaptive`",
        "`Pthread-Rw` is now `glibc-rw`",
    ] {
        assert!(stderr.contains(note), "{note}: {stderr}");
    }
}

/// A `--json` file written before the rename compares cell for cell with one written
/// after it: its `pthread` cells read as `glibc`.
#[test]
fn an_older_json_file_reads_under_the_current_names() {
    let old = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare-a.json");
    let old_text = std::fs::read_to_string(&old).expect("the fixture");
    assert!(
        old_text.contains("\"pthread\""),
        "the fixture predates the rename"
    );
    let new = scratch("renamed.json");
    std::fs::write(&new, old_text.replace("\"pthread\"", "\"glibc\"")).unwrap();
    let out = lockbench(&["compare", old.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("0 only in A, 0 only in B"), "{stdout}");
    assert!(!stdout.contains("pthread"), "{stdout}");
    let out = lockbench(&[
        "compare",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--relative-to",
        "pthread",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
