//! Spinning on the owner: the wait that every sleeping lock's spinner runs before it
//! sleeps. Look at the lock; while it stays taken, spin as long as the thread that
//! holds it runs on a CPU, with a pause between looks that doubles; give up when that
//! thread leaves its CPU, when the spin budget is spent, or when the waiter's
//! deadline passes. The kernel's `mutex_spin_on_owner` and `rwsem_spin_on_owner`
//! (which poll `owner->on_cpu`), with userspace's owner probe ([`owner`](crate::owner))
//! in place of `on_cpu`.
//!
//! [`RawMutex`](crate::RawMutex)'s spinner, [`SpinFutexMutex`](crate::SpinFutexMutex)'s
//! spinner, [`RawRwLock`](crate::RawRwLock)'s readers and writer spinner and
//! [`RwSem`](crate::RwSem)'s optimistic spinner all wait in [`spin_on_owner`]. What
//! differs between them is what a look at the lock means, so each passes its own
//! `look`: it reads the lock's words with the orderings its protocol needs (their
//! comments are there), may act on them (take a free lock, set its spinner's flag
//! again, mark a reader-owned lock nonspinnable) and answers a [`Look`]. This loop
//! touches no lock word and no atomic of its own (the probe's only): it adds nothing
//! to any lock's orderings or transitions.
//!
//! # One look
//!
//! ```text
//! look(spent) ── Done ───────────────────────────────> Spun::Done { looks }
//!      │  └───── Stop ───────────────────────────────> Spun::Stopped
//!      WhileRuns(tid)
//!      │  tid != 0 and the probe says "not running" ──> Spun::OwnerOffCpu
//!      │  the deadline passed ───────────────────────> Spun::Stopped
//!      │  spent >= budget ───────────────────────────> Spun::BudgetSpent
//!      └─ pause `backoff` cpu_relaxes; spent += backoff; backoff doubles up to `max`
//! ```
//!
//! One [`Watch`] per owner, made anew when the owner changes ([`OwnerWatch`]): the
//! kernel's rule, keep spinning on a new owner while it runs too. `WhileRuns(0)` is a
//! look with no owner to watch (a free lock another waiter took first, a writer that
//! has not written its id yet, a reader-owned lock): it spins on within the budget.
//!
//! # Not in this loop
//!
//! The default mutex's claimant (`raw_mutex/handoff.rs`, `await_handoff`) spins on
//! the owner between its sleeps with its own loop, sharing only [`OwnerWatch`]: its
//! budget is spent once across all its sleeps (a claimant woken by an unlock that was
//! not yet the handoff sleeps again at once), it asks the probe only while budget is
//! left, and a take that loses to a changed word retries at once without a pause.
//! In this loop each of those would change what the claimant does (and, under loom,
//! which probe reads a model explores), so it stays as it is.
//!
//! The first pause is the caller's: the default mutex and rwlock adapt it per thread
//! ([`backoff`](crate::backoff)) and use the [`Spun::Done`] look count for that; the
//! others start at one pause.

use crate::owner::Watch;
use crate::stats::{self, Event, Lock};
use crate::sync::cpu_relax_times;
use crate::wait::Patience;

/// What one look at the lock found.
pub(crate) enum Look {
    /// The wait is over: the look took the lock, or saw what the caller waits for.
    Done,
    /// The caller's own reason to stop spinning (a handoff is due, the lock is marked
    /// nonspinnable, spinning there is not worth it).
    Stop,
    /// Spin on while thread `tid` runs; 0: nobody to watch, spin on within the budget.
    WhileRuns(u32),
}

/// How a spin ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Spun {
    /// A look answered [`Look::Done`]; it was the `looks`-th.
    Done { looks: u32 },
    /// A look answered [`Look::Stop`], or the deadline passed.
    Stopped,
    /// The owner is known to be off its CPU (counted as [`Event::OwnerOffCpu`]).
    OwnerOffCpu,
    /// The budget ran out while the owner kept running (or was unknown).
    BudgetSpent,
}

/// The pauses between two looks, in `cpu_relax`es: the first, and the longest (each
/// later one doubles).
#[derive(Clone, Copy)]
pub(crate) struct Pauses {
    pub(crate) first: u32,
    pub(crate) max: u32,
}

/// Spins on the lock's owner, `budget` `cpu_relax`es at most, calling `look(spent)`
/// (pauses spent so far) at every look (module doc). `lock` names whose
/// [`Event::OwnerOffCpu`] the `stats` feature counts.
pub(crate) fn spin_on_owner(
    lock: Lock,
    budget: u32,
    pauses: Pauses,
    patience: Patience,
    mut look: impl FnMut(u32) -> Look,
) -> Spun {
    let mut spent = 0u32;
    let mut backoff = pauses.first;
    let mut looks = 0;
    let mut watch = OwnerWatch::new();
    loop {
        looks += 1;
        let owner = match look(spent) {
            Look::Done => return Spun::Done { looks },
            Look::Stop => return Spun::Stopped,
            Look::WhileRuns(owner) => owner,
        };
        if owner != 0 && watch.running(owner) == Some(false) {
            stats::count(lock, Event::OwnerOffCpu);
            return Spun::OwnerOffCpu;
        }
        if patience.expired() {
            return Spun::Stopped;
        }
        if spent >= budget {
            return Spun::BudgetSpent;
        }
        // Back off: an owner that re-takes the lock at once keeps the line in its
        // cache for a run of critical sections instead of losing it to our loads
        // after each one.
        cpu_relax_times(backoff);
        spent = spent.saturating_add(backoff);
        backoff = (backoff * 2).min(pauses.max);
    }
}

/// The [`Watch`] of the lock's current owner, made anew when the owner changes (the
/// kernel's rule: keep spinning on a new owner while it runs too). For waits that
/// spin on the owner in a loop of their own (the default mutex's claimant).
pub(crate) struct OwnerWatch(Option<(u32, Watch)>);

impl OwnerWatch {
    pub(crate) fn new() -> Self {
        Self(None)
    }

    /// Whether thread `owner` runs on a CPU ([`Watch::owner_running`]).
    pub(crate) fn running(&mut self, owner: u32) -> Option<bool> {
        let (_, watch) = match &mut self.0 {
            Some(w) if w.0 == owner => w,
            _ => self.0.insert((owner, Watch::new(owner))),
        };
        watch.owner_running()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::catalog::MutexKind;

    const LOCK: Lock = Lock::Mutex(MutexKind::Default);
    const PAUSES: Pauses = Pauses { first: 1, max: 4 };

    #[test]
    fn the_pauses_double_up_to_their_longest_and_the_budget_ends_the_spin() {
        let mut seen = Vec::new();
        let spun = spin_on_owner(LOCK, 10, PAUSES, Patience::Forever, |spent| {
            seen.push(spent);
            Look::WhileRuns(0)
        });
        assert_eq!(spun, Spun::BudgetSpent);
        // Pauses 1, 2, 4, 4: the look after 11 pauses is the last.
        assert_eq!(seen, [0, 1, 3, 7, 11]);
    }

    #[test]
    fn the_look_ends_the_spin_with_its_count_or_its_stop() {
        let mut looks = 0;
        let spun = spin_on_owner(LOCK, 1_000, PAUSES, Patience::Forever, |_| {
            looks += 1;
            if looks == 3 {
                Look::Done
            } else {
                Look::WhileRuns(0)
            }
        });
        assert_eq!(spun, Spun::Done { looks: 3 });
        let spun = spin_on_owner(LOCK, 1_000, PAUSES, Patience::Forever, |_| Look::Stop);
        assert_eq!(spun, Spun::Stopped);
    }

    #[test]
    fn a_passed_deadline_stops_the_spin_before_the_budget() {
        let past = Patience::Until(std::time::Instant::now());
        let spun = spin_on_owner(LOCK, 1_000, PAUSES, past, |_| Look::WhileRuns(0));
        assert_eq!(spun, Spun::Stopped);
    }
}
