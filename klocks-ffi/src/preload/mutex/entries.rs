//! The interposed `pthread_mutex_*` functions: each sorts its call ([`target`]:
//! glibc's, invalid, or a klocks mutex of the process's kind), times it for the
//! contention profile when that is on, and runs the operation of the parent module
//! on the mutex. `init` decides from the attributes whether klocks or glibc owns the
//! object; the routes (`route`) send the hottest calls to [`lock_as`],
//! [`trylock_as`] and [`unlock_as`], whose fast paths take a plain mutex's lock
//! directly and fall back to these general entries.

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering::Relaxed};

use klocks_core::catalog::CatalogMutex;
use libc::{
    clockid_t, pthread_mutex_t, pthread_mutexattr_t, timespec, CLOCK_REALTIME, EBUSY, EINVAL,
};

use super::super::fork::{self, this_thread, this_thread_inline, Patience};
use super::super::lockdep;
use super::super::profile::{self, with_caller, Role};
use super::super::time::Deadline;
use super::super::{config, glibc};
use super::{clocklock, lock, lock_body, plain, target, trylock, unlock, Mutex, Target, DESTROYED};
use crate::mutex::{init_at, with_kind, with_lock_at};

extern "C" {
    /// glibc's (the `libc` crate does not declare it).
    fn pthread_mutexattr_gettype(attr: *const pthread_mutexattr_t, ty: *mut c_int) -> c_int;
}

/// The attributes' type, or `None` for a mutex glibc must own; `Err` for a bad
/// attribute object.
///
/// # Safety
/// `attr` is null or points to a `pthread_mutexattr_t`.
unsafe fn klocks_type(attr: *const pthread_mutexattr_t) -> Result<Option<c_int>, c_int> {
    if attr.is_null() {
        return Ok(Some(libc::PTHREAD_MUTEX_NORMAL));
    }
    let (mut ty, mut protocol, mut robust, mut pshared) = (0, 0, 0, 0);
    // SAFETY: `attr` points to an attribute object (caller's contract); glibc's own
    // getters read it (they are not interposed).
    let failed = unsafe {
        pthread_mutexattr_gettype(attr, &mut ty) != 0
            || libc::pthread_mutexattr_getprotocol(attr, &mut protocol) != 0
            || libc::pthread_mutexattr_getrobust(attr, &mut robust) != 0
            || libc::pthread_mutexattr_getpshared(attr, &mut pshared) != 0
    };
    if failed {
        return Err(EINVAL);
    }
    let glibc_only = protocol != libc::PTHREAD_PRIO_NONE
        || robust != libc::PTHREAD_MUTEX_STALLED
        || pshared != libc::PTHREAD_PROCESS_PRIVATE;
    Ok((!glibc_only).then_some(ty))
}

with_caller! {
    /// `pthread_mutex_init`: a klocks mutex of the process's kind, or glibc's for the
    /// attributes klocks passes through.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_mutex_init`.
    fn pthread_mutex_init(m: *mut pthread_mutex_t, attr: *const pthread_mutexattr_t) -> c_int
        => init_from, site: "rdx"
}

/// `pthread_mutex_init` called from `site`.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_init`.
unsafe extern "C" fn init_from(
    m: *mut pthread_mutex_t,
    attr: *const pthread_mutexattr_t,
    site: usize,
) -> c_int {
    // SAFETY: caller's contract.
    let result = unsafe { init(m, attr) };
    if result == 0 && profile::on() {
        profile::initialised(m as usize, site, Role::Mutex);
    }
    if result == 0 && lockdep::on() {
        lockdep::initialised(m as usize, site);
    }
    result
}

/// `pthread_mutex_init`.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_init`.
unsafe fn init(m: *mut pthread_mutex_t, attr: *const pthread_mutexattr_t) -> c_int {
    if m.is_null() {
        return EINVAL;
    }
    let Some(kind) = config::choice().mutex else {
        // SAFETY: the caller's contract is glibc's.
        return unsafe { glibc::pthread_mutex_init(m, attr) };
    };
    // SAFETY: caller's contract.
    match unsafe { klocks_type(attr) } {
        Err(error) => error,
        // SAFETY: the caller's contract is glibc's.
        Ok(None) => unsafe { glibc::pthread_mutex_init(m, attr) },
        Ok(Some(ty)) => {
            let mutex = Mutex {
                body: UnsafeCell::new(0),
                owner: AtomicU64::new(0),
                kind: AtomicI32::new(ty),
                stamp: AtomicU32::new(fork::generation()),
                depth: AtomicU32::new(0),
                _rest: [0; 3],
            };
            // SAFETY: `m` is writable storage of `Mutex`'s size and alignment that no
            // other thread uses during init (POSIX's rule); the body is then 8
            // aligned bytes for `init_at`.
            unsafe {
                m.cast::<Mutex>().write(mutex);
                init_at((*m.cast::<Mutex>()).body(), kind);
            }
            0
        }
    }
}

/// `pthread_mutex_destroy`: `EBUSY` while locked; afterwards calls return `EINVAL`
/// until the next `init`.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_destroy`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_destroy(m: *mut pthread_mutex_t) -> c_int {
    if lockdep::on() {
        lockdep::destroyed(m as usize);
    }
    // SAFETY: caller's contract.
    let result = unsafe { destroy(m) };
    if result == 0 && profile::on() {
        profile::destroyed(m as usize);
    }
    result
}

/// `pthread_mutex_destroy`.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_destroy`.
unsafe fn destroy(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: caller's contract.
    match unsafe { target(m) } {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_mutex_destroy(m) },
        Target::Invalid => EINVAL,
        Target::Klocks(mutex, kind, _) => {
            if !mutex.current(kind, Patience::Try) {
                return EBUSY;
            }
            if with_lock_at!(mutex.body(), kind, lock => lock.is_locked()) {
                return EBUSY;
            }
            // Relaxed: destroy must not race with other calls (POSIX).
            mutex.kind.store(DESTROYED, Relaxed);
            0
        }
    }
}

/// `pthread_mutex_lock` on its general route (see `route`): profiled, or
/// [`lock_entry`].
///
/// # Safety
/// POSIX's contract for `pthread_mutex_lock`.
pub(in crate::preload) unsafe extern "C" fn lock_from(
    m: *mut pthread_mutex_t,
    site: usize,
) -> c_int {
    if lockdep::on() {
        // SAFETY: caller's contract, for both.
        let mode = unsafe { lockdep::mutex_mode(m) };
        return lockdep::acquire(m as usize, mode, site, || unsafe { lock_profiled(m, site) });
    }
    // SAFETY: caller's contract.
    unsafe { lock_profiled(m, site) }
}

/// [`lock_from`] past the validator: straight to glibc when the process runs
/// glibc's mutexes unprofiled (every mutex is glibc's then), else the general entry.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_lock`.
#[inline(always)]
unsafe fn lock_profiled(m: *mut pthread_mutex_t, site: usize) -> c_int {
    if !profile::on() {
        match config::choice().mutex {
            // SAFETY: the caller's contract is glibc's.
            None => return unsafe { glibc::pthread_mutex_lock(m) },
            // SAFETY: caller's contract; `KindLock` is the process's kind's type.
            Some(kind) => {
                if with_kind!(kind, KindLock => unsafe { take_plain::<KindLock>(m) }) {
                    return 0;
                }
            }
        }
    }
    if profile::on() {
        // SAFETY: caller's contract, for both.
        return profile::acquire(
            m as usize,
            Role::Mutex,
            site,
            || unsafe { trylock_entry(m) },
            || unsafe { lock_entry(m) },
        );
    }
    // SAFETY: caller's contract.
    unsafe { lock_entry(m) }
}

/// `pthread_mutex_lock` on the route of a process that runs the lock type `L`
/// without a profile (see `route`): [`take_plain`], else the general [`lock_from`].
///
/// # Safety
/// POSIX's contract for `pthread_mutex_lock`; `L` is the lock type of the
/// process's kind.
pub(in crate::preload) unsafe extern "C" fn lock_as<L: CatalogMutex>(
    m: *mut pthread_mutex_t,
) -> c_int {
    // SAFETY: caller's contract, for both.
    match unsafe { take_plain::<L>(m) } {
        true => 0,
        false => unsafe { lock_general(m) },
    }
}

/// The general entry of `pthread_mutex_lock` for the routes: out of line, so that
/// [`lock_as`] jumps to it and keeps no stack frame of its own. The site is the
/// profile's, which is off on these routes.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_lock`.
#[cold]
#[inline(never)]
unsafe extern "C" fn lock_general(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: caller's contract.
    unsafe { lock_from(m, 0) }
}

/// The fast path of the routes of lock and trylock: the lock's one-step take
/// ([`CatalogMutex::try_lock_quick`]; for `default`, one cmpxchg) on a [`plain`]
/// mutex, with the caller's id read once; `false` if it is not plain, the id is not
/// one load yet, or the step does not take the lock (the general entry decides).
/// Nothing here calls out, so the routes stay leaf functions.
///
/// # Safety
/// As for [`target`]; `L` is the lock type of the process's kind.
#[inline(always)]
unsafe fn take_plain<L: CatalogMutex>(m: *mut pthread_mutex_t) -> bool {
    if m.is_null() {
        return false;
    }
    // SAFETY: as in `target`.
    let mutex = unsafe { &*m.cast::<Mutex>() };
    if !mutex.is_plain() {
        return false;
    }
    let Some(me) = this_thread_inline() else {
        return false;
    };
    // SAFETY (the cast): a plain mutex's body holds a lock of the process's kind, an
    // `L` (caller's contract).
    let lock = unsafe { &*mutex.body().cast::<L>() };
    lock.try_lock_quick(me) && mutex.acquired(u64::from(me)) == 0
}

/// `pthread_mutex_lock`, unprofiled.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_lock`.
unsafe fn lock_entry(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: caller's contract.
    if let Some((mutex, kind)) = unsafe { plain(m) } {
        let me = this_thread();
        lock_body(mutex, kind);
        return mutex.acquired(me);
    }
    // SAFETY: caller's contract.
    unsafe { lock_any(m) }
}

/// `pthread_mutex_lock` past [`plain`].
///
/// # Safety
/// POSIX's contract for `pthread_mutex_lock`.
unsafe fn lock_any(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: caller's contract.
    match unsafe { target(m) } {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_mutex_lock(m) },
        Target::Invalid => EINVAL,
        Target::Klocks(mutex, kind, ty) => lock(mutex, kind, ty),
    }
}

/// `pthread_mutex_trylock` on its general route (see `route`), called from `site`.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_trylock`.
pub(in crate::preload) unsafe extern "C" fn trylock_from(
    m: *mut pthread_mutex_t,
    site: usize,
) -> c_int {
    if lockdep::on() {
        // SAFETY: caller's contract, for both.
        let mode = unsafe { lockdep::mutex_mode(m) };
        return lockdep::try_acquire(m as usize, mode, site, || unsafe {
            trylock_profiled(m, site)
        });
    }
    // SAFETY: caller's contract.
    unsafe { trylock_profiled(m, site) }
}

/// [`trylock_from`] past the validator.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_trylock`.
unsafe fn trylock_profiled(m: *mut pthread_mutex_t, site: usize) -> c_int {
    if profile::on() {
        // SAFETY: caller's contract.
        return profile::try_acquire(m as usize, Role::Mutex, site, || unsafe {
            trylock_entry(m)
        });
    }
    // SAFETY: caller's contract.
    unsafe { trylock_entry(m) }
}

/// `pthread_mutex_trylock` on the route of a process that runs the lock type `L`
/// without a profile (see `route`): [`take_plain`], else the general
/// [`trylock_from`].
///
/// # Safety
/// As for [`lock_as`].
pub(in crate::preload) unsafe extern "C" fn trylock_as<L: CatalogMutex>(
    m: *mut pthread_mutex_t,
) -> c_int {
    // SAFETY: as in `lock_as`.
    match unsafe { take_plain::<L>(m) } {
        true => 0,
        false => unsafe { trylock_general(m) },
    }
}

/// The general entry of `pthread_mutex_trylock` for the routes, out of line as
/// [`lock_general`].
///
/// # Safety
/// POSIX's contract for `pthread_mutex_trylock`.
#[cold]
#[inline(never)]
unsafe extern "C" fn trylock_general(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: caller's contract.
    unsafe { trylock_from(m, 0) }
}

/// `pthread_mutex_trylock`, unprofiled.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_trylock`.
unsafe fn trylock_entry(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: caller's contract.
    match unsafe { target(m) } {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_mutex_trylock(m) },
        Target::Invalid => EINVAL,
        Target::Klocks(mutex, kind, ty) => trylock(mutex, kind, ty),
    }
}

with_caller! {
    /// `pthread_mutex_timedlock`: a deadline on `CLOCK_REALTIME`.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_mutex_timedlock`.
    fn pthread_mutex_timedlock(m: *mut pthread_mutex_t, at: *const timespec) -> c_int
        => timedlock_from, site: "rdx"
}

/// `pthread_mutex_timedlock` called from `site`.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_timedlock`.
unsafe extern "C" fn timedlock_from(
    m: *mut pthread_mutex_t,
    at: *const timespec,
    site: usize,
) -> c_int {
    // SAFETY: caller's contract, for both.
    profiled_wait(m, site, || unsafe { timedlock(m, at) })
}

/// A lock call with a deadline, `wait`: profiled (tried first) if the profile is on.
///
/// # Safety
/// `m` is as for [`target`].
#[inline]
unsafe fn profiled_wait(
    m: *mut pthread_mutex_t,
    site: usize,
    wait: impl FnOnce() -> c_int,
) -> c_int {
    if lockdep::on() {
        // SAFETY: caller's contract.
        let mode = unsafe { lockdep::mutex_mode(m) };
        return lockdep::acquire(m as usize, mode, site, || {
            // SAFETY: caller's contract.
            unsafe { profiled_wait_past_validator(m, site, wait) }
        });
    }
    // SAFETY: caller's contract.
    unsafe { profiled_wait_past_validator(m, site, wait) }
}

/// [`profiled_wait`] past the validator.
///
/// # Safety
/// `m` is as for [`target`].
unsafe fn profiled_wait_past_validator(
    m: *mut pthread_mutex_t,
    site: usize,
    wait: impl FnOnce() -> c_int,
) -> c_int {
    if profile::on() {
        // SAFETY: caller's contract.
        profile::acquire(
            m as usize,
            Role::Mutex,
            site,
            || unsafe { trylock_entry(m) },
            wait,
        )
    } else {
        wait()
    }
}

/// `pthread_mutex_timedlock`, unprofiled.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_timedlock`.
unsafe fn timedlock(m: *mut pthread_mutex_t, at: *const timespec) -> c_int {
    // SAFETY: caller's contract.
    match unsafe { target(m) } {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_mutex_timedlock(m, at) },
        Target::Invalid => EINVAL,
        // SAFETY: `at` is readable (caller's contract).
        Target::Klocks(mutex, kind, ty) => match unsafe { Deadline::new(CLOCK_REALTIME, at) } {
            Ok(deadline) => clocklock(mutex, kind, ty, deadline),
            Err(error) => error,
        },
    }
}

with_caller! {
    /// `pthread_mutex_clocklock` (glibc 2.30): a deadline on `CLOCK_REALTIME` or
    /// `CLOCK_MONOTONIC`.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_mutex_clocklock`.
    fn pthread_mutex_clocklock(
        m: *mut pthread_mutex_t,
        clock: clockid_t,
        at: *const timespec
    ) -> c_int
        => clocklock_from, site: "rcx"
}

/// `pthread_mutex_clocklock` called from `site`.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_clocklock`.
unsafe extern "C" fn clocklock_from(
    m: *mut pthread_mutex_t,
    clock: clockid_t,
    at: *const timespec,
    site: usize,
) -> c_int {
    // SAFETY: caller's contract, for both.
    profiled_wait(m, site, || unsafe { clocklock_entry(m, clock, at) })
}

/// `pthread_mutex_clocklock`, unprofiled.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_clocklock`.
unsafe fn clocklock_entry(m: *mut pthread_mutex_t, clock: clockid_t, at: *const timespec) -> c_int {
    // SAFETY: caller's contract.
    match unsafe { target(m) } {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_mutex_clocklock(m, clock, at) },
        Target::Invalid => EINVAL,
        // SAFETY: `at` is readable (caller's contract).
        Target::Klocks(mutex, kind, ty) => match unsafe { Deadline::new(clock, at) } {
            Ok(deadline) => clocklock(mutex, kind, ty, deadline),
            Err(error) => error,
        },
    }
}

/// `pthread_mutex_unlock` on its general route (see `route`): `EPERM` if the mutex
/// is not locked, or (error-checking, recursive) not held by the caller.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_unlock`.
pub(in crate::preload) unsafe extern "C" fn unlock_from(m: *mut pthread_mutex_t) -> c_int {
    if lockdep::on() {
        // SAFETY: caller's contract.
        return lockdep::release(m as usize, || unsafe { unlock_profiled(m) });
    }
    // SAFETY: caller's contract.
    unsafe { unlock_profiled(m) }
}

/// [`unlock_from`] past the validator, straight to glibc as [`lock_profiled`].
///
/// # Safety
/// POSIX's contract for `pthread_mutex_unlock`.
#[inline(always)]
unsafe fn unlock_profiled(m: *mut pthread_mutex_t) -> c_int {
    if !profile::on() {
        match config::choice().mutex {
            // SAFETY: the caller's contract is glibc's.
            None => return unsafe { glibc::pthread_mutex_unlock(m) },
            // SAFETY: caller's contract; `KindLock` is the process's kind's type.
            Some(kind) => {
                if let Some(result) =
                    with_kind!(kind, KindLock => unsafe { release_plain::<KindLock>(m) })
                {
                    return result;
                }
            }
        }
    }
    if profile::on() {
        // SAFETY: caller's contract.
        return profile::release(m as usize, || unsafe { unlock_entry(m) });
    }
    // SAFETY: caller's contract.
    unsafe { unlock_entry(m) }
}

/// `pthread_mutex_unlock` on the route of a process that runs the lock type `L`
/// without a profile (see `route`): a [`plain`] mutex that the caller holds (its
/// owner field says so, for every kind) is released by the lock's one-step release
/// ([`CatalogMutex::try_unlock_quick`]) or else its own `unlock`; anything else goes
/// to the general [`unlock_from`]. The id is read once, and nothing on the fast path
/// calls out, so this stays a leaf function.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_unlock`; `L` is the lock type of the
/// process's kind.
pub(in crate::preload) unsafe extern "C" fn unlock_as<L: CatalogMutex>(
    m: *mut pthread_mutex_t,
) -> c_int {
    // SAFETY: caller's contract, for both.
    match unsafe { release_plain::<L>(m) } {
        Some(result) => result,
        None => unsafe { unlock_general(m) },
    }
}

/// The fast path of [`unlock_as`]: the release of a held plain mutex, its result;
/// `None` for anything else (the general entry decides). Nothing here calls out
/// but the release of a word with waiters.
///
/// # Safety
/// As for [`unlock_as`].
#[inline(always)]
unsafe fn release_plain<L: CatalogMutex>(m: *mut pthread_mutex_t) -> Option<c_int> {
    if !m.is_null() {
        // SAFETY: as in `target`.
        let mutex = unsafe { &*m.cast::<Mutex>() };
        if let (true, Some(me)) = (mutex.is_plain(), this_thread_inline()) {
            // Relaxed: "is it me?" (module doc).
            if mutex.owner.load(Relaxed) == u64::from(me) {
                // Relaxed: cleared before the unlock's Release (module doc).
                mutex.owner.store(0, Relaxed);
                // SAFETY (the cast): a plain mutex's body holds an `L` (caller's
                // contract).
                let lock = unsafe { &*mutex.body().cast::<L>() };
                // SAFETY: the caller holds it: its owner field is its own id.
                return Some(match unsafe { lock.try_unlock_quick(me) } {
                    true => 0,
                    // SAFETY: as above.
                    false => unsafe { unlock_held(lock) },
                });
            }
        }
    }
    None
}

/// The release of a held plain mutex whose word holds more than the hold (waiters,
/// a spinner's flag): the lock's own `unlock`, out of line as [`lock_general`].
///
/// # Safety
/// The calling thread holds `lock`.
#[cold]
#[inline(never)]
unsafe extern "C" fn unlock_held<L: CatalogMutex>(lock: &L) -> c_int {
    // SAFETY: held by the caller (contract above).
    unsafe { lock.unlock() };
    0
}

/// The general entry of `pthread_mutex_unlock` for the routes, out of line as
/// [`lock_general`].
///
/// # Safety
/// POSIX's contract for `pthread_mutex_unlock`.
#[cold]
#[inline(never)]
unsafe extern "C" fn unlock_general(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: caller's contract.
    unsafe { unlock_from(m) }
}

/// `pthread_mutex_unlock`, unprofiled.
///
/// # Safety
/// POSIX's contract for `pthread_mutex_unlock`.
unsafe fn unlock_entry(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: caller's contract.
    match unsafe { target(m) } {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_mutex_unlock(m) },
        Target::Invalid => EINVAL,
        Target::Klocks(mutex, kind, ty) => unlock(mutex, kind, ty),
    }
}
