//! `RawMutex`'s fair unlock (`lock_api::RawMutexFair`): the lock passes to a thread
//! that slept on it, not to a barger (transitions `fair unlock, *` and `sleeper
//! takes` of the module doc).
//!
//! # Why the wake comes before the release
//!
//! `WAITERS` says that threads *may* sleep: a thread that took the lock after a sleep
//! sets it because it cannot know whether others still sleep, and often nobody does.
//! A fair unlock that reserved the lock on `WAITERS` alone would reserve it for
//! nobody, and the lock would idle until a liveness tick broke the reservation. So
//! the unlock first learns whether somebody sleeps, from the futex: still holding the
//! lock, it marks the word (`h = S`: a fair release is under way, and it clears
//! `WAITERS`), then wakes one `SLEEPER` and reads how many the kernel woke.
//!
//! 1. **Nobody woke.** Nobody slept at the wake: the unlock drops the mark and
//!    unlocks as `unlock` does, while it still holds the lock, so nothing of the
//!    mutex is touched after a release. A thread that went to sleep after the mark
//!    saw `WAITERS` clear and set it again (`sleep`), so the plain unlock wakes it:
//!    the clear is what tells this unlock about sleepers that came after its wake.
//! 2. **One woke.** That thread slept and cannot have the lock (we hold it): it is
//!    awake in its slow path and will look at the word. The release reserves the
//!    free lock for a thread that slept, `(me,s,w,S) -> (0,s,1,S)`, and the woken
//!    thread takes it. Should the woken thread have run before the release, found the
//!    lock held and gone back to sleep, it set `WAITERS` on the marked word; the
//!    release sees that and wakes one `SLEEPER` after itself, touching only the
//!    word's address, and whoever it wakes has slept and takes the lock.
//!
//! Every thread that looks at a free word reserved `S` thus either may take it (it
//! has slept in this acquisition, or its sleep ticked) or waits behind a thread that
//! is awake and may; a bargers' `try_lock` fails on it. A thread that slept and is
//! kept from running (a signal handler on it blocks, it is stopped) is passed by the
//! other sleepers, whose sleeps tick: a ticked sleeper has slept, and takes it. A
//! signal handler on the woken thread itself takes it too ([`Role::Sleeper`]: its
//! thread has slept here), as a handler on a claimant's thread takes the claimant's
//! reservation.
//!
//! A pending claim (`h = 1`) is a handoff already: the fair unlock is then the
//! handoff unlock. Claims wait while the mark stands (`claim` refuses a word with
//! `S`), so the two reservations never meet in one word.

use super::*;

impl RawMutex {
    /// Releases the mutex and passes it to a thread that sleeps on it, if one does;
    /// otherwise as [`unlock`](Self::unlock). A thread that never slept (a barger, a
    /// `try_lock`) cannot take the lock in between. `lock_api`'s `unlock_fair` and
    /// [`FairMutex`](crate::FairMutex)'s every unlock.
    ///
    /// # Panics
    /// If the calling thread does not hold the mutex (the word is left untouched).
    #[inline]
    pub fn unlock_fair(&self) {
        let me = owner::current_tid();
        // (me,s,0,0) -> (0,0,0,0), as in `unlock`: nobody sleeps. Release: pairs
        // with the Acquire of the next acquisition.
        match self.word.compare_exchange(me, 0, Release, Relaxed) {
            Ok(_) => crate::fault::after_release(),
            Err(val) => self.unlock_fair_contended(me, val),
        }
    }

    /// The fair unlock of a word `val` with more than its owner in it (module doc).
    #[cold]
    pub(super) fn unlock_fair_contended(&self, me: u32, mut val: u32) {
        loop {
            if owner_of(val) != me {
                unlock_by_non_owner(owner_of(val), me);
            }
            if val & HANDOFF != 0 || val & WAITERS == 0 {
                // A claimant's reservation is a handoff already; without WAITERS
                // nobody sleeps (a spinner takes the lock as from any unlock).
                return self.unlock_beside_others(me, val);
            }
            // Mark: (me,s,1,0) -> (me,s,0,S). Relaxed: only the holder writes the
            // mark, and it orders no data; a sleeper's futex_wait compares the word
            // in the kernel, serialised with our wake below by the futex bucket lock.
            let marked = (val & !WAITERS) | TO_SLEEPER;
            match self.word.compare_exchange(val, marked, Relaxed, Relaxed) {
                Ok(_) => break,
                Err(now) => val = now,
            }
        }
        let word: *const AtomicU32 = &self.word;
        let woken = park::wake_one_of_at(word, SLEEPER);
        stats::woke(STATS, woken);
        if woken == 0 {
            // Nobody slept: unmark, (me,s,w,S) -> (me,s,w,0), and unlock as usual;
            // `w` is set if a thread went to sleep since the mark. Relaxed: we hold
            // the lock; the releasing RMW of the unlock is the Release.
            let val = self.word.fetch_and(!TO_SLEEPER, Relaxed) & !TO_SLEEPER;
            return self.release_contended(val);
        }
        // A handoff: the claims and the sleepers' turns of plain unlocks are spaced
        // from it (`claimed_at`, written while we hold the lock). Relaxed: a hint.
        self.claimed_at.store(now_us(), Relaxed);
        // Release: pairs with the Acquire of the sleeper that takes the lock.
        // Relaxed load: the expected value; the cmpxchg checks it.
        let mut val = self.word.load(Relaxed);
        loop {
            // Pass: (me,s,w,S) -> (0,s,1,S).
            let passed = (val & SPINNING) | WAITERS | TO_SLEEPER;
            match self.word.compare_exchange(val, passed, Release, Relaxed) {
                Ok(_) => break,
                Err(now) => val = now,
            }
        }
        crate::fault::after_release();
        stats::count(STATS, Event::Handoff);
        if val & WAITERS != 0 {
            // A thread went to sleep on the marked word (perhaps the one we woke):
            // wake one, which has slept and may take the lock. Only the address.
            stats::woke(STATS, park::wake_one_of_at(word, SLEEPER));
        }
        // Spinners watch us (after the release: `owner::watch_current`).
        owner::watch_current();
    }
}

// SAFETY: `unlock_fair` releases exactly as `unlock` does, only to a chosen waiter;
// `bump` is lock_api's default (a fair unlock, then `lock`), which yields to the
// sleeper it woke: the re-lock has not slept, so it cannot take the reserved lock.
#[cfg(not(loom))]
unsafe impl lock_api::RawMutexFair for RawMutex {
    #[inline]
    unsafe fn unlock_fair(&self) {
        RawMutex::unlock_fair(self);
    }
}

impl RawMutex {
    /// [`unlock_for_owner`](Self::unlock_for_owner) with a fair unlock: releases the
    /// mutex on behalf of the thread that holds it and passes it to a sleeper if one
    /// sleeps. Whether the mutex was held.
    ///
    /// # Safety
    /// As [`unlock_for_owner`](Self::unlock_for_owner).
    ///
    /// # Panics
    /// As [`unlock_for_owner`](Self::unlock_for_owner).
    pub unsafe fn unlock_fair_for_owner(&self) -> bool {
        // Relaxed: names the hold we release; the fair unlock's RMWs check that the
        // same owner still holds it.
        let val = self.word.load(Relaxed);
        let owner = owner_of(val);
        if owner == 0 {
            return false;
        }
        self.unlock_fair_contended(owner, val);
        true
    }
}
