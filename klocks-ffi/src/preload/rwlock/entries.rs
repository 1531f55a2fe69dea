//! The interposed `pthread_rwlock_*` functions: `init` decides from the attributes
//! whether klocks or glibc owns the object; the others sort their call ([`target`]:
//! glibc's, invalid, or a klocks rwlock of the process's policy), time it for the
//! contention profile when that is on, and run the operation of `lock` on
//! the rwlock. The routes (`route`) enter the blocking calls, the tries and `unlock`
//! through the general entries declared here (`*_with_site`, [`unlock_from`]), or
//! through the fast paths of `routed`, which fall back to them.

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use libc::{
    clockid_t, pthread_rwlock_t, pthread_rwlockattr_t, timespec, CLOCK_REALTIME, EBUSY, EINVAL,
};

use super::super::fork::{self, Patience, GLIBC_OWNED};
use super::super::lockdep;
use super::super::profile::{self, with_caller, Role};
use super::super::time::Deadline;
use super::super::{config, glibc};
use super::lock::{
    clockrdlock, clockwrlock, init_body, rdlock, target, tryrdlock, trywrlock, unlock, with_sem,
    wrlock, RwLock, Target,
};
use super::policy::with_policy;

extern "C" {
    /// glibc's (the `libc` crate does not declare it).
    fn pthread_rwlockattr_getkind_np(attr: *const pthread_rwlockattr_t, kind: *mut c_int) -> c_int;
}

/// glibc's `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`.
const PREFER_WRITER_NONRECURSIVE: c_int = 2;

with_caller! {
    /// `pthread_rwlock_init`: a klocks rwsem of the process's policy, or glibc's
    /// rwlock for a process-shared one.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_rwlock_init`.
    fn pthread_rwlock_init(r: *mut pthread_rwlock_t, attr: *const pthread_rwlockattr_t) -> c_int
        => init_from, site: "rdx"
}

/// `pthread_rwlock_init` called from `site`.
///
/// # Safety
/// POSIX's contract for `pthread_rwlock_init`.
unsafe extern "C" fn init_from(
    r: *mut pthread_rwlock_t,
    attr: *const pthread_rwlockattr_t,
    site: usize,
) -> c_int {
    // SAFETY: caller's contract.
    let result = unsafe { init(r, attr) };
    if result == 0 && profile::on() {
        profile::initialised(r as usize, site, Role::Write);
    }
    if result == 0 && lockdep::on() {
        lockdep::initialised(r as usize, site);
    }
    result
}

/// `pthread_rwlock_init`.
///
/// # Safety
/// POSIX's contract for `pthread_rwlock_init`.
unsafe fn init(r: *mut pthread_rwlock_t, attr: *const pthread_rwlockattr_t) -> c_int {
    if r.is_null() {
        return EINVAL;
    }
    let Some(policy) = config::choice().rwlock else {
        // SAFETY: the caller's contract is glibc's.
        return unsafe { glibc::pthread_rwlock_init(r, attr) };
    };
    let (mut pshared, mut kind) = (libc::PTHREAD_PROCESS_PRIVATE, 0);
    // SAFETY: `attr` points to an attribute object when non-null; glibc's getters
    // read it.
    if !attr.is_null()
        && unsafe {
            libc::pthread_rwlockattr_getpshared(attr, &mut pshared) != 0
                || pthread_rwlockattr_getkind_np(attr, &mut kind) != 0
        }
    {
        return EINVAL;
    }
    let rw = r.cast::<RwLock>();
    // Process-shared rwlocks, and those asking for writer preference, which POSIX
    // spells out (no reader may pass a blocked writer) and the rwsem's handoff only
    // approaches (a queued writer may wait up to `HANDOFF_AFTER` behind new
    // readers), stay glibc's.
    // And those initialised by a real-time thread (SCHED_FIFO, SCHED_RR): POSIX
    // orders such readers and writers by priority, which the rwsem does not.
    // SAFETY: no preconditions (0: the calling thread).
    let real_time = matches!(
        unsafe { libc::sched_getscheduler(0) },
        libc::SCHED_FIFO | libc::SCHED_RR
    );
    if pshared != libc::PTHREAD_PROCESS_PRIVATE || kind == PREFER_WRITER_NONRECURSIVE || real_time {
        // SAFETY: the caller's contract is glibc's.
        let done = unsafe { glibc::pthread_rwlock_init(r, attr) };
        if done == 0 {
            // Relaxed: init happens-before other calls (POSIX's rule).
            // SAFETY: `r` is live, and glibc leaves the padding at 52..56 alone.
            unsafe { &(*rw).stamp }.store(GLIBC_OWNED, Relaxed);
        }
        return done;
    }
    // SAFETY: `r` is writable storage of `RwLock`'s size and alignment that no other
    // thread uses during init (POSIX's rule).
    unsafe {
        rw.write(RwLock {
            body: UnsafeCell::new(MaybeUninit::uninit()),
            _flags: 0,
            stamp: AtomicU32::new(fork::generation()),
        });
        init_body(&*rw, policy);
    }
    0
}

/// `pthread_rwlock_destroy`: `EBUSY` while locked.
///
/// # Safety
/// POSIX's contract for `pthread_rwlock_destroy`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_destroy(r: *mut pthread_rwlock_t) -> c_int {
    if lockdep::on() {
        lockdep::destroyed(r as usize);
    }
    // SAFETY: caller's contract.
    let result = unsafe { destroy(r) };
    if result == 0 && profile::on() {
        profile::destroyed(r as usize);
    }
    result
}

/// `pthread_rwlock_destroy`.
///
/// # Safety
/// POSIX's contract for `pthread_rwlock_destroy`.
unsafe fn destroy(r: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: caller's contract.
    match unsafe { target(r) } {
        // SAFETY: the caller's contract is glibc's.
        Target::Glibc => unsafe { glibc::pthread_rwlock_destroy(r) },
        Target::Invalid => EINVAL,
        Target::Klocks(rw, policy) => {
            if !rw.current(policy, Patience::Try) {
                return EBUSY;
            }
            if with_sem!(rw, policy, sem => sem.is_locked()) {
                EBUSY
            } else {
                0
            }
        }
    }
}

/// The validator's mode of a call on `r` as `role`.
///
/// # Safety
/// `r` is null or points to a `pthread_rwlock_t`.
unsafe fn mode_of(r: *mut pthread_rwlock_t, role: Role) -> klocks_core::lockdep::Mode {
    match role {
        // SAFETY: caller's contract.
        Role::Read => unsafe { lockdep::read_mode(r) },
        _ => klocks_core::lockdep::Mode::Exclusive,
    }
}

/// Declares the interposed rwlock calls without a deadline, unprofiled, as `$entry`.
macro_rules! plain_calls {
    ($($name:ident, $entry:ident => $ours:ident;)*) => {$(
        /// The pthread call of the same name, unprofiled.
        ///
        /// # Safety
        /// POSIX's contract for it.
        unsafe fn $entry(r: *mut pthread_rwlock_t) -> c_int {
            // SAFETY: caller's contract.
            match unsafe { target(r) } {
                // SAFETY: the caller's contract is glibc's.
                Target::Glibc => unsafe { glibc::$name(r) },
                Target::Invalid => EINVAL,
                Target::Klocks(rw, policy) => $ours(rw, policy),
            }
        }
    )*};
}

plain_calls! {
    pthread_rwlock_rdlock, rdlock_entry => rdlock;
    pthread_rwlock_tryrdlock, tryrdlock_entry => tryrdlock;
    pthread_rwlock_wrlock, wrlock_entry => wrlock;
    pthread_rwlock_trywrlock, trywrlock_entry => trywrlock;
    pthread_rwlock_unlock, unlock_entry => unlock;
}

/// Declares the blocking calls, entered with their site (see `profile`).
macro_rules! blocking_calls {
    ($($with_site:ident, $from:ident => $role:expr, $try_entry:ident, $entry:ident;)*) => {$(
        with_caller! { local
            /// The pthread call's general route (see `route`): the general entry, with
            /// the call site.
            ///
            /// # Safety
            /// POSIX's contract for the call.
            fn $with_site(r: *mut pthread_rwlock_t) -> c_int
                => $from, site: "rsi"
        }

        /// The pthread call, called from `site`.
        ///
        /// # Safety
        /// POSIX's contract for the call.
        pub(super) unsafe extern "C" fn $from(r: *mut pthread_rwlock_t, site: usize) -> c_int {
            if lockdep::on() {
                // SAFETY: caller's contract.
                let mode = unsafe { mode_of(r, $role) };
                return lockdep::acquire(r as usize, mode, site, || {
                    // SAFETY: caller's contract.
                    unsafe { profiled(r, site) }
                });
            }
            // SAFETY: caller's contract.
            return unsafe { profiled(r, site) };

            /// The call past the validator.
            ///
            /// # Safety
            /// POSIX's contract for the call.
            unsafe fn profiled(r: *mut pthread_rwlock_t, site: usize) -> c_int {
            if profile::on() {
                // SAFETY: caller's contract, for both.
                return profile::acquire(
                    r as usize,
                    $role,
                    site,
                    || unsafe { $try_entry(r) },
                    || unsafe { $entry(r) },
                );
            }
            // SAFETY: caller's contract.
            unsafe { $entry(r) }
            }
        }
    )*};
}

blocking_calls! {
    rdlock_with_site, rdlock_from => Role::Read, tryrdlock_entry, rdlock_entry;
    wrlock_with_site, wrlock_from => Role::Write, trywrlock_entry, wrlock_entry;
}

/// Declares the tries, entered with their site (see `profile`).
macro_rules! try_calls {
    ($($with_site:ident, $from:ident => $role:expr, $entry:ident;)*) => {$(
        with_caller! { local
            /// The pthread call's general route (see `route`): the general entry, with
            /// the call site.
            ///
            /// # Safety
            /// POSIX's contract for the call.
            fn $with_site(r: *mut pthread_rwlock_t) -> c_int => $from, site: "rsi"
        }

        /// The pthread call, called from `site`.
        ///
        /// # Safety
        /// POSIX's contract for the call.
        pub(super) unsafe extern "C" fn $from(r: *mut pthread_rwlock_t, site: usize) -> c_int {
            if lockdep::on() {
                // SAFETY: caller's contract.
                let mode = unsafe { mode_of(r, $role) };
                return lockdep::try_acquire(r as usize, mode, site, || {
                    if profile::on() {
                        // SAFETY: caller's contract.
                        return profile::try_acquire(r as usize, $role, site, || unsafe { $entry(r) });
                    }
                    // SAFETY: caller's contract.
                    unsafe { $entry(r) }
                });
            }
            if profile::on() {
                // SAFETY: caller's contract.
                return profile::try_acquire(r as usize, $role, site, || unsafe { $entry(r) });
            }
            // SAFETY: caller's contract.
            unsafe { $entry(r) }
        }
    )*};
}

try_calls! {
    tryrdlock_with_site, tryrdlock_from => Role::Read, tryrdlock_entry;
    trywrlock_with_site, trywrlock_from => Role::Write, trywrlock_entry;
}

/// `pthread_rwlock_unlock` on its general route (see `route`).
///
/// # Safety
/// POSIX's contract for it.
pub(in crate::preload) unsafe extern "C" fn unlock_from(r: *mut pthread_rwlock_t) -> c_int {
    if lockdep::on() {
        lockdep::released_only(r as usize);
    }
    if profile::on() {
        // SAFETY: caller's contract.
        return profile::release(r as usize, || unsafe { unlock_entry(r) });
    }
    // SAFETY: caller's contract.
    unsafe { unlock_entry(r) }
}

/// A call with a deadline, `wait`: profiled (tried first with `try_entry`) if the
/// profile is on.
#[inline]
fn profiled_wait(
    r: *mut pthread_rwlock_t,
    role: Role,
    site: usize,
    try_entry: impl Fn() -> c_int,
    wait: impl FnOnce() -> c_int,
) -> c_int {
    if lockdep::on() {
        // SAFETY: `r` is the caller's rwlock (the call's contract).
        let mode = unsafe { mode_of(r, role) };
        return lockdep::acquire(r as usize, mode, site, || {
            if profile::on() {
                profile::acquire(r as usize, role, site, try_entry, wait)
            } else {
                wait()
            }
        });
    }
    if profile::on() {
        profile::acquire(r as usize, role, site, try_entry, wait)
    } else {
        wait()
    }
}

/// Declares the interposed rwlock calls with a deadline (`timed`: on
/// `CLOCK_REALTIME`; `clock`: on the caller's clock), entered with their site.
macro_rules! deadline_calls {
    ($($timed:ident, $timed_from:ident, $clock:ident, $clock_from:ident
        => $ours:ident, $role:expr, $try_entry:ident;)*) => {$(
        with_caller! {
            /// The pthread call of the same name: a deadline on `CLOCK_REALTIME`.
            ///
            /// # Safety
            /// POSIX's contract for it.
            fn $timed(r: *mut pthread_rwlock_t, at: *const timespec) -> c_int
                => $timed_from, site: "rdx"
        }

        /// The pthread call of the same name, called from `site`.
        ///
        /// # Safety
        /// POSIX's contract for it.
        unsafe extern "C" fn $timed_from(
            r: *mut pthread_rwlock_t,
            at: *const timespec,
            site: usize,
        ) -> c_int {
            // SAFETY: caller's contract, for both.
            profiled_wait(r, $role, site, || unsafe { $try_entry(r) }, || match unsafe { target(r) } {
                // SAFETY: the caller's contract is glibc's.
                Target::Glibc => unsafe { glibc::$timed(r, at) },
                Target::Invalid => EINVAL,
                // SAFETY: `at` is readable (caller's contract).
                Target::Klocks(rw, policy) => match unsafe { Deadline::new(CLOCK_REALTIME, at) } {
                    Ok(deadline) => $ours(rw, policy, deadline),
                    Err(error) => error,
                },
            })
        }

        with_caller! {
            /// The pthread call of the same name (glibc 2.30): a deadline on
            /// `CLOCK_REALTIME` or `CLOCK_MONOTONIC`.
            ///
            /// # Safety
            /// POSIX's contract for it.
            fn $clock(r: *mut pthread_rwlock_t, clock: clockid_t, at: *const timespec) -> c_int
                => $clock_from, site: "rcx"
        }

        /// The pthread call of the same name, called from `site`.
        ///
        /// # Safety
        /// POSIX's contract for it.
        unsafe extern "C" fn $clock_from(
            r: *mut pthread_rwlock_t,
            clock: clockid_t,
            at: *const timespec,
            site: usize,
        ) -> c_int {
            // SAFETY: caller's contract, for both.
            profiled_wait(r, $role, site, || unsafe { $try_entry(r) }, || match unsafe { target(r) } {
                // SAFETY: the caller's contract is glibc's.
                Target::Glibc => unsafe { glibc::$clock(r, clock, at) },
                Target::Invalid => EINVAL,
                // SAFETY: `at` is readable (caller's contract).
                Target::Klocks(rw, policy) => match unsafe { Deadline::new(clock, at) } {
                    Ok(deadline) => $ours(rw, policy, deadline),
                    Err(error) => error,
                },
            })
        }
    )*};
}

deadline_calls! {
    pthread_rwlock_timedrdlock, timedrdlock_from, pthread_rwlock_clockrdlock, clockrdlock_from
        => clockrdlock, Role::Read, tryrdlock_entry;
    pthread_rwlock_timedwrlock, timedwrlock_from, pthread_rwlock_clockwrlock, clockwrlock_from
        => clockwrlock, Role::Write, trywrlock_entry;
}
