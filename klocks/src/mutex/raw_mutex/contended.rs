//! `RawMutex`'s contended lock: try, spin on the owner as the one spinner, claim a
//! handoff once the wait is long (at once if still on its CPU, else after a sleep),
//! yield a few times, sleep; a thread whose turn is over ([`Turn`]) sleeps at once
//! (transitions `barge`, `start spin`, `spin again`, `spinner takes`, `stop spin`,
//! `sleep` of the module doc).

use super::handoff::Claim;
use super::*;
use crate::role::Mark;

impl RawMutex {
    /// Everything after a failed fast path; whether we took the lock (always, unless
    /// `patience` ran out).
    #[cold]
    pub(super) fn lock_contended(&self, me: u32, patience: Patience) -> bool {
        // This thread's record as a waiter that slept here (`Role::Sleeper`), made
        // before its first sleep: a signal handler on it may take a lock that a fair
        // unlock reserved for the thread.
        let mut sleeper = None;
        let took = self.wait_for_lock(me, patience, &mut sleeper);
        if let Some(outer) = sleeper {
            Role::Sleeper.restore(outer);
        }
        took
    }

    /// Records this thread as a waiter that sleeps on this mutex, once per slow path.
    fn note_sleeper(&self, sleeper: &mut Option<Mark>) {
        if sleeper.is_none() {
            *sleeper = Some(Role::Sleeper.enter(self.address()));
        }
    }

    /// `lock_contended` with this thread's sleeper record in `sleeper`.
    fn wait_for_lock(&self, me: u32, patience: Patience, sleeper: &mut Option<Mark>) -> bool {
        // Relaxed: our own earlier acquisition's write, if we hold the lock.
        if owner_of(self.word.load(Relaxed)) == me {
            if patience.gives_up() {
                return false;
            }
            relock_by_owner(me);
        }
        stats::count(STATS, Event::LockSlowpath);
        let mut slept_since = None;
        // When a spin of ours first ended with the owner still running and the lock
        // still taken: the start of a wait that only a handoff ends for certain.
        let mut kept_out_since = None;
        let mut yields = 0;
        // Whether our last sleep ended by its liveness tick, not a wake: then a
        // delegate may not be acting (`crate::wait`), and `try_acquire` takes what it
        // left.
        let mut ticked = false;
        // Whether we slept before a fair unlock could have reserved the lock for the
        // threads that slept (`sleeper takes`): on a word without `TO_SLEEPER`, or
        // until a wake or a tick. A sleep attempt on a free word so reserved that
        // returned at once does not count: the reservation is for the threads that
        // were there first, and a re-lock that barges so (`bump`'s) is no sleeper.
        // A signal handler on a thread that waits here as a sleeper counts as its
        // thread: the fair unlock may have woken that thread, which cannot take the
        // lock until the handler returns (`Role::Sleeper`, read before this level
        // records itself).
        let mut queued = Role::Sleeper.held_on(self.address());
        // Relaxed: picks the path; `sleep` reads the word again.
        if owner_of(self.word.load(Relaxed)) != 0 && Turn::Mutex.is_over() {
            stats::count(STATS, Event::TurnOver);
            self.note_sleeper(sleeper);
            (ticked, queued) = self.sleep(patience, false);
            slept_since = Some(now_us());
            Turn::Mutex.begin();
        }
        loop {
            let slept = slept_since.is_some();
            let took = self.try_acquire(me, slept, queued, std::mem::take(&mut ticked));
            let spun = if took {
                Spin::Took
            } else {
                self.spin(me, slept, queued, patience)
            };
            if spun == Spin::Took {
                return true;
            }
            if patience.expired() {
                let took = self.give_up(me, slept, queued);
                if !took {
                    stats::count(STATS, Event::Timeout);
                }
                return took;
            }
            if spun == Spin::OwnerKeptRunning {
                let since = *kept_out_since.get_or_insert_with(now_us);
                if let Some(took) = self.claim_and_await(
                    me,
                    Claim::Running { since },
                    patience,
                    &mut slept_since,
                    sleeper,
                    &mut queued,
                ) {
                    if took {
                        return true;
                    }
                    continue;
                }
            }
            if spun == Spin::OwnerKeptRunning && yields < YIELDS_BEFORE_SLEEP {
                yields += 1;
                stats::count(STATS, Event::Yield);
                crate::sync::yield_now();
                continue;
            }
            if let Some(since) = slept_since {
                if let Some(took) = self.claim_and_await(
                    me,
                    Claim::Slept { since },
                    patience,
                    &mut slept_since,
                    sleeper,
                    &mut queued,
                ) {
                    if took {
                        return true;
                    }
                    continue;
                }
            }
            self.note_sleeper(sleeper);
            let counts;
            (ticked, counts) = self.sleep(patience, queued);
            queued |= counts;
            slept_since.get_or_insert_with(now_us);
            Turn::Mutex.begin();
            yields = 0;
        }
    }

    /// Claim a handoff if `claim` is due and we wait without a deadline, and if we
    /// claimed, wait for the lock to be handed to us. `None`: no claim; `Some(took)`
    /// otherwise, `false` if a signal handler on this thread took the lock and the
    /// claim, or another thread's did (module doc, "Signals"). A claimant that slept
    /// is marked in `slept_since`: it may have eaten a sleeper's wake.
    fn claim_and_await(
        &self,
        me: u32,
        claim: Claim,
        patience: Patience,
        slept_since: &mut Option<u32>,
        sleeper: &mut Option<Mark>,
        queued: &mut bool,
    ) -> Option<bool> {
        if !matches!(patience, Patience::Forever) {
            return None;
        }
        // A signal handler that claims keeps the claim of the code it interrupted.
        let outer = Role::Claimant.mark();
        if !self.claim(claim, outer) {
            return None;
        }
        stats::count(STATS, claim.event());
        // The claimant may sleep, and a sleeper's wake may reach it.
        self.note_sleeper(sleeper);
        let mut slept = slept_since.is_some();
        let took = self.await_handoff(me, &mut slept);
        Role::Claimant.restore(outer);
        if slept {
            slept_since.get_or_insert_with(now_us);
            // It slept on a word with HANDOFF, which never has TO_SLEEPER too.
            *queued = true;
        }
        Some(took)
    }

    /// Barge: `(0,s,w,0) -> (me,s,w|slept,0)` while the lock is free and not reserved
    /// (or reserved for a claim this thread made: a signal handler that interrupted
    /// the claimant takes the lock and consumes the claim).
    ///
    /// After a sleep that `ticked` (a liveness tick passed without a wake), the
    /// delegates this lock's word names may not be acting (`crate::wait`): the take
    /// drops a spinner's flag, `(0,1,w,0) -> (me,0,1,0)` (a spinner that still spins
    /// sets it again at its next look), and breaks a reservation older than
    /// [`RESERVATION_EXPIRY_US`], `(0,s,w,1) -> (me,s,1,0)`, whose claimant then finds
    /// its claim consumed and waits again.
    ///
    /// A free word that a fair unlock reserved for a thread that slept, `(0,s,w,S)`, is
    /// taken only by such a thread (`sleeper takes`): one that `queued` (slept before
    /// the reservation, or until a tick, which `ticked` is too, or is a signal handler
    /// on such a thread: [`Role::Sleeper`]).
    pub(super) fn try_acquire(&self, me: u32, slept: bool, queued: bool, ticked: bool) -> bool {
        // Relaxed: picks the transition; the cmpxchg that acts on it is the Acquire.
        let mut val = self.word.load(Relaxed);
        while owner_of(val) == 0 {
            let for_sleeper = val & TO_SLEEPER != 0;
            if for_sleeper && !(queued || ticked) {
                return false;
            }
            let reserved = val & HANDOFF != 0;
            let mine = reserved && self.claimed_by_this_thread();
            let broken = reserved && !mine && ticked && self.reservation_expired();
            if reserved && !mine && !broken {
                return false;
            }
            let spinning = if ticked { 0 } else { val & SPINNING };
            // A broken reservation's claimant may sleep: it is a sleeper too, and
            // WAITERS keeps its wake owed. A sleeper's take keeps WAITERS (it may
            // not be the last sleeper).
            let kept = slept || mine || broken || for_sleeper;
            let new = spinning | waiters_after(val, kept) | me;
            // Acquire: pairs with the Release in `unlock`.
            match self.word.compare_exchange(val, new, Acquire, Relaxed) {
                Ok(_) => {
                    if mine {
                        // Consumed: the interrupted claimant will see that it is not
                        // its claim any more.
                        Role::Claimant.forget(self.address());
                    }
                    if broken {
                        stats::count(STATS, Event::ReservationBroken);
                    }
                    return true;
                }
                Err(now) => val = now,
            }
        }
        false
    }

    /// Become the one spinner, `(o,0,w,0) -> (o,1,w,0)`, and spin on the owner.
    /// Unless we took the lock, we are no longer the spinner when this returns. The
    /// role is recorded for the whole spin ([`Role::Spinner`]): a signal handler on
    /// this thread that sleeps on this mutex clears the flag first.
    fn spin(&self, me: u32, slept: bool, queued: bool, patience: Patience) -> Spin {
        // Another thread spins, or a handoff is due: no spin, so no role to record.
        // Relaxed: a hint; `spin_as_spinner` reads the word again.
        if self.stops_spin(self.word.load(Relaxed), queued) {
            return Spin::Stopped;
        }
        let outer = Role::Spinner.enter(self.address());
        let spun = self.spin_as_spinner(me, slept, queued, patience);
        Role::Spinner.restore(outer);
        spun
    }

    fn spin_as_spinner(&self, me: u32, slept: bool, queued: bool, patience: Patience) -> Spin {
        // Relaxed: the expected value for the claim below.
        let mut val = self.word.load(Relaxed);
        loop {
            if self.stops_spin(val, queued) {
                return Spin::Stopped;
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
        let spun = self.spin_on_owner(me, slept, queued, patience);
        if spun == Spin::Took {
            stats::count(STATS, Event::SpinAcquired);
            return spun;
        }
        stats::count(STATS, Event::SpinFailed);
        // (*,1,*,*) -> (*,0,*,*), even if a newer waiter set the flag after an unlock
        // cleared ours (it sets it again at its next look). Relaxed: as above. An
        // unlock that skipped its wake for us left WAITERS set on a free word: the
        // caller's next `try_acquire` or `sleep` sees that (module doc, "No lost
        // wake-ups").
        self.word.fetch_and(!SPINNING, Relaxed);
        spun
    }

    /// Spin while the owner runs, within the budget ([`spin_on_owner`]); take the
    /// lock when it is free, `(0,s,w,0) -> (me,0,w|slept,0)`, and set the flag again
    /// on a held lock whose unlock cleared it, `(o,0,w,0) -> (o,1,w,0)`. Stops at a
    /// handoff claim, and at a fair unlock's reservation unless we `queued` (then we
    /// may take it: `sleeper takes`).
    fn spin_on_owner(&self, me: u32, slept: bool, queued: bool, patience: Patience) -> Spin {
        let first = FIRST_BACKOFF.with(Cell::get);
        let pauses = Pauses {
            first,
            max: MAX_BACKOFF,
        };
        let spun = spin_on_owner(STATS, BUDGET.spins(), pauses, patience, |_| {
            // Relaxed: we only watch; the taking cmpxchg below is the Acquire.
            let val = self.word.load(Relaxed);
            if self.stops_spin(val & !SPINNING, queued) {
                return Look::Stop;
            }
            let owner = owner_of(val);
            if owner == 0 {
                let new = waiters_after(val, slept) | me;
                // Acquire: pairs with the Release in `unlock`.
                if self
                    .word
                    .compare_exchange(val, new, Acquire, Relaxed)
                    .is_ok()
                {
                    return Look::Done;
                }
            } else if val & SPINNING == 0 {
                // An unlock without sleepers cleared the flag. This fails if the word
                // moved or a newer waiter set the flag first; either way the next look
                // sees the word as it is then. Relaxed: as in `spin`.
                let _ = self
                    .word
                    .compare_exchange(val, val | SPINNING, Relaxed, Relaxed);
            }
            Look::WhileRuns(owner)
        });
        match spun {
            Spun::Done { looks } => {
                FIRST_BACKOFF.with(|f| f.set(backoff::next_first(first, looks)));
                Spin::Took
            }
            Spun::BudgetSpent => Spin::OwnerKeptRunning,
            Spun::Stopped | Spun::OwnerOffCpu => Spin::Stopped,
        }
    }

    /// Sleep on a held or reserved lock: `(o,s,*,h) -> (o,s,1,h)`, then sleep as a
    /// `SLEEPER` on exactly that value. Returns when woken, at the deadline, at the
    /// liveness tick (then `ticked`: [`try_acquire`](Self::try_acquire) takes what a
    /// delegate left), or at once if the lock came free or the word changed; and
    /// whether the sleep counts as one before a fair unlock's reservation (`queued`:
    /// on a word without `TO_SLEEPER`, or one that a wake or the tick ended).
    ///
    /// A signal handler whose thread is this mutex's spinner first clears the flag,
    /// `(o,1,*,h) -> (o,0,*,h)`: the unlock would otherwise leave the wake to the
    /// spinner, which cannot run until the handler returns.
    ///
    /// A free word reserved for a thread that slept, `(0,s,w,S)`, is slept on only by
    /// a waiter that may not take it (`queued`: we may): the thread the fair unlock
    /// woke is awake and takes it, and a tick ends the sleep if it never does.
    fn sleep(&self, patience: Patience, queued: bool) -> (bool, bool) {
        if Role::Spinner.held_on(self.address()) {
            // Relaxed: as every change of the flag; the unlock reads it through its
            // RMW on this same word.
            self.word.fetch_and(!SPINNING, Relaxed);
        }
        // Relaxed: the value to sleep on; the kernel re-reads it atomically with
        // queueing us, so a stale value only returns at once.
        let mut val = self.word.load(Relaxed);
        let for_sleeper = |val: u32| val & TO_SLEEPER != 0 && !queued;
        while owner_of(val) != 0 || val & HANDOFF != 0 || for_sleeper(val) {
            if owner_of(val) == 0 && val & HANDOFF != 0 {
                self.wake_owed_claimant();
            }
            if val & WAITERS == 0 {
                // Relaxed: the unlock reads WAITERS through its RMW on this same word.
                if let Err(now) = self
                    .word
                    .compare_exchange(val, val | WAITERS, Relaxed, Relaxed)
                {
                    val = now;
                    continue;
                }
                val |= WAITERS;
            }
            // A signal handler on the claimant's thread sleeps for the claimant too:
            // the handoff wakes that class, and the handler then takes the lock.
            let class = if self.claimed_by_this_thread() {
                SLEEPER | CLAIMANT
            } else {
                SLEEPER
            };
            stats::count(STATS, Event::Sleep);
            let (ticked, slept) = patience.sleep_woke(&self.word, val, class);
            if ticked {
                stats::count(STATS, Event::Tick);
            }
            // On a free word reserved for the threads that slept, only a sleep that
            // a wake (or the tick) ended counts: one that returned at once on a word
            // that had changed was no sleep, and its thread no sleeper.
            return (ticked, slept || val & TO_SLEEPER == 0);
        }
        (false, false)
    }

    /// Whether the word `val` stops a spin or keeps one from starting: another
    /// spinner's flag, a handoff claim, or a fair unlock's reservation, unless the
    /// waiter `queued` (it may take that one).
    fn stops_spin(&self, val: u32, queued: bool) -> bool {
        val & (SPINNING | HANDOFF) != 0 || (val & TO_SLEEPER != 0 && !queued)
    }

    /// A timed waiter whose deadline passed: take the lock if it is free, else leave
    /// `WAITERS` on it if it has slept (it may have eaten the wake meant for the
    /// next sleeper). Whether it took the lock.
    pub(super) fn give_up(&self, me: u32, slept: bool, queued: bool) -> bool {
        loop {
            if self.try_acquire(me, slept, queued, false) {
                return true;
            }
            if !slept {
                return false;
            }
            // Relaxed: WAITERS is read by the unlock's RMW on this same word.
            let val = self.word.load(Relaxed);
            let taken = owner_of(val) != 0 || val & (HANDOFF | TO_SLEEPER) != 0;
            if taken
                && (val & WAITERS != 0
                    || self
                        .word
                        .compare_exchange(val, val | WAITERS, Relaxed, Relaxed)
                        .is_ok())
            {
                return false;
            }
        }
    }
}
