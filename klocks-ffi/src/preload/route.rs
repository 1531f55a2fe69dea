//! Routes: where the hottest interposed calls, `pthread_mutex_lock`,
//! `pthread_mutex_trylock` and `pthread_mutex_unlock`, and `pthread_rwlock_rdlock`,
//! `_tryrdlock`, `_wrlock`, `_trywrlock` and `_unlock`, go.
//!
//! An uncontended lock and unlock is what most programs do most of the time, and an
//! interposer that sorted each call (profile on? which kind? glibc's?) doubled the
//! cost of glibc's pair before it reached any lock. The answers are fixed once the
//! library's constructor has made the choice and started the profile, so each of
//! these functions is exported as a single indirect jump through a route that the
//! constructor sets ([`set`]), as the dynamic linker's `IFUNC` resolvers pick an
//! implementation once:
//!
//! | the process runs | the route | an uncontended call costs |
//! |---|---|---|
//! | glibc's mutexes (rwlocks), no profile | glibc's own function | glibc's, plus one jump |
//! | kind `K` (rwlock policy `P`), no profile | `lock_as::<K's type>` (`rdlock_as::<P's type>`, …) | the lock's own fast path, plus the checks of a plain mutex (a current rwlock) |
//! | a profile or the lock validator, or before the constructor | the general entry, with the call site | as before: the profile's timing, or the first call making the choice |
//!
//! A route only ever holds the address of a function that serves every call
//! correctly (the specialised ones fall back to the general entry for anything but a
//! plain mutex, or a klocks rwlock, of this fork generation, and for anything but
//! the lock's uncontended case), so a thread that reads the old route while the
//! constructor stores the new one does no harm.
//!
//! An rwlock's unlock is not told whether the caller reads or writes. Its route
//! decides from one load of the lock's word where the general entry's snapshot would
//! decide the same (`rwlock::routed::Routed`), and leaves every other case to that entry.

use std::ffi::c_int;
use std::sync::atomic::{AtomicPtr, Ordering::Relaxed};

use libc::{pthread_mutex_t, pthread_rwlock_t};

use super::profile::{self, with_caller};
use super::rwlock::{self, with_policy};
use super::{config, glibc, mutex};
use crate::mutex::with_kind;

/// Where `pthread_mutex_lock` goes: a function with its signature.
static MUTEX_LOCK: AtomicPtr<()> = AtomicPtr::new(mutex_lock_with_site as *mut ());
/// Where `pthread_mutex_trylock` goes: a function with its signature.
static MUTEX_TRYLOCK: AtomicPtr<()> = AtomicPtr::new(mutex_trylock_with_site as *mut ());
/// Where `pthread_mutex_unlock` goes: a function with its signature.
static MUTEX_UNLOCK: AtomicPtr<()> = AtomicPtr::new(mutex::entries::unlock_from as *mut ());

/// Where `pthread_rwlock_rdlock` goes: a function with its signature.
static RWLOCK_RDLOCK: AtomicPtr<()> = AtomicPtr::new(rwlock::rdlock_with_site as *mut ());
/// Where `pthread_rwlock_tryrdlock` goes: a function with its signature.
static RWLOCK_TRYRDLOCK: AtomicPtr<()> = AtomicPtr::new(rwlock::tryrdlock_with_site as *mut ());
/// Where `pthread_rwlock_wrlock` goes: a function with its signature.
static RWLOCK_WRLOCK: AtomicPtr<()> = AtomicPtr::new(rwlock::wrlock_with_site as *mut ());
/// Where `pthread_rwlock_trywrlock` goes: a function with its signature.
static RWLOCK_TRYWRLOCK: AtomicPtr<()> = AtomicPtr::new(rwlock::trywrlock_with_site as *mut ());
/// Where `pthread_rwlock_unlock` goes: a function with its signature.
static RWLOCK_UNLOCK: AtomicPtr<()> = AtomicPtr::new(rwlock::unlock_from as *mut ());

with_caller! { local
    /// `pthread_mutex_lock`'s general route: the general entry, with the call site.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_mutex_lock`.
    fn mutex_lock_with_site(m: *mut pthread_mutex_t) -> c_int
        => mutex::entries::lock_from, site: "rsi"
}

with_caller! { local
    /// `pthread_mutex_trylock`'s general route: the general entry, with the call site.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_mutex_trylock`.
    fn mutex_trylock_with_site(m: *mut pthread_mutex_t) -> c_int
        => mutex::entries::trylock_from, site: "rsi"
}

/// Points the routes at what the process runs (see the module doc). Called from the
/// library's constructor, after the choice and the profile's start.
pub(super) fn set() {
    if profile::on() || super::lockdep::on() {
        return;
    }
    let (lock, trylock, unlock) = match config::choice().mutex {
        None => (
            glibc::address("pthread_mutex_lock\0").cast(),
            glibc::address("pthread_mutex_trylock\0").cast(),
            glibc::address("pthread_mutex_unlock\0").cast(),
        ),
        Some(kind) => with_kind!(kind, KindLock => (
            mutex::entries::lock_as::<KindLock> as *mut (),
            mutex::entries::trylock_as::<KindLock> as *mut (),
            mutex::entries::unlock_as::<KindLock> as *mut (),
        )),
    };
    // Relaxed: each route holds a function that serves every call (module doc), and
    // code needs no publication.
    MUTEX_LOCK.store(lock, Relaxed);
    MUTEX_TRYLOCK.store(trylock, Relaxed);
    MUTEX_UNLOCK.store(unlock, Relaxed);
    let [rdlock, tryrdlock, wrlock, trywrlock, unlock] = match config::choice().rwlock {
        None => [
            "pthread_rwlock_rdlock\0",
            "pthread_rwlock_tryrdlock\0",
            "pthread_rwlock_wrlock\0",
            "pthread_rwlock_trywrlock\0",
            "pthread_rwlock_unlock\0",
        ]
        .map(|name| glibc::address(name).cast()),
        Some(policy) => with_policy!(policy, PolicyLock => [
            rwlock::rdlock_as::<PolicyLock> as *mut (),
            rwlock::tryrdlock_as::<PolicyLock> as *mut (),
            rwlock::wrlock_as::<PolicyLock> as *mut (),
            rwlock::trywrlock_as::<PolicyLock> as *mut (),
            rwlock::unlock_as::<PolicyLock> as *mut (),
        ]),
    };
    // Relaxed: as above.
    RWLOCK_RDLOCK.store(rdlock, Relaxed);
    RWLOCK_TRYRDLOCK.store(tryrdlock, Relaxed);
    RWLOCK_WRLOCK.store(wrlock, Relaxed);
    RWLOCK_TRYWRLOCK.store(trywrlock, Relaxed);
    RWLOCK_UNLOCK.store(unlock, Relaxed);
}

/// Defines the exported C function `$name` as a jump through `$route`.
macro_rules! routed {
    ($(#[$meta:meta])* fn $name:ident($arg:ident: $ty:ty) -> $ret:ty => $route:ident) => {
        $(#[$meta])*
        #[no_mangle]
        #[unsafe(naked)]
        #[cfg(target_arch = "x86_64")]
        pub unsafe extern "C" fn $name($arg: $ty) -> $ret {
            core::arch::naked_asm!("jmp qword ptr [rip + {route}]", route = sym $route);
        }

        $(#[$meta])*
        #[no_mangle]
        #[cfg(not(target_arch = "x86_64"))]
        pub unsafe extern "C" fn $name($arg: $ty) -> $ret {
            // SAFETY: the route holds a function of this signature (`set`).
            let route: unsafe extern "C" fn($ty) -> $ret =
                unsafe { std::mem::transmute($route.load(Relaxed)) };
            // SAFETY: the caller's contract.
            unsafe { route($arg) }
        }
    };
}

routed! {
    /// `pthread_mutex_lock`.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_mutex_lock`.
    fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int => MUTEX_LOCK
}

routed! {
    /// `pthread_mutex_trylock`.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_mutex_trylock`.
    fn pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int => MUTEX_TRYLOCK
}

routed! {
    /// `pthread_mutex_unlock`: `EPERM` if the mutex is not locked, or (error-checking,
    /// recursive) not held by the caller.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_mutex_unlock`.
    fn pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int => MUTEX_UNLOCK
}

routed! {
    /// `pthread_rwlock_rdlock`.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_rwlock_rdlock`.
    fn pthread_rwlock_rdlock(r: *mut pthread_rwlock_t) -> c_int => RWLOCK_RDLOCK
}

routed! {
    /// `pthread_rwlock_tryrdlock`.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_rwlock_tryrdlock`.
    fn pthread_rwlock_tryrdlock(r: *mut pthread_rwlock_t) -> c_int => RWLOCK_TRYRDLOCK
}

routed! {
    /// `pthread_rwlock_wrlock`.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_rwlock_wrlock`.
    fn pthread_rwlock_wrlock(r: *mut pthread_rwlock_t) -> c_int => RWLOCK_WRLOCK
}

routed! {
    /// `pthread_rwlock_trywrlock`.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_rwlock_trywrlock`.
    fn pthread_rwlock_trywrlock(r: *mut pthread_rwlock_t) -> c_int => RWLOCK_TRYWRLOCK
}

routed! {
    /// `pthread_rwlock_unlock`: `EPERM` if the caller holds no lock on it.
    ///
    /// # Safety
    /// POSIX's contract for `pthread_rwlock_unlock`.
    fn pthread_rwlock_unlock(r: *mut pthread_rwlock_t) -> c_int => RWLOCK_UNLOCK
}
