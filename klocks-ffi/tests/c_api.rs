//! Runs the C test programs in `tests/c/` against `libklocks.so`.
//!
//! Each program is compiled with the system C compiler (`$CC`, else `cc`) as
//! `-Wall -Wextra -Werror -std=c11 -pthread` against `include/klocks.h`, linked with
//! `-lklocks`, run with `LD_LIBRARY_PATH` pointing at the library, and must exit 0
//! and print `<name>: ok`.
//!
//! Finding an up-to-date `libklocks.so`: `cargo test` does not build a package's
//! cdylib for its integration tests (they link the Rust crate, and this crate has
//! no rlib), so the test runs `cargo build -p klocks-ffi` itself, with the cargo
//! that runs the test (`$CARGO`), the profile and the target directory of this test
//! executable (`<target>/<profile>/deps/c_api-<hash>`). Cargo releases its build
//! lock before running tests, so the nested build does not wait on the outer one,
//! and with the same environment (`RUSTFLAGS` included) it is a no-op unless the
//! library is stale. The library is then `<target>/<profile>/libklocks.so`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A C program that runs longer than this has deadlocked.
const TIMEOUT: Duration = Duration::from_secs(300);

/// `<target>/<profile>`, where cargo puts `libklocks.so`, built once per run.
fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("test executable in <target>/<profile>/deps");
        let target_dir = profile_dir.parent().expect("<target>/<profile>");
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => "dev",
            Some(name) => name,
            None => panic!("no profile directory above {}", exe.display()),
        };
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", "klocks-ffi", "--profile", profile])
            .arg("--target-dir")
            .arg(target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo build -p klocks-ffi");
        assert!(status.success(), "cargo build -p klocks-ffi failed");
        let lib = profile_dir.join("libklocks.so");
        assert!(lib.exists(), "{} not built", lib.display());
        profile_dir.to_path_buf()
    })
}

/// Compiles `tests/c/<name>.c`, runs it, and returns its stdout.
fn compile_and_run(name: &str) -> String {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = manifest.join("tests/c").join(format!("{name}.c"));
    let include = manifest.join("../include");
    let binary = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("klocks-c-{name}"));
    let lib_dir = lib_dir();

    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let output = Command::new(&cc)
        .args(["-Wall", "-Wextra", "-Werror", "-std=c11", "-pthread", "-O2"])
        .arg("-I")
        .arg(&include)
        .arg(&source)
        .arg("-L")
        .arg(lib_dir)
        .arg("-lklocks")
        .arg("-o")
        .arg(&binary)
        .output()
        .unwrap_or_else(|e| panic!("run the C compiler {cc:?}: {e}"));
    assert!(
        output.status.success(),
        "compiling {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );

    let mut child = Command::new(&binary)
        .env("LD_LIBRARY_PATH", lib_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {}: {e}", binary.display()));
    // Read the pipes on their own threads so a chatty program cannot block on them
    // while we poll for its exit.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || std::io::read_to_string(&mut stdout).unwrap());
    let err = std::thread::spawn(move || std::io::read_to_string(&mut stderr).unwrap());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{name}: no exit after {TIMEOUT:?} (deadlock?)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    print!("{out}");
    eprint!("{err}");
    assert!(status.success(), "{name} exited with {status}:\n{out}{err}");
    assert!(
        out.lines().any(|l| l == format!("{name}: ok")),
        "{name} did not report ok:\n{out}"
    );
    out
}

/// Every mutex kind: errno answers, exact counters with 4 and 32 threads,
/// SPINFUTEX's owner checks.
#[test]
fn c_mutex() {
    let out = compile_and_run("mutex");
    assert!(out.contains("SPINFUTEX counter 32 threads"));
}

/// Every rwsem policy: errno answers, sharing, exclusion, torture.
#[test]
fn c_rwsem() {
    let out = compile_and_run("rwsem");
    assert!(out.contains("NEVER torture"));
}
