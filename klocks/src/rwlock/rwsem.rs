//! The reader-writer semaphore with optimistic spinning (seed 001), in userspace.
//!
//! # The algorithm
//!
//! The kernel's rwsem after Waiman Long's 2019 rework, with its three reader-spin
//! policies as type parameters ([`ReaderSpin`]):
//!
//! - **Fast paths are one atomic each.** A reader adds its share to the count
//!   (`fetch_add`) and keeps it unless a writer holds the lock, threads sleep, or a
//!   handoff is pending; a writer moves the count from 0 to `WRITER_LOCKED` (cmpxchg).
//!   Unlocks subtract, and wake the queue only when they leave the lock free with
//!   sleepers behind.
//! - **Optimistic spinning.** A writer that misses the fast path spins: while a
//!   writer owns the lock and runs on a CPU (the [`owner`](crate::owner) probe), and
//!   for a bounded time while readers own it (their count is known, not who they are,
//!   so whether they run is not). The time is the kernel's 10 µs + 0.5 µs per reader
//!   capped at 25 µs, rescaled to this process's spin budget: 40% of the budget plus
//!   0.5 µs per reader, capped at the budget ([`budget`](crate::budget), calibrated
//!   to one futex sleep-to-wake handoff; rwsem-userspace-spin in `docs/decisions/waiting.md`). Readers spin
//!   too under [`reader_spin::Always`] and [`reader_spin::Adaptive`]: a spinning reader
//!   joins a reader-owned lock even while others sleep, which is what makes readers
//!   "preferred" and what fragments reader groups.
//! - **One spinner at a time.** The kernel queues spinners in an MCS-like OSQ; here
//!   the OSQ is one flag, as in [`SpinFutexMutex`](crate::SpinFutexMutex): with more
//!   threads than CPUs (the normal case in userspace) a queued spinner that is
//!   preempted would stall every spinner behind it, which is exactly seed 003's
//!   problem. Waiters that cannot spin queue.
//! - **Nonspinnable bits (seed 001).** A writer that times out spinning on a
//!   reader-owned lock sets `WR_NONSPINNABLE` and `RD_NONSPINNABLE` in the owner word:
//!   the readers' section is long or there are too many of them, and spinning helps
//!   neither. Writers do not spin while `WR_NONSPINNABLE` is set, readers while
//!   `RD_NONSPINNABLE` is. Under `Adaptive` the reader bit is made sticky: a writer
//!   that saw the bits after failing to spin sets `RD_NONSPINNABLE` when it gets the
//!   lock; a reader that saw it at slow-path entry sets it again when a wake-up gives
//!   it the lock; reader acquisitions keep it; only a writer acquisition that did not
//!   see it clears it (the fast path always does). Departure: the bit stops readers
//!   only for [`READER_NONSPIN_TTL`] after a writer last set it.
//! - **Bounded reader streaks (a departure).** Under `Adaptive`, a reader that has
//!   taken the lock by spinning [`READER_SPIN_STREAK`] times in a row queues on its
//!   next slow path, as the pv qspinlock bounds its stealers: otherwise the running
//!   readers pass a reader-owned lock among themselves while the queued readers and
//!   writers sleep (`lockbench rw-fair` 40 + 40: the slowest reader at 0.10 of the
//!   readers' mean, the writers at 0.68 of the best policy's).
//! - **Phase-fair spinners (seed 001).** Under `Adaptive`, a reader that gives up
//!   spinning still takes the lock if it is reader-owned by a reader other than the
//!   one it saw at slow-path entry: a new read phase began while it spun, and it
//!   belongs to it.
//! - **Waiters queue in FIFO order** ([`wait_queue`](super::wait_queue)). A wake-up
//!   with a writer at the front wakes that writer, which then tries for the lock
//!   itself; with a reader at the front it takes up to 256 queued readers, wherever
//!   they are in the queue (the kernel since 5.11: one read phase for all of them),
//!   and grants the lock to those that are running (their shares are added to the
//!   count before they are released).
//! - **Departures for userspace, measured with lockbench `rwsem` and `rw-fair`.** A
//!   futex wake-up costs far more than a kernel wake-up (rwsem-userspace-spin), and
//!   a woken thread may wait for a CPU far longer when threads outnumber CPUs. So a
//!   queued waiter first spins on its own node for the spin budget and only then
//!   announces that it sleeps; its waker makes the futex syscall only for announced
//!   sleepers (seed 003's protocol; with 1 reader + 1 writer at 20 pauses this took
//!   the rwsem from ~50k to ~1.8M sections/s). And the lock is granted only to
//!   readers that still spin, or that have waited [`HANDOFF_AFTER`]: a sleeping reader
//!   is woken to retry instead (it keeps its waiting time), because a lock granted to
//!   a sleeper stays idle until the sleeper runs, seed 003's collapse again.
//! - **Handoff.** The front waiter that has waited more than [`HANDOFF_AFTER`] sets
//!   `HANDOFF`: no fast path, spinner or steal may take the lock any more, and the
//!   next release goes to that waiter. Neither readers nor writers starve.
//!
//! The three policies:
//!
//! | policy | readers spin | nonspinnable bits | kernel |
//! |---|---|---|---|
//! | [`reader_spin::Adaptive`] | yes | sticky `RD` bit (above), phase-fair spinners | 5.3–5.10, seed 001's "after" |
//! | [`reader_spin::Always`] | yes | both bits last until the owner changes | 5.3 before seed 001 (its "before") |
//! | [`reader_spin::Never`] | no: one lock-steal attempt | `WR` only, kept by readers | 5.11 and later |
//!
//! # The words
//!
//! ```text
//! count (64 bits):  63               8 7  4      3         2        1          0
//!                  +------------------+----+--------+---------+---------+--------+
//!                  |   reader count   |  0 | WOKEN  | HANDOFF | WAITERS | WRITER |
//!                  +------------------+----+--------+---------+---------+--------+
//! owner (32 bits):  31        30        29         22 21                0
//!                  +---------+---------+------------+---+-----------------+
//!                  | WR_NONS | RD_NONS | READER_OWN | 0 |   thread id     |
//!                  +---------+---------+------------+---+-----------------+
//! ```
//!
//! The owner word names the writer that holds the lock, or marks it reader-owned with
//! the id of the last reader that took it (so a spinner can tell a new read phase).
//! Only lock holders store it; others only set or clear the nonspinnable bits. It is a
//! hint: spinners read it racily, as the kernel's do.
//!
//! `WOKEN` (`WRITER_WOKEN`): the front waiter is a writer that has been woken and will
//! try for the lock, so unlocks need not wake anyone (a departure: the kernel's
//! unlocks take the wait lock every time, which here cost a fifth of the time with
//! 16 threads at load 1).
//!
//! Count transitions, as `(readers, writer, waiters, handoff)`; `r` any count, `w`
//! and `h` any flag; `WOKEN` is left out except where it changes:
//!
//! ```text
//! read fast:      (r,0,0,0) -> (r+1,0,0,0)            fetch_add, else slow path
//! write fast:     (0,0,0,0) -> (0,1,0,0)              cmpxchg
//! read unlock:    (r,0,w,h) -> (r-1,0,w,h)            cmpxchg; if r-1 = 0, w = 1 and not
//!                                                     WOKEN: under the queue lock, wake
//! write unlock:   (0,1,w,h) -> (0,0,w,h)              cmpxchg; if w = 1 and not WOKEN:
//!                                                     under the queue lock, wake
//! wake a writer:  WOKEN 0 -> 1                        under the queue lock
//! writer retries: WOKEN 1 -> 0                        the cmpxchg of its try
//! spin, reader:   (r,0,w,0) -> (r+1,0,w,0)            fetch_add, undone on failure
//! spin, writer:   (0,0,w,0) -> (0,1,w,0)              cmpxchg
//! first sleeper:  (r,x,0,h) -> (r,x,1,h)              under the queue lock
//! grant readers:  (r,0,1,h) -> (r+n,0,w',0)           w' = 0 when the queue empties
//! writer, queued: (0,0,1,h) -> (0,1,w',0)             cmpxchg under the queue lock
//! handoff:        (r,x,1,0) -> (r,x,1,1)              the front waiter, after HANDOFF_AFTER
//! ```
//!
//! # The waiter's node
//!
//! A queued waiter spins and sleeps on the state word of a node in its own stack
//! frame, not on the count. The waker decides under the queue lock and writes the
//! nodes after dropping it; its swap is its last access to a node, whose frame may be
//! gone as soon as the waiter sees the new state:
//!
//! ```text
//!                  spin budget spent: cmpxchg (the waiter)
//!      WAITING ------------------------------------------> SLEEPING
//!       |  ^                                                 |
//!       |  | a writer's try failed: store,                   | (same wakes; the waker's
//!       |  | under the queue lock (the writer)               |  swap finds SLEEPING
//!       |  |                                                 |  and calls futex_wake)
//!       v  |                                                 v
//!      WOKEN    swap (the waker): a writer tries again; a reader retries from the
//!               fast path, keeping its waiting time
//!      GRANTED  Release swap (the waker): a reader holds the lock
//! ```
//!
//! `WAITING` and `SLEEPING` are the only states a waiter waits in; `WOKEN` and
//! `GRANTED` are written only by a waker, at most once per wait (the queue lock and
//! `WRITER_WOKEN` in the count keep every other waker off a node already told).
//!
//! # No lost wake-ups
//!
//! A waiter waits only after it is queued and `WAITERS` is set, under the queue lock.
//! Every unlock that leaves the lock free sees `WAITERS` in its own RMW's result and
//! wakes the front (unless `WOKEN` says a woken writer will try: its try clears
//! `WOKEN` with an RMW that sees the lock held, or takes the lock, so an unlock that
//! skipped the wake-up is always followed by the try, and a try that fails by an
//! unlock that sees `WOKEN` clear), which then takes the lock, is granted it, or (a reader) is
//! unlinked and told to retry from the start, as a new arrival that keeps its waiting
//! time; a writer that fails again is only put back to waiting under the queue lock,
//! so no wake can fall between its failed try and its wait. A waiter announces its
//! sleep with an RMW on its node word and a waker changes that word with an RMW, so
//! either the waker sees the announcement and makes the futex call, or the waiter
//! sees the new state and does not sleep. A thread whose share was counted only transiently (a
//! reader's fast path that failed, a spinning reader's failed try) may have hidden
//! the lock's release from an unlocker; each such thread either takes the lock, and
//! its own unlock then wakes, or queues, and the queueing re-reads the count under
//! the queue lock and wakes the front if the lock is free.
//!
//! # No access after the release
//!
//! POSIX lets a thread free an rwlock as soon as it knows no other thread uses it,
//! for example right after it took the lock and released it itself, while the thread
//! that released it to it may still be inside its unlock. So an unlock's releasing
//! RMW is its last access to the rwsem, or, when it must wake sleepers, its release of
//! the queue lock is:
//!
//! - An unlock releases with one cmpxchg when it leaves nobody to wake (`read
//!   unlock`/`write unlock` above, when the result is not "free with `WAITERS`").
//! - Otherwise it takes the queue lock first and releases under it
//!   (`unlock_queued`): no other unlock can serve the sleepers meanwhile (a spinner
//!   that takes the freed lock needs the queue lock to wake them), so none of them can
//!   finish and free the rwsem before this unlock is done with it.
//! - Every waker decides its wake-ups under the queue lock and makes them, the stores
//!   to the waiters' nodes and the futex wakes, after dropping it (`Deliveries`): a
//!   waiter it lets go may free the rwsem, and from then on the waker touches only the
//!   other waiters' nodes, which live until each is told.
//!
//! The cost: an uncontended unlock is a load and a cmpxchg instead of one `fetch_sub`
//! (one locked instruction either way), and a reader unlock racing other readers may
//! retry its cmpxchg.
//!
//! # Misuse
//!
//! Always detected, with a panic naming the problem: unlocking a write lock the calling
//! thread does not hold, unlocking a read lock of a lock no reader holds (a writer
//! unlocking as a reader), and write-locking a lock the calling thread already
//! write-holds (instead of a deadlock). Debug builds also track every thread's read
//! locks: unlocking a read lock this thread does not hold, and write-locking a lock
//! this thread read-holds (a certain deadlock) panic there. Recursive read locking is
//! allowed but deadlocks if a writer queues in between, as with any fair rwlock.

use std::marker::PhantomData;

use super::wait_queue::{Queue, WaitQueue};
use crate::budget;
use crate::catalog::RwLockKind;
use crate::owner;
use crate::stats::{self, Event, Lock};
use crate::streak::{Run, Streak};
use crate::sync::{AtomicU32, AtomicU64, Ordering::*};

const WRITER_LOCKED: u64 = 1 << 0;
/// Threads sleep in the queue.
const WAITERS: u64 = 1 << 1;
/// The front waiter is owed the lock.
const HANDOFF: u64 = 1 << 2;
/// The front waiter, a writer, has been woken and will try for the lock: unlocks need
/// not wake anyone. Set under the queue lock; cleared by that writer's next try, by
/// the same RMW that sees the lock held (so the holder's unlock, later, wakes it).
const WRITER_WOKEN: u64 = 1 << 3;
const READER_SHIFT: u32 = 8;
/// One reader's share of the count.
const READER_BIAS: u64 = 1 << READER_SHIFT;
const READER_MASK: u64 = !(READER_BIAS - 1);
/// Someone holds the lock.
const LOCK_MASK: u64 = WRITER_LOCKED | READER_MASK;
/// A reader's fast path fails if any of these is set.
const READ_FAILED_MASK: u64 = WRITER_LOCKED | WAITERS | HANDOFF;

/// The owner's thread id (Linux tids fit in 22 bits).
const TID_MASK: u32 = (1 << 22) - 1;
const READER_OWNED: u32 = 1 << 29;
const RD_NONSPINNABLE: u32 = 1 << 30;
const WR_NONSPINNABLE: u32 = 1 << 31;
const NONSPINNABLE: u32 = RD_NONSPINNABLE | WR_NONSPINNABLE;

/// Under `Adaptive`, the reader-nonspinnable bit stops readers from spinning for this
/// long after a writer last set it; then readers try spinning again (and a writer
/// that times out on them sets it again). A departure from seed 001, whose bit lasts
/// until a writer takes the lock without having seen it: on 2 CPUs with 40 readers
/// and 40 writers that starved readers (their mean iterations fell to 3% of the other
/// policies'), much as the seed itself cut them by 85%.
#[cfg(not(loom))]
pub const READER_NONSPIN_TTL: std::time::Duration = std::time::Duration::from_micros(200);

/// Under `Adaptive`, a reader takes the lock by spinning at most this many times in a
/// row; then it queues (and queueing starts its count again). A departure from seed
/// 001: with many readers and writers on few CPUs, the few running readers passed a
/// reader-owned lock among themselves by spinning while the queued ones slept, so
/// read phases ran for tens of thousands of reads and the slowest reader got a tenth
/// of the readers' mean. The bound trades the readers' share for the writers' where
/// readers chain; lockbench `rw-fair` at each bound is in `docs/results/tuning.md`.
const READER_SPIN_STREAK: u32 = 1024;

/// The calling thread's run of reader acquisitions by spinning, across all `RwSem`s.
static READER_SPINS: Streak = Streak::new(Run::ReaderSpins, READER_SPIN_STREAK);

/// Whether the calling thread's streak lets it spin for a read lock (`Adaptive` only:
/// the other policies are the kernel's, unbounded).
fn reader_streak_allows<P: ReaderSpin>() -> bool {
    let allows = P::POLICY != Policy::Adaptive || READER_SPINS.may_bypass();
    if !allows {
        stats::count(RwSem::<P>::STATS, Event::StreakEnd);
    }
    allows
}

/// A spinner's longest pause between two looks at the lock, in `cpu_relax`es.
const MAX_BACKOFF: u32 = 64;

/// The reader-spin policies (see the [`RwSem`] module doc for what each does).
pub mod reader_spin;

use reader_spin::Policy;
pub use reader_spin::ReaderSpin;

/// A reader-writer lock whose writers (and, by policy, readers) spin while the owner
/// runs and sleep otherwise; see the module doc.
pub struct RwSem<P: ReaderSpin = reader_spin::Adaptive> {
    count: AtomicU64,
    owner: AtomicU32,
    /// One thread spins on the owner (the OSQ reduced to a flag).
    spinner: AtomicU32,
    /// When a writer last set `RD_NONSPINNABLE` (`Adaptive`), in ns of [`clock`].
    #[cfg(not(loom))]
    reader_nonspin_at: std::sync::atomic::AtomicU64,
    queue: WaitQueue<Wait>,
    policy: PhantomData<P>,
}

// SAFETY: all shared state is atomics or behind the queue's lock.
unsafe impl<P: ReaderSpin> Sync for RwSem<P> {}
// SAFETY: as above; an `RwSem` holds no thread-affine resource when it moves.
unsafe impl<P: ReaderSpin> Send for RwSem<P> {}

fn readers(count: u64) -> u64 {
    count >> READER_SHIFT
}

impl<P: ReaderSpin> RwSem<P> {
    /// Whose counters the `stats` feature bumps.
    const STATS: Lock = Lock::RwLock(match P::POLICY {
        Policy::Adaptive => RwLockKind::RwSemAdaptive,
        Policy::Always => RwLockKind::RwSemAlways,
        Policy::Never => RwLockKind::RwSemNever,
    });

    /// An unlocked rwsem.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            count: AtomicU64::new(0),
            owner: AtomicU32::new(0),
            spinner: AtomicU32::new(0),
            reader_nonspin_at: std::sync::atomic::AtomicU64::new(0),
            queue: WaitQueue::new(),
            policy: PhantomData,
        }
    }

    /// An unlocked rwsem.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            count: AtomicU64::new(0),
            owner: AtomicU32::new(0),
            spinner: AtomicU32::new(0),
            queue: WaitQueue::new(),
            policy: PhantomData,
        }
    }

    /// Sets how long a spinner of every `RwSem` spins at most, overriding
    /// `KLOCKS_SPIN_NS` and calibration. See [`crate::budget`].
    pub fn set_spin_ns(ns: u64) {
        BUDGET.set_ns(ns);
    }

    /// Takes a read lock: sleeps (or spins, by policy) while a writer holds the lock
    /// or threads sleep for it.
    ///
    /// # Panics
    /// If the calling thread holds the write lock (the lock is left as it was).
    #[inline]
    pub fn lock_shared(&self) {
        // Acquire: pairs with the Release in `unlock_exclusive`.
        let before = self.count.fetch_add(READER_BIAS, Acquire);
        if before & READ_FAILED_MASK == 0 {
            self.set_reader_owned(owner::current_tid(), 0);
        } else {
            self.read_slow(before.wrapping_add(READER_BIAS));
        }
        held::acquired_read(self.addr());
    }

    /// Takes a read lock if that needs no waiting.
    #[inline]
    pub fn try_lock_shared(&self) -> bool {
        // Relaxed: the expected value; the cmpxchg decides.
        let mut count = self.count.load(Relaxed);
        while count & READ_FAILED_MASK == 0 {
            // Acquire: pairs with the Release in `unlock_exclusive`.
            match self
                .count
                .compare_exchange_weak(count, count + READER_BIAS, Acquire, Relaxed)
            {
                Ok(_) => {
                    self.set_reader_owned(owner::current_tid(), 0);
                    held::acquired_read(self.addr());
                    return true;
                }
                Err(now) => count = now,
            }
        }
        false
    }

    /// Takes the write lock: spins while the owner runs, sleeps otherwise.
    ///
    /// # Panics
    /// If the calling thread holds the write lock already (and, in debug builds, a
    /// read lock on it).
    #[inline]
    pub fn lock_exclusive(&self) {
        held::check_write_allowed(self.addr());
        let me = owner::current_tid();
        // Acquire: pairs with the Release of the unlocks.
        if self
            .count
            .compare_exchange(0, WRITER_LOCKED, Acquire, Relaxed)
            .is_ok()
        {
            self.set_owner(me);
        } else {
            self.write_slow(me);
        }
    }

    /// Takes the write lock if nobody holds the lock or waits for it.
    #[inline]
    pub fn try_lock_exclusive(&self) -> bool {
        // Acquire: pairs with the Release of the unlocks.
        let taken = self
            .count
            .compare_exchange(0, WRITER_LOCKED, Acquire, Relaxed)
            .is_ok();
        if taken {
            self.set_owner(owner::current_tid());
        }
        taken
    }

    /// Whether anyone holds the lock.
    pub fn is_locked(&self) -> bool {
        // Relaxed: a snapshot for the caller.
        self.count.load(Relaxed) & LOCK_MASK != 0
    }

    /// Whether a writer holds the lock.
    pub fn is_locked_exclusive(&self) -> bool {
        // Relaxed: a snapshot for the caller.
        self.count.load(Relaxed) & WRITER_LOCKED != 0
    }

    /// Forgets every queued waiter, and the wait queue's lock, keeping the holders:
    /// for a fork child, whose copy of the lock may list waiters (nodes on the stacks
    /// of threads the child does not have) and a wait-queue lock one of them held.
    /// Afterwards the lock is held as it was (by its readers or writer, which may be
    /// gone too) and nobody waits.
    ///
    /// # Safety
    /// No thread of this process is inside a call on the lock, and none starts one
    /// until this returns.
    #[cfg(not(loom))]
    pub unsafe fn forget_waiters(&self) {
        // Relaxed (all): the caller excludes every other thread.
        self.count.fetch_and(LOCK_MASK, Relaxed);
        self.spinner.store(0, Relaxed);
        // SAFETY: no thread uses the queue (caller's contract); the old one is not
        // dropped (its nodes belong to threads that are gone, and it owns nothing).
        unsafe {
            std::ptr::addr_of!(self.queue)
                .cast_mut()
                .write(WaitQueue::new())
        };
    }

    /// The thread id of the writer holding the lock, if a writer holds it.
    ///
    /// A snapshot, exact in one case: `exclusive_owner() == Some(me)` asked by thread
    /// `me` is true exactly when `me` holds the write lock. Only a writer stores its
    /// own id here, after acquiring, and `unlock_exclusive` and `downgrade` replace it
    /// before releasing; so when `me` does not hold the lock, its own last store to
    /// the word was that replacement, and coherence keeps it from reading its id back
    /// (the same argument as the C layer's owner fields).
    pub fn exclusive_owner(&self) -> Option<u32> {
        // Relaxed: a snapshot; see above for the one exact question.
        let (count, owner) = (self.count.load(Relaxed), self.owner.load(Relaxed));
        let tid = owner & TID_MASK;
        (count & WRITER_LOCKED != 0 && owner & READER_OWNED == 0 && tid != 0).then_some(tid)
    }

    /// Whether the calling thread holds the write lock (exact: see
    /// [`exclusive_owner`](Self::exclusive_owner)). The same question as
    /// [`RawRwLock::write_locked_by_current_thread`](crate::RawRwLock::write_locked_by_current_thread).
    pub fn write_locked_by_current_thread(&self) -> bool {
        self.exclusive_owner() == Some(crate::owner::current_tid())
    }

    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// Records a writer owner: clears the reader mark and every nonspinnable bit.
    fn set_owner(&self, me: u32) {
        // Relaxed: the owner word is a hint for spinners; the count orders the data.
        self.owner.store(me, Relaxed);
    }

    /// Marks the lock reader-owned by `tid`, keeping the bits the policy keeps.
    fn set_reader_owned(&self, tid: u32, extra: u32) {
        let kept = match P::POLICY {
            Policy::Adaptive => RD_NONSPINNABLE,
            Policy::Always => 0,
            Policy::Never => WR_NONSPINNABLE,
        };
        // Relaxed: a hint (above); skip the store when it would change nothing, so
        // readers that keep re-taking the lock do not keep writing the line.
        let old = self.owner.load(Relaxed);
        let new = tid | READER_OWNED | (old & kept) | extra;
        if old != new {
            self.owner.store(new, Relaxed);
        }
    }

    fn check_write_held(&self, me: u32, what: &str) {
        // Relaxed: our own acquisition's writes, if we hold the lock.
        let (count, owner) = (self.count.load(Relaxed), self.owner.load(Relaxed));
        let held = count & WRITER_LOCKED != 0 && owner & (TID_MASK | READER_OWNED) == me;
        if !held {
            panic!("klocks: RwSem::{what} by thread {me}, which does not hold the write lock (count {count:#x}, owner {owner:#x})");
        }
    }
}

#[cold]
#[inline(never)]
fn unlock_shared_unheld() -> ! {
    panic!("klocks: RwSem::unlock_shared on a lock no reader holds");
}

impl<P: ReaderSpin> Default for RwSem<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: ReaderSpin> std::fmt::Debug for RwSem<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Relaxed: a snapshot.
        let count = self.count.load(Relaxed);
        f.debug_struct("RwSem")
            .field("policy", &P::POLICY)
            .field("readers", &readers(count))
            .field("writer", &(count & WRITER_LOCKED != 0))
            .field("waiters", &(count & WAITERS != 0))
            .finish()
    }
}

/// Debug builds: the read locks each thread holds, to catch unlocking one it does not
/// hold and write-locking one it read-holds.
mod held;

/// Optimistic spinning: the one spinner, the owner checks, and the nonspinnable bits.
mod spin;

/// The releases: the read unlock, the write unlock and the downgrade.
mod release;

/// `lock_api`'s traits, for `RwSemLock`.
#[cfg(not(loom))]
mod lock_api_traits;

/// The waiter: what it waits for and since when, its wait on its node, and the
/// wake-ups delivered after the queue lock is released.
mod waiter;

/// The reader's slow path.
mod read;

/// The writer's slow path.
mod write;

/// Waking the queue after an unlock.
mod wake;
#[cfg(not(loom))]
use waiter::clock;
use waiter::{wait_on_node, Deliveries, Kind, Node, Since, Wait, Wake};
use waiter::{BUDGET, GRANTED, MAX_READERS_WAKEUP, WAITING};

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, feature = "stats", not(loom)))]
mod stats_tests;
