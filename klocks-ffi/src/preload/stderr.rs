//! The interposer's diagnostics: one line at a time to stderr, prefixed
//! `klocks[PID] PROG: ` (a program's children and the programs of a pipeline share
//! one terminal, and each line says which process wrote it), written so that any
//! interposed call may print (from a lock's slow path, in a fork child, during a
//! cancellation-enabled thread's call).

/// The prefix of every line: `klocks[PID] PROG`, read when the line is written (a
/// fork child names its own pid).
fn prefix() -> String {
    extern "C" {
        static program_invocation_short_name: *const std::ffi::c_char;
    }
    // SAFETY: glibc sets it before any constructor runs, to a NUL-terminated string
    // that lives as long as the process.
    let program = unsafe { std::ffi::CStr::from_ptr(program_invocation_short_name) };
    // SAFETY: getpid has no preconditions (and, unlike a cached value, is right in a
    // fork child).
    let pid = unsafe { libc::getpid() };
    format!("klocks[{pid}] {}", program.to_string_lossy())
}

/// Writes one line to stderr with the raw `write` system call: no stdio lock, and no
/// pthread cancellation point (glibc's `write` is one, and a cancellation unwinding
/// out of an interposed call would abort the process).
pub(super) fn say(line: &str) {
    let text = format!("{}: {line}\n", prefix());
    // SAFETY: writes `text`'s bytes, which live for the call, to fd 2. A short or
    // failed write loses (part of) a diagnostic, nothing else.
    unsafe { libc::syscall(libc::SYS_write, 2, text.as_ptr(), text.len()) };
}
