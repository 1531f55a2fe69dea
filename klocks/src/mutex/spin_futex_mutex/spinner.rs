//! [`SpinFutexMutex`]'s one spinner: a waiter that finds the owner running sets the
//! `SPINNING` flag, `(o,0,w) -> (o,1,w)`, and spins while the owner runs, taking the
//! lock when it comes free; unlocks leave the wake-up to it. The word and the
//! argument against lost wake-ups are in `spin_futex_mutex.rs`.

use super::{owner_of, waiters_after, SpinFutexMutex, BUDGET, MAX_BACKOFF, SPINNING, STATS};
use crate::role::Role;
use crate::spin_on_owner::{spin_on_owner, Look, Pauses, Spun};
use crate::stats::{self, Event};
use crate::sync::Ordering::*;
use crate::wait::Patience;

impl SpinFutexMutex {
    /// Become the one spinner, `(o,0,w) -> (o,1,w)`, and spin on the owner. Returns
    /// whether we took the lock; otherwise we are no longer the spinner. The role is
    /// recorded for the whole spin ([`Role::Spinner`]): a signal handler on this
    /// thread that sleeps on this mutex clears the flag first.
    pub(super) fn spin(&self, me: u32, slept: bool) -> bool {
        let outer = Role::Spinner.enter(self.address());
        let took = self.spin_as_spinner(me, slept);
        Role::Spinner.restore(outer);
        took
    }

    fn spin_as_spinner(&self, me: u32, slept: bool) -> bool {
        // Relaxed: the expected value for the claim below.
        let mut val = self.word.load(Relaxed);
        loop {
            if val & SPINNING != 0 {
                return false;
            }
            // Relaxed: SPINNING is a claim on the same word; it protects no data.
            match self
                .word
                .compare_exchange(val, val | SPINNING, Relaxed, Relaxed)
            {
                Ok(_) => break,
                Err(now) => val = now,
            }
        }
        if self.spin_on_owner(me, slept) {
            stats::count(STATS, Event::SpinAcquired);
            return true;
        }
        stats::count(STATS, Event::SpinFailed);
        // (*,1,*) -> (*,0,*). Relaxed: as above. An unlock that skipped its wake for
        // us left WAITERS set on a free word: the caller's next `try_acquire` or
        // `sleep` (in `spin_futex_mutex.rs`) sees that (its module doc, "No lost
        // wake-ups").
        self.word.fetch_and(!SPINNING, Relaxed);
        false
    }

    /// Spin while the owner runs, within the budget ([`spin_on_owner`]); take the
    /// lock when it is free, `(0,1,w) -> (me,0,w|slept)`.
    fn spin_on_owner(&self, me: u32, slept: bool) -> bool {
        let pauses = Pauses {
            first: 1,
            max: MAX_BACKOFF,
        };
        let spun = spin_on_owner(STATS, BUDGET.spins(), pauses, Patience::Forever, |_| {
            // Relaxed: we only watch; the taking cmpxchg below is the Acquire.
            let val = self.word.load(Relaxed);
            let owner = owner_of(val);
            if owner == 0 {
                let new = waiters_after(val, slept) | me;
                // Acquire: pairs with the Release in `unlock` (in `spin_futex_mutex.rs`).
                if self
                    .word
                    .compare_exchange(val, new, Acquire, Relaxed)
                    .is_ok()
                {
                    return Look::Done;
                }
            }
            Look::WhileRuns(owner)
        });
        matches!(spun, Spun::Done { .. })
    }
}

#[cfg(loom)]
impl SpinFutexMutex {
    /// For the models of a delegate that never acts: becomes the spinner of a held
    /// lock, `(o,0,w) -> (o,1,w)`, and stops there for good (the caller returns).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn freeze_as_spinner(&self) {
        // Relaxed: as in `spin_as_spinner`.
        let _ = self.word.fetch_update(Relaxed, Relaxed, |val| {
            (owner_of(val) != 0 && val & SPINNING == 0).then_some(val | SPINNING)
        });
    }
}
