// Each test executable uses part of this module.
#![allow(dead_code)]

//! Building and running the C test programs in `tests/c/` against `libklocks.so`.
//!
//! Each program is compiled with the system C compiler (`$CC`, else `cc`) as
//! `-Wall -Wextra -Werror -std=c11 -pthread -O2`, with `include/` on the include
//! path, and run with a timeout that turns a deadlock into a failure.
//!
//! Finding an up-to-date `libklocks.so`: `cargo test` does not build a package's
//! cdylib for its integration tests (they link the Rust crate, and this crate has
//! no rlib), so the harness runs `cargo build -p klocks-ffi` itself, with the cargo
//! that runs the test (`$CARGO`), the profile and the target directory of this test
//! executable (`<target>/<profile>/deps/<test>-<hash>`). Cargo releases its build
//! lock before running tests, so the nested build does not wait on the outer one,
//! and with the same environment (`RUSTFLAGS` included) it is a no-op unless the
//! library is stale. The library is then `<target>/<profile>/libklocks.so`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A C program that runs longer than this has deadlocked.
const TIMEOUT: Duration = Duration::from_secs(300);

/// `<target>/<profile>`, where cargo puts `libklocks.so`, built once per run.
pub fn lib_dir() -> &'static Path {
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
        link_soname(profile_dir);
        profile_dir.to_path_buf()
    })
}

/// Links `libklocks.so.0` (the library's soname, which programs linked with
/// `-lklocks` ask the loader for) to `libklocks.so` beside it, as an install does.
fn link_soname(dir: &Path) {
    let soname = dir.join(SONAME);
    // Replaced each time, through a temporary name: test executables may race here.
    let temporary = dir.join(format!("{SONAME}.{}", std::process::id()));
    let _ = std::fs::remove_file(&temporary);
    std::os::unix::fs::symlink("libklocks.so", &temporary)
        .unwrap_or_else(|e| panic!("link {}: {e}", temporary.display()));
    std::fs::rename(&temporary, &soname)
        .unwrap_or_else(|e| panic!("rename to {}: {e}", soname.display()));
}

/// The soname `klocks-ffi/build.rs` gives the library.
pub const SONAME: &str = "libklocks.so.0";

/// `libklocks.so`, built.
pub fn library() -> PathBuf {
    lib_dir().join("libklocks.so")
}

/// Compiles `tests/c/<name>.c` (linked with `-lklocks` if `link_klocks`) once per
/// test executable and returns the binary.
pub fn compile(name: &str, link_klocks: bool) -> PathBuf {
    compile_with(name, link_klocks, &[])
}

/// [`compile`], with `headers` (name, text) written to a directory on the include
/// path: headers the test makes from the catalog.
pub fn compile_with(name: &str, link_klocks: bool, headers: &[(&str, String)]) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Through the workspace root: lockbench's tests include this module too.
    let source = manifest
        .join("../klocks-ffi/tests/c")
        .join(format!("{name}.c"));
    let binary = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("klocks-c-{name}"));
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let mut command = Command::new(&cc);
    command
        .args([
            "-Wall", "-Wextra", "-Werror", "-std=c11", "-pthread", "-O2", "-g",
        ])
        .arg("-I")
        .arg(manifest.join("../include"));
    if !headers.is_empty() {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("klocks-c-{name}-include"));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for (file, text) in headers {
            std::fs::write(dir.join(file), text).unwrap_or_else(|e| panic!("{file}: {e}"));
        }
        command.arg("-I").arg(dir);
    }
    command.arg(&source).arg("-o").arg(&binary);
    if link_klocks {
        command.arg("-L").arg(lib_dir()).arg("-lklocks");
    }
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("run the C compiler {cc:?}: {e}"));
    assert!(
        output.status.success(),
        "compiling {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    binary
}

/// What a run printed, and how it ended.
pub struct Run {
    pub status: ExitStatus,
    /// The process's id, which the preload's lines name.
    pub pid: u32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `command`, killing it after [`TIMEOUT`].
pub fn run(mut command: Command) -> Run {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {command:?}: {e}"));
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
            panic!("{command:?}: no exit after {TIMEOUT:?} (deadlock?)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let run = Run {
        status,
        pid: child.id(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    print!("{}", run.stdout);
    eprint!("{}", run.stderr);
    run
}

impl Run {
    /// Its stderr with the preload's prefix `klocks[PID] PROG: ` (this run's pid)
    /// written `klocks: `, for tests that match what a line says.
    pub fn said(&self) -> String {
        let ours = format!("klocks[{}] ", self.pid);
        let mut said = String::new();
        for line in self.stderr.split_inclusive('\n') {
            match line
                .strip_prefix(&ours)
                .and_then(|rest| rest.split_once(": "))
            {
                Some((_program, text)) => said = said + "klocks: " + text,
                None => said += line,
            }
        }
        said
    }
}

/// Asserts that `run` exited 0 and printed `<name>: ok`.
pub fn assert_ok(name: &str, run: &Run) {
    assert!(
        run.status.success(),
        "{name} exited with {}:\n{}{}",
        run.status,
        run.stdout,
        run.stderr
    );
    assert!(
        run.stdout.lines().any(|l| l == format!("{name}: ok")),
        "{name} did not report ok:\n{}",
        run.stdout
    );
}
