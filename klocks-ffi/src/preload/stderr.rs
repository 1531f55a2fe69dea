//! The interposer's diagnostics: one line at a time to stderr, prefixed `klocks: `,
//! written so that any interposed call may print (from a lock's slow path, in a
//! fork child, during a cancellation-enabled thread's call).

/// Writes one line to stderr with the raw `write` system call: no stdio lock, and no
/// pthread cancellation point (glibc's `write` is one, and a cancellation unwinding
/// out of an interposed call would abort the process).
pub(super) fn say(line: &str) {
    let text = format!("klocks: {line}\n");
    // SAFETY: writes `text`'s bytes, which live for the call, to fd 2. A short or
    // failed write loses (part of) a diagnostic, nothing else.
    unsafe { libc::syscall(libc::SYS_write, 2, text.as_ptr(), text.len()) };
}
