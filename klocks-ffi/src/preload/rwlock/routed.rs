//! The routes' fast paths for `pthread_rwlock_*` (see `route`): on the lock type of
//! the process's policy, the uncontended case of each call, done as the general entry
//! of `entries` would do it; anything else goes to that entry.

use std::ffi::c_int;
use std::sync::atomic::Ordering::Acquire;

use klocks_core::owner::current_tid;
use klocks_core::{RawRwLock, RawRwLockUnbiased, ReaderSpin, RwSem};
use libc::pthread_rwlock_t;

use super::entries::{rdlock_from, tryrdlock_from, trywrlock_from, unlock_from, wrlock_from};
use super::lock::RwLock;
use crate::preload::fork::{self, GLIBC_OWNED};

/// The fast paths of the routes (see `route`) on the lock type `L` of the process's
/// policy: the common case of each call, done as the general entry would do it;
/// `false`, having done nothing, for anything else, which the general entry sorts
/// (its misuse answers, fork repairs, waits, `EAGAIN`, the profile).
pub(in crate::preload) trait Routed: Sync {
    /// Takes a read lock as the general `rdlock` and `tryrdlock` first try to, with
    /// room for one more reader; `false` if that try does not enter.
    fn read_uncontended(&self) -> bool;
    /// Takes the write lock from a lock nobody holds or waits for.
    fn write_uncontended(&self) -> bool;
    /// Releases the caller's hold when the lock tells read from write as the general
    /// `unlock` would (module doc, "Unlock finds the mode").
    fn unlock_uncontended(&self) -> bool;
}

impl Routed for RawRwLock {
    #[inline(always)]
    fn read_uncontended(&self) -> bool {
        // `Err` (too many readers) is the general entry's `EAGAIN` to answer.
        matches!(self.try_lock_shared_within_max(), Ok(true))
    }

    #[inline(always)]
    fn write_uncontended(&self) -> bool {
        // Never past sleeping writers: their turns are `lock_exclusive`'s to keep.
        self.try_lock_exclusive_free()
    }

    #[inline(always)]
    fn unlock_uncontended(&self) -> bool {
        // One load of the word tells a read hold (readers, no `WRITER`) from the
        // caller's write hold (`WRITER` alone, its id as the writer's); where the
        // general entry's snapshot would say the same, in every case it handles.
        self.try_unlock_either()
    }
}

/// The default rwlock without its reader bias: the same paths (it is a `RawRwLock`).
impl Routed for RawRwLockUnbiased {
    #[inline(always)]
    fn read_uncontended(&self) -> bool {
        RawRwLock::read_uncontended(self)
    }

    #[inline(always)]
    fn write_uncontended(&self) -> bool {
        RawRwLock::write_uncontended(self)
    }

    #[inline(always)]
    fn unlock_uncontended(&self) -> bool {
        RawRwLock::unlock_uncontended(self)
    }
}

impl<P: ReaderSpin> Routed for RwSem<P> {
    #[inline(always)]
    fn read_uncontended(&self) -> bool {
        self.try_lock_shared()
    }

    #[inline(always)]
    fn write_uncontended(&self) -> bool {
        self.try_lock_exclusive()
    }

    #[inline(always)]
    fn unlock_uncontended(&self) -> bool {
        // The general entry's decision, without its sorting of the call.
        if self.exclusive_owner() == Some(current_tid()) {
            self.unlock_exclusive();
        } else if self.is_locked() && !self.is_locked_exclusive() {
            self.unlock_shared();
        } else {
            return false;
        }
        true
    }
}

/// The lock in `r` for a route's fast path: a klocks-managed rwlock of this fork
/// generation; `None` for anything else (null, glibc's, stale).
///
/// # Safety
/// `r` is null or points to a live `pthread_rwlock_t`; `L` is the lock type of the
/// process's policy.
#[inline(always)]
unsafe fn current_lock<'a, L>(r: *mut pthread_rwlock_t) -> Option<&'a L> {
    if r.is_null() {
        return None;
    }
    // SAFETY: non-null and live (caller's contract), `RwLock`'s size and alignment.
    let rw = unsafe { &*r.cast::<RwLock>() };
    // Acquire: as in `RwLock::current` (pairs with the Release in `fork::repair`,
    // which publishes the body).
    let stamp = rw.stamp.load(Acquire);
    // SAFETY (the cast): a klocks-managed rwlock's body holds the process's lock, an
    // `L` (caller's contract).
    (stamp == fork::generation() && stamp != GLIBC_OWNED)
        .then(|| unsafe { &*rw.body.get().cast::<L>() })
}

/// Declares the routes' functions for a process that runs the lock type `L` without
/// a profile: the fast path on a current lock, else the general entry (with site 0,
/// the profile's, which is off on these routes).
macro_rules! routed_calls {
    ($($(#[$meta:meta])* $name:ident => $fast:ident, $general:ident($($site:expr)?);)*) => {$(
        $(#[$meta])*
        ///
        /// # Safety
        /// POSIX's contract for the call; `L` is the lock type of the process's policy.
        pub(in crate::preload) unsafe extern "C" fn $name<L: Routed>(r: *mut pthread_rwlock_t) -> c_int {
            // SAFETY: caller's contract.
            match unsafe { current_lock::<L>(r) } {
                Some(lock) if lock.$fast() => 0,
                // SAFETY: caller's contract.
                _ => unsafe { $general(r $(, $site)?) },
            }
        }
    )*};
}

routed_calls! {
    /// `pthread_rwlock_rdlock` on the route of lock type `L`.
    rdlock_as => read_uncontended, rdlock_from(0);
    /// `pthread_rwlock_tryrdlock` on the route of lock type `L`.
    tryrdlock_as => read_uncontended, tryrdlock_from(0);
    /// `pthread_rwlock_wrlock` on the route of lock type `L`.
    wrlock_as => write_uncontended, wrlock_from(0);
    /// `pthread_rwlock_trywrlock` on the route of lock type `L`.
    trywrlock_as => write_uncontended, trywrlock_from(0);
    /// `pthread_rwlock_unlock` on the route of lock type `L`.
    unlock_as => unlock_uncontended, unlock_from();
}
