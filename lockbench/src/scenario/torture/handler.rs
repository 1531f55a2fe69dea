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

static HANDLED: AtomicU64 = AtomicU64::new(0);
/// `--signals same` handlers that found their own thread holding the lock.
static SKIPPED: AtomicU64 = AtomicU64::new(0);

std::thread_local! {
    /// Whether this worker is a reader of a reader-writer lock.
    pub(super) static IS_READER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Where this worker is in its lock's cycle, for `--signals same`.
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
