//! `KLOCKS_LOCKDEP`: the lock validator (`klocks::lockdep`) over an unmodified
//! program's pthread mutexes, rwlocks, spinlocks and condvar re-acquisitions, whoever
//! runs them (glibc, or a klocks lock).
//!
//! The interposed calls tell the validator what they do: `init` the class of its
//! site ([`initialised`]), a blocking lock call its wait before it waits and its
//! hold once it has the lock ([`acquire`]), a `trylock` its hold only
//! ([`try_acquire`]), an unlock its release ([`release`]), a `destroy` its end
//! ([`destroyed`]), a glibc condvar's wait the release and re-take of its mutex
//! inside glibc ([`cond_wait`]). Each is behind one relaxed load ([`on`]); with the
//! validator on, the routes stay on the general entries (see `route`), as with the
//! contention profile.
//!
//! A dependency never seen before walks the waiting thread's stack with the
//! profile's walk (`profile::for_lockdep`): the stack of its wait, from the lock
//! call out; the held lock is shown by the site of the call that took it (walking
//! every acquisition's stack would cost every lock call an unwind). A report is
//! announced at once by one line on stderr (raw `write`, no allocation: the call
//! that found it may be inside `malloc`) and written in full at exit, when the
//! profile's arena makes symbolising safe ([`at_exit`]): to stderr (a copy made at
//! start, as coreutils close fd 2 before exit) or `KLOCKS_LOCKDEP_FILE`, in
//! lockdep's text or, with `KLOCKS_LOCKDEP=json`, one JSON object a line.

use std::ffi::c_int;
use std::fmt::{self, Write};
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::sync::OnceLock;

use klocks_core::lockdep::{self as core, ClassKind, Dependency, Host, Mode, Report, ReportKind};
use libc::{pthread_mutex_t, pthread_rwlock_t};

use super::config::{self, Lockdep, LOCKDEP, LOCKDEP_FILE};
use super::profile::for_lockdep;
use super::stderr::say;

/// The format at exit, set by [`start`].
static FORMAT: OnceLock<Lockdep> = OnceLock::new();
/// A copy of stderr made at start (-1: none).
static STDERR_COPY: AtomicI32 = AtomicI32::new(-1);

/// Whether the validator runs: the one check an interposed call pays when it does
/// not.
#[inline(always)]
pub(super) fn on() -> bool {
    core::preload_on()
}

/// Reads `KLOCKS_LOCKDEP` and, if asked, starts the validator (from the library's
/// constructor, before the routes are set).
pub(super) fn start() {
    let format = match config::parse_lockdep(config::var(LOCKDEP)) {
        Ok(Lockdep::Off) => return,
        Ok(format) => format,
        Err(complaint) => return say(&complaint),
    };
    let _ = FORMAT.set(format);
    for_lockdep::find_own_code();
    // SAFETY: duplicates fd 2 (if open) to a new close-on-exec descriptor.
    let copy = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 101) };
    // Relaxed: set before the validator is switched on, and read at exit.
    STDERR_COPY.store(copy, Relaxed);
    if !core::enable_for_preload(&HOST) {
        say("lockdep: could not map the validator's tables; no validation");
    }
}

/// The validator's host: the profile's stack walk, a line at once, the report at exit.
static HOST: Host = Host {
    capture,
    found,
    stopped,
};

/// The stack of a wait: the profile's walk, from the lock call that returns to `site`.
fn capture(site: usize, frames: &mut [usize; core::FRAMES]) {
    for_lockdep::capture(site, frames);
}

/// A line without allocating.
struct Line {
    bytes: [u8; 512],
    len: usize,
}

impl Write for Line {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let take = text.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + take].copy_from_slice(&text.as_bytes()[..take]);
        self.len += take;
        Ok(())
    }
}

/// Writes `klocks[PID] PROG: lockdep: ` and `body` as one line on stderr, without
/// allocating (raw `write`).
fn announce(body: impl FnOnce(&mut Line) -> fmt::Result) {
    extern "C" {
        static program_invocation_short_name: *const std::ffi::c_char;
    }
    let mut line = Line {
        bytes: [0; 512],
        len: 0,
    };
    // SAFETY: glibc sets it before constructors run, NUL-terminated, for the process's
    // life.
    let program = unsafe { std::ffi::CStr::from_ptr(program_invocation_short_name) };
    // SAFETY: no preconditions.
    let pid = unsafe { libc::getpid() };
    let _ = write!(
        line,
        "klocks[{pid}] {}: lockdep: ",
        program.to_str().unwrap_or("?")
    );
    let _ = body(&mut line);
    let _ = line.write_str("\n");
    // SAFETY: writes the line's bytes, which live for the call, to fd 2.
    unsafe { libc::syscall(libc::SYS_write, 2, line.bytes.as_ptr(), line.len) };
}

fn headline(kind: ReportKind) -> &'static str {
    match kind {
        ReportKind::CircularDependency => "possible circular locking dependency detected",
        ReportKind::RecursiveLocking => "possible recursive locking detected",
        ReportKind::HeldAtThreadExit => "lock held when its thread exited",
        ReportKind::DestroyedWhileHeld => "lock destroyed while held",
    }
}

/// A report found: one line now (the graph's lock is held: nothing here takes a lock
/// or allocates).
fn found(report: &Report) {
    announce(|line| {
        write!(line, "{}", headline(report.kind))?;
        if report.kind == ReportKind::CircularDependency {
            write!(line, " ({} classes)", report.len)?;
        }
        write!(
            line,
            " in thread {}; the report follows at exit",
            report.chain[0].thread
        )
    });
}

fn stopped(why: &str) {
    announce(|line| line.write_str(why.trim_start_matches("lockdep: ")));
}

/// The mode of a blocking or try call on the mutex `m`: reentrant for recursive and
/// error-checking types (glibc's `__kind`, which klocks' mutexes keep in place).
///
/// # Safety
/// `m` is null or points to a `pthread_mutex_t`.
pub(super) unsafe fn mutex_mode(m: *mut pthread_mutex_t) -> Mode {
    if m.is_null() {
        return Mode::Exclusive;
    }
    // SAFETY: `__kind` is the int at byte 16 of glibc's x86-64 `pthread_mutex_t`, as
    // of klocks' (`mutex::Mutex`); read once, racing with nothing but `init`.
    let kind = unsafe { std::ptr::read_volatile(m.cast::<c_int>().add(4)) };
    match kind & 3 {
        1 | 2 => Mode::Reentrant,
        _ => Mode::Exclusive,
    }
}

/// The mode of a read on the rwlock `r`: a recursive read on glibc's rwlocks unless
/// they were made writer-preferring non-recursive (glibc's `__flags`: a reader there
/// passes waiting writers), a plain read on klocks' (a reader waits behind a queued
/// writer).
///
/// # Safety
/// `r` is null or points to a `pthread_rwlock_t`.
pub(super) unsafe fn read_mode(r: *mut pthread_rwlock_t) -> Mode {
    if r.is_null() || config::choice().rwlock.is_some() {
        return Mode::Read;
    }
    // SAFETY: `__flags` is the int at byte 48 of glibc's x86-64 `pthread_rwlock_t`.
    let flags = unsafe { std::ptr::read_volatile(r.cast::<c_int>().add(12)) };
    // glibc's PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP.
    if flags == 2 {
        Mode::Read
    } else {
        Mode::RecursiveRead
    }
}

/// A blocking call `take` on the lock at `lock`, as `mode`, from `site`.
#[inline]
pub(super) fn acquire(lock: usize, mode: Mode, site: usize, take: impl FnOnce() -> c_int) -> c_int {
    core::acquire(lock, mode, site, take)
}

/// A try `take` on the lock at `lock`.
#[inline]
pub(super) fn try_acquire(
    lock: usize,
    mode: Mode,
    site: usize,
    take: impl FnOnce() -> c_int,
) -> c_int {
    let result = take();
    if result == 0 {
        core::acquired(lock, 0, mode, site);
    }
    result
}

/// A release `unlock` of the lock at `lock`.
#[inline]
pub(super) fn release(lock: usize, unlock: impl FnOnce() -> c_int) -> c_int {
    core::released(lock);
    unlock()
}

/// A release of the lock at `lock`, before the caller's own unlock.
pub(super) fn released_only(lock: usize) {
    core::released(lock);
}

/// `init` of the lock at `lock` from `site`.
pub(super) fn initialised(lock: usize, site: usize) {
    core::initialised(lock, site);
}

/// `destroy` of the lock at `lock` (a warning if this thread holds it).
pub(super) fn destroyed(lock: usize) {
    core::destroyed(lock);
}

/// A glibc condvar's wait on the mutex `m`, which glibc releases and re-takes inside
/// `wait`: the release before, and after, the re-take as a wait for `m` (with the
/// locks the thread still holds: the dependencies a re-take makes).
pub(super) fn cond_wait(m: *mut pthread_mutex_t, wait: impl FnOnce() -> c_int) -> c_int {
    let lock = m as usize;
    core::released(lock);
    let result = wait();
    // SAFETY: `m` is the caller's mutex (the wait's contract).
    let mode = unsafe { mutex_mode(m) };
    let class = core::wait(lock, mode, 0);
    core::acquired(lock, class, mode, 0);
    result
}

/// Writes the reports at exit (from the library's destructor), symbolised with
/// memory from the profile's arena (`exit` may run in a signal handler that
/// interrupted `malloc`).
pub(super) fn at_exit() {
    let Some(&format) = FORMAT.get() else { return };
    let (reports, dropped) = core::reports();
    let verbose = config::verbose_on();
    if reports.is_empty() && !verbose {
        return;
    }
    if !for_lockdep::enter_arena() {
        return announce(|line| {
            write!(
                line,
                "{} reports, not written: no memory to symbolise them at exit",
                reports.len()
            )
        });
    }
    let mut text = String::new();
    for report in &reports {
        let _ = match format {
            Lockdep::Json => json(&mut text, report),
            _ => lockdep_text(&mut text, report),
        };
    }
    if dropped > 0 {
        let _ = writeln!(text, "klocks lockdep: {dropped} more reports were not kept");
    }
    if verbose {
        let (classes, dependencies, locks) = core::usage();
        let _ = writeln!(
            text,
            "klocks lockdep: {classes} classes, {dependencies} dependencies, {locks} locks with a class"
        );
    }
    write_out(&text);
}

/// Writes `text` to `KLOCKS_LOCKDEP_FILE` or stderr.
fn write_out(text: &str) {
    let (fd, owned) = match config::var(LOCKDEP_FILE) {
        Some(template) => {
            // SAFETY: no preconditions.
            let pid = unsafe { libc::getpid() };
            let path = format!("{}\0", template.replace("%p", &pid.to_string()));
            // SAFETY: a NUL-terminated path; the raw system call.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_openat,
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
                    0o644,
                )
            };
            if fd < 0 {
                say(&format!(
                    "lockdep: cannot open {template:?}; the reports follow on stderr"
                ));
                (stderr(), false)
            } else {
                (fd as c_int, true)
            }
        }
        None => (stderr(), false),
    };
    let mut rest = text.as_bytes();
    while !rest.is_empty() {
        // SAFETY: writes bytes of a live buffer; the raw system call.
        let wrote = unsafe { libc::syscall(libc::SYS_write, fd, rest.as_ptr(), rest.len()) };
        if wrote <= 0 {
            break;
        }
        rest = &rest[wrote as usize..];
    }
    if owned {
        // SAFETY: our descriptor, closed once.
        unsafe { libc::syscall(libc::SYS_close, fd) };
    }
}

/// The copy of stderr made at start if it is still open, else fd 2.
fn stderr() -> c_int {
    // Relaxed: see `start`.
    let copy = STDERR_COPY.load(Relaxed);
    // SAFETY: F_GETFD only reads the descriptor's flags.
    if copy >= 0 && unsafe { libc::fcntl(copy, libc::F_GETFD) } >= 0 {
        copy
    } else {
        2
    }
}

/// A class as the report names it.
fn class(out: &mut impl Write, class: u32) -> fmt::Result {
    let (kind, site) = core::class_key(class);
    match kind {
        ClassKind::Named => {
            let mut name = [0; core::NAME_BYTES];
            out.write_str(core::class_name_into(class, &mut name))
        }
        ClassKind::Global => {
            if !for_lockdep::write_data_symbol(out, site)? {
                write!(out, "lock at {site:#x}")?;
            }
            Ok(())
        }
        ClassKind::Address => write!(out, "lock at {site:#x}"),
        ClassKind::Initialised => {
            out.write_str("class initialised at ")?;
            for_lockdep::write_code(out, site)
        }
        ClassKind::FirstUse => {
            out.write_str("class first locked at ")?;
            for_lockdep::write_code(out, site)
        }
    }
}

/// A site, or `(unknown)`.
fn site(out: &mut impl Write, site: usize) -> fmt::Result {
    if site == 0 {
        out.write_str("(unknown)")
    } else {
        for_lockdep::write_code(out, site)
    }
}

fn stack(out: &mut String, dependency: &Dependency, indent: &str) -> fmt::Result {
    let mut any = false;
    for &frame in dependency
        .waiter_stack
        .iter()
        .take_while(|&&frame| frame != 0)
    {
        out.write_str(indent)?;
        site(out, frame)?;
        out.write_char('\n')?;
        any = true;
    }
    if !any {
        out.write_str(indent)?;
        site(out, dependency.waiter_site)?;
        out.write_char('\n')?;
    }
    Ok(())
}

/// How the dependency's held lock was held and its wanted lock waited for, as the
/// text says them.
fn mode(dependency: &Dependency) -> (&'static str, &'static str) {
    (
        if dependency.from_shared {
            " (read)"
        } else {
            ""
        },
        if dependency.to_recursive_read {
            " (recursive read)"
        } else {
            ""
        },
    )
}

/// One report in lockdep's text.
fn lockdep_text(out: &mut String, report: &Report) -> fmt::Result {
    let rule = "======================================================";
    writeln!(
        out,
        "\n{rule}\nWARNING: {}\n{}",
        headline(report.kind),
        "-".repeat(rule.len())
    )?;
    let first = &report.chain[0];
    match report.kind {
        ReportKind::HeldAtThreadExit | ReportKind::DestroyedWhileHeld => {
            write!(out, "thread {} holds ", first.thread)?;
            class(out, first.from)?;
            out.write_str(",\ntaken at ")?;
            site(out, first.holder_site)?;
            return out.write_str(if report.kind == ReportKind::HeldAtThreadExit {
                "\nand exited holding it.\n"
            } else {
                "\nand destroyed it while holding it.\n"
            });
        }
        _ => {}
    }
    write!(
        out,
        "thread {} is trying to acquire lock:\n  ",
        first.thread
    )?;
    class(out, first.to)?;
    out.write_str("\nat:\n")?;
    stack(out, first, "    ")?;
    out.write_str("\nbut it already holds lock:\n  ")?;
    class(out, first.from)?;
    out.write_str("\ntaken at ")?;
    site(out, first.holder_site)?;
    out.write_char('\n')?;
    if report.kind == ReportKind::RecursiveLocking {
        out.write_str(
            "\nboth locks are of one class: a thread that holds one and waits for the other\n\
             deadlocks with a thread that takes them the other way round (or itself, if\n\
             they are the same lock).\n\n possible unsafe scenario:\n\n       Thread A\n       --------\n  lock(",
        )?;
        class(out, first.from)?;
        out.write_str(");\n  lock(")?;
        class(out, first.to)?;
        return out.write_str(");\n\n *** DEADLOCK ***\n");
    }
    out.write_str(
        "\nwhich lock already depends on the new lock.\n\nthe existing dependency chain is:\n",
    )?;
    for (i, dependency) in report.chain().iter().enumerate().skip(1) {
        let (held, wanted) = mode(dependency);
        write!(out, "\n-> #{i} thread {} held{held} ", dependency.thread)?;
        class(out, dependency.from)?;
        out.write_str("\n   taken at ")?;
        site(out, dependency.holder_site)?;
        write!(out, "\n   and waited{wanted} for ")?;
        class(out, dependency.to)?;
        out.write_str(" at:\n")?;
        stack(out, dependency, "      ")?;
    }
    if report.truncated {
        out.write_str("\n   (the cycle goes on: its first dependencies are shown)\n")?;
    }
    let (mut a, mut b) = (String::new(), String::new());
    class(&mut a, first.from)?;
    class(&mut b, first.to)?;
    let width = 34;
    writeln!(out, "\n possible unsafe scenario:\n")?;
    writeln!(out, "       {:<width$}Thread B", "Thread A")?;
    writeln!(out, "       {:<width$}--------", "--------")?;
    writeln!(out, "  lock({a});")?;
    writeln!(out, "       {:<width$}lock({b});", "")?;
    writeln!(out, "       {:<width$}lock({a});", "")?;
    writeln!(out, "  lock({b});")?;
    writeln!(out, "\n *** DEADLOCK ***")
}

/// `text` as a JSON string.
fn quoted(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// One report as one JSON object on a line.
fn json(out: &mut String, report: &Report) -> fmt::Result {
    let kind = match report.kind {
        ReportKind::CircularDependency => "circular-locking-dependency",
        ReportKind::RecursiveLocking => "recursive-locking",
        ReportKind::HeldAtThreadExit => "held-at-thread-exit",
        ReportKind::DestroyedWhileHeld => "destroyed-while-held",
    };
    write!(out, "{{\"lockdep\":\"{kind}\",\"headline\":")?;
    quoted(out, headline(report.kind));
    out.push_str(",\"chain\":[");
    for (i, dependency) in report.chain().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let mut text = String::new();
        write!(out, "{{\"thread\":{},\"held\":", dependency.thread)?;
        class(&mut text, dependency.from)?;
        quoted(out, &text);
        let (held, wanted) = mode(dependency);
        let held = if held.is_empty() { "exclusive" } else { "read" };
        write!(out, ",\"held_as\":\"{held}\",\"taken_at\":")?;
        text.clear();
        site(&mut text, dependency.holder_site)?;
        quoted(out, &text);
        if dependency.to != 0 {
            out.push_str(",\"wanted\":");
            text.clear();
            class(&mut text, dependency.to)?;
            quoted(out, &text);
            let wanted = if wanted.is_empty() {
                "waited"
            } else {
                "recursive-read"
            };
            write!(out, ",\"wanted_as\":\"{wanted}\"")?;
        }
        out.push_str(",\"stack\":[");
        let frames = dependency
            .waiter_stack
            .iter()
            .take_while(|&&frame| frame != 0);
        for (j, &frame) in frames.enumerate() {
            if j > 0 {
                out.push(',');
            }
            text.clear();
            site(&mut text, frame)?;
            quoted(out, &text);
        }
        out.push_str("]}");
    }
    writeln!(out, "],\"truncated\":{}}}", report.truncated)
}
