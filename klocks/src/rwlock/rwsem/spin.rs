//! Optimistic spinning (the module doc's "The algorithm", steps on spinning): one
//! spinner at a time tries the lock while its writing owner runs, or for a bounded
//! share of the budget while readers own it, and the nonspinnable bits in the owner
//! word turn spinning off where it was seen to fail (seed 001's adaptive bits).

use super::*;
use crate::spin_on_owner::{spin_on_owner, Look, Pauses, Spun};
use crate::wait::Patience;

impl<P: ReaderSpin> RwSem<P> {
    /// Become the one spinner and spin for the lock. Returns whether we took it (and
    /// counts how a spin that happened ended).
    pub(super) fn optimistic_spin(&self, me: u32, kind: Kind) -> bool {
        // Relaxed, both: the flag is a claim that protects no data.
        if self.spinner.load(Relaxed) != 0
            || self
                .spinner
                .compare_exchange(0, 1, Relaxed, Relaxed)
                .is_err()
        {
            return false;
        }
        let taken = self.spin(me, kind);
        // Relaxed: as above.
        self.spinner.store(0, Relaxed);
        let event = match (kind, taken) {
            (Kind::Read, true) => Event::ReaderSpinAcquired,
            (Kind::Read, false) => Event::ReaderSpinFailed,
            (Kind::Write, true) => Event::SpinAcquired,
            (Kind::Write, false) => Event::SpinFailed,
        };
        stats::count(Self::STATS, event);
        taken
    }

    /// The kernel's `rwsem_optimistic_spin` loop: try, then look at the owner, with
    /// exponential backoff ([`spin_on_owner`]), until we take the lock or spinning
    /// stops paying.
    fn spin(&self, me: u32, kind: Kind) -> bool {
        let limit = BUDGET.spins();
        let mut reader_owned_until: Option<u32> = None;
        // Whether the reader-nonspinnable bit, if set, still stops us: asked once per
        // spin (it reads the clock).
        let mut reader_bit_stops: Option<bool> = None;
        let pauses = Pauses {
            first: 1,
            max: MAX_BACKOFF,
        };
        let spun = spin_on_owner(Self::STATS, limit, pauses, Patience::Forever, |spent| {
            let taken = match kind {
                Kind::Read => self.try_read_unqueued(me),
                Kind::Write => self.try_write_unqueued(me),
            };
            if taken {
                return Look::Done;
            }
            // Relaxed: hints, re-read every look.
            let owner = self.owner.load(Relaxed);
            let count = self.count.load(Relaxed);
            let stop = match kind {
                Kind::Read if owner & RD_NONSPINNABLE != 0 => {
                    *reader_bit_stops.get_or_insert_with(|| !self.readers_may_spin(owner))
                }
                Kind::Read => false,
                Kind::Write => owner & WR_NONSPINNABLE != 0,
            };
            if stop {
                return Look::Stop;
            }
            if count & WRITER_LOCKED != 0 {
                reader_owned_until = None;
                return Look::WhileRuns(writing_owner(owner));
            }
            if readers(count) != 0 {
                // Reader-owned. A reader that could not join is held off by HANDOFF.
                if kind == Kind::Read {
                    return Look::Stop;
                }
                let until = *reader_owned_until
                    .get_or_insert_with(|| spent.saturating_add(reader_owned_spins(count, limit)));
                if spent >= until {
                    self.set_nonspinnable();
                    return Look::Stop;
                }
            } else if count & HANDOFF != 0 {
                return Look::Stop;
            }
            Look::WhileRuns(0)
        });
        matches!(spun, Spun::Done { .. })
    }

    /// A spinning writer's take: free, and not owed to a waiter (sleepers or not).
    fn try_write_unqueued(&self, me: u32) -> bool {
        // Relaxed: the expected value; the cmpxchg decides.
        let mut count = self.count.load(Relaxed);
        while count & (LOCK_MASK | HANDOFF) == 0 {
            // Acquire: pairs with the Release of the unlocks.
            match self
                .count
                .compare_exchange_weak(count, count | WRITER_LOCKED, Acquire, Relaxed)
            {
                Ok(_) => {
                    self.set_owner(me);
                    return true;
                }
                Err(now) => count = now,
            }
        }
        false
    }

    /// A spinning reader's take: no writer and no handoff, sleepers or not.
    pub(super) fn try_read_unqueued(&self, me: u32) -> bool {
        // Relaxed: a pre-check; the RMW decides.
        if self.count.load(Relaxed) & (WRITER_LOCKED | HANDOFF) != 0 {
            return false;
        }
        // Acquire: pairs with the Release in `unlock_exclusive`.
        let before = self.count.fetch_add(READER_BIAS, Acquire);
        if before & (WRITER_LOCKED | HANDOFF) == 0 {
            self.set_reader_owned(me, 0);
            return true;
        }
        // Relaxed: returns a share that carried nothing. The unlock this may have
        // hidden is re-checked when we queue (module doc, "No lost wake-ups").
        self.count.fetch_sub(READER_BIAS, Relaxed);
        false
    }

    /// A writer timed out on a reader-owned lock: mark it nonspinnable.
    fn set_nonspinnable(&self) {
        let bits = match P::POLICY {
            Policy::Never => WR_NONSPINNABLE,
            Policy::Always | Policy::Adaptive => NONSPINNABLE,
        };
        // Relaxed: a hint.
        let mut owner = self.owner.load(Relaxed);
        while owner & READER_OWNED != 0 && owner & bits != bits {
            // Relaxed: a hint.
            match self
                .owner
                .compare_exchange_weak(owner, owner | bits, Relaxed, Relaxed)
            {
                Ok(_) => {
                    stats::count(Self::STATS, Event::Nonspinnable);
                    self.reader_nonspin_set();
                    return;
                }
                Err(now) => owner = now,
            }
        }
    }

    /// Whether readers may spin on an owner word reading `owner`.
    pub(super) fn readers_may_spin(&self, owner: u32) -> bool {
        if owner & RD_NONSPINNABLE == 0 {
            return true;
        }
        #[cfg(not(loom))]
        if P::POLICY == Policy::Adaptive {
            return self.reader_bit_expired();
        }
        false
    }

    /// Whether `READER_NONSPIN_TTL` has passed since a writer last set the reader bit.
    /// Readers ask on every slow path; the clock is read only on every 16th question
    /// about the same setting, and never again once it has expired (a clock read on
    /// each was 12% of the time with 64 threads at load 1).
    #[cfg(not(loom))]
    fn reader_bit_expired(&self) -> bool {
        use std::cell::Cell;
        std::thread_local! {
            /// (lock, the setting's time, questions since the clock was read, expired)
            static SEEN: Cell<(usize, u64, u32, bool)> = const { Cell::new((0, 0, 0, false)) };
        }
        // Relaxed: a hint's age.
        let set_at = self.reader_nonspin_at.load(Relaxed);
        SEEN.with(|seen| {
            let (lock, at, asked, expired) = seen.get();
            if lock == self.addr() && at == set_at && (expired || asked < 16) {
                seen.set((lock, at, asked + 1, expired));
                return expired;
            }
            let expired = clock() >= set_at + READER_NONSPIN_TTL.as_nanos() as u64;
            seen.set((self.addr(), set_at, 1, expired));
            expired
        })
    }

    /// A writer set `RD_NONSPINNABLE`: restart its time to live.
    pub(super) fn reader_nonspin_set(&self) {
        #[cfg(not(loom))]
        if P::POLICY == Policy::Adaptive {
            // Relaxed: a hint's age.
            self.reader_nonspin_at.store(clock(), Relaxed);
        }
    }

    /// The lock was found free by a queueing reader: writers may spin again.
    pub(super) fn clear_wr_nonspinnable(&self) {
        // Relaxed: a hint.
        if self.owner.load(Relaxed) & WR_NONSPINNABLE != 0 {
            self.owner.fetch_and(!WR_NONSPINNABLE, Relaxed);
        }
    }
}

/// The thread to watch on a write-locked lock whose owner word reads `owner`: its
/// writer, or 0 (nobody to watch: spin on) while the writer has not written its id yet.
fn writing_owner(owner: u32) -> u32 {
    if owner & READER_OWNED != 0 {
        0
    } else {
        owner & TID_MASK
    }
}

/// How long a writer spins on a reader-owned lock, in the units of `limit` (the whole
/// budget): 40% of it plus 0.5 µs per reader, capped at all of it.
fn reader_owned_spins(count: u64, limit: u32) -> u32 {
    let per_reader = budget::spins_for_ns(500) as u64;
    let spins = limit as u64 * 2 / 5 + readers(count) * per_reader;
    spins.min(limit as u64) as u32
}
