//! Runs the C API's test programs in `tests/c/` against `libklocks.so`: compiled
//! against `include/klocks.h`, linked with `-lklocks`, run with `LD_LIBRARY_PATH`
//! pointing at the library (see `common` for how the library is built).

mod common;

use std::process::Command;

use klocks_core::catalog::MutexKind;

/// `kinds.h`, the C programs' list of every `klocks_mutex_t` kind, from the
/// catalog: `{KLOCKS_X, "X", sleeps}` for each kind, in `klocks_kind` order (1, 2,
/// ...), and `NKINDS`. Made here, so that a kind the catalog adds is tested in C
/// without a line in the tests.
fn kinds_h() -> String {
    let entries: String = MutexKind::C_KINDS
        .iter()
        .map(|kind| {
            let name = kind.name().to_ascii_uppercase().replace('-', "_");
            format!(
                "    {{KLOCKS_{name}, \"{name}\", {}}},\n",
                u8::from(kind.sleeps())
            )
        })
        .collect();
    format!(
        "/* Every klocks_mutex_t kind, from klocks' catalog (tests/c_api.rs writes it). */\n\
         #ifndef KLOCKS_TEST_KINDS_H\n#define KLOCKS_TEST_KINDS_H\n\n#include \"klocks.h\"\n\n\
         static const struct {{\n    klocks_kind kind;\n    const char *name;\n    \
         int sleeps; /* survives more threads than CPUs */\n}} KINDS[] = {{\n{entries}}};\n\
         #define NKINDS (sizeof KINDS / sizeof KINDS[0])\n\n#endif\n"
    )
}

/// Compiles and runs `tests/c/<name>.c`, which must print `<name>: ok`.
fn compile_and_run(name: &str) -> String {
    let binary = common::compile_with(name, true, &[("kinds.h", kinds_h())]);
    let mut command = Command::new(binary);
    command.env("LD_LIBRARY_PATH", common::lib_dir());
    let run = common::run(command);
    common::assert_ok(name, &run);
    run.stdout
}

/// Every mutex kind: errno answers, timed locks, the static initialiser raced at
/// first use, exact counters with 4 and 32 threads, the owner checks of DEFAULT
/// and SPINFUTEX.
#[test]
fn c_mutex() {
    let out = compile_and_run("mutex");
    assert!(out.contains("mutex: timed locks ok"));
    assert!(out.contains("static initialiser, first use by 16 threads"));
    assert!(out.contains("SPINFUTEX counter 32 threads"));
    assert!(out.contains("DEFAULT counter 32 threads"));
}

/// Every mutex kind, and the rwlock's write lock, across `fork()` with other threads
/// waiting on it (pending, queued, asleep, and `KLOCKS_DEFAULT` reserved for a
/// sleeping claimant): free, the child takes it; held by the forking thread, the
/// child unlocks it; held by another thread, it stays held. glibc's mutex is the
/// control, run first.
#[test]
fn c_mutex_fork_with_waiters() {
    let out = compile_and_run("mutex-fork");
    assert!(out.contains("glibc: free, 2 parked waiter(s)"));
    assert!(out.contains("DEFAULT reserved: free, 1 parked waiter(s) (word 0xa0000000"));
    assert!(out.contains("rwlock: held by the forking thread, 2 parked waiter(s)"));
}

/// The default rwlock: every errno answer, timed locks, the static initialiser
/// raced at first use by readers and writers, `EAGAIN` past 2²³ − 1 readers.
#[test]
fn c_rwlock() {
    let out = compile_and_run("rwlock");
    assert!(out.contains("rwlock: errno answers ok"));
    assert!(out.contains("first use by 4 writers and 8 readers"));
    assert!(out.contains("rwlock: 8388607 readers, then EAGAIN"));
}

/// The condvar: errno answers, both clocks, every mutex kind, the static
/// initialisers, cancellation.
#[test]
fn c_cond() {
    let out = compile_and_run("cond");
    assert!(out.contains("cond: errno answers ok"));
    assert!(out.contains("cond: DEFAULT broadcast"));
    assert!(out.contains("cond: TICKET broadcast"));
    assert!(out.contains("holds the mutex in its cleanup"));
}

/// Every rwsem policy: errno answers, sharing, exclusion, torture.
#[test]
fn c_rwsem() {
    let out = compile_and_run("rwsem");
    assert!(out.contains("NEVER torture"));
}
