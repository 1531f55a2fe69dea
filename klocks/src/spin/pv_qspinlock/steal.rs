//! Stealing, [`PvQSpinLock`]'s unfair path: a contender takes a free lock ahead of
//! the queue at slow-path entry (the kernel's `pv_hybrid_queued_unfair_trylock`), and
//! a thread without a queue node steal-spins until it gets the lock. The steal count
//! in the word and the bounds on stealing are explained in `pv_qspinlock.rs`.

use super::{PvQSpinLock, BUDGET, NO_STEAL_MASK, STATS, STEALS_MASK, STEAL_ONE};
use crate::spin::qspinlock::{LOCKED_MASK, LOCKED_VAL, TAIL_MASK};
use crate::stats::{self, Event};
use crate::sync::{cpu_relax, Ordering::*};

impl PvQSpinLock {
    /// One steal attempt: `(t,0,0) -> (t,0+s,1)` while nobody holds the lock and the
    /// queue head is not claiming it; with a queue (`t != 0`) the steal count moves, so
    /// a patient head sees that the lock is in use. Returns the word it saw when it did
    /// not take it.
    fn try_steal(&self) -> Result<(), u32> {
        self.try_steal_unless(NO_STEAL_MASK)
    }

    /// A steal that takes the lock unless a bit of `blocked` is set in the word.
    fn try_steal_unless(&self, blocked: u32) -> Result<(), u32> {
        let val = self.word.load(Relaxed);
        if val & blocked != 0 {
            return Err(val);
        }
        let stolen = if val & TAIL_MASK == 0 {
            val | LOCKED_VAL
        } else {
            let steals = val.wrapping_add(STEAL_ONE) & STEALS_MASK;
            (val & !STEALS_MASK) | steals | LOCKED_VAL
        };
        // Acquire: pairs with the Release in `unlock` (in `pv_qspinlock.rs`). A head
        // that claims the lock meanwhile makes this cmpxchg fail (or its own `try_claim`,
        // in `pv_qspinlock.rs`, fails against ours).
        self.word
            .compare_exchange(val, stolen, Acquire, Relaxed)
            .map(drop)
    }

    /// The kernel's `pv_hybrid_queued_unfair_trylock`: keep trying to steal while
    /// others are queued, for at most the spin budget; give up at once when the queue
    /// is empty (there is no sleeping head to run ahead of: queue and spin as head).
    pub(super) fn steal(&self) -> bool {
        for _ in 0..=BUDGET.spins() {
            match self.try_steal() {
                Ok(()) => return true,
                Err(val) if val & TAIL_MASK == 0 => return false,
                Err(_) => cpu_relax(),
            }
        }
        false
    }

    /// No queue node (see `mcs`): steal-spin, yielding the CPU once the budget is
    /// spent, so that even thousands of slot-less threads cannot starve the owner.
    ///
    /// Unlike a steal at slow-path entry, this one ignores a claiming head's
    /// `pending`: a signal handler that runs on a queue head's own thread (the head
    /// had set `pending` and is now interrupted) would otherwise wait for a bit that
    /// only that head clears, on a lock that may be free. Safe for exclusion, since
    /// every acquisition of this lock, the head's included, is a cmpxchg from a clear
    /// locked byte; only the head's priority over this rare caller is given up.
    pub(super) fn lock_without_node(&self) {
        stats::count(STATS, Event::NoNode);
        loop {
            for _ in 0..=BUDGET.spins() {
                if self.try_steal_unless(LOCKED_MASK).is_ok() {
                    return;
                }
                cpu_relax();
            }
            crate::sync::yield_now();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::spin::qspinlock::{PENDING_VAL, TAIL_OFFSET};

    /// The steal count moves only while a queue exists (so a word with no tail stays
    /// 0 for the fast path) and wraps inside bits 9-15 without touching the tail; a
    /// claiming head (pending) blocks steals.
    #[test]
    fn steals_count_only_while_queued_and_wrap_inside_their_bits() {
        let lock = PvQSpinLock::new();
        assert_eq!(lock.try_steal(), Ok(()));
        assert_eq!(lock.word.load(Relaxed), LOCKED_VAL);
        lock.unlock();

        let tail = 1 << TAIL_OFFSET;
        lock.word.store(tail | STEALS_MASK, Relaxed);
        assert_eq!(lock.try_steal(), Ok(()));
        assert_eq!(
            lock.word.load(Relaxed),
            tail | LOCKED_VAL,
            "127 + 1 wraps to 0"
        );
        lock.unlock();
        assert_eq!(lock.try_steal(), Ok(()));
        assert_eq!(lock.word.load(Relaxed), tail | STEAL_ONE | LOCKED_VAL);
        lock.unlock();

        lock.word.fetch_or(PENDING_VAL, Relaxed);
        assert_eq!(lock.try_steal(), Err(tail | PENDING_VAL | STEAL_ONE));
        lock.word.store(0, Relaxed);
    }
}
