//! The write paths past the fast path: take `WRITER` (spinning as the one writer
//! spinner, or sleeping behind the sleeping writers when this thread's turn is over),
//! then drain the readers inside; and a signal handler that borrows its thread's
//! drain.

use super::*;
use crate::role::Mark;

impl RawRwLock {
    /// A writer that found the lock busy: take `WRITER` as the default mutex takes
    /// its lock, then wait for the readers inside to leave. Whether it took the lock
    /// (always, unless `patience` ran out).
    #[cold]
    pub(super) fn lock_exclusive_slow(&self, me: u32, take: Take, patience: Patience) -> bool {
        // Relaxed: only this thread stores its own id there.
        let writer = self.writer.load(Relaxed);
        if writer == me && Role::Drainer.held_on(self.address()) {
            return self.borrow_drain(me, patience);
        }
        if writer & !BORROWED == me {
            // A timed try would only wait out its deadline: it fails, as
            // `try_lock_exclusive` does.
            if patience.gives_up() {
                return false;
            }
            panic!("klocks: thread {me} write-locked a klocks::RwLock it already holds (it is not recursive)");
        }
        stats::count(STATS, Event::LockSlowpath);
        // A signal handler on this thread may find WRITERS_WAITING left on a free word
        // for this thread (the spinner, or a writer woken before the release): as a
        // reader it enters past it (`nested_reader_may_enter`).
        let outer = Role::Writer.enter(self.address());
        let took = self.take_write_lock(me, take, patience);
        Role::Writer.restore(outer);
        took
    }

    /// Takes `WRITER` as the default mutex takes its lock, then drains the readers.
    /// The writer's id is stored as soon as `WRITER` is taken, so that a signal
    /// handler on this thread knows whose `WRITER` it is (its thread's drain, or its
    /// thread's write lock).
    pub(super) fn take_write_lock(&self, me: u32, take: Take, patience: Patience) -> bool {
        let mut slept = false;
        let mut yields = 0;
        // Whether our last sleep ended by its liveness tick, not a wake
        // (`crate::wait`): then the writer spinner the word names may not be
        // spinning, and our take drops its flag; and a claim may stand for a
        // claimant that cannot run, which our take ends (`raw_rwlock/claim.rs`).
        let mut ticked = false;
        // When this acquisition first slept (µs), and this thread's claim, if it holds
        // one (the role's mark beneath it).
        let mut first_sleep = None;
        let mut claim: Option<Mark> = None;
        loop {
            if claim.is_some() && !self.claimed() {
                // Broken by a writer whose sleep ticked: wait as any writer.
                Role::Claimant.restore(claim.take().unwrap());
            }
            // A writer without a deadline that has waited long enough since its first
            // sleep, and finds `WRITER` taken, claims the next write lock
            // (`raw_rwlock/claim.rs`), before its turn could queue it behind the
            // sleepers again.
            if claim.is_none() && first_sleep.is_some_and(Self::claim_due) {
                claim = self.try_claim(take, patience);
            }
            let own_claim = claim.is_some() || Role::Claimant.held_on(self.address());
            if claim.is_none() {
                if let Some(tick) = self.queue_behind_sleepers(patience) {
                    first_sleep.get_or_insert_with(now_us);
                    slept = true;
                    ticked = tick;
                    continue;
                }
            }
            let after_tick = std::mem::take(&mut ticked);
            if !own_claim && !after_tick && self.claimed() {
                // Another writer's claim: wait as behind a held lock.
                ticked = self.sleep_as_writer(patience, false);
                first_sleep.get_or_insert_with(now_us);
                slept = true;
                continue;
            }
            match self.try_take_writer_after(slept, after_tick, take, patience) {
                Some(true) => {
                    if let Some(mark) = claim.take() {
                        self.end_claim();
                        Role::Claimant.restore(mark);
                    } else if !own_claim && self.claimed() {
                        // Taken past a claim after a tick: the claim is broken.
                        self.end_claim();
                        stats::count(STATS, Event::ReservationBroken);
                    }
                    // Relaxed: as in `lock_exclusive`.
                    self.writer.store(me, Relaxed);
                    return take == Take::Upgradable || self.drain_readers(patience);
                }
                // A turn is on and no reader came yet: let them run.
                None => {
                    stats::count(STATS, Event::Yield);
                    crate::sync::yield_now();
                    continue;
                }
                Some(false) => {}
            }
            if self.spin_for_writer() {
                continue;
            }
            if patience.expired() {
                return self.give_up_waiting(slept, take, patience);
            }
            // A writer that has slept goes back to the queue at once: with more
            // threads than CPUs a yield costs a round of the run queue. Never under
            // loom (YIELDS_BEFORE_SLEEP is 0 there).
            #[cfg_attr(loom, allow(clippy::absurd_extreme_comparisons))]
            if !slept && yields < YIELDS_BEFORE_SLEEP {
                yields += 1;
                stats::count(STATS, Event::Yield);
                crate::sync::yield_now();
                continue;
            }
            ticked = self.sleep_as_writer(patience, own_claim);
            first_sleep.get_or_insert_with(now_us);
            Turn::RwLockWriter.begin();
            slept = true;
        }
    }

    /// Whether a reader in the slow path may enter: as any reader
    /// ([`readers_may_enter`]), or, in a signal handler on a thread that is in this
    /// lock's write slow path, past what that thread holds or left behind
    /// ([`Role::Writer`], [`Role::Drainer`]): its thread's `WRITER` while that thread
    /// drains the readers (the handler's section ends before the drain goes on), and
    /// `WRITERS_WAITING` on a free lock, which an unlock left for that thread to take.
    pub(super) fn reader_may_enter(&self, val: u32) -> bool {
        let lock = self.address();
        readers_may_enter(val)
            || Role::Drainer.held_on(lock)
            || (val & WRITER == 0 && (Role::Writer.held_on(lock) || self.claimed()))
    }

    /// A signal handler whose thread drains this lock's readers write-locks it: it
    /// waits, as its thread does, until no reader is inside, and then holds its
    /// thread's `WRITER` for its section, marked [`BORROWED`] in the writer's id so
    /// that its unlock gives it back instead of releasing it (`disown_write`). The
    /// interrupted drain then finds no reader inside and goes on. Whether it holds
    /// the lock (a timed one gives up at its deadline, leaving its thread's `WRITER`).
    #[cold]
    pub(super) fn borrow_drain(&self, me: u32, patience: Patience) -> bool {
        // The interrupted drain may be revoking the bias: the table's readers too.
        if !bravo::wait_for_readers(self.address(), patience)
            || !self.wait_until_no_reader(patience)
        {
            return false;
        }
        // Relaxed: "is it me?" for this thread alone, as in `lock_exclusive`.
        self.writer.store(me | BORROWED, Relaxed);
        true
    }

    /// A signal handler whose thread is this lock's writer spinner clears
    /// `WRITER_SPINNING` before it sleeps: the write unlock would otherwise leave the
    /// wake to the spinner, which cannot run until the handler returns (the
    /// interrupted spinner's own `fetch_and` clears it later anyway).
    pub(super) fn stop_own_thread_spinning(&self) {
        if Role::Spinner.held_on(self.address()) {
            // Relaxed: as every change of the flag; the unlocks read it through their
            // RMW on this same word.
            self.word.fetch_and(!WRITER_SPINNING, Relaxed);
        }
    }

    pub(super) fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// The drain is over (no reader inside) but the drainer still sleeps: the last
    /// read unlock owes it a wake, which it makes after its `fetch_sub`, and its
    /// thread may be kept from making it for long: preempted, or interrupted by a
    /// signal handler that now waits here behind the drainer's `WRITER`. So a waiter
    /// about to sleep makes that wake itself; one more is harmless (the drainer finds
    /// no reader and goes on, or was on its way already).
    pub(super) fn wake_owed_drainer(&self) {
        // Relaxed: a hint; the drainer re-reads the word when woken.
        let val = self.word.load(Relaxed);
        if val & (WRITER | DRAIN_SLEEPS) == WRITER | DRAIN_SLEEPS && readers(val) == 0 {
            stats::woke(STATS, park::wake_one_of_at(&self.word, DRAIN_CLASS));
        }
    }

    /// A writer whose turn is over and that finds the lock write-held while writers
    /// sleep sleeps at once behind them, so that the lock goes round the sleepers'
    /// FIFO instead of staying with the writers the scheduler happens to run; whether
    /// it slept (or tried to: the word may have changed), and if so whether that sleep
    /// ended at its liveness tick.
    pub(super) fn queue_behind_sleepers(&self, patience: Patience) -> Option<bool> {
        // Relaxed: picks the path; `sleep_as_writer` reads the word again.
        let val = self.word.load(Relaxed);
        if val & (WRITER | WRITERS_WAITING) != WRITER | WRITERS_WAITING
            || !Turn::RwLockWriter.is_over()
        {
            return None;
        }
        stats::count(STATS, Event::TurnOver);
        let ticked = self.sleep_as_writer(patience, false);
        Turn::RwLockWriter.begin();
        Some(ticked)
    }

    /// Takes `WRITER` if no writer holds it: `Some(true)` if taken, `Some(false)` if a
    /// writer holds it, `None` while a turn waits for its readers to come.
    pub(super) fn try_take_writer(
        &self,
        slept: bool,
        take: Take,
        patience: Patience,
    ) -> Option<bool> {
        self.try_take_writer_after(slept, false, take, patience)
    }

    /// [`try_take_writer`](Self::try_take_writer) after a sleep that `ticked` or not:
    /// after a tick the writer spinner the word names may not be spinning
    /// (`crate::wait`), so the take drops its flag, `WRITER_SPINNING` (a spinner that
    /// still spins finds the lock held and goes on as any waiter).
    pub(super) fn try_take_writer_after(
        &self,
        slept: bool,
        ticked: bool,
        take: Take,
        patience: Patience,
    ) -> Option<bool> {
        let stale = if ticked { WRITER_SPINNING } else { 0 };
        // Relaxed: picks the transition; the cmpxchg is the Acquire.
        let mut val = self.word.load(Relaxed);
        while val & WRITER == 0 {
            if val & READER_TURN != 0 && !patience.expired() && self.turn_is_on() {
                return None;
            }
            let new = (val & !(READER_TURN | WRITERS_WAITING | stale))
                | writers_waiting_after(val, slept)
                | WRITER
                | take.extra();
            // Acquire: pairs with the Release of the unlocks (the readers' too, seen
            // in full once the drain finds none).
            match self.word.compare_exchange(val, new, Acquire, Relaxed) {
                Ok(_) => return Some(true),
                Err(now) => val = now,
            }
        }
        Some(false)
    }

    /// Holding `WRITER`: wait until no reader is inside. A timed writer that runs out
    /// of patience releases `WRITER` again. Whether it holds the lock.
    ///
    /// The drain is recorded ([`Role::Drainer`]) from here until no reader is inside,
    /// or until just before a timed writer releases `WRITER`: a signal handler on this
    /// thread enters as a reader alongside, its section done before the interrupted
    /// drain goes on.
    pub(super) fn drain_readers(&self, patience: Patience) -> bool {
        let outer = Role::Drainer.enter(self.address());
        let held = self.drain_as_drainer(patience, outer);
        if held {
            Role::Drainer.restore(outer);
        }
        held
    }

    /// `drain_readers`, with the role recorded; a timed writer that gives up restores
    /// the record to `outer` before it releases `WRITER`.
    pub(super) fn drain_as_drainer(&self, patience: Patience, outer: Mark) -> bool {
        if self.revoke_bias(patience) && self.wait_until_no_reader(patience) {
            return true;
        }
        // No longer this thread's WRITER from the release on.
        // Relaxed: cleared before the releasing cmpxchg, as in `disown_write`.
        self.writer.store(0, Relaxed);
        Role::Drainer.restore(outer);
        // Relaxed: only this thread (or a handler on it) sets it.
        self.word.fetch_and(!DRAIN_SLEEPS, Relaxed);
        self.release_write(owner::current_tid(), 0);
        false
    }

    /// Holding `WRITER` (this thread's): spin, then sleep, until no reader is inside;
    /// `false` if `patience` ran out first.
    pub(super) fn wait_until_no_reader(&self, patience: Patience) -> bool {
        let mut spent = 0;
        let budget = BUDGET.spins();
        let mut counted = false;
        loop {
            // Acquire: pairs with the Release of the last read unlock.
            let val = self.word.load(Acquire);
            if readers(val) == 0 {
                if val & DRAIN_SLEEPS != 0 {
                    // Relaxed: no reader can enter while this thread holds WRITER,
                    // and the flag publishes nothing.
                    self.word.fetch_and(!DRAIN_SLEEPS, Relaxed);
                }
                return true;
            }
            if !counted {
                stats::count(STATS, Event::Drain);
                counted = true;
            }
            if patience.expired() {
                stats::count(STATS, Event::Timeout);
                return false;
            }
            if spent < budget {
                cpu_relax_times(DRAIN_BACKOFF);
                spent += DRAIN_BACKOFF;
                continue;
            }
            // Relaxed: the last read unlock reads DRAIN_SLEEPS through its RMW on this
            // same word; the flag publishes nothing.
            if val & DRAIN_SLEEPS == 0
                && self
                    .word
                    .compare_exchange(val, val | DRAIN_SLEEPS, Relaxed, Relaxed)
                    .is_err()
            {
                continue;
            }
            stats::count(STATS, Event::Sleep);
            // Bounded: the last reader out owes us the wake, after its fetch_sub, and
            // its thread may be kept from making it (`crate::wait`).
            let _ = patience.sleep(&self.word, val | DRAIN_SLEEPS, DRAIN_CLASS);
        }
    }

    /// Become the one writer that spins, and spin while the writer holding the lock
    /// runs; whether `WRITER` came free meanwhile (the caller then tries to take it).
    /// A writer that finds another spinner spins only [`BRIEF_SPIN`]: the spinner
    /// may be preempted mid-spin, and the writers behind it would otherwise yield at
    /// once, a context switch each.
    pub(super) fn spin_for_writer(&self) -> bool {
        let outer = Role::Spinner.enter(self.address());
        let free = self.spin_as_writer_spinner();
        Role::Spinner.restore(outer);
        free
    }

    /// `spin_for_writer` with the role recorded ([`Role::Spinner`]): a signal
    /// handler on this thread that sleeps on this lock clears `WRITER_SPINNING` first.
    pub(super) fn spin_as_writer_spinner(&self) -> bool {
        // Relaxed: the claim protects no data.
        let claimed = self
            .word
            .fetch_update(Relaxed, Relaxed, |val| {
                (val & (WRITER | WRITER_SPINNING) == WRITER).then_some(val | WRITER_SPINNING)
            })
            .is_ok();
        if !claimed {
            return self.spin_on_writer(|val| val & WRITER == 0, |_, spent| spent < BRIEF_SPIN);
        }
        let free = self.spin_on_writer(|val| val & WRITER == 0, |_, _| true);
        stats::count(
            STATS,
            if free {
                Event::SpinAcquired
            } else {
                Event::SpinFailed
            },
        );
        // Relaxed: as above; an unlock that skipped its wake for us left
        // WRITERS_WAITING on a free word, which the caller's next try sees.
        self.word.fetch_and(!WRITER_SPINNING, Relaxed);
        free
    }

    /// Sleep while a writer holds the lock, or another thread's claim stands
    /// (`raw_rwlock/claim.rs`): `(r,1,*,*,*) -> (r,1,1,*,*)`, then sleep as a `WRITER`
    /// on that value, and for the claimant's wake too if `own_claim` (this thread
    /// holds the claim, or a handler on it runs over its thread's claim); whether the
    /// sleep ended at its liveness tick (`crate::wait`: an unlock may have left our
    /// wake to a spinner, or a claimant may not run).
    pub(super) fn sleep_as_writer(&self, patience: Patience, own_claim: bool) -> bool {
        self.stop_own_thread_spinning();
        self.wake_owed_drainer();
        // Relaxed: the value to sleep on; the futex re-reads it atomically.
        let mut val = self.word.load(Relaxed);
        while val & WRITER != 0 || (!own_claim && self.claimed()) {
            if val & WRITER == 0 {
                // A free lock under another thread's claim: its claimant may sleep on
                // the held word of an unlock that decided its wakes before the claim
                // (an early-woken writer claims in that window) and woke us instead.
                // We make its wake before we sleep behind it (`raw_rwlock/claim.rs`).
                stats::woke(STATS, park::wake_one_of_at(&self.word, CLAIMANT_CLASS));
            }
            if val & WRITERS_WAITING == 0 {
                // Relaxed: the unlock reads it through its RMW on this same word.
                if let Err(now) =
                    self.word
                        .compare_exchange(val, val | WRITERS_WAITING, Relaxed, Relaxed)
                {
                    val = now;
                    continue;
                }
                val |= WRITERS_WAITING;
            }
            let claimant = if own_claim { CLAIMANT_CLASS } else { 0 };
            let class = claimant
                | match patience {
                    Patience::Forever => WRITER_CLASS | UNTIMED_WRITER_CLASS,
                    #[cfg(not(loom))]
                    Patience::Until(_) => WRITER_CLASS,
                };
            stats::count(STATS, Event::Sleep);
            // Relaxed: a hint for the write unlocks (`wake_writer_early`).
            self.writers_asleep.fetch_add(1, Relaxed);
            let ticked = patience.sleep(&self.word, val, class);
            // Relaxed: as above.
            self.writers_asleep.fetch_sub(1, Relaxed);
            if ticked {
                stats::count(STATS, Event::Tick);
            }
            return ticked;
        }
        false
    }

    /// A timed writer whose deadline passed before it took `WRITER`. It leaves only
    /// from a held lock: a free one may carry `WRITERS_WAITING` that an unlock left
    /// for a spinner (this thread, perhaps), so it takes a free one. If it slept, it
    /// may have eaten the wake meant for the next sleeping writer, so it leaves
    /// `WRITERS_WAITING` set. Whether it took the lock.
    pub(super) fn give_up_waiting(&self, slept: bool, take: Take, patience: Patience) -> bool {
        loop {
            // A free lock under another writer's claim is the claimant's to take.
            let claimed = self.claimed();
            if !claimed && self.try_take_writer(slept, take, patience) == Some(true) {
                // Relaxed: as in `lock_exclusive`.
                self.writer.store(owner::current_tid(), Relaxed);
                return take == Take::Upgradable || self.drain_readers(patience);
            }
            // Relaxed: the flag is read by the unlocks' RMWs on this word.
            let val = self.word.load(Relaxed);
            if val & WRITER == 0 && !claimed {
                continue;
            }
            let new = if slept { val | WRITERS_WAITING } else { val };
            if self
                .word
                .compare_exchange(val, new, Relaxed, Relaxed)
                .is_ok()
            {
                stats::count(STATS, Event::Timeout);
                return false;
            }
        }
    }
}
