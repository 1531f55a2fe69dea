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
//!   spinning there take the CPUs from the threads they wait for
//!   (`docs/decisions/raw-rwlock.md`: readers-spin-briefly-behind-writers).
//! - **Timed reader turns.** A write unlock wakes the sleeping readers when no writer
//!   sleeps; while writers sleep, it wakes them once they have slept
//!   [`READER_TURN_AFTER_US`], and sets `READER_TURN`: readers enter although
//!   `WRITERS_WAITING` is set, and no writer takes `WRITER` until the first of them
//!   has entered (its entry clears the bit) or [`TURN_GRACE_US`] passed. So a reader
//!   waits for at most about one writer phase.
//!
//! Only *sleeping* writers hold readers back (and the one woken in turn for them,
//! below), not spinning or yielding ones: a writer that held readers back from the
//! start of its slow path would hold them while it is preempted in its spin or woken
//! but not yet running, and with more threads than CPUs readers would sleep behind
//! writers that are not running, a convoy (only-sleeping-writers-hold-readers).
//!
//! Writers among themselves barge (as the default mutex does between its handoffs);
//! what bounds a writer's wait is the futex's FIFO order of sleepers, so sleeping
//! writers must be woken in turn, and quickly. While two or more writers sleep (a
//! count beside the word), a write unlock wakes one *before* its releasing cmpxchg,
//! and if that wake found one it keeps `WRITERS_WAITING`: the woken writer will take
//! `WRITER` (setting the flag again, as every writer that has slept), so the next
//! write unlock wakes the next sleeper. Otherwise the unlock clears the flag and
//! wakes one writer after its release, and no unlock wakes another until that one
//! has run, which with a run queue full of readers is a whole scheduling round
//! (writers-woken-in-turn). For the same reason a writer that has slept does not
//! yield again before its next sleep: in such a run queue each yield costs it a
//! round (woken-writers-do-not-yield, which also lists what was tried and not kept).
//!
//! **A writer's timed claim** (`raw_rwlock/claim.rs`, the default mutex's handoff
//! claim and the kernel rwsem's handoff bit). What bounds a writer's wait in time: a
//! writer without a deadline that has waited [`WRITER_FAIR_WAIT_US`] since its first
//! sleep and still finds `WRITER` taken claims the next write lock. No other writer
//! takes `WRITER` while the claim stands, the unlock wakes the claimant alone, and
//! readers go on entering the lock no writer holds until the claimant has taken
//! `WRITER` and drains them. So a writer waits at most the claim's wait, plus the
//! claims before its own, plus one drain.
//!
//! **Writer turns** ([`turn`](crate::turn)). Woken in turn, a sleeper can still lose
//! to the writers the scheduler keeps running: two running writers pass the lock
//! between them by spinning (their unlocks skip the wake while one spins), and a
//! woken writer that finds it held goes back to the end of the queue. So a writer
//! whose turn is over (it woke from a sleep as a writer [`TURN_US`](crate::turn::TURN_US)
//! ago or more) and that finds the lock write-held while writers sleep, sleeps
//! at once behind them instead of spinning: the running writers join the queue, and
//! the lock goes round it, as the default mutex's turns (writer-turns). A thread
//! that never slept, or not for [`TURNS_LAPSE_US`](crate::turn::TURNS_LAPSE_US),
//! takes no turns (the [`turn`](crate::turn) module doc says why).
//!
//! **Reader bias** (`raw_rwlock/bias.rs`, after BRAVO). While `BIAS` is set, readers
//! do not write the word: each publishes itself in a global table of visible readers
//! (`rwlock/bravo.rs`: a row per lane of threads, a column per lock), and read-mostly
//! data stops bouncing the word's cache line between CPUs. A writer takes `WRITER`
//! as above, then revokes the bias (clears `BIAS`, waits for the readers of its
//! lock's column of the table: one slot per lane) before its drain, and the bias
//! stays off for nine times what the revocation took, and until an inhibit passes
//! without a write; a reader that takes the word after that turns it on again. Upgradable holders, downgraded writers and readers
//! that find their slot taken use the word. [`RawRwLockUnbiased`](crate::RawRwLockUnbiased) is this lock
//! without the bias, the before of it.
//!
//! The writing thread's id is kept beside the word, for the owner probe and to catch
//! misuse, and so are the time of the last reader event (the first sleep, or the
//! turn), the count of sleeping writers (16 bits) and the bias's inhibit clock (16
//! bits): 16 bytes in all.
//!
//! # The word
//!
//! ```text
//!     31        8     7      6        5        4        3         2         1        0
//! +-----------+------+--------+--------+--------+---------+---------+---------+--------+
//! |  readers  | BIAS | UPGRA- | READER | DRAIN_ | READERS_| WRITERS_| WRITER_ | WRITER |
//! |           |      | DABLE  |  TURN  | SLEEPS | WAITING | WAITING | SPINNING|        |
//! +-----------+------+--------+--------+--------+---------+---------+---------+--------+
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
//! ... a claim stands: (0,1,1,rw,0) -> (0,0,1,rw,0), futex_wake(CLAIMANT, one)
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
//! # Delegates that never act
//!
//! A writer spinner or an early-woken writer whose thread cannot run (a handler on it
//! blocks, it longjmped away, it is stopped) would leave `WRITER_SPINNING` and
//! `WRITERS_WAITING` on a free word for good. Every sleep is bounded by the liveness
//! tick (`crate::wait`): a writer whose tick passed without a wake takes `WRITER`
//! dropping the stale spinner's flag, and a reader enters a word without `WRITER`
//! past `WRITERS_WAITING`. A writer that holds `WRITER` and drains the readers holds
//! the others out as a holder does (the kernel rwsem's writer with its handoff bit,
//! glibc's writer-preferring rwlock): it is not a delegate.
//!
//! # Misuse
//!
//! Releasing a write lock the thread does not hold panics and leaves the lock as it
//! was. A read unlock releases the calling thread's table slot for the lock if it has
//! one (a slot names its lock and its thread exactly), else the word's count.
//! Releasing a read lock when no reader holds the lock panics after it restored
//! the count its `fetch_sub` wrapped: meanwhile other threads saw more than
//! [`MAX_READERS`] readers, which no acquisition can make, so they know it for the
//! transient it is and wait for the undo, however long the misusing thread is kept
//! from running (writers wait for the count to come back to 0). Taking a write lock (or a
//! read lock) while holding the write lock panics instead of deadlocking; a timed try
//! (`try_lock_exclusive_until`, `try_lock_shared_until`) fails instead. A read lock
//! taken again by its holder while a writer sleeps for the lock or drains it
//! deadlocks, as with every rwlock that prefers writers (std's included). More than
//! [`MAX_READERS`] readers at once panic, at once; the `_within_max` entries refuse
//! the reader instead ([`TooManyReaders`](crate::TooManyReaders), pthread's `EAGAIN`), for callers that have
//! an error to return.

use crate::backoff;
use crate::budget::SpinBudget;
use crate::catalog::RwLockKind;
use crate::owner;
use crate::park;
use crate::role::Role;
use crate::rwlock::bravo;
use crate::spin_on_owner::{spin_on_owner, Look, Pauses, Spun};
use crate::stats::{self, Event, Lock};
use crate::sync::{cpu_relax_times, AtomicU16, AtomicU32, Ordering::*};
use crate::turn::Turn;
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
/// Reader bias: readers enter through the table of visible readers, not the word
/// ([`bias`]). Set only while no writer holds `WRITER`.
const BIAS: u32 = 1 << 7;
/// One reader: the count is the word's top 24 bits.
const READER: u32 = 1 << 8;
/// The count of readers inside.
const READERS_MASK: u32 = (u32::MAX / READER) * READER;
/// `inhibit_until` of a lock without reader bias: never passes (`raw_rwlock/bias.rs`).
const NEVER_BIASED: u16 = u16::MAX;
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
/// The futex class of the writer that holds the claim (`raw_rwlock/claim.rs`): the
/// write unlock that finds a claim wakes it alone.
const CLAIMANT_CLASS: u32 = 16;
/// In `writers_asleep`, above the count of sleeping writers: a writer has claimed the
/// next write lock (`raw_rwlock/claim.rs`).
const CLAIMED: u16 = 1 << 15;
/// How long a writer waits, from its first sleep, before it claims the next write
/// lock, as the default mutex's waiter waits before it claims a handoff.
// The loom models decide the claim by a switch, not by time.
#[cfg_attr(loom, allow(dead_code))]
pub const WRITER_FAIR_WAIT_US: u32 = 1_000;

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
    /// How many writers sleep in `sleep_as_writer` (a hint that decides whether a
    /// write unlock wakes a writer early), and above the count [`CLAIMED`]: a writer
    /// that waited [`WRITER_FAIR_WAIT_US`] claimed the next write lock.
    writers_asleep: AtomicU16,
    /// Until when the reader bias stays off after a revocation, on a 15-bit clock,
    /// and whether a writer came meanwhile (0: no inhibit; `NEVER_BIASED`: a lock
    /// without the bias); see `raw_rwlock/bias.rs`. A policy hint that no lock's
    /// safety rests on (the word's `BIAS` and the table decide), so a std atomic
    /// under loom too: modelled, its loads would multiply every model's
    /// interleavings, and an unbiased lock could not skip the bias's paths for free.
    inhibit_until: std::sync::atomic::AtomicU16,
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
    /// An unlocked lock (zero bytes), with its reader bias.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self::with_bias(true)
    }

    /// An unlocked lock, with its reader bias or without ([`RawRwLockUnbiased`](crate::RawRwLockUnbiased)).
    #[cfg(not(loom))]
    pub(super) const fn with_bias(biased: bool) -> Self {
        Self {
            word: AtomicU32::new(0),
            writer: AtomicU32::new(0),
            readers_since: AtomicU32::new(0),
            writers_asleep: AtomicU16::new(0),
            inhibit_until: std::sync::atomic::AtomicU16::new(if biased { 0 } else { NEVER_BIASED }),
        }
    }

    /// An unlocked lock, with its reader bias.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self::with_bias(true)
    }

    /// An unlocked lock, with its reader bias or without ([`RawRwLockUnbiased`](crate::RawRwLockUnbiased)).
    #[cfg(loom)]
    pub(super) fn with_bias(biased: bool) -> Self {
        Self {
            word: AtomicU32::new(0),
            writer: AtomicU32::new(0),
            readers_since: AtomicU32::new(0),
            writers_asleep: AtomicU16::new(0),
            inhibit_until: std::sync::atomic::AtomicU16::new(if biased { 0 } else { NEVER_BIASED }),
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
        if self.try_enter_biased() {
            return;
        }
        if !self.try_enter_reader() {
            self.lock_shared_slow(Patience::Forever);
        }
        self.enable_bias_if_due();
    }

    /// Takes a read lock if no writer holds the lock.
    #[inline]
    pub fn try_lock_shared(&self) -> bool {
        if self.try_enter_biased() {
            return true;
        }
        let entered = self.try_enter_reader();
        if entered {
            self.enable_bias_if_due();
        }
        entered
    }

    /// Takes a read lock unless `deadline` passes first; whether it did.
    #[cfg(not(loom))]
    pub fn try_lock_shared_until(&self, deadline: std::time::Instant) -> bool {
        if self.try_enter_biased() {
            return true;
        }
        let entered = self.try_enter_reader() || self.lock_shared_slow(Patience::Until(deadline));
        if entered {
            self.enable_bias_if_due();
        }
        entered
    }

    /// Releases a read lock.
    ///
    /// # Panics
    /// If no reader holds the lock (the word is restored before the panic).
    #[inline]
    pub fn unlock_shared(&self) {
        // A biased reader releases its slot and never touches the lock.
        if bravo::leave(self.address()) {
            return;
        }
        // One fetch_sub, as std's and parking_lot's: a cmpxchg that guessed the sole
        // reader fails whenever another reader is inside, and a load before the
        // cmpxchg takes the line twice per unlock (`docs/decisions/raw-rwlock.md`:
        // read-unlock-fetch-sub).
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
            let me = owner::current_tid();
            if !self.take_from_biased(me, Take::Exclusive) {
                self.lock_exclusive_slow(me, Take::Exclusive, Patience::Forever);
            }
        }
    }

    /// `lock_exclusive`'s fast path alone: `(0,0,0,0,0) -> (0,1,0,0,0)`, taking the
    /// write lock only from a free word with no waiter of any kind (nor the reader
    /// bias, whose revocation may wait for readers). Unlike
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
            self.note_write();
        }
        took
    }

    /// Takes the write lock if no reader or writer holds it (nor a turn is on, nor a
    /// writer's claim stands: `raw_rwlock/claim.rs`).
    #[inline]
    pub fn try_lock_exclusive(&self) -> bool {
        let me = owner::current_tid();
        // Relaxed: picks the transition; the cmpxchg decides.
        let val = self.word.load(Relaxed);
        // Acquire: as in `lock_exclusive`.
        let took = val & (READERS_MASK | WRITER | READER_TURN) == 0
            && !self.claimed()
            && self
                .word
                .compare_exchange(val, val | WRITER, Acquire, Relaxed)
                .is_ok();
        if !took {
            return false;
        }
        // Relaxed: as in `lock_exclusive`.
        self.writer.store(me, Relaxed);
        // (`try_revoke_bias` marks an inhibit that runs as written.)
        if !self.try_revoke_bias() {
            // Readers hold it through the table.
            self.release_write(me, 0);
            return false;
        }
        true
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
            self.note_write();
            return true;
        }
        self.lock_exclusive_slow(me, Take::Exclusive, Patience::Until(deadline))
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

impl Default for RawRwLock {
    fn default() -> Self {
        Self::new()
    }
}

pub(super) mod bias;
pub(crate) mod claim;
#[cfg(not(loom))]
pub(super) mod lock_api_traits;
pub(crate) mod read;
mod release;
mod state;
mod upgradable;
mod write;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, not(loom)))]
mod bias_tests;

#[cfg(all(test, not(loom)))]
mod claim_tests;

#[cfg(all(test, feature = "stats", not(loom)))]
mod stats_tests;
