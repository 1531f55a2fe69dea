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
        "KLOCKS_SPIN_NS",
        "KLOCKS_OWNER_PROBE",
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

/// `help` lists the names, once, even for a program that takes no lock.
#[test]
fn help_lists_the_names() {
    let mut command = Command::new("/bin/true");
    command
        .env("LD_PRELOAD", common::library())
        .env("KLOCKS_LOCK", "help");
    let run = common::run(command);
    assert!(run.status.success());
    assert_eq!(run.stderr.lines().count(), 2, "{}", run.stderr);
    for name in [
        "default",
        "default-rw",
        "pvqspinlock",
        "spinfutex",
        "ticket",
        "rwsem-adaptive",
        "rwsem-never",
        "glibc",
    ] {
        assert!(run.stderr.contains(name), "{name} missing: {}", run.stderr);
    }
}
