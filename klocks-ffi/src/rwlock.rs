//! `klocks_rwlock_t`: klocks' default reader-writer lock, `klocks::RawRwLock`, with
//! pthread_rwlock's calling conventions.
//!
//! One kind today (the tag's low byte is [`RwKind::Default`]); a zero-filled object
//! (`KLOCKS_RWLOCK_INITIALIZER`) is that kind, unlocked: `RawRwLock::new()` is zero
//! bytes.
//!
//! # Misuse is answered before `RawRwLock` is called
//!
//! `RawRwLock` panics when its writer locks it again (for reading or writing), when
//! a thread that is not the writer write-unlocks it, and when a read unlock finds no
//! reader. Each entry point checks first: it names its writer exactly for the
//! question "am I the writer?" (`exclusive_owner`: only the writer stores its own
//! id, and it clears it before it releases), so a writer relocking gets `EDEADLK`,
//! and `unlock` releases the write lock if the caller is the writer, else a read lock
//! if readers hold it, else answers `EPERM`. Readers are counted, not named: a
//! thread that holds no read lock and unlocks a lock other threads read-hold
//! releases one of their shares, undetected (as with glibc); two threads racing to
//! release the last share both pass the check, and the second meets `RawRwLock`'s
//! panic, which [`guarded`](crate::guarded) turns into `EINVAL`. The header's holder
//! field is unused.
//!
//! # Fork
//!
//! As `klocks_mutex_t` (`crate::mutex`, "Fork"): the body's third word,
//! [`STAMP_OFFSET`], keeps the fork generation the rwlock was last used in, and the
//! first call from a newer one repairs it while the child's other threads wait. The
//! writer is named (`exclusive_owner`), readers are not: a lock free at the fork
//! (whatever waited on it) is a new free lock; one the forking thread write-held is
//! write-held by the child's continuation of it; one another thread write-held, or
//! any read-held one, stays held, its waiters forgotten (`RawRwLock::forget_waiters`).
//! A try (`tryrdlock`, `trywrlock`, `unlock`) that meets another thread's repair waits
//! a few spins, then answers `EBUSY` (`unlock`: `EPERM`); a timed call waits until
//! its deadline (`ETIMEDOUT`).
//!
//! A read lock past `RawRwLock`'s `MAX_READERS` (2²³ − 1 readers at once) is
//! `EAGAIN`, as pthread's: the read entries are `RawRwLock`'s `_within_max` ones,
//! which refuse that reader where `lock_shared` would panic.

use std::ffi::c_int;
use std::mem::{align_of, size_of};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering::Acquire};

use klocks_core::owner::current_tid;
use klocks_core::{RawRwLock, TooManyReaders};
use libc::{timespec, CLOCK_REALTIME, EAGAIN, EBUSY, EDEADLK, EINVAL, EPERM, ETIMEDOUT};

use crate::object::{Object, Tag};
use crate::preload::fork::{self, Holder, Patience};
use crate::time::Deadline;

/// Where an rwlock keeps its fork generation: the body's third 8-byte word, after
/// the 16 bytes of `RawRwLock`; zero in a zero-filled rwlock (module doc, "Fork").
const STAMP_OFFSET: usize = 16;
const _: () = assert!(size_of::<RawRwLock>() <= STAMP_OFFSET);
const _: () = assert!(STAMP_OFFSET + 4 <= BODY_WORDS * 8);

/// `sizeof(klocks_rwlock_t)`: 8 bytes of header and 24 for the lock (`RawRwLock` is
/// 16 today), with room to grow without changing the ABI.
pub const RWLOCK_SIZE: usize = 32;
const BODY_WORDS: usize = (RWLOCK_SIZE - 8) / 8;

/// The C `klocks_rwlock_t`: opaque, caller-owned, 32 bytes aligned to 8.
#[allow(non_camel_case_types)]
pub type klocks_rwlock_t = Object<BODY_WORDS>;

const _: () = assert!(klocks_rwlock_t::fits::<RawRwLock>());
const _: () = assert!(size_of::<klocks_rwlock_t>() == RWLOCK_SIZE);
const _: () = assert!(align_of::<klocks_rwlock_t>() == 8);

/// The kinds of `klocks_rwlock_t` (the tag's low byte).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum RwKind {
    /// `klocks::RawRwLock`, what `klocks_rwlock_init` and the initialiser make.
    Default = 1,
}

impl Tag for RwKind {
    /// `KLOCKS_RWLOCK_INITIALIZER`: zero bytes are an unlocked default rwlock.
    const ZEROED: Option<RwKind> = Some(RwKind::Default);

    fn from_raw(raw: u32) -> Option<RwKind> {
        (raw == RwKind::Default as u32).then_some(RwKind::Default)
    }

    fn raw(self) -> u32 {
        self as u32
    }
}

/// The lock in `*r`'s body.
///
/// # Safety
/// `r` points to a live `klocks_rwlock_t` whose tag `Object::call` decoded (to the
/// one kind, `RawRwLock`), not moved or freed while the reference lives.
unsafe fn lock_of<'a>(r: *const klocks_rwlock_t) -> &'a RawRwLock {
    // SAFETY: caller's contract: `init` wrote a `RawRwLock` there, or the object is
    // zero bytes, which is `RawRwLock::new()` (test `an_unlocked_rwlock_is_zero_bytes`);
    // the body is aligned to 8 and large enough (asserts above). Its atomics give
    // interior mutability.
    unsafe { &*klocks_rwlock_t::body(r).cast::<RawRwLock>() }
}

/// Runs `op` on the lock of an initialised `*r`; `EINVAL` otherwise, and a panic
/// becomes `EINVAL`.
///
/// # Safety
/// `r` is null or points to a `klocks_rwlock_t`-sized object that is not moved or
/// freed during the call.
/// The lock is first made current (module doc, "Fork"), waiting as `patience`
/// allows; `busy` when it ran out.
unsafe fn with_lock(
    r: *mut klocks_rwlock_t,
    patience: Patience,
    busy: c_int,
    op: impl FnOnce(&RawRwLock) -> c_int,
) -> c_int {
    // SAFETY: caller's contract; `call` passes only a decoded tag, so the body holds
    // the lock.
    unsafe {
        klocks_rwlock_t::call(r, |_: RwKind| {
            if !current(r, patience) {
                return busy;
            }
            op(lock_of(r))
        })
    }
}

/// The rwlock's fork stamp (module doc, "Fork").
///
/// # Safety
/// `r` points to an initialised (or zero-filled) `klocks_rwlock_t`.
unsafe fn stamp<'a>(r: *const klocks_rwlock_t) -> &'a AtomicU32 {
    // SAFETY: the body is 8-aligned and 24 bytes; the lock ends before
    // `STAMP_OFFSET` (asserted above), and `init` wrote an atomic there (or the
    // caller zero-filled it).
    unsafe {
        &*klocks_rwlock_t::body(r)
            .add(STAMP_OFFSET)
            .cast::<AtomicU32>()
    }
}

/// Repairs `*r` if it was last used before a fork; whether it is current.
///
/// # Safety
/// As for [`stamp`].
#[inline]
unsafe fn current(r: *mut klocks_rwlock_t, patience: Patience) -> bool {
    // SAFETY: the caller's contract.
    let stamp = unsafe { stamp(r) };
    // Acquire: pairs with the Release in `fork::repair`, which publishes the body.
    stamp.load(Acquire) == fork::generation() || unsafe { repair(r, patience) }
}

/// [`current`]'s repair, as the interposer's rwlocks do (`preload/rwlock/lock.rs`).
///
/// # Safety
/// As for [`stamp`].
#[cold]
unsafe fn repair(r: *mut klocks_rwlock_t, patience: Patience) -> bool {
    // SAFETY: the caller's contract.
    let (stamp, lock) = unsafe { (stamp(r), lock_of(r)) };
    fork::repair(
        stamp,
        patience,
        |stale| match lock.exclusive_owner() {
            Some(tid) => fork::holder_by_tid(stale, tid),
            None if lock.is_locked() => Holder::Gone,
            None => Holder::Nobody,
        },
        // The writer's id is its tid: only the continuation re-takes its lock.
        |tid| tid == u64::from(current_tid()),
        |held| match held {
            // SAFETY (each arm): the election gives this thread the body.
            Holder::Nobody => unsafe {
                ptr::write(klocks_rwlock_t::body(r).cast(), RawRwLock::new())
            },
            Holder::Continuation(_) => {
                unsafe { ptr::write(klocks_rwlock_t::body(r).cast(), RawRwLock::new()) };
                lock.lock_exclusive();
            }
            // Read-held, or write-held by a thread the child does not have.
            Holder::Gone => unsafe { lock.forget_waiters() },
        },
    )
}

/// Whether the calling thread holds `lock`'s write lock (exact: module doc).
fn writing(lock: &RawRwLock) -> bool {
    lock.write_locked_by_current_thread()
}

/// Initialises `*r` as an unlocked rwlock. See `include/klocks.h`.
///
/// # Safety
/// `r` is null or points to writable storage of `klocks_rwlock_t`'s size that no
/// other thread uses during the call.
#[no_mangle]
pub unsafe extern "C" fn klocks_rwlock_init(r: *mut klocks_rwlock_t) -> c_int {
    let write = |body: *mut u8, _: RwKind| {
        // SAFETY: `init` passes the body, large and aligned enough (asserts above),
        // ours to write.
        unsafe {
            ptr::write(body.cast(), RawRwLock::new());
            // Of this generation: nothing to repair.
            ptr::write(
                body.add(STAMP_OFFSET).cast(),
                AtomicU32::new(fork::generation()),
            );
        }
    };
    // SAFETY: caller's contract; `write` writes the lock of the only kind.
    unsafe { klocks_rwlock_t::init(r, RwKind::Default as c_int, write) }
}

/// Destroys an unlocked rwlock; later calls on it return `EINVAL` until it is
/// initialised again. See `include/klocks.h`.
///
/// # Safety
/// `r` is null or points to a `klocks_rwlock_t`-sized object.
#[no_mangle]
pub unsafe extern "C" fn klocks_rwlock_destroy(r: *mut klocks_rwlock_t) -> c_int {
    let locked = |_: RwKind| {
        // SAFETY: `destroy` checked the tag of `*r`.
        unsafe { lock_of(r) }.is_locked()
    };
    // SAFETY: caller's contract.
    unsafe { klocks_rwlock_t::destroy(r, locked) }
}

/// A read entry's answer: 0 if it entered, `busy` if not, `EAGAIN` if too many
/// readers hold the lock.
fn read_answer(entered: Result<bool, TooManyReaders>, busy: c_int) -> c_int {
    match entered {
        Ok(true) => 0,
        Ok(false) => busy,
        Err(TooManyReaders) => EAGAIN,
    }
}

/// Takes a read lock; `EDEADLK` if the caller holds the write lock, `EAGAIN` if too
/// many readers hold it. See `include/klocks.h`.
///
/// # Safety
/// `r` is null or points to a `klocks_rwlock_t`-sized object that is not moved or
/// freed during the call.
#[no_mangle]
pub unsafe extern "C" fn klocks_rwlock_rdlock(r: *mut klocks_rwlock_t) -> c_int {
    let op = |lock: &RawRwLock| {
        if writing(lock) {
            return EDEADLK;
        }
        match lock.lock_shared_within_max() {
            Ok(()) => 0,
            Err(TooManyReaders) => EAGAIN,
        }
    };
    // SAFETY: caller's contract.
    unsafe { with_lock(r, Patience::Forever, EBUSY, op) }
}

/// Takes a read lock if no writer holds the rwlock; `EBUSY` otherwise, `EAGAIN` if
/// too many readers hold it. See `include/klocks.h`.
///
/// # Safety
/// As for [`klocks_rwlock_rdlock`].
#[no_mangle]
pub unsafe extern "C" fn klocks_rwlock_tryrdlock(r: *mut klocks_rwlock_t) -> c_int {
    // The writer's own try finds the writer bit and fails: no panic to prevent.
    let op = |lock: &RawRwLock| read_answer(lock.try_lock_shared_within_max(), EBUSY);
    // SAFETY: caller's contract.
    unsafe { with_lock(r, Patience::Try, EBUSY, op) }
}

/// Takes the write lock; `EDEADLK` if the caller holds it already. See
/// `include/klocks.h`.
///
/// # Safety
/// As for [`klocks_rwlock_rdlock`].
#[no_mangle]
pub unsafe extern "C" fn klocks_rwlock_wrlock(r: *mut klocks_rwlock_t) -> c_int {
    let op = |lock: &RawRwLock| {
        if writing(lock) {
            return EDEADLK;
        }
        lock.lock_exclusive();
        0
    };
    // SAFETY: caller's contract.
    unsafe { with_lock(r, Patience::Forever, EBUSY, op) }
}

/// Takes the write lock if nobody holds the rwlock; `EBUSY` otherwise. See
/// `include/klocks.h`.
///
/// # Safety
/// As for [`klocks_rwlock_rdlock`].
#[no_mangle]
pub unsafe extern "C" fn klocks_rwlock_trywrlock(r: *mut klocks_rwlock_t) -> c_int {
    let op = |lock: &RawRwLock| if lock.try_lock_exclusive() { 0 } else { EBUSY };
    // SAFETY: caller's contract.
    unsafe { with_lock(r, Patience::Try, EBUSY, op) }
}

/// A timed acquisition with pthread's answers: `EDEADLK` for the writer, then the
/// try, then `EINVAL` for a null deadline or (only if the call would wait) malformed
/// nanoseconds, then a sleeping wait until the deadline (`ETIMEDOUT`); `EAGAIN` from
/// a read entry that finds too many readers. Writes never do: their entries are
/// wrapped as `Ok`.
///
/// # Safety
/// As for [`klocks_rwlock_rdlock`]; `abstime` is null or points to a readable
/// `timespec`.
unsafe fn timed(
    r: *mut klocks_rwlock_t,
    abstime: *const timespec,
    try_now: impl Fn(&RawRwLock) -> Result<bool, TooManyReaders>,
    try_until: impl Fn(&RawRwLock, std::time::Instant) -> Result<bool, TooManyReaders>,
) -> c_int {
    // SAFETY: `abstime` is null or readable (caller's contract).
    let deadline = match unsafe { Deadline::new(CLOCK_REALTIME, abstime) } {
        Ok(deadline) => deadline,
        // An invalid object is EINVAL too.
        Err(error) => return error,
    };
    let op = |lock: &RawRwLock| {
        if writing(lock) {
            return EDEADLK;
        }
        match try_now(lock) {
            Ok(false) if !deadline.is_valid() => EINVAL,
            Ok(false) => read_answer(try_until(lock, deadline.instant()), ETIMEDOUT),
            now => read_answer(now, ETIMEDOUT),
        }
    };
    // SAFETY: caller's contract.
    unsafe { with_lock(r, Patience::Until(deadline), ETIMEDOUT, op) }
}

/// Takes a read lock unless the `CLOCK_REALTIME` time `*abstime` passes first
/// (`ETIMEDOUT`). See `include/klocks.h`.
///
/// # Safety
/// As for [`timed`].
#[no_mangle]
pub unsafe extern "C" fn klocks_rwlock_timedrdlock(
    r: *mut klocks_rwlock_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        timed(
            r,
            abstime,
            RawRwLock::try_lock_shared_within_max,
            RawRwLock::try_lock_shared_within_max_until,
        )
    }
}

/// Takes the write lock unless the `CLOCK_REALTIME` time `*abstime` passes first
/// (`ETIMEDOUT`). See `include/klocks.h`.
///
/// # Safety
/// As for [`timed`].
#[no_mangle]
pub unsafe extern "C" fn klocks_rwlock_timedwrlock(
    r: *mut klocks_rwlock_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        timed(
            r,
            abstime,
            |lock| Ok(lock.try_lock_exclusive()),
            |lock, deadline| Ok(lock.try_lock_exclusive_until(deadline)),
        )
    }
}

/// Releases the caller's write lock, or else a read lock; `EPERM` if the rwlock is
/// not locked or another thread holds its write lock. See `include/klocks.h`.
///
/// # Safety
/// As for [`klocks_rwlock_rdlock`].
#[no_mangle]
pub unsafe extern "C" fn klocks_rwlock_unlock(r: *mut klocks_rwlock_t) -> c_int {
    let op = |lock: &RawRwLock| {
        if writing(lock) {
            lock.unlock_exclusive();
            return 0;
        }
        // Not the writer. Snapshots: a caller that holds a read lock sees readers
        // and no writer holding the lock (its share keeps a writer draining at
        // most); for any other caller the answer is misuse either way.
        if !lock.is_locked() || lock.is_locked_exclusive() {
            return EPERM;
        }
        lock.unlock_shared();
        0
    };
    // SAFETY: caller's contract. A lock another thread repairs, or that waits for
    // the forking thread's continuation, is not the caller's to unlock.
    unsafe { with_lock(r, Patience::Try, EPERM, op) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `KLOCKS_RWLOCK_INITIALIZER` and the interposer's `PTHREAD_RWLOCK_INITIALIZER`
    /// rely on it.
    #[test]
    fn an_unlocked_rwlock_is_zero_bytes() {
        let lock = RawRwLock::new();
        // SAFETY: a live `RawRwLock`, a struct of integer atomics without padding.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                (&lock as *const RawRwLock).cast::<u8>(),
                size_of::<RawRwLock>(),
            )
        };
        assert!(bytes.iter().all(|&b| b == 0));
    }

    /// Misuse through the C entry points is answered, never a panic: each errno.
    #[test]
    fn every_errno_answer() {
        // SAFETY: an all-zero object is an initialised rwlock, used by this thread
        // only; null is allowed.
        unsafe {
            let mut object: klocks_rwlock_t = std::mem::zeroed();
            let r = &mut object as *mut klocks_rwlock_t;
            assert_eq!(klocks_rwlock_unlock(r), EPERM);
            assert_eq!(klocks_rwlock_wrlock(r), 0);
            assert_eq!(klocks_rwlock_wrlock(r), EDEADLK);
            assert_eq!(klocks_rwlock_rdlock(r), EDEADLK);
            assert_eq!(klocks_rwlock_tryrdlock(r), EBUSY);
            assert_eq!(klocks_rwlock_trywrlock(r), EBUSY);
            assert_eq!(klocks_rwlock_destroy(r), EBUSY);
            assert_eq!(klocks_rwlock_unlock(r), 0);
            assert_eq!(klocks_rwlock_timedwrlock(r, ptr::null()), EINVAL);
            assert_eq!(klocks_rwlock_destroy(r), 0);
            assert_eq!(klocks_rwlock_rdlock(r), EINVAL);
            assert_eq!(klocks_rwlock_init(r), 0);
            assert_eq!(klocks_rwlock_rdlock(r), 0);
            assert_eq!(klocks_rwlock_unlock(r), 0);
            assert_eq!(klocks_rwlock_unlock(r), EPERM);
            assert_eq!(klocks_rwlock_init(ptr::null_mut()), EINVAL);
        }
    }
}
