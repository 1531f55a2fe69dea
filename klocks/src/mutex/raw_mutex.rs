//! The default mutex: a barging futex mutex whose waiters spin while the owner runs,
//! with a timed handoff that bounds every thread's wait.
//!
//! # The algorithm
//!
//! [`RawMutex`] is [`SpinFutexMutex`](crate::SpinFutexMutex) (seed 004) made into a
//! lock to pick without reading a table, with four changes that come from what the
//! anchors do and from what lockbench measured (`docs/decisions/raw-mutex.md`:
//! tuning):
//!
//! - **Fast paths as short as std's futex mutex's**: one cmpxchg to lock, expecting
//!   the free word 0 without reading it first, and one to unlock (a load before
//!   either costs the uncontended pair a visible share). An unlock without sleepers
//!   clears the spinner's flag along with the owner, so that an owner that re-takes
//!   the lock while a waiter spins, the common contended case, finds 0 too; the
//!   spinner sets its flag again at its next look if the lock is held then. Keeping
//!   the flag cost every such re-take a load or a second RMW. Sleepers or a handoff
//!   send the thread to the slow path.
//! - **A patient spinner.** The spinner's first look at the word comes after ~1.5 µs
//!   of `pause`s, not at once: each look takes the line from an owner that re-takes
//!   the lock at once, and a spinner that looked after 1, 2, 4, ... pauses cost the
//!   owner of a tight loop several misses per handoff.
//! - **Barging with a timed handoff** (the kernel mutex's `MUTEX_FLAG_HANDOFF`,
//!   2016, and parking_lot's "eventual fairness"). Running threads take a free lock
//!   before woken ones, which keeps a lock on a CPU that is running with it and is
//!   what makes a barging lock fast with more threads than CPUs. But a thread that
//!   has slept, was woken and still finds the lock taken after [`FAIR_WAIT_US`]
//!   *claims a handoff*: it sets `HANDOFF`, and from then on nobody barges: the next
//!   unlock leaves the lock free but reserved, wakes the claimant alone, and the
//!   claimant takes it. Claims on one lock are at least [`FAIR_INTERVAL_US`] apart
//!   (the time of the last is the mutex's second word), so barging keeps its
//!   throughput between them (parking_lot forces a fair unlock every 0.5 ms on
//!   average for the same reason); a waiter's wait is bounded by the queue of
//!   sleepers before it times the claim interval, not by luck.
//!
//!   A waiter that is *on its CPU* claims too: one whose spins the owner has
//!   outrun (its spin budget ran out with the owner running and the lock taken)
//!   for [`FAIR_WAIT_US`], counted from the first such spin, claims when its next
//!   spin ends the same way, if the last claim on the mutex is
//!   [`RUNNING_INTERVAL_US`] old. It takes the reserved lock at its next look, so
//!   its claim costs one handoff between CPUs, not an idle lock while a woken
//!   claimant waits to be scheduled, and may come more often. With more threads
//!   than CPUs this is what spreads the lock over the threads the scheduler runs:
//!   a thread that comes back to its CPU after a yield or a preemption has mostly
//!   waited that long already, and gets the lock from the thread on the other CPU
//!   instead of spinning its budget away, yielding and sleeping while that thread
//!   keeps it for its whole slice (`docs/decisions/raw-mutex.md`: running-claims).
//! - **Turns** ([`turn`](crate::turn), after u-SCL's lock slices, EuroSys 2020). A
//!   thread that sleeps on a `RawMutex` begins a turn when it wakes; once the turn is
//!   [`TURN_US`](crate::turn::TURN_US) old, the next time the thread finds a mutex
//!   held it sleeps at once, behind the sleepers already there, instead of spinning
//!   or yielding. With more runnable threads than CPUs, the lock otherwise goes for a
//!   whole scheduler slice (~3 ms) to whichever two threads the scheduler happens to
//!   run while the lock is free, and a window of a few seconds holds too few slices
//!   per thread for luck to even out. A thread that has never slept, or not for
//!   [`TURNS_LAPSE_US`](crate::turn::TURNS_LAPSE_US), takes no turns: where spinning
//!   serves every waiter, nobody sleeps for fairness' sake alone.
//!
//! The rest is seed 004's design: the owner's thread id in the word, one spinner that
//! spins while the owner runs on a CPU ([`owner`](crate::owner)) within the spin
//! budget ([`budget`](crate::budget)), other waiters that sleep on the futex (ordered
//! by priority, then arrival), a woken waiter that may spin again, and an unlock that
//! wakes nobody when a spinner is about to take the lock (every [`FAIR_SKIPS`]-th
//! such unlock of a thread wakes a sleeper anyway). A spinner whose budget ran out
//! while the owner kept running yields a few times before it sleeps (the owner is
//! about to release, or re-takes the lock at once); a waiter that could not spin, or
//! saw the owner leave its CPU, sleeps at once: its yield would only hand the CPU to
//! a thread that finds the same, and under EEVDF a yield also moves the yielder's
//! deadline a whole slice back.
//!
//! Sleepers and the claimant sleep on the same word in two classes of the futex
//! (`FUTEX_WAIT_BITSET`), so that an unlock can wake the claimant and nobody else.
//!
//! # The words
//!
//! ```text
//!    31        30         29          28        27   22 21                0
//! +---------+----------+---------+------------+--------+-------------------+
//! | WAITERS | SPINNING | HANDOFF | TO_SLEEPER |   0    |  owner thread id  |   owner 0: free
//! +---------+----------+---------+------------+--------+-------------------+
//! ```
//!
//! and `claimed_at`, the microsecond clock (wrapping) of the last handoff claim.
//! Transitions, as `(owner, spinning, waiters, handoff)`, where `handoff` is 0, 1
//! (`HANDOFF`: reserved for the claimant) or `S` (`TO_SLEEPER`: a fair unlock
//! reserved it for any thread that slept: "The fair unlock" below); the two
//! reservations are never set together:
//!
//! ```text
//! fast path:       (0,s,0,0) -> (me,s,0,0)                    cmpxchg (s = 0, then 1)
//! barge:           (0,s,w,0) -> (me,s,w|slept,0)              cmpxchg
//! start spin:      (o,0,w,h) -> (o,1,w,h)                     cmpxchg, o != 0, h = 0
//! spin again:      (o,0,w,0) -> (o,1,w,0)                     cmpxchg by a spinner
//! spinner takes:   (0,s,w,0) -> (me,0,w|slept,0)              cmpxchg
//! stop spin:       (*,1,*,*) -> (*,0,*,*)                     fetch_and
//! sleep:           (o,s,*,h) -> (o,s,1,h), futex_wait(SLEEPER) o != 0 or h = 1
//!                  (also at once, before any spin, when the thread's turn is over)
//! claim:           (o,s,w,0) -> (o,s,w|slept,1)               cmpxchg, o != 0
//! claimant takes:  (0,s,w,1) -> (me,s,w|slept,0)              cmpxchg
//! unlock:          (me,s,0,0) -> (0,0,0,0)                    cmpxchg
//! unlock, wake:    (me,0,1,0) -> (0,0,0,0), futex_wake(SLEEPER)
//! unlock, spin:    (me,1,1,0) -> (0,1,1,0); every FAIR_SKIPS-th futex_wake(SLEEPER)
//! unlock, handoff: (me,s,w,1) -> (0,s,w,1), futex_wake(CLAIMANT)
//! fair unlock, mark:  (me,s,1,0) -> (me,s,0,S), futex_wake(SLEEPER) cmpxchg, still held
//! fair, none woke:    (me,s,w,S) -> (me,s,w,0), then `unlock`     fetch_and, still held
//! fair, one woke:     (me,s,w,S) -> (0,s,1,S); futex_wake(SLEEPER) if w
//! sleeper takes:      (0,s,w,S) -> (me,s',1,0)                    cmpxchg, by a thread that slept
//! ```
//!
//! (`s'`: the spinner's flag, dropped by a take after a sleep that ticked, as in
//! `barge`.) The fair unlock's `S` on a held word is its mark, and no other unlock
//! meets it: only the holder unlocks, and a sleeper's take clears it.
//!
//! `slept`: a thread that has slept in this acquisition takes the lock with `WAITERS`
//! set (Drepper's rule): it cannot know whether others still sleep. A claimant after
//! a sleep always does; a claimant on its CPU does if it slept before its claim or
//! while it awaited the handoff.
//!
//! Every unlock is one releasing cmpxchg that decides the wake-up too, and touches
//! nothing of the mutex after it but the word's address (for `futex_wake`): the next
//! holder may free the mutex as soon as it has it.
//!
//! # No lost wake-ups
//!
//! As in seed 004: a sleeper sleeps only on a value with `WAITERS` whose lock is held
//! or reserved (the kernel compares the value atomically with queueing it); `WAITERS`
//! is cleared only by an unlock that then wakes a sleeper, and every thread that takes
//! the lock after sleeping sets it again, so the duty to wake passes from owner to
//! owner while anyone sleeps. An unlock that finds `SPINNING` leaves the duty to the
//! spinner, which either takes the lock with `WAITERS` or stops with an RMW that
//! shows it the free word. Because unlocks clear the flag, two waiters may each
//! believe themselves the spinner for a while (one set the flag after an unlock
//! cleared the other's). That is harmless: while the flag stands, its last setter
//! still spins, because the take or stop that ends a spin clears the flag. A
//! handoff unlock keeps `WAITERS` and wakes the claimant, which takes the lock with
//! `WAITERS` kept, and set if it has slept, so it inherits the duty as any barging
//! thread does. A claimant sleeps only on a held word with
//! `HANDOFF`, which only its own take clears, so the unlock that frees that word is
//! the one that wakes it. A timed waiter that gives up after sleeping may have eaten
//! a wake: it leaves `WAITERS` set on a held or reserved word (or takes a free one),
//! so the duty is not lost with it.
//!
//! # How long a waiter waits
//!
//! The anchors (parking_lot's eventual fairness, Go's starvation mode, the rwsem's
//! handoff bit: `docs/decisions/raw-mutex.md`, waiting-bounds) bound a waiter by a
//! rate of fair handoffs, not by a time per waiter. Here a waiter that
//! has waited [`FAIR_WAIT_US`] claims the next unlock, claims are at least
//! [`FAIR_INTERVAL_US`] apart ([`RUNNING_INTERVAL_US`] for a waiter on its CPU), and
//! a claimant gets the lock at the unlock that follows its claim: one section and
//! its scheduling delay later. What that bounds:
//!
//! - **A waiter that claims** waits `FAIR_WAIT_US` + the wait for the claim slot +
//!   one section + its scheduling delay. The slot is shared: with `k` waiters past
//!   their wait at once, the last claims `k` intervals later, so the bound is the
//!   queue of claimants times the interval, which grows with the number of threads
//!   and is not a bound in time.
//! - **A sleeper claims only when it looks**: after a wake, or at its liveness tick.
//!   An unlock that finds a spinner wakes nobody (but every [`FAIR_SKIPS`]-th of the
//!   unlocking thread's), and the tick doubles while it passes unwoken, up to
//!   `MAX_TICK_US`, so a sleeper behind a spinner and an owner that hand
//!   the lock back and forth may not look for that long.
//!
//! [`unlock_fair`](RawMutex::unlock_fair) (below) passes the lock to a sleeper
//! without its having to look. Making the plain unlock do so once per interval
//! (parking_lot's eventual fairness) closes the second gap; it is not done here,
//! since it makes the sleepers' turns pre-empt the claims that the tests of the
//! claim and of its signal rules reach, and its cost to the barging unlock is not
//! measured yet.
//!
//! # The fair unlock
//!
//! [`unlock_fair`](RawMutex::unlock_fair) passes the lock to a thread that sleeps on
//! it, as parking_lot's does, and unlocks plainly when nobody sleeps: `WAITERS` alone
//! cannot tell (it often stands for nobody), so the unlock asks the futex, waking one
//! sleeper while it still holds the lock, and reserves the lock only if the kernel
//! woke one. The transitions `fair *` and `sleeper takes` above; the races with a
//! barger and with a new sleeper, and why the wake comes before the release, are in
//! `raw_mutex/fair.rs`. [`FairMutex`](crate::FairMutex) unlocks so every time.
//!
//! # Signals
//!
//! Two waiting roles are delegations that other threads rely on: the spinner (an
//! unlock that finds `SPINNING` leaves the sleepers' wake to it) and the claimant (the
//! lock is reserved for it). A signal handler that interrupts either and locks the
//! same mutex would wait for the thread it interrupted. So both roles are recorded
//! per thread ([`role`](crate::role)) before the word shows them, and no thread ever
//! waits behind a role its own thread holds:
//!
//! - a handler whose thread is the spinner clears `SPINNING` before it sleeps, so the
//!   unlock wakes a sleeper (the handler, or one that passes the duty on); the
//!   interrupted spinner sets the flag again at its next look, as after any unlock
//!   that cleared it;
//! - a handler whose thread is the claimant takes the reserved lock itself and
//!   consumes the claim; the interrupted claimant sees that and waits again like any
//!   other waiter.
//!
//! A wake the *unlocking* thread owes is the other half of the class: a handoff
//! unlock reserves the lock and wakes the claimant after its release, and a handler
//! that interrupts it in between and locks the same mutex would wait for the
//! claimant, which waits for that wake. Every waiter that is about to sleep on a
//! reserved, free lock makes the claimant's wake itself (`wake_owed_claimant`), so
//! the wake never depends on the thread that owes it.
//!
//! The claim record is written before the claiming cmpxchg, so a handler that lands
//! between the two while another thread claims takes that thread's reservation. That
//! claimant then finds its lock held without `HANDOFF` and becomes a plain waiter
//! again: it sleeps as a `SLEEPER` too while it awaits the handoff, so the wakes that
//! pass the sleepers' duty on still reach it. An unfair turn, never a lost one.
//!
//! # Delegates that never act
//!
//! The roles above rest on their threads' futures: a handler may block on the
//! spinner's or the claimant's thread, the thread may `siglongjmp` out of its lock
//! call, or be stopped. So no sleep here is unbounded (`crate::wait`, the liveness
//! tick): a sleeper whose tick passed without a wake takes the free word with the
//! spinner's flag dropped, `(0,1,w,0) -> (me,0,1,0)`, and breaks a reservation older
//! than [`RESERVATION_EXPIRY_US`] (its time is `claimed_at`, written by the unlock
//! that reserved it), `(0,s,w,1) -> (me,s,1,0)`; the claimant, if it ever runs again,
//! finds its claim consumed and waits as any waiter. A claimant's own sleep is
//! bounded too: the wake it is owed comes after the unlocker's release.
//!
//! # Misuse
//!
//! Unlocking a mutex the calling thread does not hold panics (the owner is in the
//! word) and leaves the mutex as it was; locking it again from the owning thread
//! panics instead of deadlocking (`try_lock` and the timed tries return `false`).
//! A thread that exits holding the mutex leaves it locked forever: its waiters sleep
//! (the probe reports an exited owner as not running).

use crate::backoff;
use crate::budget::SpinBudget;
use crate::catalog::MutexKind;
use crate::owner;
use crate::park;
use crate::role::Role;
use crate::spin_on_owner::{spin_on_owner, Look, OwnerWatch, Pauses, Spun};
use crate::stats::{self, Event, Lock};
use crate::turn::Turn;
use crate::wait::{count_skipped_wake, now_us, Patience};
use std::cell::Cell;

use crate::sync::{cpu_relax_times, AtomicU32, Ordering::*};

/// The owner's thread id (Linux thread ids fit in 22 bits: `PID_MAX_LIMIT`).
const OWNER_MASK: u32 = (1 << 22) - 1;
/// A fair unlock is under way (on a held word) or has reserved the free lock for any
/// thread that slept on it (`handoff = S` in the module doc).
const TO_SLEEPER: u32 = 1 << 28;
/// The lock is reserved for the thread that claimed a handoff.
const HANDOFF: u32 = 1 << 29;
/// One waiter spins on the owner.
const SPINNING: u32 = 1 << 30;
/// Threads may sleep on the word.
const WAITERS: u32 = 1 << 31;

/// The futex class of the threads that sleep until an unlock wakes one of them.
const SLEEPER: u32 = 1;
/// The futex class of the thread that claimed a handoff.
const CLAIMANT: u32 = 2;

/// A waiter that has waited this long claims a handoff (µs), counted from its first
/// sleep, or, on its CPU, from the first spin the owner outran.
// Used by the native clock only (time is not modelled under loom).
#[cfg_attr(loom, allow(dead_code))]
pub const FAIR_WAIT_US: u32 = 1_000;
/// The least time between a claim on one mutex by a waiter on its CPU and the
/// mutex's last claim (µs): more often, the handoffs between CPUs cost the lock's
/// throughput more than they spread it (`docs/results/running-claims-2026-11-27.txt`).
// Used by the native clock only (time is not modelled under loom).
#[cfg_attr(loom, allow(dead_code))]
pub const RUNNING_INTERVAL_US: u32 = 250;
/// How long a reservation for a handoff claimant lasts (µs), counted from the unlock
/// that reserved the lock: after that a waiter whose sleep ticked (`crate::wait`) may
/// take the reserved lock, so a claimant that cannot run (a signal handler on its
/// thread blocks, it longjmped away, it is stopped) holds nobody up for longer. A
/// claimant that runs takes it within a scheduling delay.
// Used by the native clock only (time is not modelled under loom).
#[cfg_attr(loom, allow(dead_code))]
pub const RESERVATION_EXPIRY_US: u32 = 2_000;
/// The least time between two handoff claims on one mutex (µs), for a waiter that
/// claims after a sleep.
// Used by the native clock only (time is not modelled under loom).
#[cfg_attr(loom, allow(dead_code))]
pub const FAIR_INTERVAL_US: u32 = 1_000;

/// A spinner whose budget ran out while the owner kept running gives its CPU away
/// this many times before it sleeps: the owner is about to release, or re-takes the
/// lock at once, and each yield is a context switch when threads outnumber CPUs, so a
/// few, not many (`docs/results/tuning.md`).
#[cfg(not(loom))]
const YIELDS_BEFORE_SLEEP: u32 = 4;
/// One yield under loom: more only repeats the same states.
#[cfg(loom)]
const YIELDS_BEFORE_SLEEP: u32 = 1;

// The spinner's first pause between two looks at the word adapts, per thread
// ([`backoff`](crate::backoff)). Each look takes the line from an owner that re-takes
// the lock at once: a spinner that looked after 1, 2, 4, ... pauses cost the owner
// of a tight loop several misses per handoff, while with short sections and work
// outside the lock a late first look leaves the lock idle (`docs/results/tuning.md`).

/// The spinner's longest pause between two looks at the word, in `cpu_relax`es.
const MAX_BACKOFF: u32 = 128;

/// The spin budget shared by every `RawMutex`.
static BUDGET: SpinBudget = SpinBudget::new();

/// Whose counters the `stats` feature bumps.
const STATS: Lock = Lock::Mutex(MutexKind::Default);

// No destructor, so it can be read at any time, also during thread exit.
#[cfg(not(loom))]
std::thread_local! {
    /// This thread's first pause as the spinner (see `crate::backoff`).
    static FIRST_BACKOFF: Cell<u32> = const { Cell::new(backoff::MIN_FIRST) };
}
#[cfg(loom)]
loom::thread_local! {
    static FIRST_BACKOFF: Cell<u32> = Cell::new(backoff::MIN_FIRST);
}

/// The default mutex. See the module doc; [`Mutex`](crate::Mutex) is `Mutex<T>` on it.
pub struct RawMutex {
    word: AtomicU32,
    /// The microsecond clock of the last handoff claim (wrapping).
    claimed_at: AtomicU32,
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

/// How a spin ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spin {
    /// The spinner took the lock.
    Took,
    /// The budget ran out while the owner kept running: it is about to release, or
    /// re-takes the lock at once; a yield may find it free.
    OwnerKeptRunning,
    /// No spin (another thread spins, or a handoff is due), or the owner left its
    /// CPU, or the deadline came.
    Stopped,
}

impl RawMutex {
    /// An unlocked mutex.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
            claimed_at: AtomicU32::new(0),
        }
    }

    /// An unlocked mutex.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
            claimed_at: AtomicU32::new(0),
        }
    }

    /// Sets how long the spinner of every `RawMutex` spins at most before it sleeps,
    /// overriding `KLOCKS_SPIN_NS` and calibration. See [`crate::budget`].
    pub fn set_spin_ns(ns: u64) {
        BUDGET.set_ns(ns);
    }

    /// Acquires the mutex: spins while the owner runs, sleeps otherwise.
    #[inline]
    pub fn lock(&self) {
        let me = owner::current_tid();
        if !self.take_free(me) {
            self.lock_contended(me, Patience::Forever);
        }
    }

    /// Takes the mutex if it is free and not reserved for a handoff (barging past
    /// sleepers).
    #[inline]
    pub fn try_lock(&self) -> bool {
        let me = owner::current_tid();
        self.take_free(me) || self.try_acquire(me, false, false, false)
    }

    /// Takes a free word with nobody waiting, for the thread whose
    /// [`owner::current_tid`] is `me`: the fast path of `lock` and `try_lock`, for a
    /// caller that read its id already (the interposer's).
    #[inline(always)]
    pub fn try_lock_quick(&self, me: u32) -> bool {
        self.take_free(me)
    }

    /// Releases the mutex held by `me` (its [`owner::current_tid`]) if nothing else is
    /// in the word: `unlock`'s fast path for a caller that read its id already; `false`,
    /// the word untouched, leaves the release to `unlock`.
    ///
    /// # Safety
    /// The calling thread, whose id is `me`, holds the mutex.
    #[inline(always)]
    pub unsafe fn try_unlock_quick(&self, me: u32) -> bool {
        // (me,0,0,0) -> (0,0,0,0). Release: as in `unlock`.
        let released = self.word.compare_exchange(me, 0, Release, Relaxed).is_ok();
        if released {
            crate::fault::after_release();
        }
        released
    }

    /// The fast path of `lock` and `try_lock`: takes a free word with nobody waiting.
    #[inline(always)]
    fn take_free(&self, me: u32) -> bool {
        // (0,0,0,0) -> (me,0,0,0), expecting the free word without a load first (an
        // unlock clears the spinner's flag, so a free lock reads 0 almost always).
        // Acquire: pairs with the Release in `unlock`.
        match self.word.compare_exchange(0, me, Acquire, Relaxed) {
            Ok(_) => true,
            // (0,1,0,0) -> (me,1,0,0): a spinner set its flag again after the last
            // unlock; the flag alone does not send us down the slow path. Acquire: as
            // above.
            Err(SPINNING) => self
                .word
                .compare_exchange(SPINNING, SPINNING | me, Acquire, Relaxed)
                .is_ok(),
            Err(_) => false,
        }
    }

    /// Acquires the mutex unless `deadline` passes first; whether it did.
    #[cfg(not(loom))]
    pub fn try_lock_until(&self, deadline: std::time::Instant) -> bool {
        let me = owner::current_tid();
        // Acquire: as in `lock`.
        self.word.compare_exchange(0, me, Acquire, Relaxed).is_ok()
            || self.lock_contended(me, Patience::Until(deadline))
    }

    /// Releases the mutex, waking one sleeper or the handoff claimant if needed.
    ///
    /// # Panics
    /// If the calling thread does not hold the mutex (the word is left untouched).
    #[inline(always)]
    pub fn unlock(&self) {
        let me = owner::current_tid();
        // (me,s,0,0) -> (0,0,0,0). Release: pairs with the Acquire of the next
        // acquisition. Nobody sleeps, so there is nobody to wake. (No load first: it
        // costs the uncontended pair ~0.6 ns, more than the second cmpxchg costs an
        // unlock that finds a spinner.)
        match self.word.compare_exchange(me, 0, Release, Relaxed) {
            Ok(_) => crate::fault::after_release(),
            Err(val) => self.unlock_beside_others(me, val),
        }
    }

    /// `unlock` of a word `val` with more than its owner in it: a spinner's flag,
    /// waiters, a handoff, or another owner (the misuse `unlock_contended` reports).
    #[cold]
    fn unlock_beside_others(&self, me: u32, val: u32) {
        // (me,1,0,0) -> (0,0,0,0): the spinner's flag goes too; the spinner sets it
        // again at its next look if the lock is held then, and meanwhile our next
        // `lock` finds the word it expects. Release: as in `unlock`.
        if val == me | SPINNING && self.word.compare_exchange(val, 0, Release, Relaxed).is_ok() {
            crate::fault::after_release();
            // Spinners watch us (after the release: `owner::watch_current`).
            owner::watch_current();
        } else {
            self.unlock_contended(me);
        }
    }

    /// Whether some thread holds the mutex.
    #[inline]
    pub fn is_locked(&self) -> bool {
        // Relaxed: a snapshot for the caller; it orders nothing.
        owner_of(self.word.load(Relaxed)) != 0
    }

    /// Others wait (or we do not hold the lock): release with one RMW that also
    /// settles the wake-up (module doc, transitions `unlock, *`).
    ///
    /// The releasing cmpxchg is the last access to the mutex: everything this unlock
    /// needs is decided before it, and after it only the word's address is used, for
    /// a futex wake (which never touches the memory).
    #[cold]
    fn unlock_contended(&self, me: u32) {
        // Relaxed: reads our own acquisition's write if we hold the lock (nobody else
        // changes the owner field meanwhile); any other value means we do not.
        let val = self.word.load(Relaxed);
        if owner_of(val) != me {
            unlock_by_non_owner(owner_of(val), me);
        }
        self.release_contended(val);
    }

    /// The release of `unlock_contended` by the holder of the word `val`, as the
    /// transitions `unlock, *` say.
    fn release_contended(&self, mut val: u32) {
        let word: *const AtomicU32 = &self.word;
        let mut skip_wake = None;
        loop {
            let (new, wake) = if val & HANDOFF != 0 {
                // Reserved for the claimant, which takes it with WAITERS kept. The
                // reservation's time, for its expiry: written while we still hold
                // the lock (nothing of the mutex is touched after the release).
                // Relaxed: a hint; waiters read it only after a liveness tick.
                self.claimed_at.store(now_us(), Relaxed);
                (val & !OWNER_MASK, Some(CLAIMANT))
            } else {
                match val & (SPINNING | WAITERS) {
                    // The sleepers' duty passes to the one we wake.
                    WAITERS => (0, Some(SLEEPER)),
                    // A spinner will take the lock and inherit WAITERS; every
                    // FAIR_SKIPS-th such unlock of ours wakes a sleeper anyway.
                    both if both == SPINNING | WAITERS => {
                        let wake = *skip_wake.get_or_insert_with(count_skipped_wake);
                        (both, wake.then_some(SLEEPER))
                    }
                    flags => (flags, None),
                }
            };
            // Release: pairs with the Acquire of the next acquisition.
            match self.word.compare_exchange(val, new, Release, Relaxed) {
                Ok(_) => {
                    crate::fault::after_release();
                    if let Some(class) = wake {
                        if class == CLAIMANT {
                            stats::count(STATS, Event::Handoff);
                        }
                        stats::woke(STATS, park::wake_one_of_at(word, class));
                    } else if val & (HANDOFF | SPINNING | WAITERS) == SPINNING | WAITERS {
                        stats::count(STATS, Event::WakeSkipped);
                    }
                    // Spinners watch us (after the release: `owner::watch_current`).
                    owner::watch_current();
                    return;
                }
                Err(now) => val = now,
            }
        }
    }

    /// Releases the mutex on behalf of the thread that holds it, from any thread, as
    /// glibc releases a normal mutex that another thread locked (a mutex used as a
    /// binary semaphore: taken in one thread, given back in another). Whether the
    /// mutex was held: `false` leaves an unlocked mutex as it was.
    ///
    /// The release is the holder's own contended unlock made with the holder's id
    /// (transitions `unlock, *`): the word cannot tell who runs the releasing
    /// cmpxchg, so every argument of "No lost wake-ups" holds unchanged. A reserved
    /// lock is left reserved and its claimant woken, a spinner keeps the sleepers'
    /// wake, and the fairness count of skipped wakes is the caller's (it only spaces
    /// the wakes a spinner's presence skips).
    ///
    /// # Safety
    /// The caller takes the holder's place for this one release: the holder must not
    /// release this hold too (a `lock_api` guard of it must be forgotten), and no
    /// other thread may release it meanwhile.
    ///
    /// # Panics
    /// If another thread releases the same hold between this call's read of the
    /// owner and its release (a broken contract: the word is left untouched).
    pub unsafe fn unlock_for_owner(&self) -> bool {
        // Relaxed: names the hold we release; `unlock_contended` reads the word again
        // and its releasing cmpxchg checks that the same owner still holds it.
        let owner = owner_of(self.word.load(Relaxed));
        if owner == 0 {
            return false;
        }
        self.unlock_contended(owner);
        true
    }

    /// Whether the calling thread holds the mutex, as its word says: a caller that may
    /// have had its hold released by [`unlock_for_owner`](Self::unlock_for_owner)
    /// asks this before `lock`, which panics on a relock by the owner.
    pub fn held_by_current_thread(&self) -> bool {
        // Relaxed: only this thread writes its own id into the word, so it reads it
        // if and only if it still holds the lock, or a value after its release.
        owner_of(self.word.load(Relaxed)) == owner::current_tid()
    }
}

#[cold]
#[inline(never)]
fn relock_by_owner(me: u32) -> ! {
    panic!("klocks: thread {me} locked a klocks::Mutex it already holds (it is not recursive)");
}

#[cold]
#[inline(never)]
fn unlock_by_non_owner(owner: u32, me: u32) -> ! {
    if owner == 0 {
        panic!("klocks: unlock of a klocks::Mutex that is not locked");
    }
    panic!("klocks: unlock of a klocks::Mutex held by thread {owner} from thread {me}, which does not hold it");
}

impl std::fmt::Debug for RawMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let val = self.word.load(Relaxed);
        f.debug_struct("RawMutex")
            .field("owner", &owner_of(val))
            .field("spinning", &(val & SPINNING != 0))
            .field("waiters", &(val & WAITERS != 0))
            .field("handoff", &(val & HANDOFF != 0))
            .field("to_sleeper", &(val & TO_SLEEPER != 0))
            .finish()
    }
}

// SAFETY: the owner field goes from 0 to a thread id only by cmpxchg against a value
// with owner 0 (and without HANDOFF, but for the claimant), and back to 0 only in
// `unlock`, by the thread whose id it holds (or in the unsafe `unlock_for_owner`,
// whose caller takes that thread's place). Its guards are not `Send`: `unlock` on
// another thread would panic (the owner check).
raw_mutex!(for RawMutex, guard = GuardNoSend);

// SAFETY: `try_lock_until` acquires exactly like `lock` when it returns true.
#[cfg(not(loom))]
unsafe impl lock_api::RawMutexTimed for RawMutex {
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;

    fn try_lock_for(&self, timeout: Self::Duration) -> bool {
        // A timeout too far out to add is a wait without one.
        match std::time::Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_lock_until(deadline),
            None => {
                self.lock();
                true
            }
        }
    }

    fn try_lock_until(&self, deadline: Self::Instant) -> bool {
        RawMutex::try_lock_until(self, deadline)
    }
}

mod contended;
mod fair;
mod fork_child;
pub(super) mod handoff;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, feature = "stats", not(loom)))]
mod stats_tests;
