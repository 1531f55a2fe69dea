//! The `SIGURG` handler of the torture: it counts the signals and, with `--signals
//! same`, takes the lock under test on the interrupted worker's own thread, where
//! that worker's phase allows (see [`Phase`]); and the worker's phases it reads.

use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;

use super::faults::Faults;
use super::guarded::{Guarded, Section};

/// What a `--signals same` handler runs: the lock under test's section, on its data.
pub(super) struct HandlerTarget {
    pub(super) section: Section,
    pub(super) guarded: Arc<Guarded>,
    /// No faults: a handler's section is short.
    pub(super) faults: Faults,
    pub(super) readers: bool,
    /// Write sections the handlers made, for the lost-update check.
    pub(super) writes: AtomicU64,
}

/// The current lock's [`HandlerTarget`] (leaked per lock), or null.
pub(super) static TARGET: std::sync::atomic::AtomicPtr<HandlerTarget> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// Counts `SIGURG`s and, with `--signals same`, takes the lock under test; installed
/// once.
pub(super) fn install_signal_handler() {
    extern "C" fn handled(_: libc::c_int) {
        let nth = HANDLED.fetch_add(1, Relaxed);
        // SeqCst: pairs with the store that publishes the target.
        let target = TARGET.load(SeqCst);
        // A reader thread may hold a read lock, which a handler's section would wait
        // behind (a recursive read behind a waiting writer): only writer threads.
        if target.is_null() || IS_READER.with(std::cell::Cell::get) {
            return;
        }
        // SAFETY: a leaked `HandlerTarget`, never freed.
        let target = unsafe { &*target };
        let phase = PHASE.with(std::cell::Cell::get);
        // A reader-writer lock records its writer beside its word, a moment after the
        // cmpxchg that takes it: a handler that lands in that moment cannot tell its
        // thread's new write lock from another's and waits for itself, as any handler
        // that takes a lock its thread holds. So for those, only a thread outside
        // the lock is interrupted (the matrix of `klocks/src/role` reaches each of
        // their waiting roles deterministically instead).
        if phase == Phase::Holding || (target.readers && phase != Phase::Outside) {
            SKIPPED.fetch_add(1, Relaxed);
            return;
        }
        let writer = !target.readers || nth.is_multiple_of(2);
        let section = std::panic::AssertUnwindSafe(|| {
            (target.section)(&target.guarded, &target.faults, 0, writer)
        });
        // The interrupted thread may hold the lock (the signal landed inside its
        // section, or between its lock's atomic and the section): the relock panics
        // (the locks run in this mode know their owner), and the handler leaves it.
        // No allocation is in progress on this thread there: it is inside a lock call
        // or a section, so the panic may allocate.
        if std::panic::catch_unwind(section).is_err() {
            SKIPPED.fetch_add(1, Relaxed);
        } else if writer {
            target.writes.fetch_add(1, Relaxed);
        }
        // The section the handler ran kept phases of its own.
        PHASE.with(|p| p.set(phase));
    }
    // SAFETY: a handler that touches one atomic; SA_RESTART keeps the harness's own
    // blocking calls going.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handled as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut());
    }
}

/// `--freeze`: stops a worker inside its lock call, not holding the lock, until
/// [`thaw`]: a `SIGUSR1` handler that blocks in `read(2)` on a pipe, as a program's
/// handler may block on a pipe one of the lock's other waiters will write. A worker
/// in any other phase returns at once (declines). Installed once.
pub(super) fn install_freeze_handler() {
    extern "C" fn freeze(_: libc::c_int) {
        if PHASE.with(std::cell::Cell::get) != Phase::Waiting {
            return;
        }
        // SeqCst: pairs with the store that publishes the check for the lock.
        let holds = HOLDS_WRITER.load(SeqCst);
        // SAFETY: a leaked closure, never freed.
        if !holds.is_null() && unsafe { (*holds)() } {
            return;
        }
        FROZE.with(|f| f.set(true));
        // SeqCst: the freezer waits for it before it holds the freeze.
        FROZEN.store(true, SeqCst);
        let fd = THAW_PIPE[0].load(SeqCst);
        let mut byte = 0u8;
        loop {
            // SAFETY: reads one byte into a local; read is async-signal-safe.
            let got = unsafe { libc::read(fd, std::ptr::from_mut(&mut byte).cast(), 1) };
            // SAFETY: errno is this thread's, read right after the call.
            if got == 1 || unsafe { *libc::__errno_location() } != libc::EINTR {
                break;
            }
        }
        FROZEN.store(false, SeqCst);
    }
    let mut fds = [0; 2];
    // SAFETY: a pipe for the thaws; its ends live as long as the process.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    THAW_PIPE[0].store(fds[0], SeqCst);
    THAW_PIPE[1].store(fds[1], SeqCst);
    // SAFETY: the handler touches atomics, a thread-local without destructor and
    // read(2). No SA_RESTART: a freeze that lands in a futex wait ends that wait.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = freeze as extern "C" fn(libc::c_int) as usize;
        libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut());
    }
}

/// For a reader-writer lock under `--freeze`: whether the lock names the calling
/// thread as its writer (a writer that drains the readers holds the others out as a
/// holder does, so it is not frozen); null for a mutex.
pub(super) static HOLDS_WRITER: std::sync::atomic::AtomicPtr<Box<dyn Fn() -> bool + Send + Sync>> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// Whether a worker is frozen in its lock call now (one at a time).
pub(super) static FROZEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The read and write ends of the thaws' pipe.
static THAW_PIPE: [std::sync::atomic::AtomicI32; 2] =
    [const { std::sync::atomic::AtomicI32::new(-1) }; 2];

/// Lets the frozen worker go on with its lock call.
pub(super) fn thaw() {
    let byte = 1u8;
    // SAFETY: writes one byte from a local to the pipe made by the installer.
    let wrote = unsafe {
        libc::write(
            THAW_PIPE[1].load(SeqCst),
            std::ptr::from_ref(&byte).cast(),
            1,
        )
    };
    assert_eq!(wrote, 1, "thaw: {}", std::io::Error::last_os_error());
}

/// Whether this worker was frozen since it last asked: its wait is not counted.
pub(super) fn was_frozen() -> bool {
    FROZE.with(|f| f.replace(false))
}

static HANDLED: AtomicU64 = AtomicU64::new(0);
/// `--signals same` handlers that found their own thread holding the lock.
static SKIPPED: AtomicU64 = AtomicU64::new(0);

std::thread_local! {
    /// Whether this worker is a reader of a reader-writer lock.
    pub(super) static IS_READER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Whether this worker was frozen (`--freeze`) since it last asked.
    static FROZE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Where this worker is in its lock's cycle, for `--signals same` and `--freeze`.
    static PHASE: std::cell::Cell<Phase> = const { std::cell::Cell::new(Phase::Outside) };
}

/// Where a worker is in its lock's cycle. A `--signals same` handler takes the lock
/// only while its thread waits for it or is outside it: inside the section or the
/// unlock the thread holds the lock, and a handler that took it then would be a
/// relock (as it may still be in the instant between the lock's acquisition and the
/// section, which the locks of this mode answer with a panic, counted).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Outside,
    Waiting,
    Holding,
}

/// Runs `section` as a worker's critical section, keeping its [`Phase`].
pub(super) fn in_phases(section: impl FnOnce(&dyn Fn())) {
    PHASE.with(|p| p.set(Phase::Waiting));
    section(&|| PHASE.with(|p| p.set(Phase::Holding)));
    PHASE.with(|p| p.set(Phase::Outside));
}

/// Keeps the relock panics of `--signals same` (a handler that interrupted its
/// thread's own section: expected, and counted) off stderr.
pub(super) fn quiet_relock_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map_or("", String::as_str);
        if !(message.contains("already holds") || message.contains("holds for writing")) {
            default(info);
        }
    }));
}
