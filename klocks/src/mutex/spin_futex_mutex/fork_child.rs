//! [`SpinFutexMutex`] in a fork child: [`SpinFutexMutex::forget_waiters`], as
//! [`RawMutex::forget_waiters`](crate::RawMutex::forget_waiters) (whose module doc
//! has the rule and the table of what the child sees). The word's `WAITERS` and
//! `SPINNING` name sleepers and a spinner the child does not have; the holder is
//! kept, and the forking thread's hold passes to its continuation.
//!
//! It runs while no other thread uses the mutex: no loom model, there is no
//! concurrency to check.

// Fork children are native processes: nothing of this under loom.
#![cfg(not(loom))]

use super::{owner_of, SpinFutexMutex, OWNER_MASK};
use crate::owner;
use crate::sync::Ordering::Relaxed;

impl SpinFutexMutex {
    /// Forgets the sleepers and the spinner that the parent's threads left in a fork
    /// child's copy of the mutex, and keeps its holder: held by the forking thread,
    /// it becomes held by the calling thread (the child's continuation of it); held
    /// by another thread, it stays held by that vanished thread.
    ///
    /// # Safety
    /// Called in a fork child, on the forking thread's continuation, and no other
    /// thread of the child uses the mutex until it returns.
    pub unsafe fn forget_waiters(&self) {
        // Relaxed (all): the caller excludes every other thread; threads the child
        // creates later are ordered after this by `pthread_create`.
        let held = owner_of(self.word.load(Relaxed));
        let continued = owner::forking_thread_in_parent()
            .is_some_and(|forker| held != 0 && forker & OWNER_MASK == held);
        let kept = if continued {
            owner::current_tid()
        } else {
            held
        };
        self.word.store(kept, Relaxed);
        self.skipped_wakes.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SPINNING, WAITERS};
    use super::*;

    #[test]
    fn forget_waiters_keeps_a_vanished_holder_and_frees_a_free_lock() {
        let lock = SpinFutexMutex::new();
        lock.word.store(WAITERS | SPINNING, Relaxed);
        lock.skipped_wakes.store(5, Relaxed);
        // SAFETY: no other thread uses `lock`.
        unsafe { lock.forget_waiters() };
        assert_eq!(lock.word.load(Relaxed), 0);
        assert_eq!(lock.skipped_wakes.load(Relaxed), 0);
        assert!(lock.try_lock());
        // Held by a tid no thread of this process has (this is no fork child).
        lock.word.store(WAITERS | 0x3f_fffe, Relaxed);
        // SAFETY: as above.
        unsafe { lock.forget_waiters() };
        assert_eq!(lock.word.load(Relaxed), 0x3f_fffe);
        assert!(!lock.try_lock());
    }
}
