//! A writer's timed claim: the bound on a writer's wait among writers.
//!
//! Writers barge, and a sleeping writer woken in turn can lose every race after its
//! wake to the writers the scheduler keeps running. So a writer without a deadline
//! that has waited [`WRITER_FAIR_WAIT_US`] since its first sleep, and still finds
//! `WRITER` taken, *claims* the next write lock: it sets [`CLAIMED`] (one claim at a
//! time, beside the count of sleeping writers in `writers_asleep`). While a claim
//! stands no other writer takes `WRITER` (they sleep instead, as behind a held lock),
//! the write unlock that finds it wakes the claimant alone ([`CLAIMANT_CLASS`]), and
//! the claimant takes `WRITER` and ends the claim. Readers are not held back by a
//! claim: while the claimant is on its way they enter a lock no writer holds, and the
//! claimant drains them as every writer does, so the lock does not idle for the
//! claimant's scheduling.
//!
//! ```text
//! claim:           CLAIMED 0 -> 1 in writers_asleep, then word |= WRITERS_WAITING
//!                  (an RMW even if set: the release that pairs with the unlock)
//! claimant takes:  (r,0,ww,rw,t) -> (r,1,1,rw,0), then CLAIMED -> 0
//! others:          sleep on (r,0,1,*,*) while CLAIMED, as on a held word
//! unlock, claimed: (r,1,1,rw,0) -> (r,0,1,rw,*), futex_wake(CLAIMANT, one)
//! broken:          a writer whose sleep ticked takes past the claim and ends it
//! ```
//!
//! # No lost wake-ups
//!
//! The claim is a separate atomic from the word, so the unlock and the claimant must
//! not both miss the other (store buffering): the claimant's `WRITERS_WAITING` RMW on
//! the word is a Release after its claim, and the unlock reads the word with Acquire
//! before it looks for a claim, and releases by a cmpxchg on the value it read. So
//! either the unlock's cmpxchg comes after that RMW in the word's order and the unlock
//! sees the claim, or it comes before, and the claimant's RMW returns the free word,
//! which the claimant then takes. A sleeping claimant sleeps in the writers' classes
//! too: an unlock that found no claim (a claim made after its look: a writer it woke
//! early, before its release, can claim in that window) wakes a writer as before; if
//! that writer is not the claimant, it finds the lock free under the claim, and before
//! it sleeps behind the claim it wakes the claimant itself. Other writers sleep on a
//! free word only with `WRITERS_WAITING` set, which the claimant takes with `WRITER`
//! (it has slept): its unlock wakes the next of them.
//!
//! # Liveness
//!
//! A claim is a reservation: a claimant that cannot run (a signal handler on it
//! blocks, it is stopped) would hold every writer out. A writer whose sleep ended at
//! its liveness tick (`crate::wait`) takes past the claim and ends it; the claimant
//! finds its claim gone and waits as any writer. A signal handler on the claimant's
//! thread ([`Role::Claimant`]) takes past its own thread's claim and leaves it (the
//! interrupted claimant takes the next release), and sleeps in the claimant's class,
//! so the unlock's wake finds it. A fork child's `forget_waiters` drops the claim.

use super::*;

#[cfg(loom)]
std::thread_local! {
    /// Whether a writer that slept claims under loom, at once (time is not modelled).
    /// Off by default, so that the other models keep exploring the barging writers
    /// that a claim holds out; the models of the claim turn it on. A std
    /// thread-local: loom runs a model's threads on the thread that called `check`.
    pub(crate) static WRITER_CLAIMS_IN_MODELS: Cell<bool> = const { Cell::new(false) };
}

impl RawRwLock {
    /// Whether a writer's claim stands. A hint read apart from the word: the orderings
    /// that make the claim and the unlock meet are `claim`'s and `release_write`'s.
    pub(super) fn claimed(&self) -> bool {
        // Relaxed: see above.
        self.writers_asleep.load(Relaxed) & CLAIMED != 0
    }

    /// How many writers sleep in `sleep_as_writer`, without the claim.
    pub(super) fn writers_asleep_count(&self) -> u16 {
        // Relaxed: a hint (`wake_writer_early`).
        self.writers_asleep.load(Relaxed) & !CLAIMED
    }

    /// Whether a writer that first slept at `first_sleep` (µs) has waited long enough
    /// to claim.
    pub(super) fn claim_due(first_sleep: u32) -> bool {
        #[cfg(not(loom))]
        {
            now_us().wrapping_sub(first_sleep) >= WRITER_FAIR_WAIT_US
        }
        #[cfg(loom)]
        {
            let _ = first_sleep;
            WRITER_CLAIMS_IN_MODELS.with(Cell::get)
        }
    }

    /// Claims the next write lock; whether this thread now holds the claim (another
    /// writer's may stand).
    pub(super) fn claim(&self) -> bool {
        // Relaxed: published by the Release RMW on the word below.
        if self.writers_asleep.fetch_or(CLAIMED, Relaxed) & CLAIMED != 0 {
            return false;
        }
        // Release: pairs with the Acquire of `release_write`'s look at the word, so
        // that an unlock whose cmpxchg follows this RMW sees the claim.
        self.word.fetch_or(WRITERS_WAITING, Release);
        stats::count(STATS, Event::HandoffClaim);
        true
    }

    /// Ends the claim: its claimant took `WRITER`, or a writer whose sleep ticked
    /// took it past the claim.
    pub(super) fn end_claim(&self) {
        // Relaxed: a hint; the holder of `WRITER` ends it before its section.
        self.writers_asleep.fetch_and(!CLAIMED, Relaxed);
    }
}

impl RawRwLock {
    /// A writer that has waited long enough claims, if it may (no deadline, not
    /// upgradable, `WRITER` taken, no other claim): the mark beneath its
    /// [`Role::Claimant`] record if it now holds the claim.
    pub(super) fn try_claim(&self, take: Take, patience: Patience) -> Option<crate::role::Mark> {
        // Relaxed: picks the path; a lock released meanwhile is taken by the caller's
        // next try, claim or not.
        let held = self.word.load(Relaxed) & WRITER != 0;
        if take != Take::Exclusive || !matches!(patience, Patience::Forever) || !held {
            return None;
        }
        // Recorded before the claim shows, as every role: a signal handler on this
        // thread then never waits behind its own thread's claim.
        let mark = Role::Claimant.enter(self.address());
        if self.claim() {
            return Some(mark);
        }
        Role::Claimant.restore(mark);
        None
    }
}
