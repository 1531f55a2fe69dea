//! The write unlock: disown the lock (or give a borrowed one back), then the releasing
//! cmpxchg that decides the wakes, with a sleeping writer woken early when others
//! wait; the releases built on it (`try_unlock_either`, `downgrade`); and the turn
//! rules the release reads (`turn_is_on`, `readers_due`).

use super::*;

impl RawRwLock {
    /// Releases the write lock.
    ///
    /// # Panics
    /// If the calling thread does not hold the write lock (the lock is left as it
    /// was).
    #[inline]
    pub fn unlock_exclusive(&self) {
        let Some(me) = self.disown_write() else {
            // A signal handler's write lock borrowed from its thread's drain: the
            // thread's WRITER stays.
            return;
        };
        // (0,1,0,0,0) -> 0. Release: pairs with the Acquire of the next acquisition.
        if self
            .word
            .compare_exchange(WRITER, 0, Release, Relaxed)
            .is_ok()
        {
            crate::fault::after_release();
        } else {
            self.release_write(me, 0);
        }
    }

    /// Releases the calling thread's hold, read or write, when one look at the word
    /// tells which it is; `false`, having done nothing, when it cannot. For callers
    /// that are not told (pthread's `unlock`), and know the caller holds the lock:
    ///
    /// - readers inside and no `WRITER`: a read hold (a writer's `WRITER` stays set
    ///   until its own unlock, so the caller is not one), released as
    ///   [`unlock_shared`](Self::unlock_shared) releases it;
    /// - `WRITER` alone (no reader inside, not upgradable) with the caller's id as the
    ///   writer: its write hold, released as [`unlock_exclusive`](Self::unlock_exclusive)
    ///   releases it;
    /// - a read hold through the table of visible readers (the reader bias): this
    ///   thread's slot names the lock, which tells it at once;
    /// - anything else (a free lock, a writer draining the readers inside, an
    ///   upgradable holder, a write lock a signal handler borrowed): `false`.
    #[inline]
    pub fn try_unlock_either(&self) -> bool {
        // A thread that holds a slot for the lock holds it for reading (a writer's
        // revocation waited for every slot of the lock).
        if bravo::leave(self.address()) {
            return true;
        }
        // Relaxed: picks which release; the release's own RMW (the fetch_sub of
        // `unlock_shared`, the cmpxchg of `unlock_exclusive`) is the Release that
        // pairs with the next acquisition's Acquire.
        let val = self.word.load(Relaxed);
        if val & WRITER == 0 {
            if readers(val) == 0 {
                return false;
            }
            self.unlock_shared();
            return true;
        }
        // Relaxed: only this thread stores its own id there, so "is it me?" needs no
        // ordering (as in `disown_write`).
        if val & (READERS_MASK | UPGRADABLE) != 0
            || self.writer.load(Relaxed) != owner::current_tid()
        {
            return false;
        }
        self.unlock_exclusive();
        true
    }

    /// Turns the write lock the thread holds into a read lock, letting waiting
    /// readers in with it.
    ///
    /// # Panics
    /// If the calling thread does not hold the write lock.
    pub fn downgrade(&self) {
        match self.disown_write() {
            Some(me) => self.release_write(me, READER),
            // A borrowed write lock becomes a read lock beside its thread's WRITER,
            // as a handler's read would be. Relaxed: this thread's own WRITER holds
            // every other writer and reader out.
            None => {
                self.word.fetch_add(READER, Relaxed);
            }
        }
    }

    /// Checks that the calling thread writes, and forgets it as the writer; its id,
    /// or `None` for a write lock that a signal handler borrowed from its thread's
    /// drain (`borrow_drain`), which this gives back to the thread.
    #[inline]
    pub(super) fn disown_write(&self) -> Option<u32> {
        // Relaxed: only this thread stores its own id there, so "is it me?" needs no
        // ordering.
        let holder = self.writer.load(Relaxed);
        let me = owner::current_tid();
        if holder != me {
            return self.disown_borrowed(holder, me);
        }
        // Relaxed: cleared before the releasing cmpxchg, which orders it before the
        // next writer's store.
        self.writer.store(0, Relaxed);
        Some(me)
    }

    /// The unlock of a write lock this thread does not hold as a writer: a borrowed
    /// one (its thread's id goes back), or misuse (panic).
    #[cold]
    #[inline(never)]
    pub(super) fn disown_borrowed(&self, holder: u32, me: u32) -> Option<u32> {
        if holder != me | BORROWED {
            write_unlock_by_non_writer(holder & !BORROWED, me);
        }
        // Relaxed: as in `disown_write`; the drain it belongs to goes on.
        self.writer.store(me, Relaxed);
        None
    }

    /// The releasing cmpxchg of a write lock that others may wait for: clears
    /// `WRITER` (adds `readers` for a downgrade), wakes one sleeping writer unless a
    /// spinner takes over (with two or more asleep, one before the release too), and
    /// wakes the sleeping readers when no writer sleeps, when they have waited for
    /// their turn, or when the writers' wakes found nobody.
    ///
    /// The writer's id (`me`, cleared by `disown_write`) is put back until the
    /// releasing cmpxchg, for the whole time this unlock decides and wakes a writer
    /// early (a futex call with the lock held): a signal handler that lands there
    /// finds its thread's id on the lock it holds, and panics as any relock does,
    /// instead of waiting for its own thread.
    #[cold]
    pub(super) fn release_write(&self, me: u32, readers: u32) {
        // Relaxed: "is it me?" for this thread alone.
        self.writer.store(me, Relaxed);
        // Acquire: pairs with the Release of a writer's `claim`, so that a cmpxchg
        // that follows the claimant's RMW in the word's order sees the claim
        // (`raw_rwlock/claim.rs`); the cmpxchg decides the transition.
        let mut val = self.word.load(Acquire);
        let mut skip_wake = None;
        let mut readers_due = None;
        let mut woke_early = None;
        loop {
            // A claim keeps `WRITERS_WAITING` (its claimant has slept and takes
            // `WRITER` with it), and the only writer woken is the claimant.
            let claimed = self.claimed();
            let mut new = (val & !(WRITER | UPGRADABLE)) + readers;
            let writers_sleep = val & WRITERS_WAITING != 0;
            // Sleeping readers are woken when no writer sleeps (they enter at once),
            // or with a turn once they have waited READER_TURN_AFTER_US.
            let wake_readers = val & READERS_WAITING != 0
                && (!writers_sleep || *readers_due.get_or_insert_with(|| self.readers_due()));
            if wake_readers {
                new &= !READERS_WAITING;
                if writers_sleep {
                    new |= READER_TURN;
                    // Relaxed: a hint for the writers that wait out the turn; stored
                    // before the release, the last access but the wakes.
                    self.readers_since.store(now_us(), Relaxed);
                }
            }
            let wake_writer = match val & (WRITER_SPINNING | WRITERS_WAITING) {
                _ if claimed => false,
                WRITERS_WAITING => {
                    // Wake the next sleeping writer while we still hold the lock. If
                    // that found one, it will take WRITER and set the flag again, so
                    // the flag stays and the next write unlock wakes the next sleeper;
                    // otherwise the duty passes to the writer that the wake after the
                    // release finds.
                    if !*woke_early.get_or_insert_with(|| self.wake_writer_early()) {
                        new &= !WRITERS_WAITING;
                    }
                    true
                }
                both if both == WRITER_SPINNING | WRITERS_WAITING => {
                    *skip_wake.get_or_insert_with(count_skipped_wake)
                }
                _ => false,
            };
            // Relaxed: cleared before the releasing cmpxchg, which orders it before
            // the next writer's store (and put back if the cmpxchg fails).
            self.writer.store(0, Relaxed);
            // Release: pairs with the Acquire of the next acquisition. Acquire on
            // failure: the value read again is looked at for a claim, as above.
            match self.word.compare_exchange(val, new, Release, Acquire) {
                Ok(_) => {
                    crate::fault::after_release();
                    let word: *const AtomicU32 = &self.word;
                    if claimed {
                        stats::count(STATS, Event::Handoff);
                        stats::woke(STATS, park::wake_one_of_at(word, CLAIMANT_CLASS));
                    }
                    if wake_readers {
                        if writers_sleep {
                            stats::count(STATS, Event::ReaderTurn);
                        }
                        stats::woke(STATS, park::wake_all_of_at(word, READER_CLASS));
                    }
                    if wake_writer {
                        // Also after an early wake: for a writer that slept again on
                        // the held word in between.
                        let woken = park::wake_one_of_at(word, WRITER_CLASS);
                        stats::woke(STATS, woken);
                        // `WRITERS_WAITING` is kept by every writer that has slept,
                        // so no writer may sleep after all: then, unless the early
                        // wake found one, no later write unlock may come to wake the
                        // readers it held back.
                        if woken == 0 && woke_early != Some(true) && new & READERS_WAITING != 0 {
                            stats::woke(STATS, park::wake_all_of_at(word, READER_CLASS));
                        }
                    } else if !claimed
                        && val & (WRITER_SPINNING | WRITERS_WAITING)
                            == WRITER_SPINNING | WRITERS_WAITING
                    {
                        stats::count(STATS, Event::WakeSkipped);
                    }
                    // Spinners watch the writer (after the release: `owner::watch_current`).
                    owner::watch_current();
                    return;
                }
                Err(now) => {
                    // Relaxed: as above.
                    self.writer.store(me, Relaxed);
                    val = now;
                }
            }
        }
    }

    /// Wakes one sleeping writer without a deadline before the releasing cmpxchg
    /// (the lock is still held, so its memory is too); whether it found one. That
    /// writer returns to `lock_exclusive_slow` and cannot give up, so it will take
    /// `WRITER` (or sleep again on a held word, with `WRITERS_WAITING`).
    pub(super) fn wake_writer_early(&self) -> bool {
        // With one writer asleep the wake after the release finds it in time: the
        // early wake pays off with a queue of them. Relaxed: a hint; a stale count
        // only picks the other of two correct paths.
        if self.writers_asleep_count() < 2 {
            return false;
        }
        let woken = park::wake_one_of_at(&self.word, UNTIMED_WRITER_CLASS);
        stats::woke(STATS, woken);
        crate::fault::after_early_wake();
        woken == 1
    }

    /// Whether the readers' turn, granted at `readers_since`, still runs.
    pub(super) fn turn_is_on(&self) -> bool {
        #[cfg(not(loom))]
        {
            // Relaxed: a hint; a stale value lengthens or shortens one turn.
            let since = self.readers_since.load(Relaxed);
            now_us().wrapping_sub(since) < TURN_GRACE_US
        }
        // Time is not modelled: a turn lasts until a reader has entered.
        #[cfg(loom)]
        {
            // Relaxed: as above.
            readers(self.word.load(Relaxed)) == 0
        }
    }

    /// Whether the sleeping readers have waited long enough for a turn.
    pub(super) fn readers_due(&self) -> bool {
        #[cfg(not(loom))]
        {
            // Relaxed: a hint; a stale value moves one turn by one writer.
            let since = self.readers_since.load(Relaxed);
            now_us().wrapping_sub(since) >= READER_TURN_AFTER_US
        }
        // Time is not modelled: sleeping readers are passed over by the first write
        // unlock that asks (`now_us` is 0 under loom, so each sleep and each turn
        // restarts the count) and due at the second, so the models reach both.
        #[cfg(loom)]
        {
            // Relaxed: a counter of the asks, in place of the clock.
            self.readers_since.fetch_add(1, Relaxed) % 2 == 1
        }
    }
}
