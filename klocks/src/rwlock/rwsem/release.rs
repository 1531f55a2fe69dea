//! The releases: the read unlock (the last reader wakes the queue), the write unlock
//! (through the wait queue when threads sleep) and the downgrade, which lets the
//! readers at the front of the queue in with the caller (module doc, "No access
//! after the release").

use super::*;

impl<P: ReaderSpin> RwSem<P> {
    /// Releases a read lock, waking the queue if this was the last reader.
    ///
    /// # Panics
    /// If no reader holds the lock (and, in debug builds, if the calling thread
    /// holds no read lock on it).
    #[inline]
    pub fn unlock_shared(&self) {
        held::released_read(self.addr());
        // Relaxed: the expected value; the cmpxchg decides.
        let mut count = self.count.load(Relaxed);
        loop {
            if readers(count) == 0 {
                unlock_shared_unheld();
            }
            let after = count - READER_BIAS;
            if after & (LOCK_MASK | WAITERS | WRITER_WOKEN) == WAITERS {
                // The last reader out, with sleepers to wake (module doc, "No access
                // after the release").
                return self.unlock_queued(READER_BIAS);
            }
            // Release: pairs with the Acquire of the next writer's acquisition. The
            // last access to the lock.
            match self
                .count
                .compare_exchange_weak(count, after, Release, Relaxed)
            {
                Ok(_) => return crate::fault::after_release(),
                Err(now) => count = now,
            }
        }
    }

    /// Releases the write lock, waking the queue if threads sleep.
    ///
    /// # Panics
    /// If the calling thread does not hold the write lock (the lock is left as it
    /// was).
    #[inline]
    pub fn unlock_exclusive(&self) {
        let me = owner::current_tid();
        self.check_write_held(me, "unlock_exclusive");
        // Relaxed: a hint that someone spins on us, so be observable to the probe
        // (after the release: `owner::watch_current`).
        let spun_on = self.spinner.load(Relaxed) != 0;
        self.release_exclusive();
        if spun_on {
            owner::watch_current();
        }
    }

    /// The write unlock's release: `(0,1,w,h) -> (0,0,w,h)`, through the wait queue
    /// when threads sleep.
    #[inline]
    fn release_exclusive(&self) {
        // Relaxed: ordered before the count's Release below; spinners read it racily.
        self.owner.store(0, Relaxed);
        // Relaxed: the expected value; the cmpxchg decides.
        let mut count = self.count.load(Relaxed);
        loop {
            if count & (WAITERS | WRITER_WOKEN) == WAITERS {
                // Sleepers to wake (module doc, "No access after the release").
                return self.unlock_queued(WRITER_LOCKED);
            }
            // Release: pairs with the Acquire of the next acquisition. The last access
            // to the lock.
            match self
                .count
                .compare_exchange_weak(count, count - WRITER_LOCKED, Release, Relaxed)
            {
                Ok(_) => return crate::fault::after_release(),
                Err(now) => count = now,
            }
        }
    }

    /// Turns the calling thread's write lock into a read lock, letting the readers at
    /// the front of the queue in with it.
    ///
    /// # Panics
    /// If the calling thread does not hold the write lock.
    pub fn downgrade(&self) {
        let me = owner::current_tid();
        self.check_write_held(me, "downgrade");
        self.set_reader_owned(me, 0);
        // (0,1,w,h) -> (1,0,w,h). Release: pairs with the Acquire of the readers that
        // join us and of the next writer.
        let before = self
            .count
            .fetch_add(READER_BIAS.wrapping_sub(WRITER_LOCKED), Release);
        held::acquired_read(self.addr());
        if before & WAITERS != 0 {
            self.wake(Wake::ReadOwned);
        }
    }
}
