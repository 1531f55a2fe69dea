//! `RawMutex`'s timed handoff: a waiter that still waits after [`FAIR_WAIT_US`]
//! claims the lock (`claim`), the next unlock reserves it and wakes the claimant
//! alone, and the claimant takes it (`claimant takes`). A waiter counts that time
//! from its first sleep, and claims if the mutex's last claim is [`FAIR_INTERVAL_US`]
//! old; or, while it is on a CPU, from its first spin that the owner outran, and
//! claims if the last claim is [`RUNNING_INTERVAL_US`] old ([`Claim`]). The module
//! doc of `raw_mutex` explains why, and how a signal handler on the claimant's thread
//! is served ("Signals").

use super::*;
use crate::role::Mark;

#[cfg(loom)]
std::thread_local! {
    /// Whether a waiter that slept claims a handoff under loom, at once (time is not
    /// modelled). A model that turns it off explores the woken waiter that finds the
    /// lock taken and sleeps again as a plain sleeper, which the claim otherwise
    /// pre-empts. A std thread-local: loom runs a model's threads on the thread that
    /// called `check`.
    pub(crate) static CLAIMS_IN_MODELS: Cell<bool> = const { Cell::new(true) };
    /// Whether a waiter on its CPU whose spin the owner outran claims under loom, at
    /// once. Off by default, so that the other models keep exploring the yields and
    /// sleeps that such a claim pre-empts; the models that turn it on explore the
    /// claimant that never slept.
    pub(crate) static RUNNING_CLAIMS_IN_MODELS: Cell<bool> = const { Cell::new(false) };
}

#[cfg(all(test, not(loom)))]
std::thread_local! {
    /// Whether a waiter on its CPU may claim in klocks' unit tests. The tests of the
    /// paths that end in a plain sleep turn it off in their waiter: on a loaded
    /// machine a waiter's spins can outrun the test's polling owner for 1 ms, and its
    /// claim then pre-empts the sleep the test waits for (the running claim has tests
    /// of its own).
    pub(crate) static RUNNING_CLAIMS_IN_TESTS: Cell<bool> = const { Cell::new(true) };
}

/// Which waiter claims a handoff, and since when it has waited (µs).
#[derive(Clone, Copy)]
// `since` is read by the native clock only (time is not modelled under loom).
#[cfg_attr(loom, allow(dead_code))]
pub(in crate::mutex) enum Claim {
    /// A waiter that slept at `since` and, woken, still finds the lock taken. The
    /// reserved lock waits for it to be scheduled, so these claims are spaced.
    Slept { since: u32 },
    /// A waiter on its CPU whose spins the owner has outrun since `since` (its spin
    /// budget ran out with the owner running and the lock taken). It takes a
    /// reserved lock at its next look, so its claims may come closer together.
    Running { since: u32 },
}

impl Claim {
    /// Whether the claimant has slept (it may have eaten a sleeper's wake, and takes
    /// the lock with `WAITERS`).
    fn slept(self) -> bool {
        matches!(self, Claim::Slept { .. })
    }

    /// The event the `stats` feature counts for the claim.
    pub(super) fn event(self) -> Event {
        match self {
            Claim::Slept { .. } => Event::HandoffClaim,
            Claim::Running { .. } => Event::RunningClaim,
        }
    }
}

impl RawMutex {
    /// The lock is reserved and free: the unlock that reserved it owes the claimant
    /// a wake, which it makes after its release, and its thread may be kept from
    /// making it for long: preempted, or interrupted by a signal handler that now
    /// waits here for the claimant to take and release the lock. So a waiter about to
    /// sleep on a reserved lock makes that wake itself. One more wake is harmless: the
    /// claimant takes the reserved lock, or finds it taken already and waits again.
    pub(super) fn wake_owed_claimant(&self) {
        stats::woke(STATS, park::wake_one_of_at(&self.word, CLAIMANT));
    }

    /// A waiter that still waits: claim a handoff, `(o,s,w,0) -> (o,s,w|slept,1)`, if
    /// `claim` is due ([`claim_is_due`]). Whether it claimed; if it did not, the
    /// thread's claim record is `outer` again.
    pub(in crate::mutex) fn claim(&self, claim: Claim, outer: Mark) -> bool {
        if !claim_is_due(claim, &self.claimed_at) {
            return false;
        }
        // Relaxed: picks the transition; the claim protects no data (the take is the
        // Acquire).
        let mut val = self.word.load(Relaxed);
        loop {
            // A fair unlock under way (TO_SLEEPER) passes the lock to a thread that
            // slept, which a claimant is too: no claim beside it.
            if owner_of(val) == 0 || val & (HANDOFF | TO_SLEEPER) != 0 {
                return false;
            }
            // Recorded before the word says so: a signal handler that sees HANDOFF on
            // this thread must know the claim is its thread's.
            let _ = Role::Claimant.enter(self.address());
            // Relaxed: as above. WAITERS if the claimant has slept: it takes with it.
            let new = val | HANDOFF | waiters_after(val, claim.slept());
            match self.word.compare_exchange(val, new, Relaxed, Relaxed) {
                Ok(_) => {
                    // Relaxed: a rate limit, read by later claimants as a hint.
                    self.claimed_at.store(now_us(), Relaxed);
                    return true;
                }
                Err(now) => {
                    Role::Claimant.restore(outer);
                    val = now;
                }
            }
        }
    }

    /// The claimant waits for the unlock that reserves the lock for it, then takes
    /// it: `(0,s,w,1) -> (me,s,w|slept,0)`. Spins while the owner runs, sleeps as the
    /// `CLAIMANT` otherwise (and as a `SLEEPER`: should another thread's handler
    /// consume the claim, the wakes that pass the sleepers' duty on reach us; so a
    /// sleep here sets `slept`, for this take and the caller's next). `false` if the
    /// claim was consumed (then the lock is not ours): by a signal handler on this
    /// thread, or by one on another thread that interrupted a claim in the making
    /// (module doc, "Signals"). The caller restores the thread's claim record.
    pub(super) fn await_handoff(&self, me: u32, slept: &mut bool) -> bool {
        let mut watch = OwnerWatch::new();
        let budget = BUDGET.spins();
        let mut spent = 0;
        loop {
            if !self.claimed_by_this_thread() {
                return false;
            }
            // Relaxed: picks the transition; the take below is the Acquire.
            let val = self.word.load(Relaxed);
            let owner = owner_of(val);
            if owner == 0 && val & HANDOFF == 0 {
                // Free and no longer reserved: someone consumed the claim. The
                // caller barges (or takes what a fair unlock left for a sleeper).
                return false;
            }
            if owner == 0 {
                // Only a claimant's take clears HANDOFF: nobody else can take it
                // meanwhile (but a handler on this thread, which consumes the claim
                // record first). Acquire: pairs with the Release of the handoff
                // unlock.
                if self
                    .word
                    .compare_exchange(
                        val,
                        (val & !HANDOFF) | waiters_after(val, *slept) | me,
                        Acquire,
                        Relaxed,
                    )
                    .is_ok()
                {
                    return true;
                }
                continue;
            }
            if val & HANDOFF == 0 {
                // Held, and no longer reserved: someone consumed the claim.
                return false;
            }
            if spent < budget && watch.running(owner) != Some(false) {
                cpu_relax_times(MAX_BACKOFF);
                spent += MAX_BACKOFF;
                continue;
            }
            stats::count(STATS, Event::Sleep);
            // Bounded: the unlock that reserved the lock owes us the wake after its
            // release, and its thread may be kept from making it (`crate::wait`).
            let _ = Patience::Forever.sleep(&self.word, val, CLAIMANT | SLEEPER);
            *slept = true;
        }
    }

    /// Whether the reservation of a free, reserved lock has outlived
    /// [`RESERVATION_EXPIRY_US`] (its time is in `claimed_at`, written by the unlock
    /// that reserved it). Under loom, always: the models that tick
    /// (`wait::TICKS_IN_MODELS`) are those of a claimant that never takes its lock.
    pub(super) fn reservation_expired(&self) -> bool {
        #[cfg(not(loom))]
        {
            // Relaxed: a hint; a stale value moves the expiry by at most one claim.
            now_us().wrapping_sub(self.claimed_at.load(Relaxed)) >= RESERVATION_EXPIRY_US
        }
        #[cfg(loom)]
        true
    }

    /// Whether this thread's recorded claim is on this mutex.
    pub(super) fn claimed_by_this_thread(&self) -> bool {
        Role::Claimant.held_on(self.address())
    }

    /// The mutex's address, as a thread's role records name it.
    pub(in crate::mutex) fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }
}

/// Whether `claim` may be made now: its waiter has waited [`FAIR_WAIT_US`], and the
/// mutex's last claim is [`FAIR_INTERVAL_US`] old (a waiter that slept) or
/// [`RUNNING_INTERVAL_US`] old (a waiter on its CPU). Under loom a claim is due as
/// its model's switch says (time is not modelled), so the models reach the handoff.
fn claim_is_due(claim: Claim, claimed_at: &AtomicU32) -> bool {
    #[cfg(not(loom))]
    {
        let (since, interval) = match claim {
            Claim::Slept { since } => (since, FAIR_INTERVAL_US),
            Claim::Running { since } => (since, RUNNING_INTERVAL_US),
        };
        #[cfg(test)]
        if matches!(claim, Claim::Running { .. }) && !RUNNING_CLAIMS_IN_TESTS.with(Cell::get) {
            return false;
        }
        let now = now_us();
        // Relaxed: a hint; a stale value only moves one claim by one interval.
        let last = claimed_at.load(Relaxed);
        now.wrapping_sub(since) >= FAIR_WAIT_US && now.wrapping_sub(last) >= interval
    }
    #[cfg(loom)]
    {
        let _ = claimed_at;
        match claim {
            Claim::Slept { .. } => CLAIMS_IN_MODELS.with(Cell::get),
            Claim::Running { .. } => RUNNING_CLAIMS_IN_MODELS.with(Cell::get),
        }
    }
}
