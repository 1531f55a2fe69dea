//! A signal handler takes the lock its own thread waits for, under the preload:
//! `tests/c/signals.c` for each `KLOCKS_LOCK` that lends its waiting roles to
//! handlers and for the default rwlock, with the waiter spinning and asleep (the
//! same cases as `klocks/src/role/matrix.rs`, through `pthread_mutex_lock` and
//! `pthread_rwlock_*`).

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

fn program() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::compile("signals", false))
}

/// Runs `signals ROLE OBJECT` under the preload with `env`.
fn handler_gets_the_lock(role: &str, object: &str, env: &[(&str, &str)]) {
    let mut command = Command::new(program());
    command.args([role, object]);
    command.env("LD_PRELOAD", common::library());
    for var in [
        "KLOCKS_LOCK",
        "KLOCKS_RWLOCK",
        "KLOCKS_VERBOSE",
        "KLOCKS_PROFILE",
    ] {
        command.env_remove(var);
    }
    // A spinner spins 10 ms whether or not the holder runs, so that the signal lands
    // in the spin; a sleeper does not spin.
    let spin = if role == "spinner" { "10000000" } else { "0" };
    command.env("KLOCKS_SPIN_NS", spin);
    command.env("KLOCKS_OWNER_PROBE", "budget");
    command.envs(env.iter().copied());
    let run = common::run(command);
    common::assert_ok("signals", &run);
}

macro_rules! cases {
    ($($name:ident => $role:literal, $object:literal, $var:literal = $value:literal;)*) => {$(
        #[test]
        fn $name() {
            handler_gets_the_lock($role, $object, &[($var, $value)]);
        }
    )*};
}

cases! {
    default_spinner => "spinner", "mutex", "KLOCKS_LOCK" = "default";
    default_sleeper => "sleeper", "mutex", "KLOCKS_LOCK" = "default";
    spinfutex_spinner => "spinner", "mutex", "KLOCKS_LOCK" = "spinfutex";
    spinfutex_sleeper => "sleeper", "mutex", "KLOCKS_LOCK" = "spinfutex";
    futex_sleeper => "sleeper", "mutex", "KLOCKS_LOCK" = "futex";
    default_rw_writer_spinner_write => "spinner", "rwlock-write", "KLOCKS_RWLOCK" = "default-rw";
    default_rw_writer_spinner_read => "spinner", "rwlock-read", "KLOCKS_RWLOCK" = "default-rw";
    default_rw_writer_sleeper_write => "sleeper", "rwlock-write", "KLOCKS_RWLOCK" = "default-rw";
    default_rw_writer_sleeper_read => "sleeper", "rwlock-read", "KLOCKS_RWLOCK" = "default-rw";
}

/// The program's own check: glibc's locks (no spinner) pass the sleeper cases.
#[test]
fn glibc_sleepers_pass_without_klocks() {
    for object in ["mutex", "rwlock-write", "rwlock-read"] {
        let mut command = Command::new(program());
        command.args(["sleeper", object]);
        let run = common::run(command);
        common::assert_ok("signals", &run);
    }
}
