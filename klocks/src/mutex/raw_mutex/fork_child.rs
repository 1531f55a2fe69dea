//! [`RawMutex`] in a fork child: [`RawMutex::forget_waiters`].
//!
//! A fork child inherits the word as the parent's threads left it: `WAITERS` for
//! sleepers, `SPINNING` for a spinner, `HANDOFF` for a claimant the next unlock
//! reserves the lock for (or has reserved it for: a free word `0xa0000000`), none of
//! which the child has. A reserved lock is never taken by anyone but its claimant,
//! so the child's first `lock` sleeps forever. The mutex cannot repair itself: it
//! keeps no fork generation, and a `pthread_atfork` handler cannot enumerate the
//! mutexes of a process. So a child that uses a `RawMutex` its parent's other
//! threads may have waited on calls [`RawMutex::forget_waiters`] first, on one
//! thread (the C API and the interposer do the same through their own fork stamps).
//!
//! | at the fork | after `forget_waiters` |
//! |---|---|
//! | free, with or without sleepers, spinner, reservation | free, nobody waiting |
//! | held by the forking thread | held by the calling thread (the child's continuation of it), which unlocks it |
//! | held by another thread | held by that thread, which the child does not have: for good, as glibc's |
//!
//! It runs while no other thread uses the mutex, so it needs no loom model: there is
//! no concurrency to check.

// Fork children are native processes: nothing of this under loom.
#![cfg(not(loom))]

use super::{owner_of, RawMutex, OWNER_MASK};
use crate::owner;
use crate::sync::Ordering::Relaxed;

impl RawMutex {
    /// Forgets the sleepers, spinner and handoff reservation that the parent's
    /// threads left in a fork child's copy of the mutex, and keeps its holder: a
    /// mutex the forking thread held becomes held by the calling thread, the child's
    /// continuation of it (its tid in the child), which unlocks it as usual; one that
    /// another thread held stays held by that vanished thread. See the module doc.
    ///
    /// The forking thread is recognised by its tid in the parent as klocks cached it
    /// ([`owner::forking_thread_in_parent`]); if klocks reads glibc's thread
    /// descriptor instead (the `glibc-tid` feature), a held mutex stays held by the
    /// thread its word names.
    ///
    /// # Safety
    /// Called in a fork child, on the forking thread's continuation, and no other
    /// thread of the child uses the mutex until it returns.
    pub unsafe fn forget_waiters(&self) {
        // Relaxed (both): the caller excludes every other thread; threads the child
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
    }
}

#[cfg(test)]
mod tests;
