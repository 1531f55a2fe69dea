//! What a `RawRwLock` tells about itself (held? by which writer? the `Debug` view),
//! and the fork child's repair, `forget_waiters`: reads of the word and the writer's
//! id that change nothing, but for the repair.

use super::*;

impl RawRwLock {
    /// Whether a writer holds the lock or any reader does.
    pub fn is_locked(&self) -> bool {
        // Relaxed: a snapshot for the caller.
        let val = self.word.load(Relaxed);
        val & WRITER != 0 || readers(val) != 0 || (val & BIAS != 0 && self.has_biased_readers())
    }

    /// Whether a writer holds the lock (not while it still waits for readers to
    /// leave: they hold it shared).
    pub fn is_locked_exclusive(&self) -> bool {
        // Relaxed: a snapshot for the caller.
        let val = self.word.load(Relaxed);
        // A writer that revokes the bias waits for the table's readers: look at them.
        val & (WRITER | UPGRADABLE) == WRITER && readers(val) == 0 && !self.has_biased_readers()
    }

    /// The thread that holds the write lock, if one does. Exact for "is it me?" (only
    /// the writer stores its own id, and clears it before it releases); a snapshot
    /// otherwise.
    pub fn exclusive_owner(&self) -> Option<u32> {
        // Relaxed: see above.
        let tid = self.writer.load(Relaxed) & !BORROWED;
        let val = self.word.load(Relaxed);
        (tid != 0 && val & (WRITER | UPGRADABLE) == WRITER).then_some(tid)
    }

    /// Whether the calling thread holds the write lock (exact). A thread whose writer
    /// has taken `WRITER` but still waits for the readers inside to leave does not
    /// hold it: a signal handler on it may take a read lock beside the drain (the
    /// role table in `crate::role`), so only a holder is refused (pthread's
    /// `EDEADLK`).
    pub fn write_locked_by_current_thread(&self) -> bool {
        // Relaxed: only this thread stores its own id there (and clears it before it
        // releases), so "is it me?" needs no ordering.
        let writer = self.writer.load(Relaxed);
        let me = owner::current_tid();
        writer == me | BORROWED || (writer == me && !Role::Drainer.held_on(self.address()))
    }

    /// Forgets every waiter, keeping the lock held as it is (readers, or a writer).
    /// For a fork child, whose copy of the lock names waiters that do not exist in it.
    /// A writer that still waits for readers to leave is a waiter too: `WRITER` with
    /// readers inside is forgotten, with its writer's id. A write lock the forking
    /// thread held is the continuation's (called on it), under its new tid.
    ///
    /// # Safety
    /// No other thread uses the lock during the call.
    pub unsafe fn forget_waiters(&self) {
        // SAFETY: the caller's promise. Readers in the table become word readers:
        // the forking thread's too, whose unlock then finds the word.
        unsafe { self.forget_biased_readers() };
        // Relaxed (all): the caller excludes every other thread.
        let val = self.word.load(Relaxed);
        // A writer in its section has no reader inside: with readers, `WRITER` is a
        // drain's (unless it is held upgradable, beside them).
        let draining = readers(val) != 0 && val & UPGRADABLE == 0;
        let keep = if draining {
            READERS_MASK
        } else {
            READERS_MASK | WRITER | UPGRADABLE
        };
        self.word.store(val & keep, Relaxed);
        if draining {
            self.writer.store(0, Relaxed);
        } else if val & WRITER != 0
            && owner::forking_thread_in_parent() == Some(self.writer.load(Relaxed))
        {
            // The forking thread's write lock: its continuation holds it, under its
            // new tid, and releases it.
            self.writer.store(owner::current_tid(), Relaxed);
        }
        // The count of sleeping writers and a writer's claim (`raw_rwlock/claim.rs`).
        self.writers_asleep.store(0, Relaxed);
    }
}

impl std::fmt::Debug for RawRwLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let val = self.word.load(Relaxed);
        f.debug_struct("RawRwLock")
            .field("readers", &readers(val))
            .field("writer_locked", &(val & WRITER != 0))
            .field("writer", &self.writer.load(Relaxed))
            .field("writer_spinning", &(val & WRITER_SPINNING != 0))
            .field("upgradable", &(val & UPGRADABLE != 0))
            .field("writers_waiting", &(val & WRITERS_WAITING != 0))
            .field("readers_waiting", &(val & READERS_WAITING != 0))
            .field("reader_turn", &(val & READER_TURN != 0))
            .field("reader_bias", &(val & BIAS != 0))
            .field("writer_claimed", &self.claimed())
            .finish()
    }
}

#[cfg(loom)]
impl RawRwLock {
    /// For the models of a claimant that never acts: the claim its `claim` makes,
    /// `CLAIMED` and `WRITERS_WAITING`, whose thread then never runs again.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn leave_for_a_frozen_claimant(&self) {
        assert!(self.claim());
    }

    /// Whether a writer's claim stands.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn has_claim(&self) -> bool {
        self.claimed()
    }

    /// For the models of a delegate that never acts: marks the held lock as a writer
    /// spinner and a sleeping writer would, `WRITER_SPINNING | WRITERS_WAITING`,
    /// whose threads then never run again.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn leave_for_a_frozen_writer(&self) {
        // Relaxed: as the waiters' own changes of these flags.
        self.word
            .fetch_or(WRITER_SPINNING | WRITERS_WAITING, Relaxed);
    }
}
