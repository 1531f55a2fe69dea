//! The contention profile (`KLOCKS_PROFILE`): `tests/c/profile.c`'s locks of known
//! shapes, under the preload with glibc's locks and with klocks' default pair. The
//! profile must rank them by total wait, count their acquisitions exactly, name the
//! source lines and symbols they come from, say first what share of the threads' time
//! locks cost, never advise the lock in use, and stay correct across fork, destroy
//! and reuse (400,000 locks through a small table), a signal, and a full table.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

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

fn profiled_binary(binary: &PathBuf, args: &[&str], env: &[(&str, &str)]) -> common::Run {
    let mode = args.first().copied().unwrap_or("");
    let mut command = Command::new(binary);
    command.args(args).env("LD_PRELOAD", common::library());
    for (var, _) in std::env::vars() {
        if var.starts_with("KLOCKS_") {
            command.env_remove(var);
        }
    }
    command.envs(env.iter().copied());
    let run = common::run(command);
    assert!(
        run.status.success(),
        "profile {mode} failed: {}",
        run.stderr
    );
    run
}

/// One lock's rows of a report.
#[derive(Debug, Default)]
struct Lock {
    rank: usize,
    /// (held as, acquired, waited) per row: one for a mutex, read and write for an
    /// rwlock.
    rows: Vec<(String, u64, u64)>,
    wait_ns: f64,
    /// The line under the rows: the lock's symbol, if any, and its site.
    place: String,
    site: String,
    /// Its contention points: each stack's line ("waited N times, ...") and frames.
    stacks: Vec<(String, Vec<String>)>,
    advice: String,
}

/// A duration as the report prints it ("70.5 ms").
fn ns(value: &str, unit: &str) -> f64 {
    let scale = match unit {
        "ns" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => panic!("unit {unit:?}"),
    };
    value.parse::<f64>().unwrap() * scale
}

/// The locks of the report in `text` (from its first line on).
fn parse(text: &str) -> Vec<Lock> {
    let mut locks: Vec<Lock> = Vec::new();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("klocks profile of pid"))
        .skip_while(|l| !l.starts_with("  #  lock"))
        .skip(1);
    for line in lines.by_ref() {
        if line.starts_with("holds:") {
            break;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words[0] != "rw" && words[0].parse::<usize>().is_err() {
            let lock = locks.last_mut().unwrap();
            if let Some(stack) = line.strip_prefix("     waited ") {
                lock.stacks.push((stack.to_string(), Vec::new()));
                continue;
            }
            if let (Some(frame), Some(stack)) =
                (line.strip_prefix("         "), lock.stacks.last_mut())
            {
                stack.1.push(frame.to_string());
                continue;
            }
            if line.starts_with("       ") {
                // The place line, wrapped.
                lock.place.push(' ');
            } else {
                lock.place.clear();
            }
            lock.place.push_str(line.trim());
            lock.site = lock.place.split(" at ").nth(1).unwrap_or("").to_string();
            continue;
        }
        let (rank, rest) = if words[0] == "rw" {
            (None, &words[..])
        } else {
            (Some(words[0].parse::<usize>().unwrap()), &words[2..])
        };
        let (held_as, rest) = if rest[0] == "rw" {
            (format!("rw {}", rest[1]), &rest[2..])
        } else {
            (rest[0].to_string(), &rest[1..])
        };
        let row = (held_as, rest[0].parse().unwrap(), rest[1].parse().unwrap());
        match rank {
            Some(rank) => locks.push(Lock {
                rank,
                rows: vec![row],
                wait_ns: ns(rest[3], rest[4]),
                ..Lock::default()
            }),
            None => {
                let lock = locks.last_mut().unwrap();
                lock.rows.push(row);
                lock.wait_ns += ns(rest[3], rest[4]);
            }
        }
    }
    // Advice: "  N  text", wrapped lines indented by 7.
    let mut advising = None;
    for line in lines {
        let rank = line
            .get(..3)
            .and_then(|r| r.trim().parse::<usize>().ok())
            .filter(|_| line[3..].starts_with("  "));
        if let Some(rank) = rank {
            locks[rank - 1].advice = line[5..].to_string();
            advising = Some(rank);
        } else if let (Some(rank), Some(more)) = (advising, line.strip_prefix("       ")) {
            let advice = &mut locks[rank - 1].advice;
            advice.push(' ');
            advice.push_str(more);
        } else {
            advising = None;
        }
    }
    locks
}

/// The report's line (its wrapped parts joined) about the site `site` in its by-site
/// summary.
fn site_line(text: &str, site: &str) -> String {
    let mut joined: Vec<String> = Vec::new();
    for line in text.lines() {
        match (line.strip_prefix("       "), joined.last_mut()) {
            (Some(more), Some(last)) if last.contains(" locks (") => {
                last.push(' ');
                last.push_str(more.trim_start());
            }
            _ => joined.push(line.to_string()),
        }
    }
    joined
        .into_iter()
        .find(|l| l.contains(" locks (") && l.contains(&format!(" at {site} ")))
        .unwrap_or_else(|| panic!("no site line for {site}: {text}"))
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
                "try KLOCKS_LOCK=default (unmeasured: measure it with `lockbench app --with default -- PROGRAM`)"
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
/// 2 MiB (512 bytes a lock, its stacks included), the site table's 848 KiB and 1 MiB
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
        profiled <= bare + 4096 * 512 / 1024 + 848 + 1024,
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
        run.stderr,
        "klocks: KLOCKS_PROFILE=\"yes\" is not a profile setting: use 0, 1 (at exit) or sigusr2 (at exit and on SIGUSR2); no profile\n"
    );
    let run = profiled(
        "reuse",
        &[("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_TOP", "0")],
    );
    assert!(run.stderr.starts_with(
        "klocks: KLOCKS_PROFILE_TOP=\"0\" is not a number of locks in 1..=100; listing 10\nklocks profile of pid"
    ));
    let run = profiled(
        "reuse",
        &[("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_LOCKS", "12")],
    );
    assert!(run.stderr.starts_with(
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
        run.stderr.starts_with(
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

/// `tests/c/contention.c`: three hot locks (a global, one on the heap, one per request
/// made and destroyed) waited for in known functions.
fn contention() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::compile("contention", false))
}

/// The line of `tests/c/contention.c` marked `SITE:<name>`.
fn contention_site(name: &str) -> String {
    let source = include_str!("c/contention.c");
    let marker = format!("/* SITE:{name} */");
    let line = source
        .lines()
        .position(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("no {marker} in contention.c"));
    format!("contention.c:{}", line + 1)
}

/// `contention` under the profile with `format`, glibc's locks.
fn contention_run(format: &str) -> common::Run {
    profiled_binary(
        contention(),
        &[],
        &[("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_FORMAT", format)],
    )
}

/// What the program measured of its own waits: global, heap, request, in ns.
fn measured(run: &common::Run) -> [f64; 3] {
    ["global", "heap", "request"].map(|name| {
        run.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("measured {name} ")))
            .and_then(|ns| ns.parse().ok())
            .unwrap_or_else(|| panic!("no measured {name}: {}", run.stdout))
    })
}

/// The text report ranks the global lock (80 ms of waits) above the heap lock (40 ms)
/// above the per-request locks' site (20 ms), names the global, and shows under each
/// the stack its waits came from, the waiting function first.
#[test]
fn three_hot_locks_are_ranked_and_their_waits_placed_in_stacks() {
    let run = contention_run("text");
    let locks = parse(&run.stderr);
    assert_eq!(locks.len(), 2, "{}", run.stderr);
    let (global, heap) = (&locks[0], &locks[1]);
    assert!(
        global.place.starts_with("lock global_lock, "),
        "{global:#?}"
    );
    assert!(
        heap.place.starts_with(&format!(
            "initialised at {} (main)",
            contention_site("heap")
        )),
        "{heap:#?}"
    );
    assert_eq!(global.rows, [("mutex".into(), 40, 20)], "{}", run.stderr);
    assert_eq!(heap.rows, [("mutex".into(), 40, 20)], "{}", run.stderr);
    let request = site_line(&run.stderr, &contention_site("request"));
    assert!(
        request.contains("20 locks (20 destroyed): 40 acquired, 20 waited, "),
        "{request}"
    );
    let words: Vec<&str> = request.split_whitespace().collect();
    let at = words.iter().position(|&w| w == "waiting").unwrap();
    let request_wait = ns(words[at - 2], words[at - 1]);
    assert!(
        global.wait_ns > heap.wait_ns && heap.wait_ns > request_wait,
        "not ranked global > heap > request: {}",
        run.stderr
    );
    let wait = contention_site("wait");
    for (lock, function) in [(global, "serve_global"), (heap, "serve_heap")] {
        assert_eq!(lock.stacks.len(), 1, "{lock:#?}");
        let (counts, frames) = &lock.stacks[0];
        assert!(counts.starts_with("20 times, "), "{lock:#?}");
        assert_eq!(
            frames[0],
            format!("{wait} (timed_lock inlined in {function})"),
            "{lock:#?}"
        );
        assert!(frames[1].ends_with("(waiter)"), "{lock:#?}");
    }
    assert!(
        run.stderr.contains(&format!(
            "\n         {wait} (timed_lock inlined in serve_request)\n"
        )),
        "{}",
        run.stderr
    );
    for line in run.stderr.lines() {
        assert!(
            line.chars().count() <= 120,
            "wider than 120 columns: {line}"
        );
    }
}

/// `KLOCKS_PROFILE_FORMAT=json`: every line is a JSON object (the run, each lock, each
/// site, each stack); the locks are ranked and named as in the text, each stack's
/// frames name the waiting function, and the waits agree with what the program
/// measured of its own: the profile's is at most the program's (it is timed inside
/// the program's timing; 1% for the two clocks' calibration) and within 5% + 2 ms
/// of it.
#[test]
fn json_has_an_object_per_lock_and_stack_and_waits_agree_with_the_programs() {
    let run = contention_run("JSON");
    let objects: Vec<serde_json::Value> = run
        .stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let of_type = |kind: &str| {
        objects
            .iter()
            .filter(|o| o["type"] == kind)
            .collect::<Vec<_>>()
    };
    assert_eq!(of_type("profile").len(), 1, "{}", run.stderr);
    assert_eq!(objects[0]["type"], "profile");
    assert_eq!(objects[0]["untracked_acquisitions"], 0);
    let locks = of_type("lock");
    assert_eq!(locks.len(), 2, "{}", run.stderr);
    assert_eq!(locks[0]["symbol"], "global_lock");
    assert!(locks[1]["symbol"].is_null());
    assert_eq!(locks[1]["site"]["function"], "main");
    assert_eq!(
        format!("contention.c:{}", locks[1]["site"]["line"]),
        contention_site("heap")
    );
    let sites = of_type("site");
    assert_eq!(sites[0]["destroyed"], 20, "{}", run.stderr);
    assert_eq!(
        format!("contention.c:{}", sites[0]["site"]["line"]),
        contention_site("request")
    );
    let stacks = of_type("stack");
    let stack_of = |owner: &str, rank: u64| {
        let found: Vec<_> = stacks.iter().filter(|s| s[owner] == rank).collect();
        assert_eq!(found.len(), 1, "{owner} {rank}: {}", run.stderr);
        found[0]
    };
    let wait_line: u64 = contention_site("wait")[13..].parse().unwrap();
    for (stack, function) in [
        (stack_of("lock_rank", 1), "serve_global"),
        (stack_of("lock_rank", 2), "serve_heap"),
        (stack_of("site_rank", 1), "serve_request"),
    ] {
        assert_eq!(stack["waits"], 20, "{stack}");
        let frame = &stack["frames"][0];
        assert_eq!(frame["function"], "timed_lock", "{stack}");
        assert_eq!(frame["inlined_into"], function, "{stack}");
        assert_eq!(frame["line"], wait_line, "{stack}");
        assert_eq!(stack["frames"][1]["function"], "waiter", "{stack}");
    }
    let profiled = [
        locks[0]["wait_ns"].as_f64().unwrap(),
        locks[1]["wait_ns"].as_f64().unwrap(),
        sites[0]["wait_ns"].as_f64().unwrap(),
    ];
    for (profiled, measured) in profiled.into_iter().zip(measured(&run)) {
        assert!(
            profiled <= 1.01 * measured && measured - profiled <= 0.05 * measured + 2e6,
            "profiled {profiled} ns, the program measured {measured} ns"
        );
    }
}

/// `KLOCKS_PROFILE_FORMAT=folded`: `frame;...;frame wait_ns` lines, outermost caller
/// first, the lock last, one per stack.
#[test]
fn folded_lines_are_stacks_and_a_wait() {
    let run = contention_run("folded");
    let mut ends = Vec::new();
    for line in run.stderr.lines() {
        let (stack, wait) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no count: {line}"));
        assert!(wait.parse::<u64>().is_ok_and(|ns| ns > 0), "{line}");
        let frames: Vec<&str> = stack.split(';').collect();
        assert!(
            frames.len() >= 4 && frames.iter().all(|f| !f.is_empty()),
            "{line}"
        );
        assert!(frames.last().unwrap().starts_with('['), "{line}");
        ends.push(frames[frames.len() - 4..].join(";"));
    }
    for expected in [
        "waiter;serve_global;timed_lock;[lock global_lock]",
        "waiter;serve_request;timed_lock;[destroyed lock from main]",
    ] {
        assert!(
            ends.iter().any(|e| e == expected),
            "{expected}: {}",
            run.stderr
        );
    }
    assert!(
        ends.iter()
            .any(|e| e.starts_with("waiter;serve_heap;timed_lock;[lock 0x")),
        "{}",
        run.stderr
    );
    assert_eq!(ends.len(), 3, "{}", run.stderr);
}

/// `KLOCKS_PROFILE_FORMAT` is read as `KLOCKS_LOCK` is: a misspelling gets one line
/// with the nearest name and the report is text; empty is unset.
#[test]
fn a_bad_format_is_said_once_and_the_report_is_text() {
    let run = contention_run(" jsn ");
    assert!(
        run.stderr.starts_with(
            "klocks: KLOCKS_PROFILE_FORMAT=\"jsn\" is not a report format; did you mean `json`? (use text, json or folded); writing text\nklocks profile of pid"
        ),
        "{}",
        run.stderr
    );
    let run = contention_run("");
    assert!(
        run.stderr.starts_with("klocks profile of pid"),
        "{}",
        run.stderr
    );
}

/// The mutex's re-acquisition after a condvar wait (`contention cond`: 10 times the
/// woken thread waits for the mutex its signaller holds 10 ms more): timed as a wait
/// for the lock where klocks runs the condvar, its stack starting at the program's
/// `pthread_cond_wait` call; counted, untimed, where glibc runs it (inside glibc).
#[test]
fn a_condvar_reacquisition_is_a_timed_wait_where_klocks_runs_the_condvar() {
    let cond_lock = |lock: &str| {
        let mut env = vec![("KLOCKS_PROFILE", "1"), ("KLOCKS_PROFILE_FORMAT", "json")];
        if !lock.is_empty() {
            env.push(("KLOCKS_LOCK", lock));
        }
        let run = profiled_binary(contention(), &["cond"], &env);
        let objects: Vec<serde_json::Value> = run
            .stderr
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect();
        let lock = objects
            .iter()
            .find(|o| o["type"] == "lock" && o["symbol"] == "cond_lock")
            .unwrap_or_else(|| panic!("no cond_lock: {}", run.stderr))
            .clone();
        (lock, objects)
    };
    let (timed, objects) = cond_lock("default");
    let holds = &timed["holds"][0];
    assert!(holds["contended"].as_u64().unwrap() >= 10, "{timed}");
    assert!(timed["wait_ns"].as_f64().unwrap() >= 50e6, "{timed}");
    let stack = objects
        .iter()
        .find(|o| o["type"] == "stack" && o["lock"] == timed["address"])
        .unwrap();
    assert_eq!(stack["frames"][0]["function"], "cond_waiter", "{stack}");
    let (untimed, _) = cond_lock("");
    assert!(
        untimed["holds"][0]["acquisitions"].as_u64().unwrap() >= 30,
        "{untimed}"
    );
    assert!(untimed["wait_ns"].as_f64().unwrap() < 25e6, "{untimed}");
}
