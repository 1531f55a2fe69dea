//! Interposed `pthread_spin_*`: a klocks queued spinlock inside glibc's 4-byte
//! `pthread_spinlock_t`, when `KLOCKS_SPIN` names one; glibc's own otherwise.
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
//! keeps two 32-bit tickets: 8 bytes, which do not fit.)
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
//! There is no room for a mark beside the lock.
//!
//! # Process-shared spinlocks stay glibc's
//!
//! The queue's tail names a thread's node by its slot in this process, and the sleeps
//! are private futexes: a lock shared with another process must not be klocks'. With
//! no room in the word for the mark that rwlocks and mutexes carry, `init` with
//! `PTHREAD_PROCESS_SHARED` records the lock's address in a table of
//! [`SHARED_SLOTS`] (a fork child inherits it, so the common pattern, a lock in
//! shared memory initialised before `fork`, works), and every call on an address in
//! the table goes to glibc; `destroy` or a private `init` at the address removes it.
//! The table is searched only while it is not empty. A shared spinlock reached at an
//! address not initialised as one in this process (another process's, or the same
//! memory mapped again elsewhere) cannot be known for shared: programs that share
//! spinlocks between processes should not set `KLOCKS_SPIN`.
//!
//! # Misuse
//!
//! Neither lock records its owner (as in the kernel), so `pthread_spin_unlock` by a
//! thread that does not hold the lock releases the holder's hold, as glibc's does (it
//! stores 0 whoever calls it). Stricter than glibc: unlocking a lock that is not held
//! returns `EPERM` (POSIX's "may fail"; glibc stores 0 again), and destroying a held
//! lock returns `EBUSY`. A relock by the holder spins forever, as glibc's does.

use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use klocks_core::catalog::MutexKind;
use klocks_core::{PvQSpinLock, QSpinLock};
use libc::{pthread_spinlock_t, EAGAIN, EBUSY, EINVAL, EPERM};

use super::config;
use super::glibc;

const _: () = assert!(size_of::<PvQSpinLock>() == size_of::<pthread_spinlock_t>());
const _: () = assert!(size_of::<QSpinLock>() == size_of::<pthread_spinlock_t>());
const _: () = assert!(align_of::<PvQSpinLock>() <= align_of::<pthread_spinlock_t>());
const _: () = assert!(align_of::<QSpinLock>() <= align_of::<pthread_spinlock_t>());

/// The spinlocks `KLOCKS_SPIN` names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum SpinKind {
    /// `PvQSpinLock`, the kernel's answer (module doc).
    PvQSpin = 1,
    /// `QSpinLock`, for threads ≤ CPUs.
    QSpin = 2,
}

impl SpinKind {
    /// Every kind, the one to pick first (the encoding of the choice relies on the
    /// numbers).
    pub(super) const ALL: [SpinKind; 2] = [SpinKind::PvQSpin, SpinKind::QSpin];

    /// The lock's entry in the catalog, which names it.
    pub(super) fn catalog(self) -> MutexKind {
        match self {
            SpinKind::PvQSpin => MutexKind::PvQSpinLock,
            SpinKind::QSpin => MutexKind::QSpinLock,
        }
    }

    pub(super) fn name(self) -> &'static str {
        self.catalog().name()
    }

    /// What to pick it for, in a few words.
    pub(super) fn use_it_for(self) -> &'static str {
        match self {
            SpinKind::PvQSpin => "any spinlock, any number of threads (the kernel's answer)",
            SpinKind::QSpin => "no more threads than CPUs (never sleeps)",
        }
    }

    /// The kind whose number is `raw` (0 is glibc's: `None`).
    pub(super) fn from_raw(raw: u16) -> Option<SpinKind> {
        SpinKind::ALL.into_iter().find(|&kind| kind as u16 == raw)
    }
}

/// How many process-shared spinlocks the table holds at once; one more `init` is
/// `EAGAIN` (POSIX: "the system lacks the necessary resources").
pub(super) const SHARED_SLOTS: usize = 64;

/// The addresses of the process-shared spinlocks initialised in this process; 0 is a
/// free slot.
static SHARED: [AtomicUsize; SHARED_SLOTS] = [const { AtomicUsize::new(0) }; SHARED_SLOTS];

/// How many slots of [`SHARED`] are taken: while 0, no call searches it.
static SHARED_COUNT: AtomicUsize = AtomicUsize::new(0);

/// Whether `lock` is a process-shared spinlock, glibc's.
///
/// Relaxed (both loads): `init` wrote the slot, and `init` happens-before every other
/// call on the lock (POSIX's rule), so a call on a shared lock sees its slot; a slot
/// of another lock that is being taken or freed meanwhile names another address.
#[inline]
fn is_shared(lock: *mut pthread_spinlock_t) -> bool {
    SHARED_COUNT.load(Relaxed) != 0 && shared_slot(lock).is_some()
}

#[cold]
fn shared_slot(lock: *mut pthread_spinlock_t) -> Option<&'static AtomicUsize> {
    // Relaxed: see `is_shared`.
    SHARED
        .iter()
        .find(|slot| slot.load(Relaxed) == lock as usize)
}

/// Records `lock` as process-shared; `false` if the table is full.
fn share(lock: *mut pthread_spinlock_t) -> bool {
    if shared_slot(lock).is_some() {
        return true;
    }
    // Relaxed: the slot's owner is decided by the cmpxchg on it alone; readers rely on
    // `init` happening before their calls (see `is_shared`).
    let taken = SHARED.iter().any(|slot| {
        slot.compare_exchange(0, lock as usize, Relaxed, Relaxed)
            .is_ok()
    });
    if taken {
        // Relaxed: a hint that lets calls skip the search; `init` orders it as above.
        SHARED_COUNT.fetch_add(1, Relaxed);
    }
    taken
}

/// Forgets `lock` as process-shared, if it was.
fn unshare(lock: *mut pthread_spinlock_t) {
    if let Some(slot) = shared_slot(lock) {
        // Relaxed: `destroy` and `init` do not race with other calls on the lock.
        slot.store(0, Relaxed);
        SHARED_COUNT.fetch_sub(1, Relaxed);
    }
}

/// Runs `$body` with `$lock` the klocks spinlock of kind `$kind` at `$at`.
///
/// Contract: `$at` is non-null and points to a live `pthread_spinlock_t` that is not
/// process-shared.
macro_rules! with_spin {
    ($at:expr, $kind:expr, $lock:ident => $body:expr) => {{
        let at = $at;
        match $kind {
            SpinKind::PvQSpin => {
                // SAFETY (both arms): by the contract, 4 bytes that are the lock's word
                // (0 free; size and alignment asserted above); its atomic gives interior
                // mutability.
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
        Some(_) if is_shared(lock) => Target::Glibc,
        Some(kind) => Target::Klocks(kind),
    }
}

/// `pthread_spin_init`: an unlocked klocks spinlock, or glibc's for a process-shared
/// one (module doc).
///
/// # Safety
/// POSIX's contract for `pthread_spin_init`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_init(lock: *mut pthread_spinlock_t, pshared: c_int) -> c_int {
    if config::choice().spin.is_none() {
        // SAFETY: the caller's contract is glibc's.
        return unsafe { glibc::pthread_spin_init(lock, pshared) };
    }
    if lock.is_null() {
        return EINVAL;
    }
    unshare(lock);
    if pshared == libc::PTHREAD_PROCESS_SHARED {
        if !share(lock) {
            super::say(&format!(
                "more than {SHARED_SLOTS} process-shared spinlocks at once under KLOCKS_SPIN: pthread_spin_init returns EAGAIN"
            ));
            return EAGAIN;
        }
        // SAFETY: the caller's contract is glibc's.
        return unsafe { glibc::pthread_spin_init(lock, pshared) };
    }
    // SAFETY: `lock` is writable (caller's contract); 0 is klocks' unlocked word.
    // Init does not race with other calls (POSIX's rule).
    unsafe { lock.write(0) };
    0
}

/// `pthread_spin_destroy`: `EBUSY` while a klocks spinlock is held.
///
/// # Safety
/// POSIX's contract for `pthread_spin_destroy`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_destroy(lock: *mut pthread_spinlock_t) -> c_int {
    match target(lock) {
        Target::Glibc => {
            if config::choice().spin.is_some() {
                unshare(lock);
            }
            // SAFETY: the caller's contract is glibc's.
            unsafe { glibc::pthread_spin_destroy(lock) }
        }
        Target::Invalid => EINVAL,
        Target::Klocks(kind) => {
            if with_spin!(lock, kind, spin => spin.is_locked()) {
                EBUSY
            } else {
                0
            }
        }
    }
}

/// `pthread_spin_lock`.
///
/// # Safety
/// POSIX's contract for `pthread_spin_lock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_lock(lock: *mut pthread_spinlock_t) -> c_int {
    match target(lock) {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_spin_lock(lock) },
        Target::Invalid => EINVAL,
        Target::Klocks(kind) => {
            with_spin!(lock, kind, spin => spin.lock());
            0
        }
    }
}

/// `pthread_spin_trylock`: `EBUSY` unless the lock was free with nobody queued.
///
/// # Safety
/// POSIX's contract for `pthread_spin_trylock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_trylock(lock: *mut pthread_spinlock_t) -> c_int {
    match target(lock) {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_spin_trylock(lock) },
        Target::Invalid => EINVAL,
        Target::Klocks(kind) => {
            if with_spin!(lock, kind, spin => spin.try_lock()) {
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
    match target(lock) {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_spin_unlock(lock) },
        Target::Invalid => EINVAL,
        Target::Klocks(kind) => with_spin!(lock, kind, spin => {
            // A snapshot: two threads racing to release one hold both pass it, and the
            // second meets the lock's own check, whose panic ends the process (see
            // the `preload` doc).
            if spin.is_locked() {
                spin.unlock();
                0
            } else {
                EPERM
            }
        }),
    }
}
