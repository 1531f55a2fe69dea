//! Interposed `pthread_rwlock_*`: klocks' default `RawRwLock` or its `RwSem`, real
//! shared/exclusive locks. Here: the klocks rwlock inside a `pthread_rwlock_t`, how a
//! call is sorted (glibc's, invalid or klocks'), and the operations on it (read,
//! write, tries, timed, unlock, the fork repair); the exported functions that sort,
//! profile and run them are in `entries`, the lock type of each policy in `policy`,
//! the routes' fast paths in `routed`.
//!
//! # Layout
//!
//! A klocks-managed `pthread_rwlock_t` (56 bytes on x86-64) is read as [`RwLock`]:
//!
//! | bytes | glibc's field | here |
//! |---|---|---|
//! | 0..48 | the lock's words | `RawRwLock` (16 bytes) or `RwSem<P>`, as the process chose (all zero: unlocked) |
//! | 48..52 | `__flags` | glibc's preference flag, kept but not used: the rwsem is FIFO with handoff, the default rwlock prefers writers with timed reader turns |
//! | 52..56 | padding | the fork generation last used in, or [`GLIBC_OWNED`] |
//!
//! A process-shared or writer-preferring rwlock, or one a real-time thread initialises,
//! is glibc's: `init` lets glibc write it (glibc clears all
//! 56 bytes first) and then marks the padding [`GLIBC_OWNED`].
//!
//! # Unlock finds the mode
//!
//! `pthread_rwlock_unlock` does not say which lock the caller holds. Both locks
//! name a writer exactly for the question "am I the writer?" (`exclusive_owner`); if not, and readers hold the lock, the caller is taken
//! to be one of them (readers are counted, not named, so a thread that holds nothing
//! releases another reader's share, as with glibc); else `EPERM`. The route of the
//! default rwlock (`route`, [`routed::Routed`]) decides from one load of the word where that
//! snapshot would say the same: readers inside and no writer bit, a read hold; the
//! writer bit alone with the caller's id as the writer, its write hold; anything else
//! (a free lock, a writer draining readers, a borrowed write lock) comes here.
//!
//! # Too many readers
//!
//! A read lock past the most readers the lock counts is `EAGAIN`, as glibc's. The
//! default rwlock counts 2²⁴ − 1 readers (`RawRwLock`'s `MAX_READERS`), and its read
//! entries here are the `_within_max` ones, which refuse that reader where
//! `lock_shared` would panic (aborting the process); the rwsem counts 2⁵⁶, more read
//! locks than a process can take.

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::mem::{size_of, MaybeUninit};
use std::sync::atomic::{
    AtomicU32,
    Ordering::{Acquire, Relaxed},
};

use klocks_core::catalog::RwLockKind;
use klocks_core::owner::current_tid;
use klocks_core::{RawRwLock, ReaderSpin, RwSem, TooManyReaders};
use libc::{pthread_rwlock_t, EAGAIN, EBUSY, EDEADLK, EINVAL, EPERM, ETIMEDOUT};

use super::config;
use super::fork::{self, Holder, Patience, GLIBC_OWNED};
use super::time::Deadline;

mod policy;
mod routed;
pub(super) use policy::with_policy;
use policy::Body;
pub(super) use routed::{rdlock_as, tryrdlock_as, trywrlock_as, unlock_as, wrlock_as};

/// A klocks-managed `pthread_rwlock_t`; see the module doc.
#[repr(C)]
struct RwLock {
    body: UnsafeCell<MaybeUninit<Body>>,
    _flags: u32,
    stamp: AtomicU32,
}
const _: () = assert!(size_of::<RwLock>() == size_of::<pthread_rwlock_t>());
const _: () = assert!(std::mem::align_of::<RwLock>() <= std::mem::align_of::<pthread_rwlock_t>());

/// Runs `$body` with `$sem` the process's lock in `$rw`: `&RawRwLock` or `&RwSem<P>`
/// for the policy `$policy` (they share the method names used here).
///
/// Contract: `$rw` is a klocks-managed `RwLock` of the process (its body holds the
/// lock of the process's choice, or zero bytes, which is its `new()`).
macro_rules! with_sem {
    ($rw:expr, $policy:expr, $sem:ident => $body:expr) => {{
        let at = $rw.body.get();
        with_policy!($policy, PolicyLock => {
            // SAFETY: by the contract, a `PolicyLock` lives at `at` (every policy's
            // lock fits the body: `policy`); its atomics give interior mutability.
            let $sem = unsafe { &*at.cast::<PolicyLock>() };
            $body
        })
    }};
}

/// Writes an unlocked lock of `policy` into `rw`'s body.
///
/// # Safety
/// No other thread uses the body during the call.
unsafe fn init_body(rw: &RwLock, policy: RwLockKind) {
    let at = rw.body.get();
    // SAFETY: caller's contract; every policy's lock fits the body (`policy`). The
    // old bytes are not dropped: no lock of the catalog owns a resource while no
    // thread waits on it, and waiters of a repaired lock are gone.
    with_policy!(policy, PolicyLock => unsafe { at.cast::<PolicyLock>().write(PolicyLock::new()) });
}

enum Target<'a> {
    Glibc,
    Invalid,
    Klocks(&'a RwLock, RwLockKind),
}

/// Sorts a call on `r`.
///
/// # Safety
/// `r` is null or points to a `pthread_rwlock_t` that lives for `'a`.
#[inline]
unsafe fn target<'a>(r: *mut pthread_rwlock_t) -> Target<'a> {
    if r.is_null() {
        return Target::Invalid;
    }
    let Some(policy) = config::choice().rwlock else {
        return Target::Glibc;
    };
    // SAFETY: non-null and live (caller's contract), `RwLock`'s size and alignment.
    let rw = unsafe { &*r.cast::<RwLock>() };
    // Relaxed: written by `init`, which happens-before other calls (POSIX's rule).
    if rw.stamp.load(Relaxed) == GLIBC_OWNED {
        Target::Glibc
    } else {
        Target::Klocks(rw, policy)
    }
}

impl RwLock {
    /// Repairs the rwlock if it was last used before a fork (see `fork`); whether it
    /// is current (`false` once `patience` ran out).
    #[inline]
    fn current(&self, policy: RwLockKind, patience: Patience) -> bool {
        // Acquire: pairs with the Release in `fork::repair`, which publishes the body.
        self.stamp.load(Acquire) == fork::generation() || self.repair(policy, patience)
    }

    /// As the mutex's repair. Only a writer is named, so only the forking thread's
    /// write lock is carried over; a lock read-held at the fork stays held (whether
    /// the forking thread was among the readers is unknown). Waiters queued at the
    /// fork are always forgotten: their nodes are on the stacks of threads the child
    /// does not have, which glibc hands to new threads.
    #[cold]
    fn repair(&self, policy: RwLockKind, patience: Patience) -> bool {
        fork::repair(
            &self.stamp,
            patience,
            |stale| {
                let (locked, writer) =
                    with_sem!(self, policy, sem => (sem.is_locked(), sem.exclusive_owner()));
                match writer {
                    Some(tid) => fork::holder_by_tid(stale, tid),
                    None if locked => Holder::Gone,
                    None => Holder::Nobody,
                }
            },
            |tid| tid == u64::from(current_tid()),
            |holder| match holder {
                // SAFETY: only we touch the body during the repair.
                Holder::Nobody => unsafe { init_body(self, policy) },
                Holder::Continuation(_) => {
                    // SAFETY: as above.
                    unsafe { init_body(self, policy) };
                    with_sem!(self, policy, sem => sem.lock_exclusive());
                }
                // SAFETY: as above.
                Holder::Gone => with_sem!(self, policy, sem => unsafe { sem.forget_waiters() }),
            },
        )
    }

    /// Whether the caller holds the write lock.
    fn writing(&self, policy: RwLockKind) -> bool {
        with_sem!(self, policy, sem => sem.exclusive_owner() == Some(current_tid()))
    }
}

/// The read entries, refusing a reader past the lock's count of readers (module doc,
/// "Too many readers").
trait Read {
    /// Takes a read lock, waiting; `Err` if too many readers hold it.
    fn read(&self) -> Result<(), TooManyReaders>;
    /// Takes a read lock if that needs no waiting; `Err` if too many readers hold it.
    fn try_read(&self) -> Result<bool, TooManyReaders>;
}

impl Read for RawRwLock {
    fn read(&self) -> Result<(), TooManyReaders> {
        self.lock_shared_within_max()
    }

    fn try_read(&self) -> Result<bool, TooManyReaders> {
        self.try_lock_shared_within_max()
    }
}

/// Never `Err`: the rwsem's count of readers (2⁵⁶) outlasts any process.
impl<P: ReaderSpin> Read for RwSem<P> {
    fn read(&self) -> Result<(), TooManyReaders> {
        self.lock_shared();
        Ok(())
    }

    fn try_read(&self) -> Result<bool, TooManyReaders> {
        Ok(self.try_lock_shared())
    }
}

/// A try's answer: 0 if it entered, `busy` if not, `EAGAIN` if too many readers hold
/// the lock.
fn read_answer(entered: Result<bool, TooManyReaders>, busy: c_int) -> c_int {
    match entered {
        Ok(true) => 0,
        Ok(false) => busy,
        Err(TooManyReaders) => EAGAIN,
    }
}

fn rdlock(rw: &RwLock, policy: RwLockKind) -> c_int {
    rw.current(policy, Patience::Forever);
    if rw.writing(policy) {
        return EDEADLK;
    }
    match with_sem!(rw, policy, sem => sem.read()) {
        Ok(()) => 0,
        Err(TooManyReaders) => EAGAIN,
    }
}

fn wrlock(rw: &RwLock, policy: RwLockKind) -> c_int {
    rw.current(policy, Patience::Forever);
    if rw.writing(policy) {
        return EDEADLK;
    }
    with_sem!(rw, policy, sem => sem.lock_exclusive());
    0
}

fn tryrdlock(rw: &RwLock, policy: RwLockKind) -> c_int {
    // Stale and write-held by the forking thread's continuation: busy, at once.
    if !rw.current(policy, Patience::Try) {
        return EBUSY;
    }
    read_answer(with_sem!(rw, policy, sem => sem.try_read()), EBUSY)
}

fn trywrlock(rw: &RwLock, policy: RwLockKind) -> c_int {
    if !rw.current(policy, Patience::Try) {
        return EBUSY;
    }
    if with_sem!(rw, policy, sem => sem.try_lock_exclusive()) {
        0
    } else {
        EBUSY
    }
}

fn clockrdlock(rw: &RwLock, policy: RwLockKind, deadline: Deadline) -> c_int {
    if !rw.current(policy, Patience::Until(deadline)) {
        return if deadline.is_valid() {
            ETIMEDOUT
        } else {
            EINVAL
        };
    }
    if rw.writing(policy) {
        return EDEADLK;
    }
    deadline.poll_or_refuse(|| {
        with_sem!(rw, policy, sem => sem.try_read()).map_err(|TooManyReaders| EAGAIN)
    })
}

fn clockwrlock(rw: &RwLock, policy: RwLockKind, deadline: Deadline) -> c_int {
    if !rw.current(policy, Patience::Until(deadline)) {
        return if deadline.is_valid() {
            ETIMEDOUT
        } else {
            EINVAL
        };
    }
    if rw.writing(policy) {
        return EDEADLK;
    }
    deadline.poll(|| with_sem!(rw, policy, sem => sem.try_lock_exclusive()))
}

fn unlock(rw: &RwLock, policy: RwLockKind) -> c_int {
    // Stale and write-held by the forking thread's continuation, not the caller.
    if !rw.current(policy, Patience::Try) {
        return EPERM;
    }
    let writing = rw.writing(policy);
    let reading =
        !writing && with_sem!(rw, policy, sem => sem.is_locked() && !sem.is_locked_exclusive());
    if !writing && !reading {
        return EPERM;
    }
    // A misuse the snapshot missed (two threads releasing the last reader's share)
    // meets the rwsem's own check, whose panic ends the process.
    with_sem!(rw, policy, sem => if writing {
        sem.unlock_exclusive()
    } else {
        sem.unlock_shared()
    });
    0
}

mod entries;

pub(super) use entries::{
    rdlock_with_site, tryrdlock_with_site, trywrlock_with_site, unlock_from, wrlock_with_site,
};
