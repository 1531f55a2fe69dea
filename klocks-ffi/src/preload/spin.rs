//! Interposed `pthread_spin_*`: a klocks queued spinlock inside glibc's 4-byte
//! `pthread_spinlock_t`, when `KLOCKS_SPIN` names one (a process-shared spinlock:
//! klocks' shared lock, below); glibc's own otherwise.
//!
//! # Which lock: the kernel's answer
//!
//! The kernel's spinlock is the qspinlock, and a guest kernel whose vCPUs the host may
//! preempt runs the paravirt qspinlock on the same 4-byte word (its waiters' state
//! lives in per-CPU queue nodes, not in the lock). Userspace threads are always such
//! vCPUs: the scheduler may preempt any of them, and a program may run more threads
//! than CPUs. So `KLOCKS_SPIN=pvqspinlock` (`default` names it) is the answer:
//! klocks' `PvQSpinLock` is the word alone (its queue nodes are per thread, its
//! sleeps futex waits on the word or on a node), it spins a calibrated budget, then
//! sleeps until the unlocker wakes it, so a waiter preempted in the queue does not
//! stall the threads behind it. `qspinlock` (seed 000's "after") never sleeps: it is
//! offered for programs whose threads never outnumber the CPUs, where it behaves as
//! the kernel's native spinlock. (`pvticket`, the other lock that survives preemption,
//! keeps two 32-bit tickets: 8 bytes, which do not fit. `ticket` fits in 4 bytes, but
//! its two 16-bit counters take every value, bit 7 of the word included, so a
//! process-shared spinlock's mark (below) could not be told from a ticket word; and a
//! FIFO lock that never sleeps hands the lock to preempted waiters when threads
//! outnumber CPUs, which is what `pvqspinlock` exists to avoid.)
//!
//! # Layout
//!
//! glibc's `pthread_spinlock_t` is a `volatile int`. Its encoding is glibc's own: on
//! x86-64 `pthread_spin_init` writes 1, the lock decrements it (0 held, negative
//! contended) and the unlock writes 1 again; elsewhere 0 is free. Both klocks locks are
//! one `AtomicU32` that is 0 when unlocked, which `init` here writes. POSIX has no
//! static initialiser for spinlocks, so every spinlock of the program passes through
//! this `init` first, and the klocks word never meets glibc's encoding (a spinlock
//! that was never initialised is, on x86-64 glibc, held for good; here it is free).
//! There is no room for a mark beside the lock: what marks a process-shared one lives
//! in the word itself (next section).
//!
//! # Process-shared spinlocks: klocks' shared lock, told apart by the word
//!
//! The queue's tail names a thread's node by its slot in this process, and the sleeps
//! are private futexes: a lock shared with another process, or reached through a
//! second mapping of its memory, must not be a queued spinlock. `init` with
//! `PTHREAD_PROCESS_SHARED` makes it klocks' `SharedFutexSpinLock` instead, a
//! spinning futex lock whose every word carries a mark (bit 7) that no word of the
//! queued spinlocks ever has (the proof is in `klocks/src/spin/shared_futex_spin.rs`).
//! So the word itself says which lock it is, in every process and at every address
//! the memory is mapped at: no table, no limit on how many there are. Every call
//! tries the private lock's fast path first (one cmpxchg from 0, which fails on every
//! shared word), and only when that fails reads the word: marked, the shared lock
//! serves the call; unmarked, the queued spinlock. A private `init` on a word that was
//! shared writes 0, a private lock again. Every process that uses a process-shared
//! spinlock must run under the interposer with `KLOCKS_SPIN` set (either kind: the
//! shared lock is the same for both): glibc's spinlock reads its own encoding and
//! does not exclude a klocks one.
//!
//! # Fork
//!
//! The word has no room for a fork stamp, so the child's repair is the queued
//! spinlocks' own (`klocks/src/spin/fork_child.rs`): every parent thread inside a
//! spinlock's slow path at the fork recorded the lock it waited for, and the child's
//! first `lock` or `trylock` of such a lock clears the pending bit and queue tail
//! those threads left (the library's constructor registers the child handler). What
//! the child sees:
//!
//! | at the fork | in the child |
//! |---|---|
//! | free, with or without waiters (pending `0x100`, queued `0x10000`, ...) | free: `lock` and `trylock` take it |
//! | held by the forking thread, with or without waiters | held by the child's continuation of that thread, which unlocks it |
//! | held by another thread | held for good, as glibc's (no thread of the child will unlock it): `lock` spins forever (`pvqspinlock`: sleeps), `trylock` is `EBUSY` |
//!
//! The child's other spinlocks work, and the queue slots it needs come from a
//! fork-safe pool. A process-shared spinlock has no queue: a fork leaves it as it
//! was, held or free.
//!
//! # Misuse
//!
//! Neither lock records its owner (as in the kernel), so `pthread_spin_unlock` by a
//! thread that does not hold the lock releases the holder's hold, as glibc's does (it
//! stores 0 whoever calls it). Stricter than glibc: unlocking a lock that is not held
//! returns `EPERM` (POSIX's "may fail"; glibc stores 0 again), and destroying a held
//! lock returns `EBUSY`. A relock by the holder waits forever, as glibc's does. The
//! same holds for process-shared spinlocks.

use std::ffi::c_int;

use klocks_core::{PvQSpinLock, QSpinLock, SharedFutexSpinLock};
use libc::{pthread_spinlock_t, EBUSY, EINVAL, EPERM};

use klocks_core::lockdep::Mode;

use super::config::{self, SpinKind};
use super::profile::with_caller;
use super::{glibc, lockdep};

const _: () = assert!(size_of::<PvQSpinLock>() == size_of::<pthread_spinlock_t>());
const _: () = assert!(size_of::<QSpinLock>() == size_of::<pthread_spinlock_t>());
const _: () = assert!(size_of::<SharedFutexSpinLock>() == size_of::<pthread_spinlock_t>());
const _: () = assert!(align_of::<PvQSpinLock>() <= align_of::<pthread_spinlock_t>());
const _: () = assert!(align_of::<QSpinLock>() <= align_of::<pthread_spinlock_t>());
const _: () = assert!(align_of::<SharedFutexSpinLock>() <= align_of::<pthread_spinlock_t>());
/// Runs `$body` with `$lock` the queued spinlock of kind `$kind` at `$at`.
///
/// Contract: `$at` is non-null and points to a live, initialised `pthread_spinlock_t`.
/// Its word may be a shared lock's: the body tells them apart (`shared` below).
macro_rules! with_spin {
    ($at:expr, $kind:expr, $lock:ident => $body:expr) => {{
        let at = $at;
        match $kind {
            SpinKind::PvQSpin => {
                // SAFETY (both arms): by the contract, 4 bytes that are a lock's word
                // (size and alignment asserted above); its atomic gives interior
                // mutability. The body calls the lock's methods other than the fast
                // path only once the word has shown no shared mark.
                let $lock = unsafe { &*at.cast::<PvQSpinLock>() };
                $body
            }
            SpinKind::QSpin => {
                let $lock = unsafe { &*at.cast::<QSpinLock>() };
                $body
            }
        }
    }};
}

/// The lock at `lock` seen as the shared lock; call its methods only once its word
/// has shown the mark ([`SharedFutexSpinLock::is_shared_word`]).
///
/// # Safety
/// As `with_spin!`'s contract.
#[inline]
unsafe fn shared<'a>(lock: *mut pthread_spinlock_t) -> &'a SharedFutexSpinLock {
    // SAFETY: 4 bytes that are a lock's word (size and alignment asserted above;
    // `SharedFutexSpinLock` is a transparent `AtomicU32`), by the caller's contract.
    unsafe { &*lock.cast::<SharedFutexSpinLock>() }
}

/// How a call on `lock` is served: glibc's lock, klocks' of a kind, or `EINVAL`.
enum Target {
    Glibc,
    Invalid,
    Klocks(SpinKind),
}

#[inline]
fn target(lock: *mut pthread_spinlock_t) -> Target {
    match config::choice().spin {
        None => Target::Glibc,
        Some(_) if lock.is_null() => Target::Invalid,
        Some(kind) => Target::Klocks(kind),
    }
}

/// `pthread_spin_init`, whoever runs the spinlocks.
///
/// # Safety
/// POSIX's contract for `pthread_spin_init`.
unsafe fn spin_init(lock: *mut pthread_spinlock_t, pshared: c_int) -> c_int {
    match target(lock) {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_spin_init(lock, pshared) },
        Target::Invalid => EINVAL,
        Target::Klocks(_) if pshared == libc::PTHREAD_PROCESS_SHARED => {
            // SAFETY: `lock` is writable and 4 bytes (caller's contract, size asserted
            // above); init does not race with other calls (POSIX's rule).
            unsafe {
                lock.cast::<SharedFutexSpinLock>()
                    .write(SharedFutexSpinLock::new())
            };
            0
        }
        Target::Klocks(_) => {
            // SAFETY: as above; 0 is the queued spinlocks' unlocked word, whatever the
            // word was before (a shared lock's too).
            unsafe { lock.write(0) };
            0
        }
    }
}

/// `pthread_spin_destroy`: `EBUSY` while the lock is held.
///
/// # Safety
/// POSIX's contract for `pthread_spin_destroy`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_destroy(lock: *mut pthread_spinlock_t) -> c_int {
    if lockdep::on() {
        lockdep::destroyed(lock as usize);
    }
    match target(lock) {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_spin_destroy(lock) },
        Target::Invalid => EINVAL,
        Target::Klocks(kind) => {
            // SAFETY: the caller's contract (an initialised spinlock).
            let shared = unsafe { shared(lock) };
            let held = if shared.is_shared() {
                shared.is_locked()
            } else {
                with_spin!(lock, kind, spin => spin.is_locked())
            };
            if held {
                EBUSY
            } else {
                0
            }
        }
    }
}

/// `pthread_spin_lock`, whoever runs the spinlocks.
///
/// # Safety
/// POSIX's contract for `pthread_spin_lock`.
unsafe fn spin_lock(lock: *mut pthread_spinlock_t) -> c_int {
    match target(lock) {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_spin_lock(lock) },
        Target::Invalid => EINVAL,
        Target::Klocks(kind) => {
            with_spin!(lock, kind, spin => match spin.try_lock_fast() {
                Ok(()) => {}
                // SAFETY: the caller's contract; the word carries the mark.
                Err(word) if SharedFutexSpinLock::is_shared_word(word) => unsafe {
                    shared(lock).lock()
                },
                Err(_) => spin.lock(),
            });
            0
        }
    }
}

/// `pthread_spin_trylock`: `EBUSY` unless the lock was free (a queued spinlock: with
/// nobody queued).
///
/// # Safety
/// POSIX's contract for `pthread_spin_trylock`.
unsafe fn spin_trylock(lock: *mut pthread_spinlock_t) -> c_int {
    match target(lock) {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_spin_trylock(lock) },
        Target::Invalid => EINVAL,
        Target::Klocks(kind) => {
            let taken = with_spin!(lock, kind, spin => match spin.try_lock_fast() {
                Ok(()) => true,
                // SAFETY: the caller's contract; the word carries the mark.
                Err(word) if SharedFutexSpinLock::is_shared_word(word) => unsafe {
                    shared(lock).try_lock()
                },
                // The lock's own try: in a fork child, it first repairs a word the
                // parent's waiters left (see `klocks::spin::fork_child`).
                Err(_) => spin.try_lock(),
            });
            if taken {
                0
            } else {
                EBUSY
            }
        }
    }
}

/// `pthread_spin_unlock`: releases the lock whoever holds it, as glibc's; `EPERM` if
/// it is not held (module doc, "Misuse").
///
/// # Safety
/// POSIX's contract for `pthread_spin_unlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_unlock(lock: *mut pthread_spinlock_t) -> c_int {
    if lockdep::on() {
        lockdep::released_only(lock as usize);
    }
    match target(lock) {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_spin_unlock(lock) },
        Target::Invalid => EINVAL,
        Target::Klocks(kind) => {
            // SAFETY: the caller's contract (an initialised spinlock).
            let shared = unsafe { shared(lock) };
            // A snapshot in both arms: two threads racing to release one hold both
            // pass it, and the second meets the lock's own check, whose panic ends the
            // process (see the `preload` doc).
            if shared.is_shared() {
                if shared.is_locked() {
                    shared.unlock();
                    0
                } else {
                    EPERM
                }
            } else {
                with_spin!(lock, kind, spin => {
                    if spin.is_locked() {
                        spin.unlock();
                        0
                    } else {
                        EPERM
                    }
                })
            }
        }
    }
}

with_caller! {
    /// `pthread_spin_init`: an unlocked queued spinlock, or an unlocked shared lock
    /// for a process-shared one (module doc); glibc's if klocks does not run them.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_spin_init`.
    fn pthread_spin_init(lock: *mut pthread_spinlock_t, pshared: c_int) -> c_int
        => spin_init_from, site: "rdx"
}

/// `pthread_spin_init` called from `site` (the lock validator's class).
///
/// # Safety
/// POSIX's contract for `pthread_spin_init`.
unsafe extern "C" fn spin_init_from(
    lock: *mut pthread_spinlock_t,
    pshared: c_int,
    site: usize,
) -> c_int {
    // SAFETY: caller's contract.
    let result = unsafe { spin_init(lock, pshared) };
    if result == 0 && lockdep::on() {
        lockdep::initialised(lock as usize, site);
    }
    result
}

with_caller! {
    /// `pthread_spin_lock`.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_spin_lock`.
    fn pthread_spin_lock(lock: *mut pthread_spinlock_t) -> c_int => spin_lock_from, site: "rsi"
}

/// `pthread_spin_lock` called from `site`.
///
/// # Safety
/// POSIX's contract for `pthread_spin_lock`.
unsafe extern "C" fn spin_lock_from(lock: *mut pthread_spinlock_t, site: usize) -> c_int {
    if lockdep::on() {
        // SAFETY: caller's contract.
        return lockdep::acquire(lock as usize, Mode::Exclusive, site, || unsafe {
            spin_lock(lock)
        });
    }
    // SAFETY: caller's contract.
    unsafe { spin_lock(lock) }
}

with_caller! {
    /// `pthread_spin_trylock`: `EBUSY` unless the lock was free (a queued spinlock:
    /// with nobody queued).
    ///
    /// # Safety
    /// POSIX's contract for `pthread_spin_trylock`.
    fn pthread_spin_trylock(lock: *mut pthread_spinlock_t) -> c_int
        => spin_trylock_from, site: "rsi"
}

/// `pthread_spin_trylock` called from `site`.
///
/// # Safety
/// POSIX's contract for `pthread_spin_trylock`.
unsafe extern "C" fn spin_trylock_from(lock: *mut pthread_spinlock_t, site: usize) -> c_int {
    if lockdep::on() {
        // SAFETY: caller's contract.
        return lockdep::try_acquire(lock as usize, Mode::Exclusive, site, || unsafe {
            spin_trylock(lock)
        });
    }
    // SAFETY: caller's contract.
    unsafe { spin_trylock(lock) }
}
