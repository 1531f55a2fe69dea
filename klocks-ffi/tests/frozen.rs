//! A waiter whose thread cannot act, under the preload: `tests/c/frozen.c`. Its
//! thread is stopped inside the lock call by a signal handler that blocks in
//! `read(2)` on a pipe that another waiter of the same lock writes once it has had
//! the lock, or that `siglongjmp`s out of the call, or that nests a second handler
//! on another lock; and a handler that read-locks while its own thread waits to
//! write-lock the same rwlock. Each case for each lock that leaves a wake or a
//! reservation to a waiter (`docs/misuse.md`), and each against glibc's locks as the
//! control.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

fn program() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| common::compile("frozen", false))
}

/// Runs `frozen CASE OBJECT`, under the preload with `env`, or without it (`None`).
fn others_go_on(case: &str, object: &str, env: Option<&[(&str, &str)]>) {
    let mut command = Command::new(program());
    command.args([case, object]);
    for var in [
        "KLOCKS_LOCK",
        "KLOCKS_RWLOCK",
        "KLOCKS_VERBOSE",
        "KLOCKS_PROFILE",
        "LD_PRELOAD",
    ] {
        command.env_remove(var);
    }
    if let Some(env) = env {
        command.env("LD_PRELOAD", common::library());
        // The waiter spins 10 ms whether or not the holder runs, so that the signal
        // lands in its spin.
        command.env("KLOCKS_SPIN_NS", "10000000");
        command.env("KLOCKS_OWNER_PROBE", "budget");
        command.envs(env.iter().copied());
    }
    let run = common::run(command);
    common::assert_ok("frozen", &run);
}

macro_rules! cases {
    ($($name:ident => $case:literal, $object:literal, $var:literal = $value:literal;)*) => {$(
        #[test]
        fn $name() {
            others_go_on($case, $object, Some(&[($var, $value)]));
        }
    )*};
}

cases! {
    default_spinner_blocked_in_a_handler => "blocking", "mutex", "KLOCKS_LOCK" = "default";
    default_spinner_longjmps_away => "longjmp", "mutex", "KLOCKS_LOCK" = "default";
    default_spinner_under_nested_handlers => "nested", "mutex", "KLOCKS_LOCK" = "default";
    spinfutex_spinner_blocked_in_a_handler => "blocking", "mutex", "KLOCKS_LOCK" = "spinfutex";
    spinfutex_spinner_longjmps_away => "longjmp", "mutex", "KLOCKS_LOCK" = "spinfutex";
    spinfutex_spinner_under_nested_handlers => "nested", "mutex", "KLOCKS_LOCK" = "spinfutex";
    default_rw_writer_spinner_blocked_in_a_handler => "blocking", "rwlock", "KLOCKS_RWLOCK" = "default-rw";
    default_rw_writer_spinner_longjmps_away => "longjmp", "rwlock", "KLOCKS_RWLOCK" = "default-rw";
    default_rw_writer_spinner_under_nested_handlers => "nested", "rwlock", "KLOCKS_RWLOCK" = "default-rw";
    default_rw_handler_reads_beside_its_threads_drain => "drain-read", "rwlock", "KLOCKS_RWLOCK" = "default-rw";
}

/// The control: glibc's locks pass every case.
#[test]
fn glibc_passes_every_case() {
    for (case, object) in [
        ("blocking", "mutex"),
        ("longjmp", "mutex"),
        ("nested", "mutex"),
        ("blocking", "rwlock"),
        ("longjmp", "rwlock"),
        ("nested", "rwlock"),
        ("drain-read", "rwlock"),
    ] {
        others_go_on(case, object, None);
    }
}
