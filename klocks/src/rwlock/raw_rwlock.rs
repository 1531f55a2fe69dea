//! The default reader-writer lock: the default mutex's design on a write bit, a
//! count of readers beside it, writers first while writers sleep, and timed reader
//! turns, so that neither side can shut the other out for good.
//!
//! # The algorithm
//!
//! [`RawRwLock`] keeps the fast paths of std's futex rwlock (one cmpxchg to take or
//! release a read or write lock, 16 bytes) and bounds the readers' wait, which std's
//! (readers can starve) and glibc's default (writers starve) do not:
//!
//! - **Writers take `WRITER` as the default mutex takes its lock**
//!   ([`RawMutex`](crate::RawMutex)): barging, one spinner that spins while the
//!   writer holding the lock runs ([`owner`](crate::owner)), the others spinning
//!   briefly, yielding (before their first sleep only) and then sleeping on the futex
//!   (by priority, then arrival), an unlock that wakes one sleeper unless the spinner
//!   is about to take over, and wakes it before its release (below). A writer
//!   takes `WRITER` even with readers inside, which holds new readers back, and then
//!   waits for the readers inside to leave (spinning, then sleeping until the last
//!   one wakes it): readers cannot starve a writer.
//! - **Readers** enter with one cmpxchg while no writer holds `WRITER` and none
//!   sleeps (`WRITERS_WAITING`, as std's rwlock: writers first). Otherwise they spin
//!   while the writer holds the lock past its drain (no reader inside), runs, and has
//!   no writer spinning or sleeping behind it (its unlock, a critical section away,
//!   lets them in), within the spin budget; then they sleep. Behind waiting writers,
//!   whose unlocks pass the lock from writer to writer, or while a writer drains the
//!   readers inside, they spin only briefly: with more threads than CPUs, readers
//!   spinning there took the CPUs from the threads they waited for (measured in
//!   `docs/results/rw-mix-2026-11-25.txt`).
//! - **Timed reader turns.** A write unlock wakes the sleeping readers when no writer
//!   sleeps; while writers sleep, it wakes them once they have slept
//!   [`READER_TURN_AFTER_US`], and sets `READER_TURN`: readers enter although
//!   `WRITERS_WAITING` is set, and no writer takes `WRITER` until the first of them
//!   has entered (its entry clears the bit) or [`TURN_GRACE_US`] passed. So a reader
//!   waits for at most about one writer phase.
//!
//! Only *sleeping* writers hold readers back (and the one woken in turn for them,
//! below), not spinning or yielding ones. A
//! writer that counted itself in the word from the start of its slow path, as this
//! lock once did, held every reader back while it was preempted in its spin or
//! woken but not yet running; with more threads than CPUs, readers then slept
//! behind writers that were not running, and the lock became a convoy (rw-mix,
//! 50% reads, 32 threads on 2 CPUs: 1.8 s against std's 0.54, and 1.4M context
//! switches against 6k).
//!
//! Writers among themselves barge (as the default mutex does between its handoffs);
//! what bounds a writer's wait is the futex's FIFO order of sleepers, so sleeping
//! writers must be woken in turn, and quickly. While two or more writers sleep (a
//! count beside the word), a write unlock wakes one *before* its releasing cmpxchg,
//! and if that wake found one it keeps `WRITERS_WAITING`: the woken writer will take
//! `WRITER` (setting the flag again, as every writer that has slept), so the next
//! write unlock wakes the next sleeper. Otherwise, as before, the unlock clears the
//! flag and wakes one writer after its release, and no unlock wakes another until
//! that one has run: with more threads than CPUs, tens of milliseconds (`rw-fair`, 40
//! readers and 40 writers on 2 CPUs: the readers filled the run queue, a scheduling
//! round took 60–80 ms at the 4 ms tick, and in 3 s some writers got no section at
//! all; with the wakes in turn the slowest of the 40 got 9–21% of the writers' mean,
//! and their mean was 4×, `docs/results/rw-writer-rotation-2026-11-26.txt`). For the
//! same reason a
//! writer that has slept does not yield again before its next sleep: in such a run
//! queue each yield cost it a round, and a woken writer that lost the race yielded 8
//! rounds away before it queued again. The price is fewer and shorter reader batches
//! where writers queue: `rw-fair` readers' mean 13–23% lower; `rwsem` (half readers,
//! half writers, no work outside) at 32–64 threads and sections of 170–870 ns
//! 11–22% fewer sections in all, as writes rose 5–7× (64 threads, 870 ns: 217k
//! writes/s against 31k; std's writers did 191 to 8k); `rw-mix` within its noise.
//! Tried and not kept: the default mutex's handoff claim (few woken writers lose, the
//! sleepers are the ones that wait), waking two writers per unlock, a timed nudge of
//! one more sleeping writer every 200 µs
//! (`docs/results/rw-writer-nudge-2026-11-26.txt`), and writers that never yield
//! (`rw-mix` 0.90× where it was 0.96×).
//!
//! **Writer turns.** Woken in turn, a sleeper still lost to the writers the scheduler
//! kept running: two running writers passed the lock between them by spinning (their
//! unlocks skip the wake while one spins), and a woken writer that found it held
//! went back to the end of the queue. So a writer that has not slept for
//! [`WRITER_TURN_US`] (1 ms), or never has, and finds the lock write-held while
//! writers sleep, sleeps at once behind them instead of spinning: the running writers
//! join the queue, and the lock goes round it (as the default mutex's turns, but
//! they never lapse while writers sleep). `rw-fair` 40+40: the slowest writer gets
//! 0.24–0.29 of the writers' mean (0.06–0.23 without).
//!
//! The writing thread's id is kept beside the word, for the owner probe and to catch
//! misuse, and so are the time of the last reader event (the first sleep, or the
//! turn) and the count of sleeping writers.
//!
//! # The word
//!
//! ```text
//!     31          7       6        5        4        3         2         1        0
//! +-------------+--------+--------+--------+---------+---------+---------+--------+
//! |   readers   | UPGRA- | READER | DRAIN_ | READERS_| WRITERS_| WRITER_ | WRITER |
//! |             | DABLE  |  TURN  | SLEEPS | WAITING | WAITING | SPINNING|        |
//! +-------------+--------+--------+--------+---------+---------+---------+--------+
//! ```
//!
//! The count sits above the flags so that a read unlock can be one `fetch_sub`
//! (std's and parking_lot's read unlock) and still check its caller: an unlock
//! with no reader inside wraps the count alone, leaves every flag as it was, and
//! is undone at once by a `fetch_add` before it panics.
//!
//! Transitions, as `(readers, writer, writers waiting, readers waiting, turn)`, with
//! the writers' `SPINNING` as in the default mutex and `DRAIN_SLEEPS` with the
//! draining writer's sleep:
//!
//! ```text
//! read lock:       (r,0,0,*,*) or (r,0,*,*,1) -> (r+1,0,*,*,0)        cmpxchg
//! read unlock:     r -> r-1                                           fetch_sub; the last reader
//!                                                                     wakes a sleeping drainer,
//!                                                                     which clears DRAIN_SLEEPS
//! reader sleeps:   (r,w,ww,0,t) -> (r,w,ww,1,t), futex_wait(READER)   w, or ww and t = 0
//! write lock:      (0,0,0,0,0) -> (0,1,0,0,0)                         cmpxchg
//! writer takes:    (r,0,ww,rw,t) -> (r,1,ww|slept,rw,0)               t = 0 or the turn is over;
//!                                                                     then it drains the r readers
//! writer sleeps:   (r,1,*,*,*) -> (r,1,1,*,*), futex_wait(WRITER)    (also at once, before any
//!                                                                     spin, when its turn is over
//!                                                                     and writers sleep)
//! write unlock:    (0,1,0,0,0) -> (0,0,0,0,0)                         cmpxchg
//! ... a writer slept: with two or more asleep, futex_wake(UNTIMED WRITER, one)
//!                     first; then (0,1,1,rw,0) -> (0,0,e,rw,0),
//!                     futex_wake(WRITER, one), e = whether the first wake found
//!                     one; if neither woke anyone and rw, futex_wake(READER, all)
//! ... readers slept:  (0,1,0,1,0) -> (0,0,0,0,0), futex_wake(READER, all)
//! ... both, due:      (0,1,1,1,0) -> (0,0,0,0,1), futex_wake(READER, all), futex_wake(WRITER, one)
//! ```
//!
//! The upgradable lock (`lock_api`'s `upgradable_read`) is `WRITER` taken as a writer
//! takes it, with `UPGRADABLE` (`1u` below) and without the drain: writers and other
//! upgradable holders wait as for a writer, readers enter beside it. Upgrading clears
//! `UPGRADABLE` and drains the readers inside, as a writer that took `WRITER` does;
//! no writer can come between.
//!
//! ```text
//! upgradable lock: (r,0,ww,rw,t) -> (r,1u,ww|slept,rw,0)              as "writer takes", no drain
//! read lock:       (r,1u,0,*,*) -> (r+1,1u,0,*,*)                     cmpxchg
//! upgrade:         (r,1u,*,*,*) -> (r,1,*,*,*), then the drain        fetch_and
//! unlock:          as the write unlock, clearing WRITER and UPGRADABLE
//! ```
//!
//! `slept`: a writer that has slept takes `WRITER` with `WRITERS_WAITING` set
//! (Drepper's rule, as in the default mutex). Every unlock is one releasing cmpxchg
//! followed by futex wakes on the word's address only: the next holder may free the
//! lock as soon as it has it. The early wake comes before that cmpxchg, while the
//! lock is still held.
//!
//! # No lost wake-ups
//!
//! Readers sleep only on a value with `READERS_WAITING` that keeps them out (a
//! writer holds `WRITER`, or `WRITERS_WAITING` is set outside a turn);
//! `READERS_WAITING` is cleared only by a write unlock that then wakes every
//! sleeping reader. A write unlock that leaves it set (its readers have not waited
//! long enough) wakes a writer, whose own unlock decides again; if that wake finds no
//! writer (`WRITERS_WAITING` outlives the sleepers it stood for), the unlock wakes
//! the readers after all, leaving the bit for a later unlock to clear. An unlock that
//! leaves `WRITERS_WAITING` on a free word for the spinner leaves it to a writer that
//! will take `WRITER`: the spinner takes the free word, and a timed writer that gives
//! up takes a free word before it leaves. Writers sleep only on a value with
//! `WRITER` and `WRITERS_WAITING`; the duty to wake one passes from writer to writer
//! as in the default mutex. A write unlock whose early wake found a writer keeps
//! `WRITERS_WAITING`, on a word that may be free: that writer waited without a
//! deadline (the early wake wakes no timed writer, which could give up before the
//! release), so it will take `WRITER`, or sleep again on a held word with the flag,
//! whose unlock decides in turn; and if it slept again on the held word before this
//! release, the wake after the release finds it (or another writer, which comes in
//! its place). The draining writer sleeps only on a value with
//! `DRAIN_SLEEPS` and readers inside; the read unlock that takes the count to 0
//! finds the bit in the value its `fetch_sub` returns and wakes it (the drainer
//! clears the bit itself once no reader is inside). The futex compares the value
//! atomically with queueing a sleeper, so a change between the decision to sleep and
//! the sleep returns at once.
//!
//! # Signals
//!
//! Three waiting roles are delegations: the writer spinner (an unlock that finds
//! `WRITER_SPINNING` leaves the sleeping writers' wake to it), a writer woken before
//! the release or relied on by a skipped wake (the unlock leaves `WRITERS_WAITING` on
//! a free word for it to take, which holds readers back), and the draining writer
//! (it holds `WRITER` while the readers inside leave). Each is recorded per thread
//! ([`role`](crate::role)), and a signal handler on that thread that takes the same
//! lock never waits for its own thread: as the spinner's handler it clears
//! `WRITER_SPINNING` before it sleeps; as a reader it enters past `WRITERS_WAITING`
//! on a free lock, and alongside its own thread's `WRITER` while that thread drains
//! (its section ends before the drain goes on); as a writer it waits, as its thread
//! does, for the readers to leave, and then borrows its thread's `WRITER` for its
//! section (marked in the writer's id, so that its unlock gives it back).
//!
//! A wake the *unlocking* thread owes after its release is the other half of the
//! class: the last read unlock wakes a sleeping drainer after its `fetch_sub`, and a
//! handler that interrupts it in between and waits behind the drainer's `WRITER`
//! would wait for that wake. Every waiter about to sleep on a drained word whose
//! drainer still sleeps makes the wake itself (`wake_owed_drainer`). The write
//! unlock's own wakes after its release leave nothing that blocks such a handler: a
//! writer finds `WRITER` free; a reader finds `WRITERS_WAITING` cleared, or kept for
//! a writer that is running (woken early, or the spinner), or a reader turn.
//!
//! # Misuse
//!
//! Releasing a write lock the thread does not hold panics and leaves the lock as it
//! was. Releasing a read lock when no reader holds the lock panics after it restored
//! the count its `fetch_sub` wrapped: meanwhile other threads saw more than
//! [`MAX_READERS`] readers, which no acquisition can make, so they know it for the
//! transient it is and wait for the undo, however long the misusing thread is kept
//! from running (writers wait for the count to come back to 0). Taking a write lock (or a
//! read lock) while holding the write lock panics instead of deadlocking. A read lock
//! taken again by its holder while a writer sleeps for the lock or drains it
//! deadlocks, as with every rwlock that prefers writers (std's included). More than
//! [`MAX_READERS`] readers at once panic, at once; the `_within_max` entries refuse
//! the reader instead ([`TooManyReaders`], pthread's `EAGAIN`), for callers that have
//! an error to return.

use crate::backoff;
use crate::budget::SpinBudget;
use crate::catalog::RwLockKind;
use crate::owner::{self, Watch};
use crate::park;
use crate::role::Role;
use crate::stats::{self, Event, Lock};
use crate::sync::{cpu_relax_times, AtomicU32, Ordering::*};
#[cfg(loom)]
use crate::wait::TURNS_OVER_IN_MODELS;
use crate::wait::{count_skipped_wake, now_us, Patience};
use std::cell::Cell;

/// Whose counters the `stats` feature bumps.
const STATS: Lock = Lock::RwLock(RwLockKind::Default);

/// A writer holds the lock (or holds it and waits for the readers inside to leave).
const WRITER: u32 = 1 << 0;
/// One writer spins on the writer that holds the lock.
const WRITER_SPINNING: u32 = 1 << 1;
/// Writers may sleep on the word: the write unlock wakes one. New readers wait while
/// it is set (writers first), unless a turn is on.
const WRITERS_WAITING: u32 = 1 << 2;
/// Readers may sleep on the word: the write unlock wakes them all.
const READERS_WAITING: u32 = 1 << 3;
/// The writer that holds `WRITER` sleeps until the last reader leaves.
const DRAIN_SLEEPS: u32 = 1 << 4;
/// Readers were woken by a write unlock while writers slept: they enter though
/// `WRITERS_WAITING` is set, and no writer takes `WRITER` until one of them entered
/// (its entry clears the bit) or [`TURN_GRACE_US`] passed.
const READER_TURN: u32 = 1 << 5;
/// The `WRITER` holder holds it upgradable: readers enter beside it, writers do not.
const UPGRADABLE: u32 = 1 << 6;
/// One reader: the count is the word's top 25 bits.
const READER: u32 = 1 << 7;
/// The count of readers inside.
const READERS_MASK: u32 = (u32::MAX / READER) * READER;
/// Marks the writer's id of a write lock a signal handler borrowed from its own
/// thread's drain (thread ids fit in 22 bits).
const BORROWED: u32 = 1 << 31;
/// The most readers at once: half of what the count holds. The upper half is left to
/// the wrap of an unheld read unlock (an empty count minus one, and one more per
/// concurrent misuse), so that a reader tells a transient wrap from a real overflow by
/// the count alone, never by how long it waited.
pub const MAX_READERS: u32 = (u32::MAX / READER) / 2;

/// The futex class of sleeping readers.
const READER_CLASS: u32 = 1;
/// The futex class of writers that sleep until a write unlock.
const WRITER_CLASS: u32 = 2;
/// Sleeping writers without a deadline are also of this class: the only writers a
/// write unlock wakes before its release (a timed one might give up before that
/// release and not come back).
const UNTIMED_WRITER_CLASS: u32 = 8;
/// The futex class of the writer that waits for the readers to leave.
const DRAIN_CLASS: u32 = 4;

/// Sleeping readers get a turn from a write unlock once they have waited this long
/// while writers wait (µs); until then writers go first.
// Used by the native clock only (time is not modelled under loom).
#[cfg_attr(loom, allow(dead_code))]
pub const READER_TURN_AFTER_US: u32 = 500;

/// How long a writer waits at most for the readers of a turn to come (µs).
// Used by the native clock only (time is not modelled under loom).
#[cfg_attr(loom, allow(dead_code))]
pub const TURN_GRACE_US: u32 = 500;

/// A writer that cannot spin gives its CPU away this many times before its first
/// sleep; one that has slept sleeps again at once (module doc).
#[cfg(not(loom))]
const YIELDS_BEFORE_SLEEP: u32 = 8;
/// No yield under loom: loom runs another thread at a yield, so a woken writer that
/// yielded never went back to sleep before the unlock that woke it had released the
/// lock. An unlock that woke a writer before its release and kept `WRITERS_WAITING`
/// without a wake after it (a lost wake-up, which hung `rw-fair`) passed every model
/// with one yield; `two_writers_twice` finds it with none.
#[cfg(loom)]
const YIELDS_BEFORE_SLEEP: u32 = 0;

/// A writer that has not slept on a `RawRwLock` for this long (µs), or never has,
/// and finds the lock write-held while writers sleep, sleeps at once behind them:
/// its turn is over (module doc). `rw-fair`, 40 readers and 40 writers on 2 CPUs:
/// with 1 ms the slowest writer got 0.24–0.29 of the writers' mean, with 300 µs
/// 0.27, without turns 0.06–0.23 (`docs/results/rw-writer-turns-2026-11-26.txt`).
// Used by the native clock only (time is not modelled under loom).
#[cfg_attr(loom, allow(dead_code))]
pub const WRITER_TURN_US: u32 = 1000;

#[cfg(not(loom))]
std::thread_local! {
    /// When this thread last woke from a sleep as a writer on a `RawRwLock` (µs,
    /// wrapping, with the low bit set); 0 if it never slept as one. No destructor:
    /// it can be read during thread exit too.
    static WRITER_WOKE_AT: Cell<u32> = const { Cell::new(0) };
}

/// The spin budget shared by every `RawRwLock`.
static BUDGET: SpinBudget = SpinBudget::new();

/// The draining writer's pause between two looks at the reader count, in
/// `cpu_relax`es (~140 ns at 8.5 ns per pause): the readers it waits for are one
/// short section away.
const DRAIN_BACKOFF: u32 = 16;

/// A spinning waiter's longest pause between two looks, in `cpu_relax`es.
const MAX_BACKOFF: u32 = 64;

// A spinning waiter's first pause between two looks at the word adapts per thread
// ([`backoff`](crate::backoff)), as the default mutex spinner's does; each later
// pause doubles, up to `MAX_BACKOFF`. With short sections and work outside the lock
// a late look leaves the lock idle or a reader outside it (`rw-mix` at 50% reads:
// 0.70× std's with a fixed 64 pauses, 0.86–0.94× with 16), while against a writer
// that re-takes the lock at once each look takes the line from it (`rwsem`, one
// reader and one writer, load 1: 16.1M ops/s with a fixed 16, 29.6M with 64).
// Adapting, both: `rw-mix` 0.91–1.05× at 50% and 90% reads in two runs, `rwsem`
// 29.1M.
#[cfg(not(loom))]
std::thread_local! {
    /// This thread's first pause as a waiter on a `RawRwLock` (no destructor: it
    /// can be read during thread exit too).
    static FIRST_BACKOFF: Cell<u32> = const { Cell::new(backoff::MIN_FIRST) };
}
#[cfg(loom)]
loom::thread_local! {
    static FIRST_BACKOFF: Cell<u32> = Cell::new(backoff::MIN_FIRST);
}

/// How long a waiter spins behind waiting writers or a drain, or without the
/// writers' spinner claim, in `cpu_relax`es: long enough for a running writer to
/// take the lock and release it (threads ≤ CPUs), short enough not to matter when
/// the writers are not running.
const BRIEF_SPIN: u32 = 256;

/// The default reader-writer lock. See the module doc; [`RwLock`](crate::RwLock) is
/// `RwLock<T>` on it.
pub struct RawRwLock {
    word: AtomicU32,
    /// The writing thread's id, 0 when no writer holds the lock.
    writer: AtomicU32,
    /// The microsecond clock (wrapping) when readers began to sleep.
    readers_since: AtomicU32,
    /// How many writers sleep in `sleep_as_writer`: a hint that decides whether a
    /// write unlock wakes a writer early.
    writers_asleep: AtomicU32,
}

fn readers(val: u32) -> u32 {
    val / READER
}

/// Whether a reader that cannot enter may go on spinning, having spun `spent`
/// pauses: the whole budget while a writer holds the lock past its drain (no reader
/// inside) with no writer spinning or sleeping behind it, so that its unlock, a
/// critical section away, lets the reader in; only [`BRIEF_SPIN`] behind
/// waiting writers or a drain, where the lock passes from writer to writer or waits
/// for the readers inside, and with more threads than CPUs a spinning reader takes a
/// CPU from the threads it waits for.
fn reader_may_spin(val: u32, spent: u32) -> bool {
    let clear_run =
        val & (WRITER | WRITER_SPINNING | WRITERS_WAITING) == WRITER && readers(val) == 0;
    clear_run || spent < BRIEF_SPIN
}

/// Whether a reader may enter: no writer holds the lock (or it is held upgradable),
/// and none sleeps for it or it is the readers' turn.
fn readers_may_enter(val: u32) -> bool {
    val & (WRITER | UPGRADABLE) != WRITER && (val & WRITERS_WAITING == 0 || val & READER_TURN != 0)
}

/// How a thread takes `WRITER`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Take {
    /// For writing: it then drains the readers inside.
    Exclusive,
    /// Upgradable: readers go on entering beside it; writers and other upgradable
    /// holders wait. Upgrading clears `UPGRADABLE` and drains the readers.
    Upgradable,
}

impl Take {
    /// The bits the take sets besides `WRITER`.
    fn extra(self) -> u32 {
        match self {
            Take::Exclusive => 0,
            Take::Upgradable => UPGRADABLE,
        }
    }
}

/// The `WRITERS_WAITING` bit a writer taking `WRITER` writes: kept, and set if it
/// has slept.
fn writers_waiting_after(val: u32, slept: bool) -> u32 {
    if slept {
        WRITERS_WAITING
    } else {
        val & WRITERS_WAITING
    }
}

impl RawRwLock {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
            writer: AtomicU32::new(0),
            readers_since: AtomicU32::new(0),
            writers_asleep: AtomicU32::new(0),
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
            writer: AtomicU32::new(0),
            readers_since: AtomicU32::new(0),
            writers_asleep: AtomicU32::new(0),
        }
    }

    /// Sets how long readers and writers of every `RawRwLock` spin at most before
    /// they sleep, overriding `KLOCKS_SPIN_NS` and calibration. See [`crate::budget`].
    pub fn set_spin_ns(ns: u64) {
        BUDGET.set_ns(ns);
    }

    /// Takes a read lock.
    #[inline]
    pub fn lock_shared(&self) {
        if !self.try_enter_reader() {
            self.lock_shared_slow(Patience::Forever);
        }
    }

    /// Takes a read lock if no writer holds the lock.
    #[inline]
    pub fn try_lock_shared(&self) -> bool {
        self.try_enter_reader()
    }

    /// Takes a read lock unless `deadline` passes first; whether it did.
    #[cfg(not(loom))]
    pub fn try_lock_shared_until(&self, deadline: std::time::Instant) -> bool {
        self.try_enter_reader() || self.lock_shared_slow(Patience::Until(deadline))
    }

    /// Releases a read lock.
    ///
    /// # Panics
    /// If no reader holds the lock (the word is restored before the panic).
    #[inline]
    pub fn unlock_shared(&self) {
        // One fetch_sub, as std's and parking_lot's: a cmpxchg that guessed the sole
        // reader failed whenever another reader was inside, and a load before the
        // cmpxchg took the line twice per unlock; with readers on both CPUs the
        // fetch_sub gave them ~25% more sections
        // (`docs/results/rw-read-contention-2026-11-26.txt`).
        // Release: pairs with the Acquire of the writer that finds no reader.
        let val = self.word.fetch_sub(READER, Release);
        if readers(val) == 0 {
            self.undo_unheld_read_unlock();
        }
        crate::fault::after_release();
        // The last reader out wakes a draining writer that sleeps; the writer clears
        // `DRAIN_SLEEPS` (this thread's access ended with the fetch_sub).
        if readers(val) == 1 && val & DRAIN_SLEEPS != 0 {
            stats::woke(STATS, park::wake_one_of_at(&self.word, DRAIN_CLASS));
        }
    }

    /// A read unlock found no reader inside: its fetch_sub wrapped the count (and
    /// nothing else, the count being the word's top bits). Undo it, then panic.
    #[cold]
    #[inline(never)]
    fn undo_unheld_read_unlock(&self) -> ! {
        crate::fault::unheld_read_unlock_wrapped();
        // Relaxed: restores the count; the unlock published nothing. Until then other
        // threads saw more than `MAX_READERS` readers: writers wait for them to
        // leave, and readers for the count to come back (`wait_below_max_readers`).
        self.word.fetch_add(READER, Relaxed);
        unlock_of_unheld("read");
    }

    /// Takes the write lock.
    #[inline]
    pub fn lock_exclusive(&self) {
        if !self.try_lock_exclusive_free() {
            self.lock_exclusive_slow(owner::current_tid(), Take::Exclusive, Patience::Forever);
        }
    }

    /// `lock_exclusive`'s fast path alone: `(0,0,0,0,0) -> (0,1,0,0,0)`, taking the
    /// write lock only from a free word with no waiter of any kind. Unlike
    /// [`try_lock_exclusive`](Self::try_lock_exclusive) it never takes `WRITER` past
    /// sleeping writers, so a caller that waits in `lock_exclusive` after a `false`
    /// keeps the writers' turns (pthread's `wrlock` route, in klocks-ffi).
    #[inline]
    pub fn try_lock_exclusive_free(&self) -> bool {
        let me = owner::current_tid();
        // Acquire: pairs with the Release of the unlocks.
        let took = self
            .word
            .compare_exchange(0, WRITER, Acquire, Relaxed)
            .is_ok();
        if took {
            // Relaxed: read by others as a hint (the probe), and by this thread alone
            // for "is it me?". (The slow path stores it itself.)
            self.writer.store(me, Relaxed);
        }
        took
    }

    /// Takes the write lock if no reader or writer holds it (or a turn is on).
    #[inline]
    pub fn try_lock_exclusive(&self) -> bool {
        let me = owner::current_tid();
        // Relaxed: picks the transition; the cmpxchg decides.
        let val = self.word.load(Relaxed);
        // Acquire: as in `lock_exclusive`.
        let took = val & (READERS_MASK | WRITER | READER_TURN) == 0
            && self
                .word
                .compare_exchange(val, val | WRITER, Acquire, Relaxed)
                .is_ok();
        if took {
            // Relaxed: as in `lock_exclusive`.
            self.writer.store(me, Relaxed);
        }
        took
    }

    /// Takes the write lock unless `deadline` passes first; whether it did.
    #[cfg(not(loom))]
    pub fn try_lock_exclusive_until(&self, deadline: std::time::Instant) -> bool {
        let me = owner::current_tid();
        // Acquire: as in `lock_exclusive`.
        if self
            .word
            .compare_exchange(0, WRITER, Acquire, Relaxed)
            .is_ok()
        {
            // Relaxed: as in `lock_exclusive`.
            self.writer.store(me, Relaxed);
            return true;
        }
        self.lock_exclusive_slow(me, Take::Exclusive, Patience::Until(deadline))
    }

    /// Releases the write lock.
    ///
    /// # Panics
    /// If the calling thread does not hold the write lock (the lock is left as it
    /// was).
    #[inline]
    pub fn unlock_exclusive(&self) {
        let Some(me) = self.disown_write() else {
            // A signal handler's write lock borrowed from its thread's drain: the
            // thread's WRITER stays.
            return;
        };
        // (0,1,0,0,0) -> 0. Release: pairs with the Acquire of the next acquisition.
        if self
            .word
            .compare_exchange(WRITER, 0, Release, Relaxed)
            .is_ok()
        {
            crate::fault::after_release();
        } else {
            self.release_write(me, 0);
        }
    }

    /// Releases the calling thread's hold, read or write, when one look at the word
    /// tells which it is; `false`, having done nothing, when it cannot. For callers
    /// that are not told (pthread's `unlock`), and know the caller holds the lock:
    ///
    /// - readers inside and no `WRITER`: a read hold (a writer's `WRITER` stays set
    ///   until its own unlock, so the caller is not one), released as
    ///   [`unlock_shared`](Self::unlock_shared) releases it;
    /// - `WRITER` alone (no reader inside, not upgradable) with the caller's id as the
    ///   writer: its write hold, released as [`unlock_exclusive`](Self::unlock_exclusive)
    ///   releases it;
    /// - anything else (a free lock, a writer draining the readers inside, an
    ///   upgradable holder, a write lock a signal handler borrowed): `false`.
    #[inline]
    pub fn try_unlock_either(&self) -> bool {
        // Relaxed: picks which release; the release's own RMW (the fetch_sub of
        // `unlock_shared`, the cmpxchg of `unlock_exclusive`) is the Release that
        // pairs with the next acquisition's Acquire.
        let val = self.word.load(Relaxed);
        if val & WRITER == 0 {
            if readers(val) == 0 {
                return false;
            }
            self.unlock_shared();
            return true;
        }
        // Relaxed: only this thread stores its own id there, so "is it me?" needs no
        // ordering (as in `disown_write`).
        if val & (READERS_MASK | UPGRADABLE) != 0
            || self.writer.load(Relaxed) != owner::current_tid()
        {
            return false;
        }
        self.unlock_exclusive();
        true
    }

    /// Turns the write lock the thread holds into a read lock, letting waiting
    /// readers in with it.
    ///
    /// # Panics
    /// If the calling thread does not hold the write lock.
    pub fn downgrade(&self) {
        match self.disown_write() {
            Some(me) => self.release_write(me, READER),
            // A borrowed write lock becomes a read lock beside its thread's WRITER,
            // as a handler's read would be. Relaxed: this thread's own WRITER holds
            // every other writer and reader out.
            None => {
                self.word.fetch_add(READER, Relaxed);
            }
        }
    }

    /// Takes the lock upgradable: readers go on entering beside it, writers and
    /// other upgradable holders wait; [`upgrade`](Self::upgrade) then makes it a
    /// write lock without letting a writer in between. It is taken as the write lock
    /// is (`WRITER` with `UPGRADABLE`), without the drain.
    #[inline]
    pub fn lock_upgradable(&self) {
        let me = owner::current_tid();
        // (0,0,0,0,0) -> (0,1u,0,0,0). Acquire: pairs with the Release of the unlocks.
        if self
            .word
            .compare_exchange(0, WRITER | UPGRADABLE, Acquire, Relaxed)
            .is_ok()
        {
            // Relaxed: as in `lock_exclusive`.
            self.writer.store(me, Relaxed);
        } else {
            self.lock_exclusive_slow(me, Take::Upgradable, Patience::Forever);
        }
    }

    /// Takes the lock upgradable if no writer or upgradable holder holds it (and no
    /// reader turn is on), whatever readers are inside.
    pub fn try_lock_upgradable(&self) -> bool {
        let me = owner::current_tid();
        // Relaxed: picks the transition; the cmpxchg decides.
        let val = self.word.load(Relaxed);
        // Acquire: as in `lock_exclusive`.
        let took = val & (WRITER | READER_TURN) == 0
            && self
                .word
                .compare_exchange(val, val | WRITER | UPGRADABLE, Acquire, Relaxed)
                .is_ok();
        if took {
            // Relaxed: as in `lock_exclusive`.
            self.writer.store(me, Relaxed);
        }
        took
    }

    /// Releases the upgradable lock.
    ///
    /// # Panics
    /// If the calling thread does not hold it (the lock is left as it was).
    pub fn unlock_upgradable(&self) {
        let Some(me) = self.disown_write() else {
            return;
        };
        // (r,1u,0,0,0) -> (r,0,0,0,0). Relaxed: picks the transition; the cmpxchg
        // decides, and its Release pairs with the Acquire of the next writer's
        // acquisition.
        let val = self.word.load(Relaxed);
        let released = val & !(READERS_MASK | WRITER | UPGRADABLE) == 0
            && self
                .word
                .compare_exchange(val, val & READERS_MASK, Release, Relaxed)
                .is_ok();
        if released {
            crate::fault::after_release();
        } else {
            self.release_write(me, 0);
        }
    }

    /// Makes the upgradable lock the calling thread holds a write lock: no new reader
    /// enters from here, and it waits for the readers inside to leave (as a writer's
    /// drain does).
    ///
    /// # Panics
    /// If the calling thread does not hold the lock upgradable.
    pub fn upgrade(&self) {
        if self.check_upgradable() {
            // Relaxed: the flag publishes nothing; the drain's Acquire loads pair
            // with the readers' Release unlocks.
            self.word.fetch_and(!UPGRADABLE, Relaxed);
            self.drain_readers(Patience::Forever);
        }
    }

    /// Makes the upgradable lock a write lock if no reader is inside; whether it did.
    ///
    /// # Panics
    /// If the calling thread does not hold the lock upgradable.
    pub fn try_upgrade(&self) -> bool {
        if !self.check_upgradable() {
            return true;
        }
        // Relaxed: picks the transition; the cmpxchg decides.
        let mut val = self.word.load(Relaxed);
        while readers(val) == 0 {
            // Acquire: pairs with the Release of the last reader's unlock.
            match self
                .word
                .compare_exchange(val, val & !UPGRADABLE, Acquire, Relaxed)
            {
                Ok(_) => return true,
                Err(now) => val = now,
            }
        }
        false
    }

    /// Turns the upgradable lock into a read lock.
    ///
    /// # Panics
    /// If the calling thread does not hold the lock upgradable.
    pub fn downgrade_upgradable(&self) {
        if self.check_upgradable() {
            if let Some(me) = self.disown_write() {
                self.release_write(me, READER);
            }
        }
    }

    /// Turns the write lock the calling thread holds into an upgradable lock:
    /// readers may enter beside it from here (sleeping ones are woken at its unlock).
    ///
    /// # Panics
    /// If the calling thread does not hold the write lock.
    pub fn downgrade_to_upgradable(&self) {
        // Relaxed: only this thread stores its own id there.
        let holder = self.writer.load(Relaxed);
        let me = owner::current_tid();
        if holder != me || self.word.load(Relaxed) & (WRITER | UPGRADABLE) != WRITER {
            write_unlock_by_non_writer(holder & !BORROWED, me);
        }
        // Release: pairs with the Acquire of the readers that enter beside it, which
        // then see the write section's writes.
        self.word.fetch_or(UPGRADABLE, Release);
    }

    /// Whether the calling thread holds the lock upgradable (`false` for a write lock
    /// a signal handler borrowed from its thread's drain: it is exclusive already);
    /// panics otherwise.
    fn check_upgradable(&self) -> bool {
        // Relaxed: only this thread stores its own id there.
        let holder = self.writer.load(Relaxed);
        let me = owner::current_tid();
        if holder == me | BORROWED {
            return false;
        }
        if holder != me || self.word.load(Relaxed) & UPGRADABLE == 0 {
            panic!("klocks: thread {me} upgraded or downgraded a klocks::RwLock it does not hold upgradable");
        }
        true
    }

    /// Whether a writer holds the lock or any reader does.
    pub fn is_locked(&self) -> bool {
        // Relaxed: a snapshot for the caller.
        let val = self.word.load(Relaxed);
        val & WRITER != 0 || readers(val) != 0
    }

    /// Whether a writer holds the lock (not while it still waits for readers to
    /// leave: they hold it shared).
    pub fn is_locked_exclusive(&self) -> bool {
        // Relaxed: a snapshot for the caller.
        let val = self.word.load(Relaxed);
        val & (WRITER | UPGRADABLE) == WRITER && readers(val) == 0
    }

    /// The thread that holds the write lock, if one does. Exact for "is it me?" (only
    /// the writer stores its own id, and clears it before it releases); a snapshot
    /// otherwise.
    pub fn exclusive_owner(&self) -> Option<u32> {
        // Relaxed: see above.
        let tid = self.writer.load(Relaxed) & !BORROWED;
        let val = self.word.load(Relaxed);
        (tid != 0 && val & (WRITER | UPGRADABLE) == WRITER).then_some(tid)
    }

    /// Forgets every waiter, keeping the lock held as it is (readers, or a writer).
    /// For a fork child, whose copy of the lock names waiters that do not exist in it.
    /// A writer that still waits for readers to leave is a waiter too: `WRITER` with
    /// readers inside is forgotten, with its writer's id.
    ///
    /// # Safety
    /// No other thread uses the lock during the call.
    pub unsafe fn forget_waiters(&self) {
        // Relaxed (all): the caller excludes every other thread.
        let val = self.word.load(Relaxed);
        // A writer in its section has no reader inside: with readers, `WRITER` is a
        // drain's (unless it is held upgradable, beside them).
        let draining = readers(val) != 0 && val & UPGRADABLE == 0;
        let keep = if draining {
            READERS_MASK
        } else {
            READERS_MASK | WRITER | UPGRADABLE
        };
        self.word.store(val & keep, Relaxed);
        if draining {
            self.writer.store(0, Relaxed);
        }
        self.writers_asleep.store(0, Relaxed);
    }

    /// Checks that the calling thread writes, and forgets it as the writer; its id,
    /// or `None` for a write lock that a signal handler borrowed from its thread's
    /// drain (`borrow_drain`), which this gives back to the thread.
    #[inline]
    fn disown_write(&self) -> Option<u32> {
        // Relaxed: only this thread stores its own id there, so "is it me?" needs no
        // ordering.
        let holder = self.writer.load(Relaxed);
        let me = owner::current_tid();
        if holder != me {
            return self.disown_borrowed(holder, me);
        }
        // Relaxed: cleared before the releasing cmpxchg, which orders it before the
        // next writer's store.
        self.writer.store(0, Relaxed);
        Some(me)
    }

    /// The unlock of a write lock this thread does not hold as a writer: a borrowed
    /// one (its thread's id goes back), or misuse (panic).
    #[cold]
    #[inline(never)]
    fn disown_borrowed(&self, holder: u32, me: u32) -> Option<u32> {
        if holder != me | BORROWED {
            write_unlock_by_non_writer(holder & !BORROWED, me);
        }
        // Relaxed: as in `disown_write`; the drain it belongs to goes on.
        self.writer.store(me, Relaxed);
        None
    }

    /// The releasing cmpxchg of a write lock that others may wait for: clears
    /// `WRITER` (adds `readers` for a downgrade), wakes one sleeping writer unless a
    /// spinner takes over (with two or more asleep, one before the release too), and
    /// wakes the sleeping readers when no writer sleeps, when they have waited for
    /// their turn, or when the writers' wakes found nobody.
    ///
    /// The writer's id (`me`, cleared by `disown_write`) is put back until the
    /// releasing cmpxchg, for the whole time this unlock decides and wakes a writer
    /// early (a futex call with the lock held): a signal handler that lands there
    /// finds its thread's id on the lock it holds, and panics as any relock does,
    /// instead of waiting for its own thread.
    #[cold]
    fn release_write(&self, me: u32, readers: u32) {
        // Relaxed: "is it me?" for this thread alone.
        self.writer.store(me, Relaxed);
        // Relaxed: picks the transition; the cmpxchg decides.
        let mut val = self.word.load(Relaxed);
        let mut skip_wake = None;
        let mut readers_due = None;
        let mut woke_early = None;
        loop {
            let mut new = (val & !(WRITER | UPGRADABLE)) + readers;
            let writers_sleep = val & WRITERS_WAITING != 0;
            // Sleeping readers are woken when no writer sleeps (they enter at once),
            // or with a turn once they have waited READER_TURN_AFTER_US.
            let wake_readers = val & READERS_WAITING != 0
                && (!writers_sleep || *readers_due.get_or_insert_with(|| self.readers_due()));
            if wake_readers {
                new &= !READERS_WAITING;
                if writers_sleep {
                    new |= READER_TURN;
                    // Relaxed: a hint for the writers that wait out the turn; stored
                    // before the release, the last access but the wakes.
                    self.readers_since.store(now_us(), Relaxed);
                }
            }
            let wake_writer = match val & (WRITER_SPINNING | WRITERS_WAITING) {
                WRITERS_WAITING => {
                    // Wake the next sleeping writer while we still hold the lock. If
                    // that found one, it will take WRITER and set the flag again, so
                    // the flag stays and the next write unlock wakes the next sleeper;
                    // otherwise the duty passes to the writer that the wake after the
                    // release finds.
                    if !*woke_early.get_or_insert_with(|| self.wake_writer_early()) {
                        new &= !WRITERS_WAITING;
                    }
                    true
                }
                both if both == WRITER_SPINNING | WRITERS_WAITING => {
                    *skip_wake.get_or_insert_with(count_skipped_wake)
                }
                _ => false,
            };
            // Relaxed: cleared before the releasing cmpxchg, which orders it before
            // the next writer's store (and put back if the cmpxchg fails).
            self.writer.store(0, Relaxed);
            // Release: pairs with the Acquire of the next acquisition.
            match self.word.compare_exchange(val, new, Release, Relaxed) {
                Ok(_) => {
                    crate::fault::after_release();
                    let word: *const AtomicU32 = &self.word;
                    if wake_readers {
                        if writers_sleep {
                            stats::count(STATS, Event::ReaderTurn);
                        }
                        stats::woke(STATS, park::wake_all_of_at(word, READER_CLASS));
                    }
                    if wake_writer {
                        // Also after an early wake: for a writer that slept again on
                        // the held word in between.
                        let woken = park::wake_one_of_at(word, WRITER_CLASS);
                        stats::woke(STATS, woken);
                        // `WRITERS_WAITING` is kept by every writer that has slept,
                        // so no writer may sleep after all: then, unless the early
                        // wake found one, no later write unlock may come to wake the
                        // readers it held back.
                        if woken == 0 && woke_early != Some(true) && new & READERS_WAITING != 0 {
                            stats::woke(STATS, park::wake_all_of_at(word, READER_CLASS));
                        }
                    } else if val & (WRITER_SPINNING | WRITERS_WAITING)
                        == WRITER_SPINNING | WRITERS_WAITING
                    {
                        stats::count(STATS, Event::WakeSkipped);
                    }
                    // Spinners watch the writer (after the release: `owner::watch_current`).
                    owner::watch_current();
                    return;
                }
                Err(now) => {
                    // Relaxed: as above.
                    self.writer.store(me, Relaxed);
                    val = now;
                }
            }
        }
    }

    /// Wakes one sleeping writer without a deadline before the releasing cmpxchg
    /// (the lock is still held, so its memory is too); whether it found one. That
    /// writer returns to `lock_exclusive_slow` and cannot give up, so it will take
    /// `WRITER` (or sleep again on a held word, with `WRITERS_WAITING`).
    fn wake_writer_early(&self) -> bool {
        // With one writer asleep the wake after the release finds it in time: the
        // early wake pays off with a queue of them. Relaxed: a hint; a stale count
        // only picks the other of two correct paths.
        if self.writers_asleep.load(Relaxed) < 2 {
            return false;
        }
        let woken = park::wake_one_of_at(&self.word, UNTIMED_WRITER_CLASS);
        stats::woke(STATS, woken);
        crate::fault::after_early_wake();
        woken == 1
    }

    /// Whether the readers' turn, granted at `readers_since`, still runs.
    fn turn_is_on(&self) -> bool {
        #[cfg(not(loom))]
        {
            // Relaxed: a hint; a stale value lengthens or shortens one turn.
            let since = self.readers_since.load(Relaxed);
            now_us().wrapping_sub(since) < TURN_GRACE_US
        }
        // Time is not modelled: a turn lasts until a reader has entered.
        #[cfg(loom)]
        {
            // Relaxed: as above.
            readers(self.word.load(Relaxed)) == 0
        }
    }

    /// Whether the sleeping readers have waited long enough for a turn.
    fn readers_due(&self) -> bool {
        #[cfg(not(loom))]
        {
            // Relaxed: a hint; a stale value moves one turn by one writer.
            let since = self.readers_since.load(Relaxed);
            now_us().wrapping_sub(since) >= READER_TURN_AFTER_US
        }
        // Time is not modelled: sleeping readers are passed over by the first write
        // unlock that asks (`now_us` is 0 under loom, so each sleep and each turn
        // restarts the count) and due at the second, so the models reach both.
        #[cfg(loom)]
        {
            // Relaxed: a counter of the asks, in place of the clock.
            self.readers_since.fetch_add(1, Relaxed) % 2 == 1
        }
    }

    /// `(r,0,0,*,*) or (r,0,*,*,1) -> (r+1,0,*,*,0)` while no writer holds the lock and
    /// none sleeps, or a turn is on.
    #[inline]
    fn try_enter_reader(&self) -> bool {
        // A load first, as std's: with readers on both CPUs, a cmpxchg that
        // guessed the free word failed at almost every read and took the line from
        // the other reader each time. Not the kernel rwsem's one fetch_add (1.5 ns
        // faster uncontended): a refused reader would hold a count until it takes
        // itself out again, and a signal handler that write-locks in that moment
        // waits for the interrupted code, or a fork leaves the child a reader that
        // does not exist (`docs/results/rw-read-contention-2026-11-26.txt`).
        self.enter_reader_while(readers_may_enter)
    }

    /// `(r,*,*,*,t) -> (r+1,*,*,*,0)` while `may_enter(word)`.
    #[inline]
    fn enter_reader_while(&self, may_enter: impl Fn(u32) -> bool) -> bool {
        // Relaxed: picks the transition; the cmpxchg is the Acquire.
        let mut val = self.word.load(Relaxed);
        while may_enter(val) {
            if readers(val) >= MAX_READERS {
                val = self.wait_below_max_readers(val);
                continue;
            }
            // Acquire: pairs with the Release of the write unlock.
            match self.word.compare_exchange_weak(
                val,
                (val + READER) & !READER_TURN,
                Acquire,
                Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => val = now,
            }
        }
        false
    }

    /// The count is at or above [`MAX_READERS`]. Entries stop at `MAX_READERS`, so
    /// a count above it can only be an unheld read unlock's wrap of an empty count,
    /// which that unlock undoes before its panic (`undo_unheld_read_unlock`): wait
    /// until it has, however long its thread is kept from running; the word once it
    /// is back. A count at `MAX_READERS` is that many readers inside: one more panics.
    #[cold]
    #[inline(never)]
    fn wait_below_max_readers(&self, val: u32) -> u32 {
        let val = self.wait_out_unheld_wrap(val);
        if readers(val) == MAX_READERS {
            too_many_readers();
        }
        val
    }

    /// Waits while the count is above [`MAX_READERS`]: an unheld read unlock's wrap,
    /// which its undo takes back (see `wait_below_max_readers`); the word once it is.
    #[cold]
    #[inline(never)]
    fn wait_out_unheld_wrap(&self, mut val: u32) -> u32 {
        let mut looks = 0u32;
        while readers(val) > MAX_READERS {
            // The undo is one instruction away unless its thread is preempted: spin
            // briefly, then give the CPU away.
            looks += 1;
            if looks < 64 {
                cpu_relax_times(16);
            } else {
                crate::sync::yield_now();
            }
            // Relaxed: the caller's cmpxchg is the Acquire.
            val = self.word.load(Relaxed);
        }
        val
    }

    /// A reader that found a writer: spin while it runs, then sleep until the write
    /// unlock wakes the readers. Whether it entered (always, unless `patience` ran
    /// out).
    #[cold]
    fn lock_shared_slow(&self, patience: Patience) -> bool {
        self.wait_to_read(patience)
            .unwrap_or_else(|TooManyReaders| too_many_readers())
    }

    /// `lock_shared_slow`'s wait, entering through `enter_reader_within_max`: `Err`
    /// when [`MAX_READERS`] readers are inside as it would enter.
    fn wait_to_read(&self, patience: Patience) -> Result<bool, TooManyReaders> {
        let me = owner::current_tid();
        // Relaxed: only this thread stores its own id there. A signal handler whose
        // thread drains the readers enters alongside (`reader_may_enter`).
        let writer = self.writer.load(Relaxed);
        if writer == me | BORROWED || (writer == me && !Role::Drainer.held_on(self.address())) {
            panic!("klocks: thread {me} read-locked a klocks::RwLock it holds for writing");
        }
        stats::count(STATS, Event::ReadSlowpath);
        let may_enter = |val| self.reader_may_enter(val);
        loop {
            if self.enter_reader_within_max(may_enter)? {
                return Ok(true);
            }
            let entered = self.spin_on_writer(may_enter, reader_may_spin)
                && self.enter_reader_within_max(may_enter)?;
            if entered {
                stats::count(STATS, Event::ReaderSpinAcquired);
                return Ok(true);
            }
            stats::count(STATS, Event::ReaderSpinFailed);
            if patience.expired() {
                stats::count(STATS, Event::Timeout);
                return Ok(false);
            }
            self.stop_own_thread_spinning();
            self.wake_owed_drainer();
            // Relaxed: the value to sleep on; the futex re-reads it atomically.
            let val = self.word.load(Relaxed);
            if self.reader_may_enter(val) {
                continue;
            }
            if val & READERS_WAITING == 0 {
                // Relaxed: the write unlock reads READERS_WAITING through its RMW on
                // this same word; the flag publishes nothing.
                if self
                    .word
                    .compare_exchange(val, val | READERS_WAITING, Relaxed, Relaxed)
                    .is_err()
                {
                    continue;
                }
                // Relaxed: a hint for the write unlock's turn decision.
                self.readers_since.store(now_us(), Relaxed);
            }
            stats::count(STATS, Event::Sleep);
            park::wait_as(
                &self.word,
                val | READERS_WAITING,
                READER_CLASS,
                patience.deadline(),
            );
        }
    }

    /// Spins while `done(word)` is false, `worth(word, pauses spent)` is true and the
    /// writer holding the lock (if any) runs on a CPU, within the budget; whether
    /// `done` came true.
    fn spin_on_writer(&self, done: impl Fn(u32) -> bool, worth: impl Fn(u32, u32) -> bool) -> bool {
        let budget = BUDGET.spins();
        let mut spent = 0;
        let first = FIRST_BACKOFF.with(Cell::get);
        let mut backoff = first;
        let mut looks = 0;
        let mut watch: Option<(u32, Watch)> = None;
        loop {
            looks += 1;
            // Relaxed: only watches; the caller's cmpxchg is the Acquire.
            let val = self.word.load(Relaxed);
            if done(val) {
                FIRST_BACKOFF.with(|f| f.set(backoff::next_first(first, looks)));
                return true;
            }
            if !worth(val, spent) {
                return false;
            }
            // Relaxed: a hint for the probe.
            let writer = self.writer.load(Relaxed) & !BORROWED;
            if writer != 0 {
                let (_, watch) = match &mut watch {
                    Some(w) if w.0 == writer => w,
                    _ => watch.insert((writer, Watch::new(writer))),
                };
                if watch.owner_running() == Some(false) {
                    stats::count(STATS, Event::OwnerOffCpu);
                    return false;
                }
            }
            if spent >= budget {
                return false;
            }
            cpu_relax_times(backoff);
            spent += backoff;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// A writer that found the lock busy: take `WRITER` as the default mutex takes
    /// its lock, then wait for the readers inside to leave. Whether it took the lock
    /// (always, unless `patience` ran out).
    #[cold]
    fn lock_exclusive_slow(&self, me: u32, take: Take, patience: Patience) -> bool {
        // Relaxed: only this thread stores its own id there.
        let writer = self.writer.load(Relaxed);
        if writer == me && Role::Drainer.held_on(self.address()) {
            return self.borrow_drain(me, patience);
        }
        if writer & !BORROWED == me {
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
    fn take_write_lock(&self, me: u32, take: Take, patience: Patience) -> bool {
        let mut slept = false;
        let mut yields = 0;
        loop {
            if self.queue_behind_sleepers(patience) {
                slept = true;
                continue;
            }
            match self.try_take_writer(slept, take, patience) {
                Some(true) => {
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
            self.sleep_as_writer(patience);
            begin_writer_turn();
            slept = true;
        }
    }

    /// Whether a reader in the slow path may enter: as any reader
    /// ([`readers_may_enter`]), or, in a signal handler on a thread that is in this
    /// lock's write slow path, past what that thread holds or left behind
    /// ([`Role::Writer`], [`Role::Drainer`]): its thread's `WRITER` while that thread
    /// drains the readers (the handler's section ends before the drain goes on), and
    /// `WRITERS_WAITING` on a free lock, which an unlock left for that thread to take.
    fn reader_may_enter(&self, val: u32) -> bool {
        let lock = self.address();
        readers_may_enter(val)
            || Role::Drainer.held_on(lock)
            || (val & WRITER == 0 && Role::Writer.held_on(lock))
    }

    /// A signal handler whose thread drains this lock's readers write-locks it: it
    /// waits, as its thread does, until no reader is inside, and then holds its
    /// thread's `WRITER` for its section, marked [`BORROWED`] in the writer's id so
    /// that its unlock gives it back instead of releasing it (`disown_write`). The
    /// interrupted drain then finds no reader inside and goes on. Whether it holds
    /// the lock (a timed one gives up at its deadline, leaving its thread's `WRITER`).
    #[cold]
    fn borrow_drain(&self, me: u32, patience: Patience) -> bool {
        if !self.wait_until_no_reader(patience) {
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
    fn stop_own_thread_spinning(&self) {
        if Role::Spinner.held_on(self.address()) {
            // Relaxed: as every change of the flag; the unlocks read it through their
            // RMW on this same word.
            self.word.fetch_and(!WRITER_SPINNING, Relaxed);
        }
    }

    fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// The drain is over (no reader inside) but the drainer still sleeps: the last
    /// read unlock owes it a wake, which it makes after its `fetch_sub`, and its
    /// thread may be kept from making it for long: preempted, or interrupted by a
    /// signal handler that now waits here behind the drainer's `WRITER`. So a waiter
    /// about to sleep makes that wake itself; one more is harmless (the drainer finds
    /// no reader and goes on, or was on its way already).
    fn wake_owed_drainer(&self) {
        // Relaxed: a hint; the drainer re-reads the word when woken.
        let val = self.word.load(Relaxed);
        if val & (WRITER | DRAIN_SLEEPS) == WRITER | DRAIN_SLEEPS && readers(val) == 0 {
            stats::woke(STATS, park::wake_one_of_at(&self.word, DRAIN_CLASS));
        }
    }

    /// A writer whose turn is over and that finds the lock write-held while writers
    /// sleep sleeps at once behind them, so that the lock goes round the sleepers'
    /// FIFO instead of staying with the writers the scheduler happens to run; whether
    /// it slept (or tried to: the word may have changed).
    fn queue_behind_sleepers(&self, patience: Patience) -> bool {
        // Relaxed: picks the path; `sleep_as_writer` reads the word again.
        let val = self.word.load(Relaxed);
        if val & (WRITER | WRITERS_WAITING) != WRITER | WRITERS_WAITING || !writer_turn_is_over() {
            return false;
        }
        stats::count(STATS, Event::TurnOver);
        self.sleep_as_writer(patience);
        begin_writer_turn();
        true
    }

    /// Takes `WRITER` if no writer holds it: `Some(true)` if taken, `Some(false)` if a
    /// writer holds it, `None` while a turn waits for its readers to come.
    fn try_take_writer(&self, slept: bool, take: Take, patience: Patience) -> Option<bool> {
        // Relaxed: picks the transition; the cmpxchg is the Acquire.
        let mut val = self.word.load(Relaxed);
        while val & WRITER == 0 {
            if val & READER_TURN != 0 && !patience.expired() && self.turn_is_on() {
                return None;
            }
            let new = (val & !(READER_TURN | WRITERS_WAITING))
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
    fn drain_readers(&self, patience: Patience) -> bool {
        let outer = Role::Drainer.enter(self.address());
        let held = self.drain_as_drainer(patience, outer);
        if held {
            Role::Drainer.restore(outer);
        }
        held
    }

    /// `drain_readers`, with the role recorded; a timed writer that gives up restores
    /// the record to `outer` before it releases `WRITER`.
    fn drain_as_drainer(&self, patience: Patience, outer: usize) -> bool {
        if self.wait_until_no_reader(patience) {
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
    fn wait_until_no_reader(&self, patience: Patience) -> bool {
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
            park::wait_as(
                &self.word,
                val | DRAIN_SLEEPS,
                DRAIN_CLASS,
                patience.deadline(),
            );
        }
    }

    /// Become the one writer that spins, and spin while the writer holding the lock
    /// runs; whether `WRITER` came free meanwhile (the caller then tries to take it).
    /// A writer that finds another spinner spins only [`BRIEF_SPIN`]: the spinner
    /// may be preempted mid-spin, and the writers behind it would otherwise yield at
    /// once, a context switch each.
    fn spin_for_writer(&self) -> bool {
        let outer = Role::Spinner.enter(self.address());
        let free = self.spin_as_writer_spinner();
        Role::Spinner.restore(outer);
        free
    }

    /// `spin_for_writer` with the role recorded ([`Role::Spinner`]): a signal
    /// handler on this thread that sleeps on this lock clears `WRITER_SPINNING` first.
    fn spin_as_writer_spinner(&self) -> bool {
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

    /// Sleep while a writer holds the lock: `(r,1,*,*,*) -> (r,1,1,*,*)`, then
    /// sleep as a `WRITER` on that value.
    fn sleep_as_writer(&self, patience: Patience) {
        self.stop_own_thread_spinning();
        self.wake_owed_drainer();
        // Relaxed: the value to sleep on; the futex re-reads it atomically.
        let mut val = self.word.load(Relaxed);
        while val & WRITER != 0 {
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
            let class = match patience {
                Patience::Forever => WRITER_CLASS | UNTIMED_WRITER_CLASS,
                #[cfg(not(loom))]
                Patience::Until(_) => WRITER_CLASS,
            };
            stats::count(STATS, Event::Sleep);
            // Relaxed: a hint for the write unlocks (`wake_writer_early`).
            self.writers_asleep.fetch_add(1, Relaxed);
            park::wait_as(&self.word, val, class, patience.deadline());
            // Relaxed: as above.
            self.writers_asleep.fetch_sub(1, Relaxed);
            return;
        }
    }

    /// A timed writer whose deadline passed before it took `WRITER`. It leaves only
    /// from a held lock: a free one may carry `WRITERS_WAITING` that an unlock left
    /// for a spinner (this thread, perhaps), so it takes a free one. If it slept, it
    /// may have eaten the wake meant for the next sleeping writer, so it leaves
    /// `WRITERS_WAITING` set. Whether it took the lock.
    fn give_up_waiting(&self, slept: bool, take: Take, patience: Patience) -> bool {
        loop {
            if let Some(true) = self.try_take_writer(slept, take, patience) {
                // Relaxed: as in `lock_exclusive`.
                self.writer.store(owner::current_tid(), Relaxed);
                return take == Take::Upgradable || self.drain_readers(patience);
            }
            // Relaxed: the flag is read by the unlocks' RMWs on this word.
            let val = self.word.load(Relaxed);
            if val & WRITER == 0 {
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

/// Whether this thread's turn as a writer is over: it has not slept as a writer on a
/// `RawRwLock` for [`WRITER_TURN_US`], or never has. Under loom, whatever the model
/// asks for (time is not modelled).
fn writer_turn_is_over() -> bool {
    #[cfg(not(loom))]
    {
        let woke = WRITER_WOKE_AT.with(Cell::get);
        woke == 0 || now_us().wrapping_sub(woke) >= WRITER_TURN_US
    }
    #[cfg(loom)]
    TURNS_OVER_IN_MODELS.with(Cell::get)
}

/// This thread's turn as a writer begins now (it has just slept).
fn begin_writer_turn() {
    #[cfg(not(loom))]
    WRITER_WOKE_AT.with(|t| t.set(now_us() | 1));
}

/// A read lock refused because [`MAX_READERS`] readers hold the lock (pthread's
/// `EAGAIN`: "the maximum number of read locks has been exceeded"). Only the
/// `_within_max` entries answer it; `lock_shared` and `lock_api`'s readers panic there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyReaders;

/// Read locks that refuse the reader past [`MAX_READERS`] instead of panicking, for
/// callers with an error to return: the C API's `klocks_rwlock_t` and the preload's
/// `pthread_rwlock_t` answer `EAGAIN` with them. Each takes the lock as its
/// counterpart does (`try_lock_shared`, `lock_shared`, `try_lock_shared_until`), with
/// the same transitions and orderings.
impl RawRwLock {
    /// The most readers at once, [`MAX_READERS`]: one more is [`TooManyReaders`].
    pub const MAX_READERS: u32 = MAX_READERS;

    /// Takes a read lock if no writer holds the lock (as `try_lock_shared`); `Err`
    /// if [`MAX_READERS`] readers hold it. Inline: it is the read fast path of
    /// pthread's `rdlock` and `tryrdlock` routes (klocks-ffi).
    #[inline]
    pub fn try_lock_shared_within_max(&self) -> Result<bool, TooManyReaders> {
        self.enter_reader_within_max(readers_may_enter)
    }

    /// Takes a read lock, waiting as `lock_shared` does; `Err` if [`MAX_READERS`]
    /// readers hold it when the caller would enter.
    pub fn lock_shared_within_max(&self) -> Result<(), TooManyReaders> {
        if !self.try_lock_shared_within_max()? {
            self.wait_to_read(Patience::Forever)?;
        }
        Ok(())
    }

    /// Takes a read lock unless `deadline` passes first (as `try_lock_shared_until`);
    /// whether it did, or `Err` if [`MAX_READERS`] readers hold it when the caller
    /// would enter.
    #[cfg(not(loom))]
    pub fn try_lock_shared_within_max_until(
        &self,
        deadline: std::time::Instant,
    ) -> Result<bool, TooManyReaders> {
        Ok(self.try_lock_shared_within_max()? || self.wait_to_read(Patience::Until(deadline))?)
    }

    /// `(r,*,*,*,t) -> (r+1,*,*,*,0)` while `may_enter(word)`, as `enter_reader_while`,
    /// but a count at [`MAX_READERS`] is `Err` instead of a panic. A count above it (an
    /// unheld read unlock's transient wrap) is waited out, as there.
    #[inline]
    fn enter_reader_within_max(
        &self,
        may_enter: impl Fn(u32) -> bool,
    ) -> Result<bool, TooManyReaders> {
        // Relaxed: picks the transition; the cmpxchg is the Acquire.
        let mut val = self.word.load(Relaxed);
        while may_enter(val) {
            if readers(val) == MAX_READERS {
                return Err(TooManyReaders);
            }
            if readers(val) > MAX_READERS {
                val = self.wait_out_unheld_wrap(val);
                continue;
            }
            // Acquire: pairs with the Release of the write unlock.
            match self.word.compare_exchange_weak(
                val,
                (val + READER) & !READER_TURN,
                Acquire,
                Relaxed,
            ) {
                Ok(_) => return Ok(true),
                Err(now) => val = now,
            }
        }
        Ok(false)
    }
}

#[cold]
#[inline(never)]
fn unlock_of_unheld(what: &str) -> ! {
    panic!("klocks: {what} unlock of a klocks::RwLock that is not {what}-locked");
}

#[cold]
#[inline(never)]
fn write_unlock_by_non_writer(holder: u32, me: u32) -> ! {
    if holder == 0 {
        unlock_of_unheld("write");
    }
    panic!("klocks: write unlock of a klocks::RwLock held by thread {holder} from thread {me}, which does not hold it");
}

#[cold]
#[inline(never)]
fn too_many_readers() -> ! {
    panic!("klocks: more than {MAX_READERS} readers in one klocks::RwLock");
}

impl std::fmt::Debug for RawRwLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let val = self.word.load(Relaxed);
        f.debug_struct("RawRwLock")
            .field("readers", &readers(val))
            .field("writer_locked", &(val & WRITER != 0))
            .field("writer", &self.writer.load(Relaxed))
            .field("writer_spinning", &(val & WRITER_SPINNING != 0))
            .field("upgradable", &(val & UPGRADABLE != 0))
            .field("writers_waiting", &(val & WRITERS_WAITING != 0))
            .field("readers_waiting", &(val & READERS_WAITING != 0))
            .field("reader_turn", &(val & READER_TURN != 0))
            .finish()
    }
}

impl Default for RawRwLock {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: a writer enters only from a word with no writer and no reader (the fast
// path's 0, or a cmpxchg that sets `WRITER` on a word without it, then the drain until
// no reader is inside), and readers only while no writer holds `WRITER`
// (`try_enter_reader`); writers and readers leave by clearing exactly what they
// entered with. Write guards are not `Send`: the unlock checks the writer's id.
#[cfg(not(loom))]
unsafe impl lock_api::RawRwLock for RawRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type GuardMarker = lock_api::GuardNoSend;

    #[inline]
    fn lock_shared(&self) {
        RawRwLock::lock_shared(self);
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        RawRwLock::try_lock_shared(self)
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        RawRwLock::unlock_shared(self);
    }

    #[inline]
    fn lock_exclusive(&self) {
        RawRwLock::lock_exclusive(self);
    }

    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        RawRwLock::try_lock_exclusive(self)
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        RawRwLock::unlock_exclusive(self);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        RawRwLock::is_locked(self)
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        RawRwLock::is_locked_exclusive(self)
    }
}

// SAFETY: the write lock becomes a read lock in one cmpxchg, with no window in which
// another writer could enter.
#[cfg(not(loom))]
unsafe impl lock_api::RawRwLockDowngrade for RawRwLock {
    unsafe fn downgrade(&self) {
        RawRwLock::downgrade(self);
    }
}

// SAFETY: the upgradable lock is `WRITER` with `UPGRADABLE`: it excludes writers and
// other upgradable holders as the write lock does, and readers enter beside it only
// while `UPGRADABLE` is set; `upgrade` clears it and then drains the readers inside
// as a writer does, so the upgraded lock excludes every reader and writer.
#[cfg(not(loom))]
unsafe impl lock_api::RawRwLockUpgrade for RawRwLock {
    #[inline]
    fn lock_upgradable(&self) {
        RawRwLock::lock_upgradable(self);
    }

    fn try_lock_upgradable(&self) -> bool {
        RawRwLock::try_lock_upgradable(self)
    }

    unsafe fn unlock_upgradable(&self) {
        RawRwLock::unlock_upgradable(self);
    }

    unsafe fn upgrade(&self) {
        RawRwLock::upgrade(self);
    }

    unsafe fn try_upgrade(&self) -> bool {
        RawRwLock::try_upgrade(self)
    }
}

// SAFETY: each downgrade is one RMW that lets readers in while keeping writers out
// (a read lock in `release_write`'s cmpxchg; `UPGRADABLE` set on a held `WRITER`).
#[cfg(not(loom))]
unsafe impl lock_api::RawRwLockUpgradeDowngrade for RawRwLock {
    unsafe fn downgrade_upgradable(&self) {
        RawRwLock::downgrade_upgradable(self);
    }

    unsafe fn downgrade_to_upgradable(&self) {
        RawRwLock::downgrade_to_upgradable(self);
    }
}

// SAFETY: the timed variants acquire exactly as the untimed ones when they succeed.
#[cfg(not(loom))]
unsafe impl lock_api::RawRwLockTimed for RawRwLock {
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;

    fn try_lock_shared_for(&self, timeout: Self::Duration) -> bool {
        match std::time::Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_lock_shared_until(deadline),
            None => {
                self.lock_shared();
                true
            }
        }
    }

    fn try_lock_shared_until(&self, deadline: Self::Instant) -> bool {
        RawRwLock::try_lock_shared_until(self, deadline)
    }

    fn try_lock_exclusive_for(&self, timeout: Self::Duration) -> bool {
        match std::time::Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_lock_exclusive_until(deadline),
            None => {
                self.lock_exclusive();
                true
            }
        }
    }

    fn try_lock_exclusive_until(&self, deadline: Self::Instant) -> bool {
        RawRwLock::try_lock_exclusive_until(self, deadline)
    }
}

#[cfg(all(loom, test))]
impl crate::testing::TestRwLock for RawRwLock {
    fn new_unlocked() -> Self {
        Self::new()
    }
    fn read(&self) {
        self.lock_shared();
    }
    fn read_done(&self) {
        self.unlock_shared();
    }
    fn write(&self) {
        self.lock_exclusive();
    }
    fn write_done(&self) {
        self.unlock_exclusive();
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, feature = "stats", not(loom)))]
mod stats_tests;
