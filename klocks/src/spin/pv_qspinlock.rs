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
//!   (`docs/results/tuning.md`).
//! - **A patient queue head** (klocks' addition; the kernel's head blocks steals as
//!   soon as it starts spinning). For its first spin budget the new head lets a running
//!   thread that re-takes the lock back to back keep it. Steals while a queue exists
//!   count themselves in bits 9-15 of the word. The head claims a free lock at once
//!   until it has seen the count move; from then on, a free lock may be only the
//!   owner's gap between two sections, so the head looks again [`CONFIRM_NS`] later
//!   and claims it only if nobody stole it in between, or else stays off the line for
//!   [`BACKOFF_NS`]. On its own CPU the owner re-takes the lock in a few ns; a handoff
//!   to the head costs a cache-line transfer. Patience halves lockbench `loop`'s time
//!   at 2 and 3 threads and cuts its handoffs ~20-fold; confirming every claim (not
//!   only after a steal) delays each plain handoff, and claiming only after a long
//!   quiet period costs the sections that alternate between two CPUs (measurements:
//!   `docs/results/tuning.md`).
//! - **Bounded stealing, two ways.** After its patience the queue head sets `pending`
//!   while it spins; stealing needs `pending == 0`, so the head takes the next release
//!   (because steals exist, it claims the lock with cmpxchg: it is not the only eligible
//!   thread, unlike seed 000's head). And a thread that has taken locks by stealing
//!   [`STEAL_STREAK`] times in a row queues on its next slow path: without that, the
//!   few running threads passed the lock among themselves and the sleeping ones got
//!   it once per queue rotation (the slowest thread's share fell to a quarter of the
//!   mean at 64 threads; `docs/results/tuning.md`). So a queued thread waits at most
//!   its patience, plus one budget of spinning, behind running stealers, and each of
//!   those at most `STEAL_STREAK` acquisitions.
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

use super::mcs::{decode_tail, with_queue_node, McsNode, HALTED, RUNNING};
use super::qspinlock::{
    fast_lock, trylock, wait_for_next, Flavor, SimpleWrite, LOCKED_MASK, LOCKED_VAL, PENDING_VAL,
    TAIL_MASK, TAIL_OFFSET,
};
use crate::budget::{spins_for_ns, SpinBudget};
use crate::catalog::MutexKind;
use crate::stats::{self, Event, Lock};
use crate::streak::{Run, Streak};
use crate::sync::{cpu_relax, cpu_relax_times, AtomicU32, Ordering::*};
use crate::{barrier, park};

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
    word: AtomicU32,
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
        trylock(&self.word)
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

    #[cold]
    fn lock_slow(&self) {
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

    /// One steal attempt: `(t,0,0) -> (t,0+s,1)` while nobody holds the lock and the
    /// queue head is not claiming it; with a queue (`t != 0`) the steal count moves, so
    /// a patient head sees that the lock is in use. Returns the word it saw when it did
    /// not take it.
    fn try_steal(&self) -> Result<(), u32> {
        self.try_steal_unless(NO_STEAL_MASK)
    }

    /// A steal that takes the lock unless a bit of `blocked` is set in the word.
    fn try_steal_unless(&self, blocked: u32) -> Result<(), u32> {
        let val = self.word.load(Relaxed);
        if val & blocked != 0 {
            return Err(val);
        }
        let stolen = if val & TAIL_MASK == 0 {
            val | LOCKED_VAL
        } else {
            let steals = val.wrapping_add(STEAL_ONE) & STEALS_MASK;
            (val & !STEALS_MASK) | steals | LOCKED_VAL
        };
        // Acquire: pairs with the Release in `unlock`. A head that claims the lock
        // meanwhile makes this cmpxchg fail (or its own `try_claim` fails against ours).
        self.word
            .compare_exchange(val, stolen, Acquire, Relaxed)
            .map(drop)
    }

    /// The kernel's `pv_hybrid_queued_unfair_trylock`: keep trying to steal while
    /// others are queued, for at most the spin budget; give up at once when the queue
    /// is empty (there is no sleeping head to run ahead of: queue and spin as head).
    fn steal(&self) -> bool {
        for _ in 0..=BUDGET.spins() {
            match self.try_steal() {
                Ok(()) => return true,
                Err(val) if val & TAIL_MASK == 0 => return false,
                Err(_) => cpu_relax(),
            }
        }
        false
    }

    fn queue_on(&self, tail: u32, node: &'static McsNode) {
        stats::count(STATS, Event::Queued);
        let old = SimpleWrite::xchg_tail(&self.word, tail);
        if old & TAIL_MASK != 0 {
            let prev = decode_tail(old >> TAIL_OFFSET);
            // Release: pairs with the Acquire in `wait_for_next`.
            prev.next
                .store(node as *const McsNode as *mut McsNode, Release);
            wait_in_queue(node, prev);
        }
        if self.wait_as_head(tail) {
            kick_successor(node);
        }
        STEALS.queued();
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

    /// No queue node (see `mcs`): steal-spin, yielding the CPU once the budget is
    /// spent, so that even thousands of slot-less threads cannot starve the owner.
    ///
    /// Unlike a steal at slow-path entry, this one ignores a claiming head's
    /// `pending`: a signal handler that runs on a queue head's own thread (the head
    /// had set `pending` and is now interrupted) would otherwise wait for a bit that
    /// only that head clears, on a lock that may be free. Safe for exclusion, since
    /// every acquisition of this lock, the head's included, is a cmpxchg from a clear
    /// locked byte; only the head's priority over this rare caller is given up.
    fn lock_without_node(&self) {
        stats::count(STATS, Event::NoNode);
        loop {
            for _ in 0..=BUDGET.spins() {
                if self.try_steal_unless(LOCKED_MASK).is_ok() {
                    return;
                }
                cpu_relax();
            }
            crate::sync::yield_now();
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

/// A queued, not-yet-head waiter: spin on our node, then sleep on it until the
/// predecessor makes us head. Park early when the predecessor itself sleeps.
fn wait_in_queue(node: &McsNode, prev: &McsNode) {
    loop {
        for spin in 0..=BUDGET.spins() {
            // Acquire: pairs with the Release in `kick_successor`.
            if node.locked.load(Acquire) != 0 {
                return;
            }
            // From the first spin, not after 256 as in the kernel: a halted predecessor
            // means at least one wake-up latency (~33 µs here) before our turn.
            // Relaxed: a hint only; any value is safe to act on.
            if spin & PREV_CHECK_MASK == 0 && prev.state.load(Relaxed) == HALTED {
                stats::count(STATS, Event::WaitEarly);
                break;
            }
            cpu_relax();
        }
        // Announce, then check (module doc, "No lost wake-ups").
        node.state.store(HALTED, Relaxed);
        let pairing = barrier::heavy();
        // Acquire: pairs with the Release in `kick_successor`.
        if node.locked.load(Acquire) == 0 {
            stats::count(STATS, Event::Sleep);
            park::wait_paired(&node.locked, 0, pairing);
        }
        // Relaxed: a predecessor that still reads HALTED only wakes us needlessly.
        node.state.store(RUNNING, Relaxed);
    }
}

/// Make our successor the queue head, and wake it if it sleeps.
fn kick_successor(node: &McsNode) {
    let next = wait_for_next(node);
    // Release: pairs with the Acquire loads of `locked` in `wait_in_queue`.
    next.locked.store(1, Release);
    // Pairs with the waiter's heavy barrier (module doc).
    barrier::light();
    if next.state.load(Relaxed) == HALTED {
        stats::woke(STATS, park::wake_one(&next.locked));
    }
}

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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::testing::{oversubscribed, stress};

    lock_basics_tests!(
        PvQSpinLock,
        "klocks: unlock of a PvQSpinLock that is not locked"
    );

    /// The steal count moves only while a queue exists (so a word with no tail stays
    /// 0 for the fast path) and wraps inside bits 9-15 without touching the tail; a
    /// claiming head (pending) blocks steals.
    #[test]
    fn steals_count_only_while_queued_and_wrap_inside_their_bits() {
        let lock = PvQSpinLock::new();
        assert_eq!(lock.try_steal(), Ok(()));
        assert_eq!(lock.word.load(Relaxed), LOCKED_VAL);
        lock.unlock();

        let tail = 1 << TAIL_OFFSET;
        lock.word.store(tail | STEALS_MASK, Relaxed);
        assert_eq!(lock.try_steal(), Ok(()));
        assert_eq!(
            lock.word.load(Relaxed),
            tail | LOCKED_VAL,
            "127 + 1 wraps to 0"
        );
        lock.unlock();
        assert_eq!(lock.try_steal(), Ok(()));
        assert_eq!(lock.word.load(Relaxed), tail | STEAL_ONE | LOCKED_VAL);
        lock.unlock();

        lock.word.fetch_or(PENDING_VAL, Relaxed);
        assert_eq!(lock.try_steal(), Err(tail | PENDING_VAL | STEAL_ONE));
        lock.word.store(0, Relaxed);
    }

    /// A signal handler that takes the lock its own thread is queued on, while that
    /// thread, as queue head, has set `pending` and spins: the handler has no queue
    /// node (its thread's is in use), and must still get the lock once it is free.
    #[test]
    fn a_signal_handler_takes_the_lock_its_queued_thread_claims() {
        let name =
            "spin::pv_qspinlock::tests::a_signal_handler_takes_the_lock_its_queued_thread_claims";
        if let Some(status) = crate::testing::isolated(name, handler_takes_the_lock) {
            assert!(status.success(), "{status:?}");
        }
    }

    fn handler_takes_the_lock() {
        use std::sync::atomic::AtomicBool;
        use std::time::{Duration, Instant};
        static LOCK: PvQSpinLock = PvQSpinLock::new();
        static HANDLED: AtomicBool = AtomicBool::new(false);
        extern "C" fn handler(_: libc::c_int) {
            LOCK.lock();
            LOCK.unlock();
            HANDLED.store(true, SeqCst);
        }
        // A long budget: the head is patient for 10 ms, then spins with `pending` set
        // for 10 ms; the signal lands in that spin.
        PvQSpinLock::set_spin_ns(crate::budget::MAX_SPIN_NS);
        // SAFETY: installs a handler for SIGURG (ignored by default, unused by the test
        // harness) that only touches statics.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as extern "C" fn(libc::c_int) as usize;
            libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut());
        }
        LOCK.lock();
        let waiter = std::thread::spawn(|| {
            LOCK.lock();
            LOCK.unlock();
        });
        let deadline = Instant::now() + Duration::from_secs(2);
        while LOCK.word.load(Relaxed) & PENDING_VAL == 0 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        let pending = LOCK.word.load(Relaxed) & PENDING_VAL != 0;
        // SAFETY: the waiter thread is alive (it waits for the lock we hold).
        unsafe { libc::pthread_kill(waiter_thread(&waiter), libc::SIGURG) };
        std::thread::sleep(Duration::from_millis(2));
        LOCK.unlock();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !HANDLED.load(SeqCst) {
            assert!(
                Instant::now() < deadline,
                "the handler never got the free lock (pending was {})",
                if pending { "set" } else { "clear" }
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        waiter.join().unwrap();
        assert!(!LOCK.is_locked());
    }

    /// The pthread handle of a spawned thread.
    fn waiter_thread<T>(handle: &std::thread::JoinHandle<T>) -> libc::pthread_t {
        use std::os::unix::thread::JoinHandleExt;
        handle.as_pthread_t()
    }

    /// With the unit-test build's 4 queue slots, the oversubscribed runs also drive
    /// hundreds of slot-less waiters beside the queue.
    #[test]
    fn stress_oversubscribed() {
        stress::<PvQSpinLock>(oversubscribed);
    }
}

#[cfg(all(test, feature = "stats", not(loom)))]
mod stats_tests {
    use super::*;
    use crate::stats::testing::*;

    /// Behind a held lock a waiter queues, becomes head, sets `pending` when its
    /// patience runs out, and sleeps on the word once; the unlock that finds `SLOW`
    /// kicks it exactly once, and the head sets `pending` again before it claims.
    /// In its own process: the queue node must not be taken by other tests' threads.
    #[test]
    fn stats_the_head_sleeps_once_and_is_kicked_once() {
        if !crate::testing::alone(
            "spin::pv_qspinlock::stats_tests::stats_the_head_sleeps_once_and_is_kicked_once",
        ) {
            return;
        }
        let lock: &'static PvQSpinLock = Box::leak(Box::new(PvQSpinLock::new()));
        // The head asleep.
        let (unlock, waited) = one_waiter(lock, STATS, |waiter| {
            lock.word.load(Relaxed) & LOCKED_MASK == SLOW_VAL && waiter.asleep()
        });
        expect(&waited, STATS)
            .exactly(LockSlowpath, 1)
            .exactly(Queued, 1)
            .exactly(HeadPending, 2)
            .exactly(Sleep, 1)
            .exactly(HeadSleep, 1)
            .nothing_else();
        expect(&unlock, STATS).exactly(Wake, 1).nothing_else();
    }

    /// A newcomer that finds the lock free while others are queued steals it.
    #[test]
    fn stats_a_newcomer_steals_a_free_lock_ahead_of_the_queue() {
        let lock = PvQSpinLock::new();
        // A queue (a tail code) and a free lock: what a sleeping head leaves.
        lock.word.store(1 << TAIL_OFFSET, Relaxed);
        let ((), stole) = counted(|| lock.lock());
        lock.unlock();
        lock.word.store(0, Relaxed);
        expect(&stole, STATS)
            .exactly(LockSlowpath, 1)
            .exactly(Steal, 1)
            .nothing_else();
    }
}
