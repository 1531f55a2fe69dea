//! The paravirt queued spinlock (`kernel/locking/qspinlock_paravirt.h`), in userspace.
//!
//! # The algorithm
//!
//! The queued spinlock of [`qspinlock`](super::qspinlock) with the kernel's pv hooks,
//! so that it survives more runnable threads than CPUs. Every waiter spins a bounded
//! budget ([`budget`](crate::budget)) and then sleeps on a futex
//! ([`park`](crate::park)); whoever would hand it the lock wakes it.
//!
//! - **No pending waiter.** As in the kernel's pv build, every contender queues: a
//!   sleeping pending owner could not be woken by anyone.
//! - **Stealing at slow-path entry** (the kernel's `pv_hybrid_queued_unfair_trylock`).
//!   A contender takes the lock when it finds it free (`locked == 0` and
//!   `pending == 0`) even though others are queued, and keeps trying, for at most the
//!   spin budget, as long as the queue is not empty; it queues at once only when the
//!   queue is. It tries before it claims its queue node, so a steal costs no
//!   thread-local node lookup. The threads that are running keep the lock busy while a
//!   sleeping queue head wakes up (tens of µs in a VM), instead of the whole machine
//!   waiting for it. A version that tried once and then queued let every running
//!   thread end up asleep in the queue with more threads than CPUs, and a CPU sat idle
//!   (`docs/decisions/waiting.md`: pv-steals).
//! - **A patient queue head** (klocks' addition; the kernel's head blocks steals as
//!   soon as it starts spinning). For its first spin budget the new head lets a running
//!   thread that re-takes the lock back to back keep it. Steals while a queue exists
//!   count themselves in bits 9-15 of the word. The head claims a free lock at once
//!   until it has seen the count move; from then on, a free lock may be only the
//!   owner's gap between two sections, so the head looks again [`CONFIRM_NS`] later
//!   and claims it only if nobody stole it in between, or else stays off the line for
//!   [`BACKOFF_NS`]. On its own CPU the owner re-takes the lock in a few ns; a handoff
//!   to the head costs a cache-line transfer. Confirming every claim (not only after
//!   a steal) delays each plain handoff, and claiming only after a long quiet period
//!   costs the sections that alternate between two CPUs (`docs/decisions/waiting.md`:
//!   pv-patient-head).
//! - **Bounded stealing, two ways.** After its patience the queue head sets `pending`
//!   while it spins; stealing needs `pending == 0`, so the head takes the next release
//!   (because steals exist, it claims the lock with cmpxchg: it is not the only eligible
//!   thread, unlike seed 000's head). And a thread that has taken locks by stealing
//!   [`STEAL_STREAK`] times in a row queues on its next slow path: without that, the
//!   few running threads passed the lock among themselves and the sleeping ones got
//!   it once per queue rotation (`docs/decisions/waiting.md`: pv-steal-streak). So a
//!   queued thread waits at most its patience, plus one budget of spinning, behind
//!   running stealers, and each of those at most `STEAL_STREAK` acquisitions.
//! - **Queued waiters** spin on their own node, then mark it [`HALTED`] and sleep on
//!   its `locked` word. They stop spinning early when their predecessor is itself
//!   halted (the kernel's `pv_wait_early`): their wait will be long. The predecessor,
//!   when it passes headship, wakes a halted successor right away, so the successor's
//!   wake-up latency overlaps the current critical section.
//! - **The queue head** spins on the lock word, then marks the locked byte `SLOW`
//!   (`_Q_SLOW_VAL`) and sleeps on the lock word itself. Only the head sleeps there.
//!   Unlock is one `fetch_sub`, as in [`QSpinLock`](super::qspinlock::QSpinLock); only
//!   when it finds `SLOW` does it clear the byte and wake the head.
//!
//! # The word
//!
//! The qspinlock word, with one more value of the locked byte:
//!
//! ```text
//!  31              16 15       8 7        0
//! +------------------+----------+----------+
//! |  tail (slot + 1) | pending  |  locked  |   locked: 0 free, 1 held, 3 held + SLOW
//! +------------------+----------+----------+   pending: bit 8, the head is claiming
//!                                                steals: bits 9-15, mod 128, 0 with no tail
//! ```
//!
//! ```text
//! fast path:       (0,0,0) -> (0,0,1)                        cmpxchg
//! steal:           (t,0,0) -> (t,0+s,1)                      cmpxchg; s: steals += 1 if t != 0
//! queue:           (p,*,*) -> (n,*,*)                        xchg_tail
//! head waits:      (n,0,0) -> (0,0,1) / (*,0,1)              after a steal: only if none for CONFIRM_NS
//! head spins:      (n,0,*) -> (n,1,*)                        no steals while set
//! head claims:     (n,1,0) -> (0,0,1) last / (*,1,0) -> (*,0,1)   cmpxchg, steals = 0
//! head sleeps:     (*,1,1) -> (*,0,1) -> (*,0,3), futex_wait on the word
//! unlock:          (*,*,1) -> (*,*,0)
//! unlock, SLOW:    (*,*,3) -> (*,*,2) -> (*,*,0), futex_wake the head
//! ```
//!
//! # No lost wake-ups
//!
//! The head's `SLOW` mark and the unlock are RMWs on the same word: either the unlock
//! comes first (the head's cmpxchg from `locked == 1` fails and it retries) or the
//! unlock sees `SLOW` and wakes; a futex_wait that starts after the unlock changed the
//! word returns at once. A queued waiter's `HALTED` and its predecessor's `locked`
//! store are on different words: that store-buffering pair uses the asymmetric barrier
//! ([`barrier`](crate::barrier)), as in [`PvTicketLock`](super::pv_ticket::PvTicketLock):
//!
//! ```text
//! waiter                                predecessor (passing headship)
//! [S] node.state = HALTED               [S] node.locked = 1
//!     heavy barrier                         light barrier
//! [L] if node.locked == 0:              [L] if node.state == HALTED:
//!         futex_wait(node.locked, 0)            futex_wake(node.locked)
//! ```
//!
//! # When to use it, when not
//!
//! The first choice among klocks' locks: it costs what [`QSpinLock`] costs
//! uncontended (one cmpxchg, one RMW), spins locally under contention, and sleeps
//! instead of collapsing when threads outnumber CPUs. Stealing trades strict FIFO for
//! throughput (bounded: never once the head's patience is over, and at most
//! [`STEAL_STREAK`] in a row per thread). For critical sections that block (I/O, long
//! computations) prefer a sleeping mutex. Relocking from the owner deadlocks; unlocking
//! an unlocked lock panics.
//!
//! [`QSpinLock`]: super::qspinlock::QSpinLock
//! [`HALTED`]: super::mcs::HALTED
//! [`CONFIRM_NS`]: CONFIRM_NS
//! [`BACKOFF_NS`]: BACKOFF_NS

use super::mcs::with_queue_node;
use super::qspinlock::{
    fast_lock, trylock, trylock_after_fork, LOCKED_MASK, LOCKED_VAL, PENDING_VAL, TAIL_MASK,
    TAIL_OFFSET,
};
use crate::budget::{spins_for_ns, SpinBudget};
use crate::catalog::MutexKind;
use crate::park;
use crate::stats::{self, Event, Lock};
use crate::streak::{Run, Streak};
use crate::sync::{cpu_relax, cpu_relax_times, AtomicU32, Ordering::*};

/// The locked byte of a held lock whose queue head sleeps on the word.
pub(crate) const SLOW_VAL: u32 = 3;

/// Steals taken while a queue exists, counted modulo 128 in bits 9-15 of the word
/// (the kernel leaves bits 9-15 of the pending byte unused). Zero whenever the tail
/// is: only the head's claim empties the queue, and it clears the count.
const STEAL_ONE: u32 = 1 << 9;
const STEALS_MASK: u32 = 0x7f << 9;

/// A steal needs both clear: nobody holds the lock and the queue head is not claiming.
const NO_STEAL_MASK: u32 = LOCKED_MASK | PENDING_VAL;

/// How long a patient queue head that has seen a steal waits, after it saw the lock
/// free, before it looks again and claims it if nobody stole it meanwhile: one
/// `pause` here. An owner that re-takes the lock back to back does so within tens of
/// ns; one that does any work between its sections leaves the lock free far longer.
const CONFIRM_NS: u64 = 25;

/// How long a patient head stays off the word after it saw a steal between two
/// looks: each look pulls the line away from the owner and costs it a cache miss, so
/// the head looks rarely while the owner re-takes the lock (2 µs beat 500 ns in
/// lockbench `loop` at 2-4 threads: `docs/results/tuning.md`). (The 7-bit steal count is
/// compared across `CONFIRM_NS`, a few steals at most; across a whole patience it
/// may come round to the same value, which only costs one early claim.)
const BACKOFF_NS: u64 = 2_000;

/// A waiter checks its predecessor's state once per this many spins.
const PREV_CHECK_MASK: u32 = 0xff;

/// The spin budget shared by every `PvQSpinLock`.
static BUDGET: SpinBudget = SpinBudget::new();

/// Whose counters the `stats` feature bumps.
const STATS: Lock = Lock::Mutex(MutexKind::PvQSpinLock);

/// A queued spinlock whose waiters sleep after a bounded spin. See the module doc.
pub struct PvQSpinLock {
    pub(crate) word: AtomicU32,
}

impl PvQSpinLock {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
        }
    }

    /// Sets how long every `PvQSpinLock` waiter spins before it sleeps, overriding
    /// `KLOCKS_SPIN_NS` and calibration. See [`crate::budget`].
    pub fn set_spin_ns(ns: u64) {
        BUDGET.set_ns(ns);
    }

    /// Acquires the lock: spins, then sleeps until it is handed over.
    #[inline]
    pub fn lock(&self) {
        if !fast_lock(&self.word) {
            self.lock_slow();
        }
    }

    /// Takes the lock if the word is entirely clear (no owner, no waiter).
    #[inline]
    pub fn try_lock(&self) -> bool {
        trylock(&self.word) || trylock_after_fork(&self.word)
    }

    /// The uncontended fast path alone, `(0,0,0) -> (0,0,1)`: one cmpxchg, with no
    /// load before it; otherwise the word it found. For a caller that keeps another
    /// lock in the same 4 bytes and tells the two apart by the word, as the
    /// interposer does with [`SharedFutexSpinLock`](crate::SharedFutexSpinLock).
    #[inline]
    pub fn try_lock_fast(&self) -> Result<(), u32> {
        // Acquire: pairs with the Release of the lock's unlock.
        self.word
            .compare_exchange(0, LOCKED_VAL, Acquire, Relaxed)
            .map(drop)
    }

    /// Releases the lock, waking the queue head if it sleeps.
    ///
    /// # Panics
    /// If the lock is not locked.
    #[inline]
    pub fn unlock(&self) {
        if self.word.load(Relaxed) & LOCKED_MASK == 0 {
            unlock_of_unlocked();
        }
        // Release: pairs with the Acquire of the next acquisition (fast path, steal,
        // or the head's claim).
        let before = self.word.fetch_sub(LOCKED_VAL, Release);
        if before & LOCKED_MASK != LOCKED_VAL {
            self.unlock_slow(before);
        } else {
            crate::fault::after_release();
        }
    }

    /// Whether some thread holds the lock.
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.word.load(Relaxed) & LOCKED_MASK != 0
    }

    /// `(*,*,3) -> (*,*,2) -> (*,*,0)`, then wake the sleeping head.
    #[cold]
    fn unlock_slow(&self, before: u32) {
        if before & LOCKED_MASK != SLOW_VAL {
            unlock_of_unlocked();
        }
        let word: *const AtomicU32 = &self.word;
        // The byte reads 2 between the two subtractions: still held, so nobody can
        // take the lock before the second Release. That Release is the last access:
        // the wake uses the word's address only (the lock may be gone by then).
        self.word.fetch_sub(SLOW_VAL - LOCKED_VAL, Release);
        crate::fault::after_release();
        stats::woke(STATS, park::wake_one_at(word));
    }

    /// The slow path, recorded for a fork child, after the repair of a word a fork
    /// left with waiters this process does not have (see
    /// [`fork_child`](super::fork_child)).
    #[cold]
    fn lock_slow(&self) {
        super::fork_child::slow_path(&self.word, || self.lock_contended());
    }

    fn lock_contended(&self) {
        stats::count(STATS, Event::LockSlowpath);
        if !STEALS.may_bypass() {
            stats::count(STATS, Event::StreakEnd);
        } else if self.steal() {
            stats::count(STATS, Event::Steal);
            STEALS.bypassed();
            return;
        }
        with_queue_node(|node| match node {
            Some((code, node)) => self.queue_on(code << TAIL_OFFSET, node),
            None => self.lock_without_node(),
        });
    }

    /// Queue head: wait patiently, then claim the lock as soon as it is free; sleep on
    /// the word when spinning does not pay. Returns whether others are queued behind us.
    fn wait_as_head(&self, tail: u32) -> bool {
        if let Some(successors) = self.wait_patiently(tail) {
            return successors;
        }
        loop {
            // Stop steals while we are awake to take the lock: (n,0,*) -> (n,1,*).
            // Relaxed: a fairness hint; every acquisition is still a cmpxchg against a
            // clear locked byte, so no ordering rests on it.
            self.word.fetch_or(PENDING_VAL, Relaxed);
            stats::count(STATS, Event::HeadPending);
            for _ in 0..=BUDGET.spins() {
                if let Some(successors) = self.try_claim(tail) {
                    return successors;
                }
                cpu_relax();
            }
            // Let running newcomers steal while we sleep: (*,1,*) -> (*,0,*). Relaxed:
            // the same hint.
            self.word.fetch_and(!PENDING_VAL, Relaxed);
            if let Some(successors) = self.try_claim(tail) {
                return successors;
            }
            self.sleep_as_head();
        }
    }

    /// For one spin budget, leave the lock to a running thread that keeps re-taking
    /// it. Spin on the word while it is held, and claim it when it is free, at once
    /// as long as nobody has stolen it since we became head. Once somebody has, a
    /// free lock may only be the owner's gap between two back-to-back sections: look
    /// again [`CONFIRM_NS`] later and claim it if nobody stole it in between, or else
    /// stay off the owner's cache line for [`BACKOFF_NS`]. `None` if the budget ran
    /// out first.
    ///
    /// Under loom the budget is one spin: the models take one look, so they cover a
    /// patient claim racing steals, the unlock and new arrivals.
    fn wait_patiently(&self, tail: u32) -> Option<bool> {
        let budget = if cfg!(loom) { 1 } else { BUDGET.spins() };
        let confirm = spins_for_ns(CONFIRM_NS).max(1);
        let backoff = spins_for_ns(BACKOFF_NS).max(1);
        // Relaxed, every load here: the steal count only decides *when* we try; the
        // claim itself is `try_claim`'s Acquire cmpxchg.
        let first = self.word.load(Relaxed);
        let mut spent = 0;
        while spent < budget {
            let seen = self.word.load(Relaxed);
            if seen & LOCKED_MASK != 0 {
                cpu_relax();
                spent += 1;
                continue;
            }
            if (seen ^ first) & STEALS_MASK != 0 {
                cpu_relax_times(confirm);
                spent += confirm;
                if (self.word.load(Relaxed) ^ seen) & STEALS_MASK != 0 {
                    cpu_relax_times(backoff);
                    spent += backoff;
                    continue;
                }
            }
            if let Some(successors) = self.try_claim(tail) {
                return Some(successors);
            }
            cpu_relax();
            spent += 1;
        }
        None
    }

    /// `(n,*,0) -> (0,0,1)` when we are last, `(*,*,0) -> (*,0,1)` otherwise, clearing
    /// our pending bit and the steal count in the same cmpxchg. `None` while the lock
    /// is held.
    fn try_claim(&self, tail: u32) -> Option<bool> {
        // Acquire: pairs with the Release in `unlock`.
        let val = self.word.load(Acquire);
        if val & LOCKED_MASK != 0 {
            return None;
        }
        let last = val & TAIL_MASK == tail;
        let claimed = if last {
            LOCKED_VAL
        } else {
            (val & TAIL_MASK) | LOCKED_VAL
        };
        // Acquire: the same pairing, for the value the cmpxchg actually replaced.
        self.word
            .compare_exchange(val, claimed, Acquire, Relaxed)
            .ok()
            .map(|_| !last)
    }

    /// Mark the held lock `SLOW` and sleep on the word until the unlock wakes us.
    /// Returns at once if the lock came free meanwhile.
    fn sleep_as_head(&self) {
        let mut val = self.word.load(Relaxed);
        loop {
            match val & LOCKED_MASK {
                0 => return,
                LOCKED_VAL => {
                    // (*,0,1) -> (*,0,3). Relaxed: an unlock that follows reads the
                    // mark through its RMW on this same word.
                    let slow = (val & !LOCKED_MASK) | SLOW_VAL;
                    match self.word.compare_exchange(val, slow, Relaxed, Relaxed) {
                        Ok(_) => val = slow,
                        Err(now) => {
                            val = now;
                            continue;
                        }
                    }
                }
                _ => {}
            }
            // Sleeps only while the word is exactly `val` (locked byte SLOW); a change
            // of tail returns at once and we look again.
            stats::count(STATS, Event::Sleep);
            stats::count(STATS, Event::HeadSleep);
            park::wait(&self.word, val);
            return;
        }
    }
}

/// How many times in a row one thread may take a `PvQSpinLock` by stealing: then its
/// next slow path queues without trying. Shorter bounds cost throughput, longer ones
/// fairness with many threads per CPU; 1024 kept both within a few percent of their
/// best in lockbench `overcommit` (the table is in `docs/results/tuning.md`).
const STEAL_STREAK: u32 = 1024;

/// The calling thread's run of steals, across all `PvQSpinLock`s (see
/// [`crate::streak`]).
static STEALS: Streak = Streak::new(Run::Steals, STEAL_STREAK);

#[cold]
#[inline(never)]
fn unlock_of_unlocked() -> ! {
    panic!("klocks: unlock of a PvQSpinLock that is not locked");
}

impl std::fmt::Debug for PvQSpinLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let val = self.word.load(Relaxed);
        f.debug_struct("PvQSpinLock")
            .field("tail", &(val >> TAIL_OFFSET))
            .field("head_spinning", &(val & PENDING_VAL != 0))
            .field("locked", &(val & LOCKED_MASK != 0))
            .field("head_sleeps", &(val & LOCKED_MASK == SLOW_VAL))
            .finish()
    }
}

// SAFETY: the locked byte goes from 0 to non-zero only by cmpxchg (fast path, steal,
// head claim), and back to 0 only in `unlock`, by the holder.
raw_mutex!(for PvQSpinLock);

// Stealing: at slow-path entry, and the slot-less path's steal-spin.
mod steal;

// The queue behind the head: linking in, waiting (and sleeping) on our node, and
// making the successor head.
mod queue;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, feature = "stats", not(loom)))]
mod stats_tests;
