//! Runs the C API's test programs in `tests/c/` against `libklocks.so`: compiled
//! against `include/klocks.h`, linked with `-lklocks`, run with `LD_LIBRARY_PATH`
//! pointing at the library (see `common` for how the library is built).

mod common;

use std::process::Command;

/// Compiles and runs `tests/c/<name>.c`, which must print `<name>: ok`.
fn compile_and_run(name: &str) -> String {
    let mut command = Command::new(common::compile(name, true));
    command.env("LD_LIBRARY_PATH", common::lib_dir());
    let run = common::run(command);
    common::assert_ok(name, &run);
    run.stdout
}

/// Every mutex kind: errno answers, exact counters with 4 and 32 threads,
/// the owner checks of DEFAULT and SPINFUTEX.
#[test]
fn c_mutex() {
    let out = compile_and_run("mutex");
    assert!(out.contains("SPINFUTEX counter 32 threads"));
    assert!(out.contains("DEFAULT counter 32 threads"));
}

/// Every rwsem policy: errno answers, sharing, exclusion, torture.
#[test]
fn c_rwsem() {
    let out = compile_and_run("rwsem");
    assert!(out.contains("NEVER torture"));
}
