//! The contention profile (`KLOCKS_PROFILE`): `tests/c/profile.c`'s locks of known
//! shapes, under the preload with glibc's locks and with klocks' default pair. The
//! profile must rank them by total wait, count their acquisitions exactly, name the
//! source lines and symbols they come from, say first what share of the threads' time
//! locks cost, never advise the lock in use, and stay correct across fork, destroy
//! and reuse (400,000 locks through a small table), a signal, and a full table.

mod common;
#[path = "common/profile_report.rs"]
mod profile_report;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use profile_report::{parse, profiled_binary, site_advice, site_line, Lock};

fn program() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::compile("profile", false))
}

/// `tests/c/profile.c` built without debug information (and without `-rdynamic`):
/// only its symbol table names its functions and variables.
fn program_without_debug_info() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let binary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("klocks-c-profile-nodebug");
        let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
        let status = Command::new(cc)
            .args([
                "-Wall", "-Wextra", "-Werror", "-std=c11", "-pthread", "-O2", "-g0",
            ])
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/profile.c"))
            .arg("-o")
            .arg(&binary)
            .status()
            .expect("run the C compiler");
        assert!(status.success(), "profile.c did not compile");
        binary
    })
}

/// The line of `tests/c/profile.c` marked `SITE:<name>`.
fn site(name: &str) -> String {
    let source = include_str!("c/profile.c");
    let marker = format!("/* SITE:{name} */");
    let line = source
        .lines()
        .position(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("no {marker} in profile.c"));
    format!("profile.c:{}", line + 1)
}

/// `profile MODE` under the preload with `env` (and nothing else of klocks').
fn profiled(mode: &str, env: &[(&str, &str)]) -> common::Run {
    profiled_args(&[mode], env)
}

fn profiled_args(args: &[&str], env: &[(&str, &str)]) -> common::Run {
    profiled_binary(program(), args, env)
}

fn find<'a>(locks: &'a [Lock], site: &str) -> &'a Lock {
    locks
        .iter()
        .find(|l| l.site.starts_with(site))
        .unwrap_or_else(|| panic!("no lock from {site} in {locks:#?}"))
}

fn ranks_with(env: &[(&str, &str)]) {
    let mut env = env.to_vec();
    env.push(("KLOCKS_PROFILE", "1"));
    let run = profiled("ranks", &env);
    let locks = parse(&run.stderr);
    assert_eq!(locks.len(), 4, "{}", run.stderr);
    for pair in locks.windows(2) {
        assert!(
            pair[0].wait_ns >= pair[1].wait_ns,
            "not ranked by wait: {locks:#?}"
        );
    }
    let long = find(&locks, &site("long"));
    let hot = find(&locks, &site("hot"));
    let quiet = find(&locks, &site("quiet"));
    let table = find(&locks, &site("table"));
    assert_eq!(long.rank, 1, "{locks:#?}");
    assert!(hot.rank < quiet.rank, "{locks:#?}");
    assert_eq!(long.rows, [("mutex".into(), 24, long.rows[0].2)]);
    assert!(long.rows[0].2 > 0, "the long-held mutex was waited for");
    assert_eq!(hot.rows[0].1, 80_000);
    assert_eq!(quiet.rows, [("mutex".into(), 100, 0)]);
    assert_eq!(table.rows[0].0, "rw read");
    assert_eq!(table.rows[0].1, 6_000);
    assert_eq!(table.rows[1].0, "rw write");
    assert_eq!(table.rows[1].1, 50);
    assert!(long.site.contains("(long_worker)"), "{}", long.site);
    assert!(long.place.starts_with("lock held_long, "), "{}", long.place);
    let waited_at = format!("; longest wait at {} (long_worker)", site("long"));
    assert!(long.place.ends_with(&waited_at), "{}", long.place);
    assert!(hot.place.starts_with("lock hot, "), "{}", hot.place);
    // The headline comes first: the share of the threads' time spent waiting.
    let headline = run.stderr.lines().nth(1).unwrap();
    assert!(
        headline.starts_with("threads spent ")
            && headline.contains("% of their time waiting for locks"),
        "{}",
        run.stderr
    );
    let total = long.wait_ns + hot.wait_ns + quiet.wait_ns + table.wait_ns;
    let share: f64 = run
        .stderr
        .lines()
        .find(|l| l.starts_with("  1  "))
        .and_then(|l| l.split_whitespace().nth(8))
        .and_then(|s| s.trim_end_matches('%').parse().ok())
        .unwrap();
    let expected = 100.0 * long.wait_ns / total;
    assert!(
        (share - expected).abs() < 1.0,
        "share {share}, expected {expected}"
    );
    for line in run.stderr.lines() {
        assert!(
            line.chars().count() <= 120,
            "wider than 120 columns: {line}"
        );
    }
    assert!(run
        .stderr
        .contains(&format!("first locked at {}", site("long"))));
    assert!(run
        .stderr
        .contains(&format!("initialised at {}", site("hot"))));
    assert!(long.advice.starts_with("long holds"), "{}", long.advice);
    let in_use = env
        .iter()
        .any(|&(var, value)| var == "KLOCKS_LOCK" && value == "default");
    if in_use {
        assert!(
            long.advice
                .contains("KLOCKS_LOCK=default is already in use")
                && !long.advice.contains("try KLOCKS_LOCK"),
            "{}",
            long.advice
        );
    } else {
        assert!(
            long.advice.ends_with(
                "try KLOCKS_LOCK=default (unmeasured: measure it with `lockbench app --profile --try -- PROGRAM`)"
            ),
            "{}",
            long.advice
        );
    }
    assert!(
        quiet.advice.starts_with("rarely waited for"),
        "{}",
        quiet.advice
    );
}

#[test]
fn glibc_locks_are_ranked_counted_and_placed() {
    ranks_with(&[]);
}

#[test]
fn default_pair_locks_are_ranked_counted_and_placed() {
    ranks_with(&[("KLOCKS_LOCK", "default")]);
}

/// A fork child reports its own life only, to its own file (`%p`).
#[test]
fn a_fork_child_reports_its_own_counts_to_its_own_file() {
    let dir = std::env::temp_dir().join(format!("klocks-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("profile-%p.txt");
    let run = profiled(
        "fork",
        &[
            ("KLOCKS_PROFILE", "1"),
            ("KLOCKS_PROFILE_FILE", file.to_str().unwrap()),
            ("KLOCKS_LOCK", "default"),
        ],
    );
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let words: Vec<&str> = run.stdout.split_whitespace().collect();
    let read = |pid: &str| std::fs::read_to_string(dir.join(format!("profile-{pid}.txt"))).unwrap();
    let (child, parent) = (read(words[1]), read(words[3]));
    std::fs::remove_dir_all(&dir).unwrap();
    let quiet = |text: &str| find(&parse(text), &site("quiet")).rows[0].1;
    assert_eq!(quiet(&parent), 100, "{parent}");
    assert_eq!(quiet(&child), 10, "{child}");
}

/// A lock destroyed and initialised again in the same memory is a new lock.
#[test]
fn reused_memory_is_a_new_lock() {
    let run = profiled("reuse", &[("KLOCKS_PROFILE", "1")]);
    let locks = parse(&run.stderr);
    let reused = find(&locks, &site("reused"));
    assert_eq!(reused.rows[0].1, 7, "{}", run.stderr);
    let first = site_line(&run.stderr, &site("first_use"));
    assert!(
        first.contains("1 locks (1 destroyed): 5 acquired, 0 waited"),
        "{}",
        run.stderr
    );
}

/// A site whose locks were destroyed before exit (`profile destroyed`: the long-held
/// mutex's shape on a heap mutex, destroyed) is advised as a live lock of that shape
/// is (`held_long` in `ranks`: "long holds"), in the text and in JSON's `try`; and
/// under `KLOCKS_LOCK=default` the advice never names `default`.
#[test]
fn a_site_of_destroyed_locks_is_advised_as_a_live_lock() {
    for in_use in [None, Some("default")] {
        let mut env = vec![("KLOCKS_PROFILE", "1")];
        env.extend(in_use.map(|lock| ("KLOCKS_LOCK", lock)));
        let run = profiled("destroyed", &env);
        let made = site_line(&run.stderr, &site("made"));
        assert!(
            made.trim_start()
                .starts_with("s1  1 locks (1 destroyed): 24 acquired, "),
            "{made}"
        );
        let advice = site_advice(&run.stderr, 1);
        assert!(advice.starts_with("long holds (mean "), "{advice}");
        match in_use {
            None => assert!(
                advice.ends_with(
                    "try KLOCKS_LOCK=default (unmeasured: measure it with `lockbench app --profile --try -- PROGRAM`)"
                ),
                "{advice}"
            ),
            Some(_) => assert!(
                advice.contains("KLOCKS_LOCK=default is already in use")
                    && !advice.contains("try KLOCKS_LOCK"),
                "{advice}"
            ),
        }
        env.push(("KLOCKS_PROFILE_FORMAT", "json"));
        let run = profiled("destroyed", &env);
        let sites: Vec<serde_json::Value> = run
            .stderr
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .filter(|o: &serde_json::Value| o["type"] == "site" && o["destroyed"] == 1)
            .collect();
        assert_eq!(sites.len(), 1, "{}", run.stderr);
        let tried = &sites[0]["try"];
        match in_use {
            None => {
                assert_eq!(tried["variable"], "KLOCKS_LOCK", "{}", run.stderr);
                assert_eq!(tried["value"], "default", "{}", run.stderr);
            }
            Some(_) => assert!(tried.is_null(), "{}", run.stderr),
        }
    }
}

/// Locks that cost nothing: the report says so first and suggests no change.
#[test]
fn a_negligible_share_gets_no_remedy() {
    let run = profiled("reuse", &[("KLOCKS_PROFILE", "1")]);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(
        lines[1].starts_with("threads spent 0.00% of their time waiting for locks"),
        "{}",
        run.stderr
    );
    assert!(
        lines[2].starts_with("that share is negligible"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("KLOCKS_LOCK="), "{}", run.stderr);
    assert!(
        parse(&run.stderr).iter().all(|l| l.advice.is_empty()),
        "{}",
        run.stderr
    );
}

/// 400,000 locks (about a hundred times the table; a million took 18 to 46 s on a loaded
/// 2-CPU machine, two context switches a lock), each initialised, waited for once and
/// destroyed, through a table
/// of 4,096: every one is counted in its site's totals, none is left untracked, and
/// the 8 long-lived locks beside them are all listed, named by their global array.
#[test]
fn churned_locks_lose_nothing() {
    let run = profiled_args(
        &["churn", "400000"],
        &[("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_LOCKS", "4096")],
    );
    assert!(!run.stderr.contains("not tracked"), "{}", run.stderr);
    let churn = site_line(&run.stderr, &site("churn"));
    assert!(
        churn.contains("400000 locks (400000 destroyed): 800000 acquired, 400000 waited"),
        "{}",
        run.stderr
    );
    let locks = parse(&run.stderr);
    assert_eq!(locks.len(), 8, "{}", run.stderr);
    for lock in &locks {
        assert!(lock.place.starts_with("lock hot_locks"), "{}", run.stderr);
        // Initialised statically, first locked by the holder, waited for elsewhere.
        let waited_at = format!("; longest wait at {} (churn_waiter)", site("hot_wait"));
        assert!(lock.place.ends_with(&waited_at), "{}", lock.place);
        assert_eq!(lock.rows, [("mutex".into(), 40, 20)], "{}", run.stderr);
        // One contention point, in the waiter's function.
        assert_eq!(lock.stacks.len(), 1, "{lock:#?}");
        assert!(lock.stacks[0].0.starts_with("20 times, "), "{lock:#?}");
        assert!(
            lock.stacks[0].1[0].starts_with(&format!("{} (churn_waiter", site("hot_wait"))),
            "{lock:#?}"
        );
    }
    // The destroyed locks' stacks, merged into their site's: one stack, every wait.
    let after_site = run
        .stderr
        .split(" destroyed): 800000 acquired")
        .nth(1)
        .unwrap();
    assert!(
        after_site.contains("\n     waited 400000 times, "),
        "{}",
        run.stderr
    );
}

/// The peak resident memory `churn N` printed, in KiB.
fn peak_kib(run: &common::Run) -> u64 {
    run.stdout
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM: {}", run.stdout))
}

/// The profile's memory is bounded by its tables, not by how many locks a program
/// makes: over 300,000 locks made and destroyed, a table of 4,096 adds at most its own
/// 2 MiB (512 bytes a lock, its stacks included), the site table's 1,040 KiB and 1 MiB
/// of slack to the program's peak.
#[test]
fn memory_stays_within_the_tables() {
    let bare = profiled_args(&["churn", "300000"], &[]);
    let profiled = profiled_args(
        &["churn", "300000"],
        &[("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_LOCKS", "4096")],
    );
    let (bare, profiled) = (peak_kib(&bare), peak_kib(&profiled));
    assert!(
        profiled <= bare + 4096 * 512 / 1024 + 1040 + 1024,
        "{profiled} KiB profiled, {bare} KiB without"
    );
}

/// Without debug information, functions are named from the symbol table, and global
/// locks by their data symbols.
#[test]
fn symbols_name_sites_and_locks_without_debug_info() {
    let run = profiled_binary(
        program_without_debug_info(),
        &["ranks"],
        &[("KLOCKS_PROFILE", "1")],
    );
    let locks = parse(&run.stderr);
    let long = locks
        .iter()
        .find(|l| l.place.starts_with("lock held_long, "))
        .unwrap_or_else(|| panic!("held_long not named: {}", run.stderr));
    assert!(
        long.site.starts_with("klocks-c-profile-nodebug+0x")
            && long.site.contains(" (long_worker)"),
        "{}",
        run.stderr
    );
}

/// A stripped program (no symbol table, as distributions ship them) whose symbol
/// table went to a separate debug file, found by its `.gnu_debuglink` beside it:
/// its global locks and its functions are still named.
#[test]
fn a_stripped_program_names_its_locks_from_its_debug_file() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let binary = dir.join("klocks-c-profile-stripped");
    let debug = dir.join("klocks-c-profile-stripped.debug");
    std::fs::copy(program_without_debug_info(), &binary).unwrap();
    let objcopy = |args: &[&std::ffi::OsStr]| {
        let status = Command::new("objcopy")
            .args(args)
            .status()
            .expect("run objcopy");
        assert!(status.success(), "objcopy {args:?}");
    };
    objcopy(&[
        "--only-keep-debug".as_ref(),
        binary.as_ref(),
        debug.as_ref(),
    ]);
    let link = format!("--add-gnu-debuglink={}", debug.display());
    objcopy(&["--strip-all".as_ref(), link.as_ref(), binary.as_ref()]);
    let symbols = Command::new("nm").arg(&binary).output().unwrap();
    assert!(
        String::from_utf8_lossy(&symbols.stderr).contains("no symbols"),
        "not stripped"
    );
    let run = profiled_binary(&binary, &["ranks"], &[("KLOCKS_PROFILE", "1")]);
    let locks = parse(&run.stderr);
    let long = locks
        .iter()
        .find(|l| l.place.starts_with("lock held_long, "))
        .unwrap_or_else(|| panic!("held_long not named: {}", run.stderr));
    assert!(long.site.contains(" (long_worker)"), "{}", run.stderr);
    // Another build's debug file under that name (its build ID differs): not read,
    // so no lock is named at all rather than named wrongly.
    let other = dir.join("klocks-c-profile-other-build");
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let status = Command::new(cc)
        .args(["-std=c11", "-pthread", "-O0", "-g0"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/profile.c"))
        .arg("-o")
        .arg(&other)
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "profile.c did not compile");
    objcopy(&["--only-keep-debug".as_ref(), other.as_ref(), debug.as_ref()]);
    let run = profiled_binary(&binary, &["ranks"], &[("KLOCKS_PROFILE", "1")]);
    let locks = parse(&run.stderr);
    assert!(
        locks.iter().all(|l| !l.place.starts_with("lock ")),
        "named from another build's symbols: {}",
        run.stderr
    );
}

/// `sigusr2`: a report from the signal handler (sites as addresses), and one at exit.
#[test]
fn sigusr2_prints_a_report_without_resolving() {
    let run = profiled("signal", &[("KLOCKS_PROFILE", "sigusr2")]);
    let reports: Vec<&str> = run.stderr.split("klocks profile of pid").skip(1).collect();
    assert_eq!(reports.len(), 2, "{}", run.stderr);
    assert!(reports[0].contains("initialised at 0x"), "{}", reports[0]);
    let at_signal = parse(&format!("klocks profile of pid{}", reports[0]));
    assert_eq!(at_signal[0].rows[0].1, 80_000);
    assert!(reports[1].contains(&format!("initialised at {}", site("quiet"))));
}

/// More live locks than the table holds: counted as untracked, never a crash; the
/// default table holds them all.
#[test]
fn a_full_table_is_counted_not_fatal() {
    let run = profiled("overflow", &[("KLOCKS_PROFILE", "1")]);
    assert!(!run.stderr.contains("not tracked"), "{}", run.stderr);
    assert!(
        run.stderr.contains("the 10 of 5000 live tracked locks"),
        "{}",
        run.stderr
    );
    let run = profiled(
        "overflow",
        &[("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_LOCKS", "4096")],
    );
    let untracked: u64 = run
        .stderr
        .split("not tracked: ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no untracked count: {}", run.stderr));
    assert!(untracked >= 5_000 - 4_096, "{}", run.stderr);
}

/// Bad settings: one line each, and the program runs (without a profile).
#[test]
fn bad_settings_are_said_once_and_change_nothing_else() {
    let run = profiled("reuse", &[("KLOCKS_PROFILE", "yes")]);
    assert_eq!(
        run.said(),
        "klocks: KLOCKS_PROFILE=\"yes\" is not a profile setting: use 0, 1 (at exit) or sigusr2 (at exit and on SIGUSR2); no profile\n"
    );
    let run = profiled(
        "reuse",
        &[("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_TOP", "0")],
    );
    assert!(run.said().starts_with(
        "klocks: KLOCKS_PROFILE_TOP=\"0\" is not a number of locks in 1..=100; listing 10\nklocks profile of pid"
    ));
    let run = profiled(
        "reuse",
        &[("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_LOCKS", "12")],
    );
    assert!(run.said().starts_with(
        "klocks: KLOCKS_PROFILE_LOCKS=\"12\" is not a number of locks in 64..=16777216; tracking 65536\nklocks profile of pid"
    ), "{}", run.stderr);
    let run = profiled("reuse", &[]);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

/// A program that closes stderr at exit (as coreutils do) still gets its report, on
/// the copy of stderr the profile made at start.
#[test]
fn the_report_survives_stderr_closed_at_exit() {
    let run = profiled("close", &[("KLOCKS_PROFILE", "1")]);
    assert_eq!(find(&parse(&run.stderr), &site("quiet")).rows[0].1, 100);
}

/// A program that puts its own file where the copy of stderr was: the report never
/// goes into that file (the copy is checked to be the same file as at start).
#[test]
fn the_report_never_writes_into_a_file_the_program_put_on_its_descriptor() {
    let file = std::env::temp_dir().join(format!("klocks-profile-steal-{}", std::process::id()));
    let run = profiled_args(
        &["steal", file.to_str().unwrap()],
        &[("KLOCKS_PROFILE", "1")],
    );
    let written = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    assert!(run.stdout.contains("steal done"));
    assert_eq!(written, "", "the report went into the program's file");
}

/// A profile file that cannot be opened: said once, and the report goes to stderr.
#[test]
fn an_unopenable_file_sends_the_report_to_stderr() {
    let run = profiled(
        "reuse",
        &[
            ("KLOCKS_PROFILE", "1"),
            ("KLOCKS_PROFILE_FILE", "/nonexistent/dir/profile.txt"),
        ],
    );
    assert!(
        run.said().starts_with(
            "klocks: cannot open KLOCKS_PROFILE_FILE=\"/nonexistent/dir/profile.txt\" (errno 2); the profile follows on stderr\nklocks profile of pid"
        ),
        "{}",
        run.stderr
    );
}

/// The preload's own test program (every mutex type, rwlocks, condvars, timed calls,
/// fork with threads) passes its checks under the profile, with glibc's locks and
/// with klocks', and writes its report.
#[test]
fn the_preload_checks_pass_under_the_profile() {
    let preload = common::compile("preload", false);
    let klocks = [("default", "default-rw"), ("pvqspinlock", "rwsem-adaptive")];
    for lock in std::iter::once(None).chain(klocks.map(Some)) {
        let dir = std::env::temp_dir().join(format!(
            "klocks-profile-preload-{}-{}",
            std::process::id(),
            lock.map_or("glibc", |(mutex, _)| mutex)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = Command::new(&preload);
        for (var, _) in std::env::vars() {
            if var.starts_with("KLOCKS_") {
                command.env_remove(var);
            }
        }
        command
            .env("LD_PRELOAD", common::library())
            .env("KLOCKS_PROFILE", "1")
            .env("KLOCKS_PROFILE_FILE", dir.join("%p.txt"))
            .env("THREADS", "16");
        if let Some((mutex, rwlock)) = lock {
            command
                .env("KLOCKS_LOCK", mutex)
                .env("KLOCKS_RWLOCK", rwlock)
                .env("EXPECT_KLOCKS", "1");
        }
        let run = common::run(command);
        common::assert_ok("preload", &run);
        assert!(run.stderr.is_empty(), "{lock:?}: {}", run.stderr);
        let reports: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|file| std::fs::read_to_string(file.unwrap().path()).unwrap())
            .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        // Its fork children end with `_exit`, which prints no report.
        assert_eq!(reports.len(), 1, "{lock:?}: {reports:?}");
        assert!(
            reports[0].starts_with("klocks profile of pid"),
            "{}",
            reports[0]
        );
    }
}

/// Locks taken only by a try, a timed or a clock call are placed too (their stubs
/// pass the site in the register after their last argument).
#[test]
fn tries_and_timed_calls_name_their_sites() {
    for lock in [None, Some("default")] {
        let mut env = vec![("KLOCKS_PROFILE", "1")];
        if let Some(lock) = lock {
            env.extend([("KLOCKS_LOCK", lock), ("KLOCKS_RWLOCK", "default-rw")]);
        }
        let run = profiled("tries", &env);
        let locks = parse(&run.stderr);
        for name in ["tried", "clocked", "timed_rw", "tried_rw"] {
            let lock = find(&locks, &site(name));
            let acquired: u64 = lock.rows.iter().map(|row| row.1).sum();
            assert_eq!(acquired, 3, "{name}: {}", run.stderr);
        }
    }
}

/// A lock waited for often but briefly (`often`: 100 waits of a wake-up each) ranks
/// below one waited for rarely but long (`rarely`: 2 waits of 250 ms) by wait time;
/// with one lock listed, the list by wait time has `rarely` and "most often waited
/// for" has `often`, with its rank by waits; the JSON report lists it too, `rank`
/// null and `waits_rank` 1.
#[test]
fn a_lock_waited_for_often_is_listed_beside_the_longest_wait() {
    let env = [("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_TOP", "1")];
    let run = profiled("often", &env);
    let locks = parse(&run.stderr);
    assert_eq!(locks.len(), 1, "{}", run.stderr);
    assert!(
        locks[0].place.starts_with("lock rarely, "),
        "{}",
        run.stderr
    );
    assert_eq!(locks[0].rows[0].2, 2, "{}", run.stderr);
    let mut joined: Vec<String> = Vec::new();
    for line in run.stderr.lines() {
        match (line.strip_prefix("       "), joined.last_mut()) {
            (Some(more), Some(last)) => {
                last.push(' ');
                last.push_str(more.trim_start());
            }
            _ => joined.push(line.to_string()),
        }
    }
    let heading = joined
        .iter()
        .position(|l| l.starts_with("most often waited for"))
        .unwrap_or_else(|| panic!("no list by waits:\n{}", run.stderr));
    let often = &joined[heading + 1];
    assert!(often.starts_with(" w1 "), "{often}");
    assert!(often.contains(" mutex 100 waited "), "{often}");
    assert!(
        often.contains(": lock often, first locked at profile.c:"),
        "{often}"
    );
    for line in run.stderr.lines() {
        assert!(
            line.chars().count() <= 120,
            "wider than 120 columns: {line}"
        );
    }

    let mut env = env.to_vec();
    env.push(("KLOCKS_PROFILE_FORMAT", "json"));
    let run = profiled("often", &env);
    let locks: Vec<serde_json::Value> = run
        .stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .filter(|object: &serde_json::Value| object["type"] == "lock")
        .collect();
    assert_eq!(locks.len(), 2, "{}", run.stderr);
    assert_eq!(locks[0]["symbol"], "rarely", "{}", run.stderr);
    assert_eq!(locks[0]["rank"], 1);
    assert!(locks[0]["waits_rank"].is_null(), "{}", run.stderr);
    assert_eq!(locks[1]["symbol"], "often", "{}", run.stderr);
    assert!(locks[1]["rank"].is_null(), "{}", run.stderr);
    assert_eq!(locks[1]["waits_rank"], 1);
    assert_eq!(locks[1]["holds"][0]["contended"], 100);
}

/// `tests/c/profile-fork.c`'s slowest fork, in microseconds, under the preload with
/// `env`.
fn slowest_fork_us(env: &[(&str, &str)]) -> u64 {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    let program = BINARY.get_or_init(|| common::compile("profile-fork", false));
    let mut command = Command::new(program);
    command.env("LD_PRELOAD", common::library());
    for var in [
        "KLOCKS_LOCK",
        "KLOCKS_RWLOCK",
        "KLOCKS_SPIN",
        "KLOCKS_PROFILE",
    ] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    let run = common::run(command);
    common::assert_ok("profile-fork", &run);
    run.stdout
        .lines()
        .find_map(|line| line.strip_prefix("profile-fork: slowest fork "))
        .and_then(|rest| rest.strip_suffix(" us"))
        .and_then(|us| us.parse().ok())
        .unwrap_or_else(|| panic!("no slowest fork in:\n{}", run.stdout))
}

/// A fork child resets only the profile entries its parent used: with the largest
/// table (16,777,216 entries, 8 GiB of address space) a fork costs about what it
/// costs without the profile, not a walk over every entry (which took over a second
/// per fork). The bound is generous (a loaded 2-CPU machine); the control is the
/// same program without the profile.
#[test]
fn a_fork_costs_the_entries_in_use_not_the_table() {
    let without = slowest_fork_us(&[]);
    let with = slowest_fork_us(&[
        ("KLOCKS_PROFILE", "1"),
        ("KLOCKS_PROFILE_LOCKS", "16777216"),
    ]);
    assert!(
        with < 150_000,
        "a fork with a 16M-entry profile table took {with} us (without the profile: {without} us)"
    );
}

/// `tests/c/exitsig.c`, 20 times, with `env` (under the preload when `preload`): how
/// many runs did not end within 10 s (killed), and the stderr of one that ended.
fn exit_from_a_handler_runs(preload: bool, env: &[(&str, &str)]) -> (usize, Vec<String>) {
    use std::io::Read;
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    let program = BINARY.get_or_init(|| common::compile("exitsig", false));
    let (mut hung, mut stderrs) = (0, Vec::new());
    for _ in 0..20 {
        let mut command = Command::new(program);
        for (var, _) in std::env::vars() {
            if var.starts_with("KLOCKS_") {
                command.env_remove(var);
            }
        }
        if preload {
            command.env("LD_PRELOAD", common::library());
        }
        command
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let mut child = command.spawn().expect("run exitsig");
        let mut stderr = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if started.elapsed() > std::time::Duration::from_secs(10) {
                child.kill().unwrap();
                child.wait().unwrap();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let text = reader.join().unwrap();
        match status {
            None => hung += 1,
            Some(status) => {
                assert!(status.success(), "exitsig failed: {status}\n{text}");
                stderrs.push(text);
            }
        }
    }
    (hung, stderrs)
}

/// `exit()` from a `SIGALRM` handler that interrupted `malloc`: without the profile
/// (the control) every run ends; with it, every run ends too, and prints the report
/// (its sites resolved, or unresolved with the profile's note).
#[test]
fn exit_from_a_handler_inside_malloc_ends() {
    let (hung, _) = exit_from_a_handler_runs(false, &[]);
    assert_eq!(hung, 0, "the control hung");
    let (hung, _) = exit_from_a_handler_runs(true, &[]);
    assert_eq!(hung, 0, "the preload without the profile hung");
    let (hung, stderrs) = exit_from_a_handler_runs(true, &[("KLOCKS_PROFILE", "1")]);
    assert_eq!(hung, 0, "{hung} of 20 profiled runs hung at exit");
    for text in &stderrs {
        assert!(
            text.contains("exitsig.c:") || text.contains("sites unresolved"),
            "no report: {text}"
        );
    }
}
