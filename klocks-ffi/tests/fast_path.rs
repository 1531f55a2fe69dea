//! The interposer's uncontended path makes no system call (`tests/c/fastpath.c`,
//! under seccomp's strict mode, which kills a process at its first other system
//! call), for glibc's locks passed through, for every `KLOCKS_LOCK` and for every
//! `KLOCKS_RWLOCK`.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

fn program() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::compile("fastpath", false))
}

/// `fastpath` (with `arg`) under the preload with `KLOCKS_LOCK=lock` and
/// `KLOCKS_RWLOCK=rwlock` (unset: glibc's locks, passed through).
fn run(lock: Option<&str>, rwlock: Option<&str>, arg: Option<&str>) -> common::Run {
    let mut command = Command::new(program());
    command.env("LD_PRELOAD", common::library());
    for var in [
        "KLOCKS_LOCK",
        "KLOCKS_RWLOCK",
        "KLOCKS_PROFILE",
        "KLOCKS_VERBOSE",
    ] {
        command.env_remove(var);
    }
    if let Some(lock) = lock {
        command.env("KLOCKS_LOCK", lock);
    }
    if let Some(rwlock) = rwlock {
        command.env("KLOCKS_RWLOCK", rwlock);
    }
    command.args(arg);
    common::run(command)
}

#[test]
fn no_lock_makes_a_system_call_when_uncontended() {
    for lock in [
        None,
        Some("default"),
        Some("spinfutex"),
        Some("futex"),
        Some("pvqspinlock"),
        Some("qspinlock"),
        Some("ticket"),
        Some("pvticket"),
    ] {
        let run = run(lock, None, None);
        assert!(
            run.status.success() && run.stdout.contains("fastpath: ok"),
            "KLOCKS_LOCK={lock:?}: {:?} (SIGKILL: a system call under seccomp)\n{}{}",
            run.status,
            run.stdout,
            run.stderr
        );
    }
}

#[test]
fn no_rwlock_makes_a_system_call_when_uncontended() {
    for rwlock in [
        "default-rw",
        "rwsem-adaptive",
        "rwsem-always",
        "rwsem-never",
    ] {
        let run = run(None, Some(rwlock), None);
        assert!(
            run.status.success() && run.stdout.contains("fastpath: ok"),
            "KLOCKS_RWLOCK={rwlock}: {:?} (SIGKILL: a system call under seccomp)\n{}{}",
            run.status,
            run.stdout,
            run.stderr
        );
    }
}

/// The check can fail: a system call in strict mode kills the program.
#[test]
fn a_system_call_is_caught() {
    let run = run(Some("default"), Some("default-rw"), Some("syscall"));
    assert_eq!(run.status.signal(), Some(libc::SIGKILL), "{:?}", run.status);
    assert!(!run.stdout.contains("fastpath: ok"));
}
