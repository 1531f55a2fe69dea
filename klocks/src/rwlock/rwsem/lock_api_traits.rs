//! `lock_api`'s traits for `RwSem`, so that `lock_api::RwLock` (and
//! [`RwSemLock`](crate::RwSemLock)) build guards on it.

use super::*;

#[cfg(not(loom))]
// SAFETY: readers and writers exclude as the module doc argues (and the loom models
// check): a writer holds `WRITER_LOCKED` with no reader share counted, readers hold
// shares with `WRITER_LOCKED` clear, every acquisition is an Acquire RMW on the count
// and every release a Release RMW on it (grants pass through a Release/Acquire pair
// on the waiter's word after the granter's Acquire on the count).
unsafe impl<P: ReaderSpin> lock_api::RawRwLock for RwSem<P> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    // The owner word names the writing thread, and debug builds track read locks per
    // thread: a guard must be released by the thread that took it.
    type GuardMarker = lock_api::GuardNoSend;

    fn lock_shared(&self) {
        RwSem::lock_shared(self);
    }

    fn try_lock_shared(&self) -> bool {
        RwSem::try_lock_shared(self)
    }

    unsafe fn unlock_shared(&self) {
        RwSem::unlock_shared(self);
    }

    fn lock_exclusive(&self) {
        RwSem::lock_exclusive(self);
    }

    fn try_lock_exclusive(&self) -> bool {
        RwSem::try_lock_exclusive(self)
    }

    unsafe fn unlock_exclusive(&self) {
        RwSem::unlock_exclusive(self);
    }

    fn is_locked(&self) -> bool {
        RwSem::is_locked(self)
    }

    fn is_locked_exclusive(&self) -> bool {
        RwSem::is_locked_exclusive(self)
    }
}

#[cfg(not(loom))]
// SAFETY: `downgrade` turns the caller's write lock into a read lock atomically (one
// RMW on the count), never letting a writer in between.
unsafe impl<P: ReaderSpin> lock_api::RawRwLockDowngrade for RwSem<P> {
    unsafe fn downgrade(&self) {
        RwSem::downgrade(self);
    }
}
