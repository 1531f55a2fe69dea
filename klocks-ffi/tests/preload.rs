//! The pthread interposer: `tests/c/preload.c`, an unmodified pthread program, run
//! under `LD_PRELOAD=libklocks.so` with every `KLOCKS_LOCK` and rwsem policy, and
//! without the preload (glibc), which shows the program's checks are right.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The test program, compiled once (tests run in parallel).
fn program() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::compile("preload", false))
}

/// The program under the preload with `env`.
fn preloaded(env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(program());
    command.env("LD_PRELOAD", common::library());
    for var in [
        "KLOCKS_LOCK",
        "KLOCKS_RWLOCK",
        "KLOCKS_SPIN",
        "KLOCKS_SPIN_NS",
        "KLOCKS_OWNER_PROBE",
        "KLOCKS_VERBOSE",
        "KLOCKS_PROFILE",
    ] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    command
}

/// Runs every check with klocks' `lock` and `rwlock` (default: the adaptive rwsem)
/// in charge.
fn passes_with(lock: &str, rwlock: Option<&str>) {
    // The plain spinlocks hand the lock to preempted waiters: keep to the CPUs.
    let threads = if matches!(lock, "ticket" | "qspinlock") {
        "2"
    } else {
        "16"
    };
    let mut env = vec![
        ("KLOCKS_LOCK", lock),
        ("THREADS", threads),
        ("EXPECT_KLOCKS", "1"),
    ];
    env.push(("KLOCKS_RWLOCK", rwlock.unwrap_or("rwsem-adaptive")));
    let run = common::run(preloaded(&env));
    common::assert_ok("preload", &run);
    assert!(run.stdout.contains("fork with threads"));
    assert!(
        run.stderr.is_empty(),
        "klocks said something: {}",
        run.stderr
    );
}

macro_rules! every_lock {
    ($($test:ident: $lock:literal $(, $rwlock:literal)?;)*) => {$(
        #[test]
        fn $test() {
            passes_with($lock, None $(.or(Some($rwlock)))?);
        }
    )*};
}

every_lock! {
    default: "default", "default-rw";
    pvqspinlock: "pvqspinlock";
    qspinlock: "qspinlock";
    ticket: "ticket";
    pvticket: "pvticket";
    futex: "futex", "rwsem-never";
    spinfutex: "spinfutex", "rwsem-always";
}

/// The same program without the preload: the checks hold for glibc too (those
/// where klocks is stricter are skipped).
#[test]
fn glibc_passes_the_same_checks() {
    let run = common::run(Command::new(program()));
    common::assert_ok("preload", &run);
}

/// The counter check is not vacuous: without the lock it fails. Lost updates need
/// the threads to overlap, which a busy host can deny one short run, so the program
/// gets a few attempts.
#[test]
fn the_counter_check_catches_a_missing_lock() {
    const ATTEMPTS: usize = 5;
    let caught = (0..ATTEMPTS).find_map(|_| {
        let mut command = preloaded(&[("KLOCKS_LOCK", "pvqspinlock")]);
        command.arg("busted");
        let run = common::run(command);
        (!run.status.success()).then_some(run)
    });
    let run = caught.expect("the busted counter passed every attempt");
    assert!(run.stderr.contains("counter mismatch"), "{}", run.stderr);
}

/// An unknown name: one line on stderr, and the program runs on glibc's locks (the
/// glibc-only expectations hold, so EXPECT_KLOCKS is not set).
#[test]
fn an_unknown_lock_name_falls_back_to_glibc() {
    let run = common::run(preloaded(&[("KLOCKS_LOCK", "pvqspin")]));
    common::assert_ok("preload", &run);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("KLOCKS_LOCK=\"pvqspin\" is not a lock"),
        "{}",
        run.stderr
    );
}

/// A bad `KLOCKS_SPIN_NS` is refused the same way, rather than panicking inside a
/// lock call later.
#[test]
fn a_bad_spin_budget_falls_back_to_glibc() {
    let run = common::run(preloaded(&[
        ("KLOCKS_LOCK", "spinfutex"),
        ("KLOCKS_SPIN_NS", "5us"),
    ]));
    common::assert_ok("preload", &run);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("KLOCKS_SPIN_NS"), "{}", run.stderr);
}

/// `/bin/true`, which takes no lock, under the preload with `env` (and nothing else
/// of klocks' set): what the library says at load.
fn at_load(env: &[(&str, &str)]) -> common::Run {
    let mut command = Command::new("/bin/true");
    command.env("LD_PRELOAD", common::library());
    for var in [
        "KLOCKS_LOCK",
        "KLOCKS_RWLOCK",
        "KLOCKS_SPIN",
        "KLOCKS_SPIN_NS",
        "KLOCKS_OWNER_PROBE",
        "KLOCKS_VERBOSE",
        "KLOCKS_PROFILE",
    ] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    let run = common::run(command);
    assert!(run.status.success(), "{}", run.stderr);
    run
}

/// `help` lists every name with what it is and what it is for, once, even for a
/// program that takes no lock.
#[test]
fn help_lists_the_names() {
    let run = at_load(&[("KLOCKS_LOCK", "help"), ("KLOCKS_RWLOCK", "Help")]);
    let said = run.said();
    for (name, about) in [
        ("default", "klocks::Mutex, the one to pick"),
        ("default-rw", "klocks::RwLock, the one to pick"),
        ("pvqspinlock", "paravirt queued spinlock"),
        ("spinfutex", "spinning futex mutex"),
        ("ticket", "ticket spinlock"),
        ("rwsem-adaptive", "rwsem, seed 001's \"after\""),
        ("rwsem-never", "rwsem as in Linux 5.11+"),
        ("glibc", "glibc's own locks"),
    ] {
        let line = said
            .lines()
            .find(|line| line.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("{name} missing: {}", run.stderr));
        assert!(line.contains(about), "{line}");
        assert!(line.contains(" for "), "what it is for: {line}");
    }
    assert_eq!(
        run.stderr.matches("=<name>").count(),
        3,
        "listed once: {}",
        run.stderr
    );
}

/// `KLOCKS_VERBOSE=1`: exactly one line, naming the process (pid and program), the
/// mutex, the rwlock, the probe and the profile; names are taken in any case.
#[test]
fn verbose_names_what_is_active() {
    let run = at_load(&[("KLOCKS_LOCK", "Default"), ("KLOCKS_VERBOSE", "1")]);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    let line = run.stderr.trim_end();
    let process = format!("klocks[{}] true: ", run.pid);
    assert!(
        line.starts_with(&format!(
            "{process}active: mutexes default, rwlocks default-rw, spinlocks glibc, owner probe "
        )),
        "{line}"
    );
    let probe = line.split("owner probe ").nth(1).unwrap();
    assert!(
        ["perf,", "clock,", "budget,"]
            .iter()
            .any(|name| probe.starts_with(name)),
        "{line}"
    );
    assert!(line.ends_with("profile off"), "{line}");

    let run = at_load(&[
        ("KLOCKS_RWLOCK", "DEFAULT"),
        ("KLOCKS_PROFILE", "1"),
        ("KLOCKS_VERBOSE", "1"),
    ]);
    let said = run.said();
    let first = said.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("klocks: active: mutexes glibc, rwlocks default-rw, spinlocks glibc, ")
            && first.ends_with("profile on"),
        "{}",
        run.stderr
    );
}

/// An empty value is the variable unset: no complaint, glibc's locks.
#[test]
fn an_empty_lock_name_is_unset() {
    let run = at_load(&[
        ("KLOCKS_LOCK", ""),
        ("KLOCKS_RWLOCK", ""),
        ("KLOCKS_VERBOSE", "1"),
    ]);
    assert_eq!(
        run.said(),
        "klocks: active: mutexes glibc, rwlocks glibc, spinlocks glibc, owner probe unused (glibc's locks), profile off\n"
    );
    assert_eq!(at_load(&[("KLOCKS_VERBOSE", "")]).stderr, "");
}

/// A misspelt name gets the nearest one in its single line, and glibc's locks.
#[test]
fn a_misspelt_lock_name_gets_a_suggestion() {
    let run = at_load(&[("KLOCKS_LOCK", "defualt"), ("KLOCKS_VERBOSE", "1")]);
    let said = run.said();
    let lines: Vec<_> = said.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    assert_eq!(
        lines[0],
        "klocks: KLOCKS_LOCK=\"defualt\" is not a lock; did you mean `default`? \
         (KLOCKS_LOCK=help lists them); using glibc's mutexes"
    );
    assert!(lines[1].contains("mutexes glibc"), "{}", run.stderr);
    let run = at_load(&[("KLOCKS_RWLOCK", "rwsem-adaptiv")]);
    assert!(
        run.stderr.contains("did you mean `rwsem-adaptive`?"),
        "{}",
        run.stderr
    );
}

/// A bad `KLOCKS_VERBOSE` is one line, and changes nothing else.
#[test]
fn a_bad_verbose_value_is_one_line() {
    let run = at_load(&[("KLOCKS_LOCK", "futex"), ("KLOCKS_VERBOSE", "yes")]);
    assert_eq!(
        run.said(),
        "klocks: KLOCKS_VERBOSE=\"yes\" is not a verbosity: use 1 (one line at start naming the locks) or 0; quiet\n"
    );
}

/// `tests/c/handover.c`: a normal mutex taken in one thread and given back by another
/// (glibc's behaviour, which programs rely on), 100,000 times with sleepers and 4
/// threads per CPU; the plain spinlocks, made for threads ≤ CPUs, with one taker and
/// fewer rounds (a ticket lock hands each turn to a preempted thread).
fn hands_over_with(lock: &str) {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    let program = BINARY.get_or_init(|| common::compile("handover", false));
    let mut command = Command::new(program);
    command.env("LD_PRELOAD", common::library());
    command
        .env("KLOCKS_LOCK", lock)
        .env_remove("KLOCKS_PROFILE");
    if matches!(lock, "ticket" | "qspinlock") {
        command.env("THREADS", "1").env("ROUNDS", "10000");
    }
    let run = common::run(command);
    common::assert_ok("handover", &run);
    assert!(
        run.stderr.is_empty(),
        "klocks said something: {}",
        run.stderr
    );
}

macro_rules! hands_over {
    ($($test:ident: $lock:literal;)*) => {$(
        #[test]
        fn $test() {
            hands_over_with($lock);
        }
    )*};
}

hands_over! {
    handover_default: "default";
    handover_pvqspinlock: "pvqspinlock";
    handover_qspinlock: "qspinlock";
    handover_ticket: "ticket";
    handover_pvticket: "pvticket";
    handover_futex: "futex";
    handover_spinfutex: "spinfutex";
    handover_glibc: "glibc";
}

/// `tests/c/rdmax.c`: a read lock past the default rwlock's 2²³ − 1 readers is
/// `EAGAIN` from every read entry, as glibc's (whose own maximum, 2²⁹ − 1, is too
/// many to take in a test), not an abort.
#[test]
fn too_many_readers_is_eagain() {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    let program = BINARY.get_or_init(|| common::compile("rdmax", false));
    let mut command = Command::new(program);
    command
        .env("LD_PRELOAD", common::library())
        .env("KLOCKS_RWLOCK", "default-rw")
        .env("MAX_READERS", "8388607")
        .env_remove("KLOCKS_LOCK")
        .env_remove("KLOCKS_PROFILE");
    let run = common::run(command);
    common::assert_ok("rdmax", &run);
    assert!(run.stdout.contains("rdmax: 8388607 readers, then EAGAIN"));
    assert!(
        run.stderr.is_empty(),
        "klocks said something: {}",
        run.stderr
    );
}

/// `tests/c/spin.c` under the preload with `env` (`KLOCKS_*` otherwise unset).
fn spin_program(env: &[(&str, &str)], args: &[&str]) -> common::Run {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    let program = BINARY.get_or_init(|| common::compile("spin", false));
    let mut command = Command::new(program);
    command.env("LD_PRELOAD", common::library()).args(args);
    for var in [
        "KLOCKS_LOCK",
        "KLOCKS_RWLOCK",
        "KLOCKS_SPIN",
        "KLOCKS_SPIN_NS",
        "KLOCKS_OWNER_PROBE",
        "KLOCKS_VERBOSE",
        "KLOCKS_PROFILE",
    ] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    common::run(command)
}

/// Every section of `spin.c` ran: a program that skips one fails here.
fn assert_every_spin_section(run: &common::Run) {
    for line in [
        "spin: errno answers ok",
        "spin: process-shared, parent and child",
        "spin: second mapping, 4 threads x 2 processes",
        "spin: fork while another thread holds a spinlock",
        "spin: ok",
    ] {
        assert!(run.stdout.contains(line), "no {line:?} in:\n{}", run.stdout);
    }
}

/// `KLOCKS_SPIN=pvqspinlock` (and `default`, its name too): exact counters with 4
/// threads per CPU, `EBUSY` tries, an unlock by another thread, the stricter answers,
/// a process-shared lock across fork and at three addresses in two processes (which
/// hung while process-shared spinlocks were known by address), a fork while another
/// thread holds a spinlock; the `KLOCKS_VERBOSE` line names it.
#[test]
fn spin_pvqspinlock() {
    for name in ["pvqspinlock", "Default"] {
        let run = spin_program(
            &[
                ("KLOCKS_SPIN", name),
                ("EXPECT_KLOCKS", "1"),
                ("KLOCKS_VERBOSE", "1"),
            ],
            &[],
        );
        common::assert_ok("spin", &run);
        assert_every_spin_section(&run);
        assert!(
            run.said().starts_with(
                "klocks: active: mutexes glibc, rwlocks glibc, spinlocks pvqspinlock, "
            ),
            "{}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
}

/// `KLOCKS_SPIN=qspinlock`, which never sleeps: with threads ≤ CPUs (the
/// process-shared lock, which sleeps, still runs 4 threads in each process).
#[test]
fn spin_qspinlock() {
    let run = spin_program(
        &[
            ("KLOCKS_SPIN", "qspinlock"),
            ("EXPECT_KLOCKS", "1"),
            ("THREADS", "2"),
        ],
        &[],
    );
    common::assert_ok("spin", &run);
    assert_every_spin_section(&run);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

/// The same checks hold for glibc's spinlocks (those where klocks is stricter are
/// skipped), unset as with `KLOCKS_LOCK=default`, which does not name the spinlock.
#[test]
fn spin_glibc_passes_the_same_checks() {
    for env in [vec![], vec![("KLOCKS_LOCK", "default")]] {
        let run = spin_program(&env, &[]);
        common::assert_ok("spin", &run);
        assert_every_spin_section(&run);
    }
}

/// The counter check is not vacuous: without the lock it fails (a few attempts, with
/// more rounds, as lost updates need the threads to overlap, which a loaded host
/// makes rare).
#[test]
fn spin_counter_check_catches_a_missing_lock() {
    let caught = (0..5).find_map(|_| {
        let run = spin_program(
            &[("KLOCKS_SPIN", "pvqspinlock"), ("ROUNDS", "200000")],
            &["busted"],
        );
        (!run.status.success()).then_some(run)
    });
    let run = caught.expect("the busted counter passed every attempt");
    assert!(run.stderr.contains("counter mismatch"), "{}", run.stderr);
}

/// A bad `KLOCKS_SPIN`: one line with the nearest name, and the program runs on
/// glibc's spinlocks (the glibc expectations hold).
#[test]
fn an_unknown_spinlock_falls_back_to_glibc() {
    let run = spin_program(&[("KLOCKS_SPIN", "pvqspin")], &[]);
    common::assert_ok("spin", &run);
    assert_eq!(
        run.said(),
        "klocks: KLOCKS_SPIN=\"pvqspin\" is not a spinlock; did you mean `pvqspinlock`? \
         (KLOCKS_SPIN=help lists them); using glibc's spinlocks\n"
    );
}

/// `tests/c/spin-fork.c` under the preload with `env` (`KLOCKS_*` otherwise unset).
fn spin_fork_program(env: &[(&str, &str)]) -> common::Run {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    let program = BINARY.get_or_init(|| common::compile("spin-fork", false));
    let mut command = Command::new(program);
    command.env("LD_PRELOAD", common::library());
    for var in [
        "KLOCKS_LOCK",
        "KLOCKS_RWLOCK",
        "KLOCKS_SPIN",
        "KLOCKS_VERBOSE",
        "KLOCKS_PROFILE",
    ] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    common::run(command)
}

/// A spinlock that other threads wait on (pending, queued, asleep) at `fork()`:
/// free, the child takes it (lock and trylock); held by the forking thread, the
/// child unlocks it; held by another thread, it stays held (trylock `EBUSY`). With
/// each queued klocks spinlock, and glibc's as the control.
#[test]
fn spin_fork_with_waiters() {
    for spin in ["pvqspinlock", "qspinlock", ""] {
        let env: Vec<_> = (!spin.is_empty())
            .then_some(("KLOCKS_SPIN", spin))
            .into_iter()
            .collect();
        let run = spin_fork_program(&env);
        assert!(
            run.status.success(),
            "KLOCKS_SPIN={spin:?}:\n{}{}",
            run.stdout,
            run.stderr
        );
        common::assert_ok("spin-fork", &run);
    }
}

/// `tests/c/rwreuse.c` with `args`, linked with `-lklocks`, under the preload's
/// default rwlock (`preload`), or not (glibc's pthread rwlock: the control).
fn rwreuse(args: &[&str], preload: bool) {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    let program = BINARY.get_or_init(|| common::compile("rwreuse", true));
    let mut command = Command::new(program);
    command
        .args(args)
        .env("LD_LIBRARY_PATH", common::lib_dir())
        .env_remove("KLOCKS_LOCK")
        .env_remove("KLOCKS_PROFILE");
    if preload {
        command
            .env("LD_PRELOAD", common::library())
            .env("KLOCKS_RWLOCK", "default-rw");
    }
    let run = common::run(command);
    common::assert_ok("rwreuse", &run);
}

/// A pthread rwlock whose reader bias left a slot held by a thread that exited
/// holding a read lock, destroyed and initialised again in place: the new lock's
/// writer gets it, as with glibc.
#[test]
fn a_rwlock_initialised_again_inherits_no_reader() {
    rwreuse(&[], false);
    rwreuse(&[], true);
}

/// The same with the C API's `klocks_rwlock_t`.
#[test]
fn a_klocks_rwlock_initialised_again_inherits_no_reader() {
    rwreuse(&["klocks"], false);
}
