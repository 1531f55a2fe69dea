//! The klocks rwlock inside a `pthread_rwlock_t` ([`RwLock`]; its layout, how
//! unlock finds the mode and the count of readers are in the module doc of
//! `rwlock.rs`), how a call is sorted (glibc's, invalid or klocks': [`target`]), and
//! the operations on it (read, write, tries, timed, unlock, the fork repair), which
//! the exported functions of `entries` run.

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

use super::super::config;
use super::super::fork::{self, Holder, Patience, GLIBC_OWNED};
use super::super::time::Deadline;
use super::policy::{with_policy, Body};

/// A klocks-managed `pthread_rwlock_t`; see the module doc.
#[repr(C)]
pub(super) struct RwLock {
    pub(super) body: UnsafeCell<MaybeUninit<Body>>,
    pub(super) _flags: u32,
    pub(super) stamp: AtomicU32,
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
pub(super) use with_sem;

/// Writes an unlocked lock of `policy` into `rw`'s body.
///
/// # Safety
/// No other thread uses the body during the call.
pub(super) unsafe fn init_body(rw: &RwLock, policy: RwLockKind) {
    let at = rw.body.get();
    // SAFETY: caller's contract; every policy's lock fits the body (`policy`). The
    // old bytes are not dropped: no lock of the catalog owns a resource while no
    // thread waits on it, and waiters of a repaired lock are gone.
    with_policy!(policy, PolicyLock => unsafe { at.cast::<PolicyLock>().write(PolicyLock::new()) });
}

pub(super) enum Target<'a> {
    Glibc,
    Invalid,
    Klocks(&'a RwLock, RwLockKind),
}

/// Sorts a call on `r`.
///
/// # Safety
/// `r` is null or points to a `pthread_rwlock_t` that lives for `'a`.
#[inline]
pub(super) unsafe fn target<'a>(r: *mut pthread_rwlock_t) -> Target<'a> {
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
    pub(super) fn current(&self, policy: RwLockKind, patience: Patience) -> bool {
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
    pub(super) fn writing(&self, policy: RwLockKind) -> bool {
        with_sem!(self, policy, sem => sem.write_locked_by_current_thread())
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

pub(super) fn rdlock(rw: &RwLock, policy: RwLockKind) -> c_int {
    rw.current(policy, Patience::Forever);
    if rw.writing(policy) {
        return EDEADLK;
    }
    match with_sem!(rw, policy, sem => sem.read()) {
        Ok(()) => 0,
        Err(TooManyReaders) => EAGAIN,
    }
}

pub(super) fn wrlock(rw: &RwLock, policy: RwLockKind) -> c_int {
    rw.current(policy, Patience::Forever);
    if rw.writing(policy) {
        return EDEADLK;
    }
    with_sem!(rw, policy, sem => sem.lock_exclusive());
    0
}

pub(super) fn tryrdlock(rw: &RwLock, policy: RwLockKind) -> c_int {
    // Stale and write-held by the forking thread's continuation: busy, at once.
    if !rw.current(policy, Patience::Try) {
        return EBUSY;
    }
    read_answer(with_sem!(rw, policy, sem => sem.try_read()), EBUSY)
}

pub(super) fn trywrlock(rw: &RwLock, policy: RwLockKind) -> c_int {
    if !rw.current(policy, Patience::Try) {
        return EBUSY;
    }
    if with_sem!(rw, policy, sem => sem.try_lock_exclusive()) {
        0
    } else {
        EBUSY
    }
}

pub(super) fn clockrdlock(rw: &RwLock, policy: RwLockKind, deadline: Deadline) -> c_int {
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

pub(super) fn clockwrlock(rw: &RwLock, policy: RwLockKind, deadline: Deadline) -> c_int {
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

pub(super) fn unlock(rw: &RwLock, policy: RwLockKind) -> c_int {
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
