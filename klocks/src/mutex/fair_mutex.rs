//! [`RawFairMutex`]: the default mutex whose every unlock is fair, the raw lock of
//! [`FairMutex`](crate::FairMutex) (parking_lot's `RawFairMutex` and `FairMutex`).
//!
//! It is a [`RawMutex`] in every respect (the word, the spinner, the timed handoff,
//! the liveness tick, the signal and fork rules) but its unlock, which is
//! [`RawMutex::unlock_fair`]: when a thread sleeps on the lock, the lock passes to a
//! thread that slept, and the unlocking thread, or any other that has not slept,
//! cannot take it back in between; when nobody sleeps, it is a plain unlock. So
//! waiters that sleep get the lock in the futex's order (priority, then arrival), and
//! a thread that re-takes the lock at once after its unlock queues behind them. The
//! price is a wake-up per contended unlock, and a lock that waits for the woken
//! thread to be scheduled: with more threads than CPUs, much less throughput than
//! [`Mutex`](crate::Mutex)'s barging.
//!
//! Its slow-path counters (feature `stats`) are the default mutex's.

use super::raw_mutex::RawMutex;

/// A [`RawMutex`] whose every unlock is [`RawMutex::unlock_fair`]; see the module doc.
/// [`FairMutex`](crate::FairMutex) is `Mutex<T>` on it. 8 bytes.
#[derive(Debug)]
pub struct RawFairMutex(RawMutex);

impl RawFairMutex {
    /// An unlocked mutex.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self(RawMutex::new())
    }

    /// An unlocked mutex.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self(RawMutex::new())
    }

    /// Acquires the mutex, as [`RawMutex::lock`].
    #[inline]
    pub fn lock(&self) {
        self.0.lock();
    }

    /// Takes the mutex if it is free and not reserved, as [`RawMutex::try_lock`].
    #[inline]
    pub fn try_lock(&self) -> bool {
        self.0.try_lock()
    }

    /// Releases the mutex fairly ([`RawMutex::unlock_fair`]).
    ///
    /// # Panics
    /// If the calling thread does not hold the mutex (the word is left untouched).
    #[inline]
    pub fn unlock(&self) {
        self.0.unlock_fair();
    }

    /// Whether some thread holds the mutex.
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.0.is_locked()
    }

    /// Acquires the mutex unless `deadline` passes first; whether it did.
    #[cfg(not(loom))]
    pub fn try_lock_until(&self, deadline: std::time::Instant) -> bool {
        self.0.try_lock_until(deadline)
    }

    /// [`RawMutex::try_lock_quick`].
    #[inline(always)]
    pub fn try_lock_quick(&self, me: u32) -> bool {
        self.0.try_lock_quick(me)
    }

    /// [`RawMutex::try_unlock_quick`]: a release with nobody else in the word, which
    /// is a fair one too (nobody sleeps).
    ///
    /// # Safety
    /// The calling thread, whose id is `me`, holds the mutex.
    #[inline(always)]
    pub unsafe fn try_unlock_quick(&self, me: u32) -> bool {
        // SAFETY: the caller's contract is this method's.
        unsafe { self.0.try_unlock_quick(me) }
    }

    /// Releases the mutex fairly on behalf of the thread that holds it
    /// ([`RawMutex::unlock_fair_for_owner`]). Whether the mutex was held.
    ///
    /// # Safety
    /// As [`RawMutex::unlock_for_owner`].
    pub unsafe fn unlock_for_owner(&self) -> bool {
        // SAFETY: the caller's contract is this method's.
        unsafe { self.0.unlock_fair_for_owner() }
    }

    /// Whether the calling thread holds the mutex, as [`RawMutex::held_by_current_thread`].
    pub fn held_by_current_thread(&self) -> bool {
        self.0.held_by_current_thread()
    }

    /// A fork child's repair, as [`RawMutex::forget_waiters`].
    ///
    /// # Safety
    /// As [`RawMutex::forget_waiters`].
    #[cfg(not(loom))]
    pub unsafe fn forget_waiters(&self) {
        // SAFETY: the caller's contract is this method's.
        unsafe { self.0.forget_waiters() }
    }
}

// SAFETY: `RawMutex` excludes (its impl's argument), and `unlock` here is its fair
// unlock, which releases the same hold. Guards are not `Send`, as `RawMutex`'s: the
// unlock checks the owner in the word.
raw_mutex!(for RawFairMutex, guard = GuardNoSend);

// SAFETY: `RawMutex::unlock_fair` is this lock's unlock; `bump` is lock_api's default
// (a fair unlock, then `lock`), as for `RawMutex`.
#[cfg(not(loom))]
unsafe impl lock_api::RawMutexFair for RawFairMutex {
    #[inline]
    unsafe fn unlock_fair(&self) {
        self.0.unlock_fair();
    }
}

// SAFETY: `try_lock_until` acquires exactly like `lock` when it returns true.
#[cfg(not(loom))]
unsafe impl lock_api::RawMutexTimed for RawFairMutex {
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;

    fn try_lock_for(&self, timeout: Self::Duration) -> bool {
        lock_api::RawMutexTimed::try_lock_for(&self.0, timeout)
    }

    fn try_lock_until(&self, deadline: Self::Instant) -> bool {
        self.0.try_lock_until(deadline)
    }
}
