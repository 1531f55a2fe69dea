//! The spinning futex mutex: seed 004's "after", in userspace.
//!
//! # The algorithm
//!
//! Waiman Long's 2014 `FUTEX_SPIN_LOCK` series put a mutex's owner in the futex word
//! and let waiters spin in the kernel while that owner ran on a CPU. It was never
//! merged: the kernel could spin on its own `owner_on_cpu()`, userspace could not. klocks
//! answers "is the owner running?" from userspace ([`owner`](crate::owner): the owner's
//! context-switch records, or its CPU clock) and keeps the rest of the design:
//!
//! - **The word holds the owner's thread id**, plus two flags. Uncontended lock and
//!   unlock are one atomic operation each, as in a plain futex mutex. While a waiter
//!   spins the lock stays one (the `SPINNING` flag is carried through) and the unlock
//!   takes one failed cmpxchg more (its inline one expects the bare owner; the
//!   out-of-line rest carries the flag through), so an owner that re-takes the lock
//!   pays little for being watched (load 1 in lockbench `mutex-load`: ~27 to ~31
//!   Mops/s, measured with an unlock that loaded the word first).
//! - **One spinner** (the kernel's OSQ idea, reduced to one flag): the first waiter
//!   sets `SPINNING` and spins while the owner is on a CPU; it stops when the probe
//!   says the owner is not running (preempted or blocked: its wait will be long) or
//!   when the spin budget ([`budget`](crate::budget)) runs out. It looks at the word
//!   with exponential backoff (up to 128 `pause`s, ~3 µs): an owner that re-takes the
//!   lock at once keeps the line for a run of critical sections instead of losing it
//!   to our loads after each one (a departure from the seed, which polled; lockbench
//!   `mutex-load` at load 1 went from 17.6 to 25.9 Mops/s with 2 threads when the
//!   first 32-pause cap went in; caps of 32, 128 and 256 measured within noise of
//!   each other, 128 the fairest).
//! - **Every other waiter yields, then sleeps.** It gives its CPU away a few times
//!   (`sched_yield`), trying the lock in between, and then sleeps on the futex. With
//!   more runnable threads than CPUs the yields let the scheduler rotate the threads
//!   that compete, which is what keeps the lock fair there: at 64 threads on 2 CPUs
//!   per-thread fairness (min ÷ mean) went from 0.13–0.27 to 0.62–0.75 at the same
//!   throughput (another departure; parking_lot's `SpinWait` does the same).
//! - **A woken waiter spins again** (seed patch 3): it first tries to become the
//!   spinner, and sleeps again only if it cannot or the owner is not running.
//! - **No wake-up for a spinner's benefit.** An unlock that finds a spinner does not
//!   wake a sleeper (the spinner will take the lock within nanoseconds); the spinner
//!   inherits the duty and its own unlock wakes one. So that sleepers cannot starve
//!   behind a spinner and an owner that hand the lock back and forth, every 512th
//!   such unlock wakes one sleeper anyway.
//! - **Priority, then arrival.** Sleepers sleep in the kernel's futex queue, which is
//!   ordered by real-time priority and FIFO within a priority (a `plist`), and are woken
//!   one at a time, so the sleepers are served in that order (seed patch 4). All
//!   `SCHED_OTHER` threads share one priority there: nice values do not reorder them.
//!   A woken thread competes with running ones (barging); it does not get a handoff.
//!
//! # The word
//!
//! Two 32-bit words: the lock word below and a count of skipped wakes (fairness).
//!
//! ```text
//!    31        30       29     22 21                0
//! +---------+----------+---------+-------------------+
//! | WAITERS | SPINNING |    0    |  owner thread id  |   owner 0: unlocked
//! +---------+----------+---------+-------------------+
//! ```
//!
//! Linux thread ids fit in 22 bits (`PID_MAX_LIMIT` = 2^22). `WAITERS`: threads may
//! sleep on the word. `SPINNING`: one waiter spins on the owner. Transitions, as
//! `(owner, spinning, waiters)`:
//!
//! ```text
//! fast path:     (0,s,0) -> (me,s,0)                      cmpxchg
//! barge:         (0,s,w) -> (me,s,w|slept)                cmpxchg
//! start spin:    (o,0,w) -> (o,1,w)                       cmpxchg
//! spinner takes: (0,1,w) -> (me,0,w|slept)                cmpxchg
//! stop spin:     (*,1,*) -> (*,0,*)                       fetch_and
//! sleep:         (o,s,*) -> (o,s,1), futex_wait           o != 0
//! unlock:        (me,0,0) -> (0,0,0)                      cmpxchg, inline
//! ... a spinner: (me,1,0) -> (0,1,0)                      cmpxchg, out of line
//! unlock, wake:  (me,0,1) -> (0,0,0), futex_wake(1)        cmpxchg
//! unlock, spin:  (me,1,1) -> (0,1,1); every 512th time futex_wake(1)
//! ```
//!
//! `slept`: a thread that has slept once in this acquisition takes the lock with
//! `WAITERS` set (Drepper's rule): it cannot know whether others still sleep.
//!
//! Every unlock is one releasing cmpxchg that decides the wake-up too, and touches
//! nothing of the mutex after it but the word's address (for `futex_wake`): the next
//! holder may free the mutex as soon as it has it.
//!
//! # No lost wake-ups
//!
//! A sleeper sleeps only on a value with an owner and `WAITERS` (the kernel compares
//! the value atomically with queueing the sleeper). `WAITERS` is cleared only by an
//! unlock that then wakes one sleeper, and every woken thread takes the lock with
//! `WAITERS` set again (or sets it before it sleeps again), so the duty to wake passes
//! from owner to owner while anyone sleeps. An unlock that finds `SPINNING` keeps
//! `WAITERS` and wakes nobody: the spinner either takes the lock, inheriting `WAITERS`
//! and its duty, or stops spinning with an RMW that shows it the free word, and then
//! takes the lock or sleeps on a held one, whose owner will wake it.
//!
//! # Signals
//!
//! The spinner is a delegate: an unlock that finds `SPINNING` leaves the sleepers'
//! wake to it. A signal handler that interrupts the spinner and sleeps on the same
//! mutex would wait for its own thread; so the role is recorded per thread
//! ([`role`](crate::role)) before the flag is set, and such a handler clears the flag
//! before it sleeps (the interrupted spinner sets it again at its next look).
//!
//! # A spinner that never acts
//!
//! A spinner whose thread is blocked in a handler, longjmped away or stopped keeps
//! its flag, and unlocks keep leaving the wake to it. So every sleep is bounded by
//! the liveness tick (`crate::wait`): a sleeper whose tick passed without a wake
//! takes the free word with the flag dropped, `(0,1,w) -> (me,0,1)`.
//!
//! # Misuse
//!
//! Unlocking a mutex the calling thread does not hold panics (the owner is in the
//! word). Locking it again from the owning thread panics instead of deadlocking
//! (`try_lock` returns `false`). A
//! thread that exits holding the mutex leaves it locked forever; its waiters sleep
//! (the probe reports an exited owner as not running).
//!
//! # When to use it, when not
//!
//! Critical sections that may be long or block, and any number of threads: waiters
//! burn CPU only while the owner makes progress on a CPU. For very short sections
//! with threads ≤ CPUs, [`QSpinLock`](crate::QSpinLock) hands over faster.

use crate::budget::SpinBudget;
use crate::catalog::MutexKind;
use crate::owner;
use crate::park;
use crate::role::Role;
use crate::stats::{self, Event, Lock};
use crate::sync::{AtomicU32, Ordering::*};
use crate::wait::Patience;

/// Whose counters the `stats` feature bumps.
const STATS: Lock = Lock::Mutex(MutexKind::SpinFutex);

/// The owner's thread id.
const OWNER_MASK: u32 = (1 << 22) - 1;
/// One waiter spins on the owner.
const SPINNING: u32 = 1 << 30;
/// Threads may sleep on the word.
const WAITERS: u32 = 1 << 31;

/// Every this many unlocks that skip their wake for a spinner, one wakes a sleeper
/// anyway, so that sleepers rejoin the running threads instead of starving.
const FAIR_SKIPS: u32 = 512;

/// A waiter that cannot spin gives its CPU away this many times before it sleeps.
#[cfg(not(loom))]
const YIELDS_BEFORE_SLEEP: u32 = 4;
/// One yield under loom: more only repeats the same states.
#[cfg(loom)]
const YIELDS_BEFORE_SLEEP: u32 = 1;

/// The spinner's longest pause between two looks at the word, in `cpu_relax`es.
const MAX_BACKOFF: u32 = 128;

/// The spin budget shared by every `SpinFutexMutex`.
static BUDGET: SpinBudget = SpinBudget::new();

/// A futex mutex whose waiters spin while the owner runs. See the module doc.
pub struct SpinFutexMutex {
    word: AtomicU32,
    /// Unlocks that left sleepers asleep because a spinner was about to take over.
    skipped_wakes: AtomicU32,
}

fn owner_of(val: u32) -> u32 {
    val & OWNER_MASK
}

/// The `WAITERS` bit a new owner writes: kept, and set if it has slept.
fn waiters_after(val: u32, slept: bool) -> u32 {
    if slept {
        WAITERS
    } else {
        val & WAITERS
    }
}

impl SpinFutexMutex {
    /// An unlocked mutex.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
            skipped_wakes: AtomicU32::new(0),
        }
    }

    /// An unlocked mutex.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
            skipped_wakes: AtomicU32::new(0),
        }
    }

    /// Sets how long the spinner of every `SpinFutexMutex` spins at most before it
    /// sleeps, overriding `KLOCKS_SPIN_NS` and calibration. See [`crate::budget`].
    pub fn set_spin_ns(ns: u64) {
        BUDGET.set_ns(ns);
    }

    /// Acquires the mutex: spins while the owner runs, sleeps otherwise.
    #[inline]
    pub fn lock(&self) {
        let me = owner::current_tid();
        if !self.try_lock_quick(me) {
            self.lock_slow(me);
        }
    }

    /// Takes the mutex for the thread whose [`owner::current_tid`] is `me` if nobody
    /// holds it or waits: the fast path of `lock`, for a caller that read its id
    /// already (the interposer's).
    #[inline(always)]
    pub fn try_lock_quick(&self, me: u32) -> bool {
        // Relaxed: only picks the transition to try; the cmpxchg decides.
        let val = self.word.load(Relaxed);
        // (0,s,0) -> (me,s,0): a spinner's flag alone does not send us down the slow
        // path (an owner that re-takes the lock while someone spins is the common case).
        // Acquire: pairs with the Release in `unlock`.
        val & (OWNER_MASK | WAITERS) == 0
            && self
                .word
                .compare_exchange(val, val | me, Acquire, Relaxed)
                .is_ok()
    }

    /// Releases the mutex held by `me` (its [`owner::current_tid`]) if nothing else is
    /// in the word: `unlock`'s fast path for a caller that read its id already;
    /// `false`, the word untouched, leaves the release to `unlock`.
    ///
    /// # Safety
    /// The calling thread, whose id is `me`, holds the mutex.
    #[inline(always)]
    pub unsafe fn try_unlock_quick(&self, me: u32) -> bool {
        // (me,0,0) -> (0,0,0). Release: as in `unlock`.
        let released = self.word.compare_exchange(me, 0, Release, Relaxed).is_ok();
        if released {
            crate::fault::after_release();
        }
        released
    }

    /// Takes the mutex if nobody holds it (even if others wait: barging).
    #[inline]
    pub fn try_lock(&self) -> bool {
        self.try_acquire(owner::current_tid(), false, false)
    }

    /// Releases the mutex, waking one sleeper if there may be any and nobody spins.
    ///
    /// # Panics
    /// If the calling thread does not hold the mutex (the word is left untouched).
    #[inline(always)]
    pub fn unlock(&self) {
        let me = owner::current_tid();
        // (me,0,0) -> (0,0,0). Release: pairs with the Acquire of the next
        // acquisition. Nobody sleeps or spins, so there is nobody to wake or to be
        // watched by. No load first, as `RawMutex::unlock`: the load before this
        // cmpxchg made the uncontended pair about 1.5× the other kinds' through the
        // preload. A word with more in it (a spinner's flag, waiters, another owner)
        // takes the out-of-line rest, whose own load reads it again.
        match self.word.compare_exchange(me, 0, Release, Relaxed) {
            Ok(_) => crate::fault::after_release(),
            Err(_) => self.unlock_contended(me),
        }
    }

    /// Whether some thread holds the mutex.
    #[inline]
    pub fn is_locked(&self) -> bool {
        // Relaxed: a snapshot for the caller; it orders nothing.
        owner_of(self.word.load(Relaxed)) != 0
    }

    /// Others wanted the lock we held (or we do not hold it): release with one RMW that
    /// also settles the wake-up, `(me,0,1) -> (0,0,0)` then wake one sleeper, or
    /// `(me,s,w) -> (0,s,w)` when a spinner takes over the duty to wake (with no
    /// sleeper, `(me,1,0) -> (0,1,0)`: the spinner keeps its flag and watches us).
    ///
    /// The releasing cmpxchg is the last access to the mutex: POSIX lets the thread
    /// that takes it next unlock, destroy and free it at once (glibc bug 13690's
    /// race), so everything this unlock needs from the mutex (the skip count, whether
    /// to clear `WAITERS`) is read and written before the release, and after it only
    /// the word's address is used, for a futex wake (which never touches the memory).
    #[cold]
    #[inline(never)]
    fn unlock_contended(&self, me: u32) {
        // Relaxed: reads our own acquisition's write if we hold the lock (nobody else
        // changes the owner field meanwhile); any other value means we do not.
        let mut val = self.word.load(Relaxed);
        if owner_of(val) != me {
            unlock_by_non_owner(owner_of(val), me);
        }
        let word: *const AtomicU32 = &self.word;
        let mut fair_wake = None;
        loop {
            let (new, wake) = match val & (SPINNING | WAITERS) {
                // The sleepers' duty passes to the one we wake, which takes the lock
                // with WAITERS set again (or sets it before sleeping again).
                WAITERS => (0, true),
                // A spinner will take the lock and inherit WAITERS; every FAIR_SKIPS-th
                // such unlock wakes a sleeper anyway, keeping WAITERS.
                both if both == SPINNING | WAITERS => {
                    (both, *fair_wake.get_or_insert_with(|| self.skip_wake()))
                }
                flags => (flags, false),
            };
            // Release: pairs with the Acquire of the next acquisition.
            match self.word.compare_exchange(val, new, Release, Relaxed) {
                Ok(_) => {
                    crate::fault::after_release();
                    if wake {
                        stats::woke(STATS, park::wake_one_at(word));
                    } else if val & (SPINNING | WAITERS) == SPINNING | WAITERS {
                        stats::count(STATS, Event::WakeSkipped);
                    }
                    // Future spinners watch us (after the release: `owner::watch_current`).
                    owner::watch_current();
                    return;
                }
                Err(now) => val = now,
            }
        }
    }

    /// Counts an unlock that leaves the sleepers to a spinner; whether this one must
    /// wake a sleeper anyway (every [`FAIR_SKIPS`]-th). Called while we hold the lock.
    fn skip_wake(&self) -> bool {
        // Relaxed, and a load and a store rather than an RMW: a fairness heuristic
        // (only the holder writes it, so nothing is lost but across a racing misuse),
        // kept off the locked instruction path. An extra wake, with WAITERS left set,
        // is always safe.
        let skipped = self.skipped_wakes.load(Relaxed).wrapping_add(1);
        self.skipped_wakes.store(skipped, Relaxed);
        skipped.is_multiple_of(FAIR_SKIPS)
    }

    fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    #[cold]
    fn lock_slow(&self, me: u32) {
        // Relaxed: our own earlier acquisition's write, if we hold the lock.
        if owner_of(self.word.load(Relaxed)) == me {
            relock_by_owner(me);
        }
        stats::count(STATS, Event::LockSlowpath);
        let mut slept = false;
        let mut yields = 0;
        // Whether our last sleep ended by its liveness tick (`crate::wait`).
        let mut ticked = false;
        loop {
            if self.try_acquire(me, slept, std::mem::take(&mut ticked)) || self.spin(me, slept) {
                return;
            }
            if yields < YIELDS_BEFORE_SLEEP {
                yields += 1;
                stats::count(STATS, Event::Yield);
                crate::sync::yield_now();
                continue;
            }
            ticked = self.sleep();
            slept = true;
            yields = 0;
        }
    }

    /// Barge: `(0,s,w) -> (me,s,w|slept)` while nobody holds the lock. After a sleep
    /// that `ticked` (no wake within the liveness tick, `crate::wait`) the spinner
    /// the word names may not be spinning: the take drops its flag, `(0,1,w) ->
    /// (me,0,w|slept)` (a spinner that still spins sets it again at its next look).
    fn try_acquire(&self, me: u32, slept: bool, ticked: bool) -> bool {
        // Relaxed: picks the transition; the cmpxchg that acts on it is the Acquire.
        let mut val = self.word.load(Relaxed);
        while owner_of(val) == 0 {
            let spinning = if ticked { 0 } else { val & SPINNING };
            let new = spinning | waiters_after(val, slept) | me;
            // Acquire: pairs with the Release in `unlock`.
            match self.word.compare_exchange(val, new, Acquire, Relaxed) {
                Ok(_) => return true,
                Err(now) => val = now,
            }
        }
        false
    }

    /// Sleep on a held lock: `(o,s,*) -> (o,s,1)`, then `futex_wait` on exactly that
    /// value. Returns when woken, at the liveness tick (then `true`), or at once if the
    /// lock came free or the word changed.
    ///
    /// A signal handler whose thread is this mutex's spinner first clears the flag,
    /// `(o,1,*) -> (o,0,*)`: the unlock would otherwise leave the wake to the spinner,
    /// which cannot run until the handler returns.
    fn sleep(&self) -> bool {
        if Role::Spinner.held_on(self.address()) {
            // Relaxed: as every change of the flag; the unlock reads it through its
            // RMW on this same word.
            self.word.fetch_and(!SPINNING, Relaxed);
        }
        // Relaxed: the value to sleep on; the kernel re-reads it atomically with
        // queueing us, so a stale value only returns at once.
        let mut val = self.word.load(Relaxed);
        while owner_of(val) != 0 {
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
            stats::count(STATS, Event::Sleep);
            // Bounded: an unlock that found SPINNING left our wake to the spinner.
            let ticked = Patience::Forever.sleep(&self.word, val, u32::MAX);
            if ticked {
                stats::count(STATS, Event::Tick);
            }
            return ticked;
        }
        false
    }
}

#[cold]
#[inline(never)]
fn relock_by_owner(me: u32) -> ! {
    panic!("klocks: thread {me} locked a SpinFutexMutex it already holds (it is not recursive)");
}

#[cold]
#[inline(never)]
fn unlock_by_non_owner(owner: u32, me: u32) -> ! {
    if owner == 0 {
        panic!("klocks: unlock of a SpinFutexMutex that is not locked");
    }
    panic!("klocks: unlock of a SpinFutexMutex held by thread {owner} from thread {me}, which does not hold it");
}

impl std::fmt::Debug for SpinFutexMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let val = self.word.load(Relaxed);
        f.debug_struct("SpinFutexMutex")
            .field("owner", &owner_of(val))
            .field("spinning", &(val & SPINNING != 0))
            .field("waiters", &(val & WAITERS != 0))
            .finish()
    }
}

// SAFETY: the owner field goes from 0 to a thread id only by cmpxchg against a value
// with owner 0, and back to 0 only in `unlock`, by the thread whose id it holds (or
// in the unsafe `unlock_for_owner`, whose caller takes that thread's place). Its
// guards are not `Send`: `unlock` on another thread would panic (the owner check).
raw_mutex!(for SpinFutexMutex, guard = GuardNoSend);

// The one spinner: claiming the flag and spinning while the owner runs.
mod spinner;

// Releasing the hold of another thread, and asking whether this thread holds it.
mod for_owner;

// A fork child's repair: forget the waiters, keep the holder.
mod fork_child;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, feature = "stats", not(loom)))]
mod stats_tests;
