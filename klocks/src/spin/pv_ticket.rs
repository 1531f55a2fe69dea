//! The paravirt ticket lock (seed 003): a ticket lock whose waiters sleep.
//!
//! # The algorithm
//!
//! A ticket lock hands the lock to the next ticket even if that thread is not running;
//! with more runnable threads than CPUs, every handoff to a preempted waiter stalls the
//! whole queue for a time slice. Seed 003 kept the ticket lock and added two hooks:
//! a waiter that has spun for a while *blocks* until kicked, and the unlocker of a lock
//! with blocked waiters *kicks* the next ticket's waiter. Here "block" is a futex wait
//! and "kick" a futex wake ([`park`](crate::park)).
//!
//! - The waiter next in line spins its budget ([`budget`](crate::budget)); waiters
//!   farther back do not spin at all (on an oversubscribed machine their spinning
//!   only takes CPU time from the owner and the next in line). Then a waiter announces
//!   itself: it registers as a sleeper in the bucket for `(lock, ticket)`, sets the
//!   lock's SLOWPATH flag, and sleeps on the bucket's sequence word unless its ticket
//!   came up meanwhile. A woken waiter spins again (if next) before it sleeps again.
//! - Unlock serves the next ticket with one atomic add on the owner half of the word,
//!   which also returns the SLOWPATH flag (kept in the owner half for exactly that).
//!   Only if the flag is set does it bump the next ticket's bucket sequence and, if
//!   anyone sleeps there, wake the bucket. Waiters hash by ticket, so the kick reaches
//!   the next ticket's waiter (plus, rarely, a hash neighbour that re-checks and
//!   sleeps again). It also kicks the ticket after that, which has just become next
//!   in line: its wake-up (tens of µs in a VM) then overlaps the coming critical
//!   section instead of leaving the lock idle after it. That kick is a hint; the
//!   first is the handoff.
//! - The first thread to take the lock with nobody behind it clears SLOWPATH, so the
//!   flag costs nothing once contention is gone (the kernel's
//!   `__ticket_check_and_clear_slowpath`).
//!
//! # The word
//!
//! ```text
//!  63                     33  32  31                     1    0
//! +-------------------------+----+-------------------------+------+
//! |      next (ticket)      |  0 |     owner (ticket)      | SLOW |
//! +-------------------------+----+-------------------------+------+
//! ```
//!
//! One 64-bit atomic, so "nobody waits behind the owner" is one compare (clearing the
//! flag) and no access ever mixes sizes. Tickets advance by 2 in each 32-bit half:
//! 2^31 distinct tickets, more than Linux has threads (`PID_MAX_LIMIT` = 2^22), so
//! waiters never alias. In `(next, owner)` notation, `s` the flag:
//!
//! ```text
//! lock:        (t, o|s) -> (t+2, o|s), then (spin, maybe sleep) until o == t
//! announce:    (*, o|0) -> (*, o|1)                 waiter about to sleep: fetch_or
//! unlock:      (*, o|s) -> (*, o+2|s), and if s: kick tickets o+2 and o+4
//! clear flag:  (o+2, o|1) -> (o+2, o|0)             new owner with nobody behind it
//! ```
//!
//! The owner half wraps without carrying into `next`: the holder knows its own
//! ticket, so the unlock that serves past `0xFFFF_FFFE` adds `2 - 2^32` instead of 2.
//!
//! # No access after the release
//!
//! The unlock's add is its last access to the lock: the thread it serves may unlock,
//! destroy and free the lock at once (POSIX allows that, glibc bug 13690's class). A
//! first version kept the flag in `next` and read it after a plain releasing store of
//! `owner`, the bug the kernel's pv ticket lock had until 2015 ("x86/spinlocks/
//! paravirt: Fix memory corruption on unlock", which moved the flag to the head half
//! and made the unlock an `xadd`, as here). The kicks use the static bucket table and
//! the lock's address only as a hash key.
//!
//! # The lost wake-up race
//!
//! The waiter's announcement and the unlock are RMWs on the same word, so one comes
//! first in its modification order: if the unlock does, the waiter's `fetch_or` reads
//! the new owner and it does not sleep; if the waiter's does, the unlock reads the
//! flag, and (AcqRel against the waiter's Release) the waiter's sleeper count and its
//! read of the bucket sequence happen before the unlocker's kick:
//!
//! ```text
//! waiter (ticket t)                     unlocker (owner t-2)
//! [S] sleepers += 1                     [RMW] word += 2, read s      AcqRel
//! [L] q = seq                                 if s: if sleepers > 0:
//! [RMW] word |= SLOW, read owner  Release             seq += 1
//!       if owner != t:                                futex_wake(seq)
//!           futex_wait(seq, q)
//! ```
//!
//! The `seq` bump makes the waiter's futex_wait return at once if it has not slept
//! yet; the wake catches it if it has. No store-buffering pair, so no barrier.
//!
//! # When to use it, when not
//!
//! Where a ticket lock's FIFO order matters and threads may outnumber CPUs. It costs
//! one RMW to lock and one to unlock until a waiter sleeps; a sleeping handoff costs
//! a futex wake (tens of µs in a VM). FIFO still means a handoff waits for the next
//! ticket's thread to be scheduled: with 8 threads looping on 2 CPUs every handoff is
//! a context switch (a wake-up mostly lands on an idle vCPU in a VM), so under heavy
//! oversubscription a barging lock (parking_lot, `std`) has far more throughput.
//! Relocking from the owner deadlocks; unlocking an unlocked lock panics.
//!
//! [`TicketLock`]: super::ticket::TicketLock

use crossbeam_utils::CachePadded;

use crate::budget::SpinBudget;
use crate::catalog::MutexKind;
use crate::park;
use crate::stats::{self, Event, Lock};
use crate::sync::{cpu_relax, AtomicU32, AtomicU64, Ordering::*};

/// One ticket, in either half.
const TICKET_INC: u32 = 2;
/// In the owner half: a waiter sleeps or is about to.
const SLOWPATH: u32 = 1;
/// Where `next` starts.
const NEXT_SHIFT: u32 = 32;
/// One ticket taken.
const NEXT_INC: u64 = (TICKET_INC as u64) << NEXT_SHIFT;

/// A ticket spinlock whose waiters sleep after a bounded spin (seed 003).
pub struct PvTicketLock {
    word: AtomicU64,
}

/// The spin budget shared by every `PvTicketLock`.
static BUDGET: SpinBudget = SpinBudget::new();

/// Whose counters the `stats` feature bumps.
const STATS: Lock = Lock::Mutex(MutexKind::PvTicket);

fn next_of(word: u64) -> u32 {
    (word >> NEXT_SHIFT) as u32
}

/// The ticket being served.
fn owner_of(word: u64) -> u32 {
    word as u32 & !SLOWPATH
}

impl PvTicketLock {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            word: AtomicU64::new(0),
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            word: AtomicU64::new(0),
        }
    }

    /// Sets how long every `PvTicketLock` waiter spins before it sleeps, overriding
    /// `KLOCKS_SPIN_NS` and calibration. See [`crate::budget`].
    pub fn set_spin_ns(ns: u64) {
        BUDGET.set_ns(ns);
    }

    /// Takes a ticket and waits, spinning then sleeping, until it is served.
    #[inline]
    pub fn lock(&self) {
        // Acquire: pairs with the Release of the unlock that served the owner we read
        // (through the RMWs since, all in its release sequence).
        let word = self.word.fetch_add(NEXT_INC, Acquire);
        let ticket = next_of(word);
        if owner_of(word) != ticket {
            self.wait_for(ticket);
        }
    }

    /// Takes the lock if nobody holds it or waits for it.
    #[inline]
    pub fn try_lock(&self) -> bool {
        // Relaxed: the expected value; the cmpxchg decides.
        let word = self.word.load(Relaxed);
        // A SLOWPATH flag left on a free lock is kept: it only costs a bucket check.
        // Acquire: pairs with the Release of the unlock that wrote this owner.
        next_of(word) == owner_of(word)
            && self
                .word
                .compare_exchange(word, word.wrapping_add(NEXT_INC), Acquire, Relaxed)
                .is_ok()
    }

    /// Serves the next ticket, and kicks it if waiters sleep.
    ///
    /// # Panics
    /// If the lock is not locked.
    #[inline]
    pub fn unlock(&self) {
        // Relaxed: only the holder moves the owner half, and we are the holder.
        let word = self.word.load(Relaxed);
        let owner = owner_of(word);
        if next_of(word) == owner {
            unlock_of_unlocked();
        }
        // Serve `owner + 2` without carrying into `next` when the half wraps (the last
        // ticket of the half is all ones but the flag bit).
        let serve = if owner == !SLOWPATH {
            u64::from(TICKET_INC).wrapping_sub(1 << NEXT_SHIFT)
        } else {
            u64::from(TICKET_INC)
        };
        // Release: pairs with the Acquire of the waiter our new owner value serves.
        // Acquire: pairs with the Release of a waiter's announcement (module doc).
        // The last access to the lock: the kicks below hash its address only.
        let before = self.word.fetch_add(serve, AcqRel);
        crate::fault::after_release();
        if before as u32 & SLOWPATH != 0 {
            let served = owner.wrapping_add(TICKET_INC);
            kick(self, served);
            // A hint, not part of the handoff: wake the waiter after next now, so its
            // wake-up latency overlaps the next critical section instead of following it.
            // Its only effect on others is a spurious wake-up, which waiters tolerate
            // (they re-check and sleep again).
            kick(self, served.wrapping_add(TICKET_INC));
        }
    }

    /// Whether some thread holds the lock.
    #[inline]
    pub fn is_locked(&self) -> bool {
        // Relaxed: a snapshot for the caller.
        let word = self.word.load(Relaxed);
        next_of(word) != owner_of(word)
    }

    #[cold]
    fn wait_for(&self, ticket: u32) {
        stats::count(STATS, Event::LockSlowpath);
        loop {
            // Only the next in line spins: farther waiters would only take CPU time
            // from the owner and from it. They sleep at once and are woken one ticket
            // ahead of their turn (see `unlock`).
            let spins = match BUDGET.spins() {
                budget if budget > 0 && self.is_next(ticket) => budget,
                _ => 0,
            };
            for _ in 0..spins {
                // Acquire: pairs with the Release of the unlock that serves us.
                if owner_of(self.word.load(Acquire)) == ticket {
                    return self.clear_slowpath_if_alone(ticket);
                }
                cpu_relax();
            }
            if self.sleep(ticket) {
                return self.clear_slowpath_if_alone(ticket);
            }
        }
    }

    /// Whether `ticket` is served next (or now).
    fn is_next(&self, ticket: u32) -> bool {
        // Relaxed: a hint for whether to spin.
        ticket.wrapping_sub(owner_of(self.word.load(Relaxed))) <= TICKET_INC
    }

    /// Announces this waiter and sleeps until kicked (or spuriously). Returns whether
    /// our ticket came up before we slept.
    fn sleep(&self, ticket: u32) -> bool {
        let bucket = bucket(self, ticket);
        // Relaxed (both): published by the announcement's Release below (module doc).
        bucket.sleepers.fetch_add(1, Relaxed);
        let seq = bucket.seq.load(Relaxed);
        // AcqRel: Release pairs with the unlock's Acquire (module doc); Acquire with the
        // Release of the unlock whose owner we read, if it serves us.
        let word = self.word.fetch_or(u64::from(SLOWPATH), AcqRel);
        let served = owner_of(word) == ticket;
        if !served {
            stats::count(STATS, Event::Sleep);
            park::wait(&bucket.seq, seq);
        }
        // Relaxed: a stale count only costs an unlocker a needless wake syscall.
        bucket.sleepers.fetch_sub(1, Relaxed);
        served
    }

    /// `(ticket+2, ticket|1) -> (ticket+2, ticket|0)`: nobody waits behind the new
    /// owner, so nobody sleeps; the unlocks to come need not look for sleepers.
    fn clear_slowpath_if_alone(&self, ticket: u32) {
        let alone = u64::from(ticket.wrapping_add(TICKET_INC)) << NEXT_SHIFT | u64::from(ticket);
        // Relaxed: a failed or racing clear only leaves the flag set, which costs a
        // bucket check in `unlock`, never a lost wake-up: a waiter that arrives later
        // takes a ticket (so the word no longer matches) and sets the flag again
        // before it sleeps.
        let _ = self
            .word
            .compare_exchange(alone | u64::from(SLOWPATH), alone, Relaxed, Relaxed);
    }
}

/// Wake the waiter holding `ticket` of `lock`, if it sleeps. Uses the lock's address
/// only as a hash key: the lock may be gone (the unlock is over).
#[cold]
fn kick(lock: *const PvTicketLock, ticket: u32) {
    let bucket = bucket(lock, ticket);
    // Relaxed: ordered after the waiter's increment by the AcqRel pair on the lock
    // word (module doc). The `seq` bump makes its futex_wait return at once if it has
    // not slept yet; the wake catches it if it has.
    if bucket.sleepers.load(Relaxed) != 0 {
        bucket.seq.fetch_add(1, Relaxed);
        stats::woke(STATS, park::wake_all(&bucket.seq));
    }
}

/// Where the waiters of one `(lock, ticket)` sleep. Hashing by ticket lets the
/// unlocker kick exactly the next ticket's waiter.
#[derive(Debug)]
struct Bucket {
    /// Bumped by every kick; the futex word sleepers wait on.
    seq: AtomicU32,
    /// Threads announced or asleep in this bucket.
    sleepers: AtomicU32,
}

#[cfg(not(loom))]
const BUCKETS: usize = 256;
#[cfg(loom)]
const BUCKETS: usize = 2;

#[cfg(not(loom))]
static TABLE: [CachePadded<Bucket>; BUCKETS] = [const {
    CachePadded::new(Bucket {
        seq: AtomicU32::new(0),
        sleepers: AtomicU32::new(0),
    })
}; BUCKETS];

#[cfg(loom)]
loom::lazy_static! {
    static ref TABLE: [CachePadded<Bucket>; BUCKETS] = std::array::from_fn(|_| {
        CachePadded::new(Bucket { seq: AtomicU32::new(0), sleepers: AtomicU32::new(0) })
    });
}

fn bucket(lock: *const PvTicketLock, ticket: u32) -> &'static Bucket {
    &TABLE[bucket_index(lock, ticket)]
}

#[cfg(not(loom))]
fn bucket_index(lock: *const PvTicketLock, ticket: u32) -> usize {
    let addr = lock as usize;
    // Fibonacci hashing of (address, ticket): neighbouring locks and consecutive
    // tickets land in different buckets.
    let key = (addr >> 3) ^ ((ticket >> 1) as usize) << 20;
    let hash = key.wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize);
    hash >> (usize::BITS - BUCKETS.trailing_zeros())
}

/// Under loom, by ticket alone. Loom replays a model's executions step by step, so
/// each must be a function of its schedule; the lock's heap address is not (the
/// allocator may place it elsewhere in each execution, and on CI the diverging
/// replays failed loom's own assertions or reported deadlocks that no fixed mapping
/// has). With two buckets, tickets `t` and `t+2` sleep apart and `t` and `t+4`
/// together, so the models cover both the exact kick and a hash neighbour's spurious
/// wake-up.
#[cfg(loom)]
fn bucket_index(_lock: *const PvTicketLock, ticket: u32) -> usize {
    (ticket / TICKET_INC) as usize % BUCKETS
}

#[cold]
#[inline(never)]
fn unlock_of_unlocked() -> ! {
    panic!("klocks: unlock of a PvTicketLock that is not locked");
}

impl std::fmt::Debug for PvTicketLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Relaxed: a snapshot.
        let word = self.word.load(Relaxed);
        f.debug_struct("PvTicketLock")
            .field("next", &next_of(word))
            .field("owner", &owner_of(word))
            .field("slowpath", &(word as u32 & SLOWPATH != 0))
            .finish()
    }
}

// SAFETY: as for `TicketLock`: each ticket is handed out once (2^31 of them, more than
// threads can wait at once) and the owner half moves only in `unlock`, by the holder;
// sleeping changes when a waiter looks, not what it sees.
raw_mutex!(for PvTicketLock);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::testing::{oversubscribed, stress};

    lock_basics_tests!(
        PvTicketLock,
        "klocks: unlock of a PvTicketLock that is not locked",
        bytes = 8
    );

    /// Both halves wrap at 2^32 without the owner's carry reaching `next`.
    #[test]
    fn tickets_wrap_around() {
        let lock = PvTicketLock::new();
        let near_end = u64::from(u32::MAX - 5);
        lock.word.store(near_end << NEXT_SHIFT | near_end, Relaxed);
        for _ in 0..8 {
            lock.lock();
            assert!(lock.is_locked());
            assert!(!lock.try_lock());
            lock.unlock();
            assert!(!lock.is_locked());
        }
        assert_eq!(next_of(lock.word.load(Relaxed)), 10);
        assert_eq!(owner_of(lock.word.load(Relaxed)), 10);
    }

    /// The unlock reads the flag in its own RMW and clears nothing; a lone new owner
    /// clears it.
    #[test]
    fn the_flag_lives_in_the_owner_half_and_a_lone_owner_clears_it() {
        let lock = PvTicketLock::new();
        lock.lock();
        lock.word.fetch_or(u64::from(SLOWPATH), Relaxed);
        lock.unlock();
        assert_eq!(lock.word.load(Relaxed), 2 << NEXT_SHIFT | 2 | 1);
        lock.lock();
        lock.wait_for(2);
        assert_eq!(
            lock.word.load(Relaxed),
            4 << NEXT_SHIFT | 2,
            "cleared when alone"
        );
        lock.unlock();
    }

    /// Where the plain ticket lock crawls: 64x and 256x more threads than CPUs.
    #[test]
    fn stress_oversubscribed() {
        stress::<PvTicketLock>(oversubscribed);
    }
}

#[cfg(all(test, feature = "stats", not(loom)))]
mod stats_tests {
    use super::*;
    use crate::stats::testing::*;

    /// The next ticket's waiter spins, then sleeps once; the unlock that finds
    /// SLOWPATH kicks it exactly once (the hint kick of the ticket after it finds no
    /// sleeper in its bucket and makes no call). In its own process: another test's
    /// sleeper hashed to the hint's bucket would be kicked too.
    #[test]
    fn stats_the_next_ticket_sleeps_once_and_is_kicked_once() {
        if !crate::testing::alone(
            "spin::pv_ticket::stats_tests::stats_the_next_ticket_sleeps_once_and_is_kicked_once",
        ) {
            return;
        }
        let lock: &'static PvTicketLock = Box::leak(Box::new(PvTicketLock::new()));
        let (unlock, waited) = one_waiter(lock, STATS, |waiter| {
            lock.word.load(Relaxed) as u32 & SLOWPATH != 0 && waiter.asleep()
        });
        expect(&waited, STATS)
            .exactly(LockSlowpath, 1)
            .exactly(Sleep, 1)
            .nothing_else();
        expect(&unlock, STATS).exactly(Wake, 1).nothing_else();
    }
}
