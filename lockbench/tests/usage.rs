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
        assert!(text.contains("glibc-rw-writer"), "{text}");
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

/// The option lines of `args`' help: `--name` of every option it lists.
fn listed_options(args: &[&str]) -> Vec<String> {
    let out = lockbench(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    let help = stdout(&out);
    let options = help
        .split("Exit status:")
        .next()
        .unwrap_or_default()
        .to_owned();
    options
        .lines()
        .filter_map(|line| {
            line.trim_start().strip_prefix("--").or_else(|| {
                line.trim_start()
                    .strip_prefix("-")
                    .and_then(|l| l.split_once(", --").map(|(_, r)| r))
            })
        })
        .map(|rest| format!("--{}", rest.split([' ', '\t']).next().unwrap_or_default()))
        .collect()
}

/// A command's help lists the global options it reads and no other: report and
/// compare read none, torture only the lock lists, the rwlock scenarios no --locks.
#[test]
fn each_command_lists_only_the_options_it_reads() {
    let cases: &[(&[&str], &[&str], &[&str])] = &[
        (
            &["report", "-h"],
            &["--out"],
            &["--locks", "--runs", "--json", "--wide", "--stats"],
        ),
        (
            &["compare", "--help"],
            &["--absolute"],
            &["--locks", "--runs", "--csv", "--budget"],
        ),
        (
            &["torture", "-h"],
            &["--locks", "--rwlocks"],
            &["--runs", "--json", "--seed-scale", "--stats"],
        ),
        (
            &["rwsem", "-h"],
            &["--rwlocks", "--runs", "--json"],
            &["--locks"],
        ),
        (
            &["loop", "-h"],
            &["--locks", "--runs", "--seed-scale"],
            &["--rwlocks"],
        ),
        (
            &["c2c", "-h"],
            &["--runs", "--json"],
            &["--locks", "--seed-scale", "--budget", "--stats"],
        ),
        (
            &["app", "-h"],
            &["--with", "--runs", "--budget"],
            &["--locks", "--rwlocks", "--stats", "--seed-scale"],
        ),
        (
            &["-h"],
            &["--locks", "--runs", "--seed-scale"],
            &["--rwlocks"],
        ),
    ];
    for (args, listed, unlisted) in cases {
        let options = listed_options(args);
        for option in *listed {
            assert!(
                options.iter().any(|o| o == option),
                "{args:?} lacks {option}: {options:?}"
            );
        }
        for option in *unlisted {
            assert!(
                !options.iter().any(|o| o == option),
                "{args:?} lists {option}: {options:?}"
            );
        }
    }
}

/// A global option given to a command that does not read it is refused (exit 2,
/// naming it), wherever it is written, instead of accepted and ignored.
#[test]
fn an_option_the_command_does_not_read_is_a_usage_error() {
    let cases: &[&[&str]] = &[
        &["report", "a.json", "--runs", "3"],
        &["--json", "out.json", "report", "a.json"],
        &["compare", "a.json", "b.json", "--wide"],
        &["torture", "--runs", "1"],
        &["torture", "--json", "out.json"],
        &["torture", "--stats"],
        &["c2c", "--seed-scale"],
        &["c2c", "--locks", "std"],
        &["owner-probe", "--budget", "3"],
        &["app", "--seed-scale", "--", "true"],
        &["rw-mix", "--seed-scale"],
    ];
    for args in cases {
        let out = lockbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let option = args.iter().find(|a| a.starts_with("--")).unwrap();
        assert!(stderr(&out).contains(option), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{args:?} ran: {}", stdout(&out));
    }
}

/// `-h` is the short help (a line per option, no lock list); `--help` the long one;
/// every command's help ends with the exit statuses.
#[test]
fn h_is_short_help_is_long_and_both_give_the_exit_statuses() {
    let short = stdout(&lockbench(&["-h"]));
    let long = stdout(&lockbench(&["--help"]));
    assert!(short.lines().count() * 2 < long.lines().count(), "{short}");
    assert!(!short.contains("FIFO spinlocks"), "{short}");
    assert!(long.contains("FIFO spinlocks"), "{long}");
    for args in [
        &["-h"][..],
        &["--help"],
        &["loop", "-h"],
        &["compare", "-h"],
        &["report", "--help"],
        &["torture", "-h"],
        &["app", "--help"],
    ] {
        let help = stdout(&lockbench(args));
        assert!(help.contains("Exit status:"), "{args:?}: {help}");
        for status in ["  0  success", "  1  a check failed", "  2  an input error"] {
            assert!(help.contains(status), "{args:?} lacks {status:?}: {help}");
        }
    }
}

/// torture's lock lists give torture's defaults, once.
#[test]
fn torture_gives_one_default_per_lock_list() {
    let help = stdout(&lockbench(&["torture", "--help"]));
    let at = help.find("--locks <").expect("torture lists --locks");
    let end = help[at..]
        .find("\n      --")
        .expect("another option follows");
    let entry = &help[at..at + end];
    assert_eq!(entry.matches("[default").count(), 1, "{entry}");
    assert!(entry.contains("sleep or yield"), "{entry}");
    assert!(!entry.contains("all the possible values"), "{entry}");
}

/// An output file that cannot be written is an input error (exit 2), not the status
/// of a failed check.
#[test]
fn an_unwritable_output_is_an_input_error() {
    let out = lockbench(&[
        "c2c",
        "--runs",
        "1",
        "--round-trips",
        "1000",
        "--json",
        "/nonexistent-klocks-dir/run.json",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("run.json"), "{}", stderr(&out));
}
