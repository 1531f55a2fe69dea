//! lockbench's command line: usage errors (exit 2, saying why) and what the help leaves out.

mod common;

use std::process::Command;

use common::{lockbench, scratch, stderr, stdout};

#[test]
fn an_unknown_lock_is_a_usage_error() {
    let out = lockbench(&["loop", "--locks", "qspinlock,no-such-lock"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-lock"));
}

/// A setting the locks would only report (and replace by the automatic one) stops
/// lockbench before it measures anything.
#[test]
fn a_bad_klocks_setting_is_a_usage_error() {
    for (var, value) in [("KLOCKS_SPIN_NS", "5us"), ("KLOCKS_OWNER_PROBE", "ebpf")] {
        let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
            .args(["uncontended"])
            .env(var, value)
            .output()
            .expect("lockbench starts");
        assert_eq!(out.status.code(), Some(2), "{var}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("{var}=\"{value}\"")),
            "{}",
            stderr(&out)
        );
        assert!(stdout(&out).is_empty(), "measured anyway: {}", stdout(&out));
    }
}

#[test]
fn zero_threads_is_a_usage_error() {
    let out = lockbench(&["loop", "--threads", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn bad_values_are_usage_errors() {
    let cases: &[&[&str]] = &[
        &["loop", "--iterations", "0"],
        &["loop", "--threads", "two"],
        &["loop", "--cap-secs", "0"],
        &["--runs", "0"],
        &["false-sharing", "--threads", "9"],
        &["false-sharing", "--duration-ms", "1"],
        &["c2c", "--round-trips", "lots"],
        &["overcommit", "--cs", "long"],
        &["overcommit", "--overcommit", "0"],
        &["overcommit", "--window-ms", "0"],
        &["overcommit", "--drain-cap-secs", "-1"],
        &["mutex-load", "--load", "0"],
        &["mutex-load", "--load", "ten"],
        &["mutex-load", "--threads", "0"],
        &["mutex-load", "--window-ms", "0"],
        &["mutex-load", "--outside-pauses", "-1"],
        &["sharded", "--shards", "0"],
        &["sharded", "--threads", "0"],
        &["sharded", "--ops", "0"],
        &["sharded", "--cs-pauses", "lots"],
        &["rw-mix", "--reads", "1001"],
        &["rw-mix", "--threads", "0"],
        &["rw-mix", "--ops", "0"],
        &["rw-mix", "--locks", "std"],
    ];
    for args in cases {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn the_hidden_negative_control_is_not_listed() {
    let out = lockbench(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("qspinlock-cmpxchg"));
    assert!(stdout(&out).contains("pvqspinlock"));
    assert!(!stdout(&out).contains("busted"));
}

#[test]
fn the_cell_subcommand_is_hidden() {
    for args in [&["--help"][..], &["-h"], &["help"]] {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(0));
        let text = stdout(&out);
        assert!(text.contains("overcommit"), "{text}");
        assert!(text.contains("mutex-load"), "{text}");
        assert!(!text.contains("-cell"), "{text}");
    }
}

#[test]
fn owner_probe_bad_values_are_usage_errors() {
    let cases: &[&[&str]] = &[
        &["owner-probe", "--checks", "0"],
        &["owner-probe", "--checks", "many"],
        &["owner-probe", "--agreement-ms", "0"],
        &["owner-probe", "--switches", "1"],
        &["owner-probe", "--no-such-option"],
    ];
    for args in cases {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn rw_bad_values_are_usage_errors_that_say_why() {
    let cases: &[(&[&str], &str)] = &[
        (&["rw-fair", "--groups", "8x8"], "READERS+WRITERS"),
        (&["rw-fair", "--groups", "0+8"], "READERS+WRITERS"),
        (&["rw-fair", "--load", "0"], "--load"),
        (&["rwsem", "--threads", "0"], "even number"),
        (&["rwsem", "--threads", "3"], "even number"),
        (&["rwsem", "--load", "0"], "--load"),
        (&["rwsem", "--window-ms", "0"], "--window-ms"),
        (&["rwsem", "--rwlocks", "no-such-rwlock"], "no-such-rwlock"),
        (&["rwsem", "--locks", "std"], "--rwlocks"),
        (&["rw-fair", "--locks", "std"], "--rwlocks"),
        (&["loop", "--rwlocks", "std-rw"], "--rwlocks applies to"),
        (&["rw-mix", "--reads", "0"], "no reads at all"),
        (&["rw-mix", "--reads", "0%"], "no reads at all"),
        (&["rw-mix", "--reads", "1000.1"], "above every operation"),
        (&["rw-mix", "--reads", "100.01%"], "above every operation"),
        (&["rw-mix", "--reads", "ninety"], "not a read fraction"),
        (&["rw-mix", "--reads", "99.99%%"], "not a read fraction"),
        (&["rw-mix", "--reads", "999.9999"], "finer than"),
        (&["rw-mix", "--placement", "everywhere"], "free, spread"),
    ];
    for (args, says) in cases {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn the_rw_negative_control_is_not_listed() {
    for args in [
        &["--help"][..],
        &["rwsem", "--help"],
        &["rw-fair", "--help"],
    ] {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(0));
        let text = stdout(&out);
        assert!(text.contains("pthread-rw-writer"), "{text}");
        assert!(!text.contains("busted"), "{text}");
    }
}

#[test]
fn torture_bad_values_are_usage_errors() {
    for args in [
        &["torture", "--secs", "0"][..],
        &["torture", "--threads", "1"],
        &["torture", "--minutes", "lots"],
    ] {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

/// `--stats` needs the counters, which only a `--features stats` build has.
#[cfg(not(feature = "stats"))]
#[test]
fn stats_without_the_feature_is_a_usage_error() {
    let out = lockbench(&["loop", "--stats"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("built without the `stats` feature")
            && stderr(&out).contains("--features stats"),
        "{}",
        stderr(&out)
    );
}

#[cfg(feature = "stats")]
#[test]
fn stats_of_app_are_a_usage_error() {
    let out = lockbench(&["app", "--stats", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--stats"), "{}", stderr(&out));
}

/// Without libklocks.so beside the executable (and no cargo to build it), asking
/// for `preload` is a usage error that says how to build the library.
#[test]
fn preload_without_the_library_is_a_usage_error() {
    let dir = scratch("preload-no-library");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("lockbench");
    let _ = std::fs::remove_file(&exe);
    if std::fs::hard_link(env!("CARGO_BIN_EXE_lockbench"), &exe).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_lockbench"), &exe).unwrap();
    }
    let out = Command::new(&exe)
        .args(["preload", "--runs", "1"])
        .env_remove("CARGO")
        .output()
        .expect("lockbench starts");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no preload library at")
            && stderr(&out).contains("cargo build --release -p klocks-ffi"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_pthread_pairs_subcommand_is_hidden() {
    let out = lockbench(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("preload"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("pthread-pairs"), "{}", stdout(&out));
}
