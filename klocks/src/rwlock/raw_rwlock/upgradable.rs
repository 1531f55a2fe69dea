//! The upgradable read lock (`lock_api`'s `RawRwLockUpgrade`): `WRITER` plus
//! `UPGRADABLE`, taken without draining the readers, so readers enter beside it;
//! `upgrade` drains them, and the downgrades give the lock back to readers.

use super::*;

impl RawRwLock {
    /// Takes the lock upgradable: readers go on entering beside it, writers and
    /// other upgradable holders wait; [`upgrade`](Self::upgrade) then makes it a
    /// write lock without letting a writer in between. It is taken as the write lock
    /// is (`WRITER` with `UPGRADABLE`), without the drain.
    #[inline]
    pub fn lock_upgradable(&self) {
        let me = owner::current_tid();
        // (0,0,0,0,0) -> (0,1u,0,0,0). Acquire: pairs with the Release of the unlocks.
        if self
            .word
            .compare_exchange(0, WRITER | UPGRADABLE, Acquire, Relaxed)
            .is_ok()
        {
            // Relaxed: as in `lock_exclusive`.
            self.writer.store(me, Relaxed);
        } else if !self.take_from_biased(me, Take::Upgradable) {
            self.lock_exclusive_slow(me, Take::Upgradable, Patience::Forever);
        }
    }

    /// Takes the lock upgradable if no writer or upgradable holder holds it (and no
    /// reader turn is on, nor a writer's claim stands), whatever readers are inside.
    pub fn try_lock_upgradable(&self) -> bool {
        let me = owner::current_tid();
        // Relaxed: picks the transition; the cmpxchg decides.
        let val = self.word.load(Relaxed);
        // Acquire: as in `lock_exclusive`.
        let took = val & (WRITER | READER_TURN) == 0
            && !self.claimed()
            && self
                .word
                .compare_exchange(val, val | WRITER | UPGRADABLE, Acquire, Relaxed)
                .is_ok();
        if took {
            // Relaxed: as in `lock_exclusive`.
            self.writer.store(me, Relaxed);
        }
        took
    }

    /// Releases the upgradable lock.
    ///
    /// # Panics
    /// If the calling thread does not hold it (the lock is left as it was).
    pub fn unlock_upgradable(&self) {
        let Some(me) = self.disown_write() else {
            return;
        };
        // (r,1u,0,0,0) -> (r,0,0,0,0). Relaxed: picks the transition; the cmpxchg
        // decides, and its Release pairs with the Acquire of the next writer's
        // acquisition.
        let val = self.word.load(Relaxed);
        let released = val & !(READERS_MASK | WRITER | UPGRADABLE | BIAS) == 0
            && self
                .word
                .compare_exchange(val, val & (READERS_MASK | BIAS), Release, Relaxed)
                .is_ok();
        if released {
            crate::fault::after_release();
        } else {
            self.release_write(me, 0);
        }
    }

    /// Makes the upgradable lock the calling thread holds a write lock: no new reader
    /// enters from here, and it waits for the readers inside to leave (as a writer's
    /// drain does).
    ///
    /// # Panics
    /// If the calling thread does not hold the lock upgradable.
    pub fn upgrade(&self) {
        if self.check_upgradable() {
            // Relaxed: the flag publishes nothing; the drain's Acquire loads pair
            // with the readers' Release unlocks.
            self.word.fetch_and(!UPGRADABLE, Relaxed);
            self.drain_readers(Patience::Forever);
        }
    }

    /// Makes the upgradable lock a write lock if no reader is inside; whether it did.
    ///
    /// # Panics
    /// If the calling thread does not hold the lock upgradable.
    pub fn try_upgrade(&self) -> bool {
        if !self.check_upgradable() {
            return true;
        }
        // Readers in the table: as a `try_lock_exclusive` that finds them, fail.
        if !self.try_revoke_bias() {
            return false;
        }
        // Relaxed: picks the transition; the cmpxchg decides.
        let mut val = self.word.load(Relaxed);
        while readers(val) == 0 {
            // Acquire: pairs with the Release of the last reader's unlock.
            match self
                .word
                .compare_exchange(val, val & !UPGRADABLE, Acquire, Relaxed)
            {
                Ok(_) => return true,
                Err(now) => val = now,
            }
        }
        false
    }

    /// Takes the lock upgradable unless `deadline` passes first; whether it did. As
    /// [`lock_upgradable`](Self::lock_upgradable), giving up at the deadline (and at
    /// once, `false`, if the calling thread holds the write or upgradable lock).
    #[cfg(not(loom))]
    pub fn try_lock_upgradable_until(&self, deadline: std::time::Instant) -> bool {
        let me = owner::current_tid();
        // Acquire: as in `lock_upgradable`.
        if self
            .word
            .compare_exchange(0, WRITER | UPGRADABLE, Acquire, Relaxed)
            .is_ok()
        {
            // Relaxed: as in `lock_exclusive`.
            self.writer.store(me, Relaxed);
            return true;
        }
        self.take_from_biased(me, Take::Upgradable)
            || self.lock_exclusive_slow(me, Take::Upgradable, Patience::Until(deadline))
    }

    /// Makes the upgradable lock a write lock unless `deadline` passes before the
    /// readers inside have left; whether it did. On `false` the calling thread still
    /// holds the lock upgradable: `UPGRADABLE` is set again, so readers enter beside
    /// it again (readers that slept meanwhile are woken at its unlock, as after
    /// [`downgrade_to_upgradable`](Self::downgrade_to_upgradable)).
    ///
    /// # Panics
    /// If the calling thread does not hold the lock upgradable.
    #[cfg(not(loom))]
    pub fn try_upgrade_until(&self, deadline: std::time::Instant) -> bool {
        if !self.check_upgradable() {
            return true;
        }
        // Relaxed: as in `upgrade`.
        self.word.fetch_and(!UPGRADABLE, Relaxed);
        let patience = Patience::Until(deadline);
        let outer = Role::Drainer.enter(self.address());
        let drained = self.revoke_bias(patience) && self.wait_until_no_reader(patience);
        Role::Drainer.restore(outer);
        if !drained {
            // Relaxed: only this thread (or a handler on it) sets it, as in the
            // timed writer's give-up. Release: pairs with the Acquire of the readers
            // that enter beside the lock again, as in `downgrade_to_upgradable`.
            self.word.fetch_and(!DRAIN_SLEEPS, Relaxed);
            self.word.fetch_or(UPGRADABLE, Release);
        }
        drained
    }

    /// Turns the upgradable lock into a read lock.
    ///
    /// # Panics
    /// If the calling thread does not hold the lock upgradable.
    pub fn downgrade_upgradable(&self) {
        if self.check_upgradable() {
            if let Some(me) = self.disown_write() {
                self.release_write(me, READER);
            }
        }
    }

    /// Turns the write lock the calling thread holds into an upgradable lock:
    /// readers may enter beside it from here (sleeping ones are woken at its unlock).
    ///
    /// # Panics
    /// If the calling thread does not hold the write lock.
    pub fn downgrade_to_upgradable(&self) {
        // Relaxed: only this thread stores its own id there.
        let holder = self.writer.load(Relaxed);
        let me = owner::current_tid();
        if holder != me || self.word.load(Relaxed) & (WRITER | UPGRADABLE) != WRITER {
            write_unlock_by_non_writer(holder & !BORROWED, me);
        }
        // Release: pairs with the Acquire of the readers that enter beside it, which
        // then see the write section's writes.
        self.word.fetch_or(UPGRADABLE, Release);
    }

    /// Whether the calling thread holds the lock upgradable (`false` for a write lock
    /// a signal handler borrowed from its thread's drain: it is exclusive already);
    /// panics otherwise.
    pub(super) fn check_upgradable(&self) -> bool {
        // Relaxed: only this thread stores its own id there.
        let holder = self.writer.load(Relaxed);
        let me = owner::current_tid();
        if holder == me | BORROWED {
            return false;
        }
        if holder != me || self.word.load(Relaxed) & UPGRADABLE == 0 {
            panic!("klocks: thread {me} upgraded or downgraded a klocks::RwLock it does not hold upgradable");
        }
        true
    }
}
