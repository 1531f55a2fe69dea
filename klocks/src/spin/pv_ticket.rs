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
//! - Unlock serves the next ticket with a plain store, as [`TicketLock`] does. Only if
//!   SLOWPATH is set does it bump the next ticket's bucket sequence and, if anyone sleeps
//!   there, wake the bucket. Waiters hash by ticket, so the kick reaches the next
//!   ticket's waiter (plus, rarely, a hash neighbour that re-checks and sleeps again).
//!   It also kicks the ticket after that, which has just become next in line: its
//!   wake-up (tens of µs in a VM) then overlaps the coming critical section instead
//!   of leaving the lock idle after it. That kick is a hint; the first is the handoff.
//! - The first thread to take the lock with nobody behind it clears SLOWPATH, so the
//!   flag costs nothing once contention is gone (the kernel's
//!   `__ticket_check_and_clear_slowpath`).
//!
//! # The word
//!
//! ```text
//!  31                17  16  15              0
//! +--------------------+----+----------------+
//! |   next (ticket)    |SLOW|     owner      |
//! +--------------------+----+----------------+
//! ```
//!
//! As in the kernel, tickets advance by 2 and bit 0 of `next` is the SLOWPATH flag.
//! `owner` and `next` are separate 16-bit atomics (no mixed-size access). In
//! `(next, owner)` notation, `s` the flag:
//!
//! ```text
//! lock:        (t|s, o) -> (t+2|s, o), spin until owner == t, then maybe sleep
//! announce:    (*|0, o) -> (*|1, o)                  waiter about to sleep
//! unlock:      (*, o)   -> (*, o+2), and if s: kick ticket o+2's bucket
//! clear flag:  (o+2|1, o) -> (o+2|0, o)              new owner with nobody behind it
//! ```
//!
//! # The lost wake-up race
//!
//! Waiter: set SLOWPATH, then check `owner`. Unlocker: store `owner`, then check
//! SLOWPATH. Each must see the other's store (store buffering). The unlock must stay
//! a plain store to cost what [`TicketLock`]'s does, so the pair is an asymmetric
//! barrier ([`barrier`](crate::barrier)): the sleeper runs `membarrier`, the unlocker
//! only a compiler fence.
//!
//! ```text
//! waiter (ticket t)                    unlocker (owner t-2)
//! [S] sleepers += 1                    [S] owner = t
//! [L] s = seq                              light barrier
//! [S] next |= SLOW                     [L] if next & SLOW:
//!     heavy barrier
//! [L] if owner != t:                   [L]    if sleepers > 0:
//!         futex_wait(seq, s)            [S]        seq += 1
//!                                                  futex_wake(seq)
//! ```
//!
//! If the waiter's `owner` load misses `t`, the unlocker's barrier point is after the
//! waiter's heavy barrier, so it sees SLOW and `sleepers > 0`; its `seq` bump makes
//! the waiter's futex_wait return at once if it has not slept yet, and the wake
//! catches it if it has.
//!
//! # When to use it, when not
//!
//! Where a ticket lock's FIFO order matters and threads may outnumber CPUs. It costs
//! what [`TicketLock`] costs until a waiter sleeps; a sleeping handoff costs a futex
//! wake (tens of µs in a VM). FIFO still means a handoff waits for the next ticket's
//! thread to be scheduled: with 8 threads looping on 2 CPUs every handoff is a context
//! switch (lockbench `loop`: 18 µs each on the development VM, where a wake-up mostly
//! lands on an idle vCPU), so under heavy oversubscription a barging lock (parking_lot,
//! `std`) has far more throughput. Relocking from the owner deadlocks; unlocking an
//! unlocked lock panics.
//!
//! [`TicketLock`]: super::ticket::TicketLock

use crossbeam_utils::CachePadded;

use crate::budget::SpinBudget;
use crate::sync::{cpu_relax, AtomicU16, AtomicU32, Ordering::*};
use crate::{barrier, park};

const TICKET_INC: u16 = 2;
const SLOWPATH: u16 = 1;

/// A ticket spinlock whose waiters sleep after a bounded spin (seed 003).
#[repr(C, align(4))]
pub struct PvTicketLock {
    owner: AtomicU16,
    next: AtomicU16,
}

/// The spin budget shared by every `PvTicketLock`.
static BUDGET: SpinBudget = SpinBudget::new();

impl PvTicketLock {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            owner: AtomicU16::new(0),
            next: AtomicU16::new(0),
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            owner: AtomicU16::new(0),
            next: AtomicU16::new(0),
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
        // Relaxed: taking a ticket orders nothing; the acquisition is the Acquire
        // load of `owner` that sees our number.
        let ticket = self.next.fetch_add(TICKET_INC, Relaxed) & !SLOWPATH;
        // Acquire: pairs with the Release store in `unlock` that served our ticket.
        if self.owner.load(Acquire) != ticket {
            self.wait_for(ticket);
        }
    }

    /// Takes the lock if nobody holds it or waits for it.
    #[inline]
    pub fn try_lock(&self) -> bool {
        // Acquire: pairs with the Release in the `unlock` that wrote this `owner`; if
        // `next` still equals it, every earlier ticket was served and released, and
        // `owner` cannot move until we release.
        let owner = self.owner.load(Acquire);
        let next = self.next.load(Relaxed);
        // A SLOWPATH flag left on a free lock is kept: it only costs a bucket check.
        next & !SLOWPATH == owner
            && self
                .next
                .compare_exchange(next, next.wrapping_add(TICKET_INC), Relaxed, Relaxed)
                .is_ok()
    }

    /// Serves the next ticket, and kicks it if waiters sleep.
    ///
    /// # Panics
    /// If the lock is not locked.
    #[inline]
    pub fn unlock(&self) {
        // Relaxed: only the owner writes `owner`, and we are the owner.
        let owner = self.owner.load(Relaxed);
        if self.next.load(Relaxed) & !SLOWPATH == owner {
            unlock_of_unlocked();
        }
        let served = owner.wrapping_add(TICKET_INC);
        // Release: pairs with the Acquire loads of `owner` in `lock` and `wait_for`.
        self.owner.store(served, Release);
        // Pairs with the sleeper's heavy barrier in `sleep` (module doc, lost wake-up).
        barrier::light();
        if self.next.load(Relaxed) & SLOWPATH != 0 {
            self.kick(served);
            // A hint, not part of the handoff: wake the waiter after next now, so its
            // wake-up latency overlaps the next critical section instead of following it.
            // Its only effect on others is a spurious wake-up, which waiters tolerate
            // (they re-check and sleep again).
            self.kick(served.wrapping_add(TICKET_INC));
        }
    }

    /// Whether some thread holds the lock.
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.owner.load(Relaxed) != self.next.load(Relaxed) & !SLOWPATH
    }

    #[cold]
    fn wait_for(&self, ticket: u16) {
        loop {
            // Only the next in line spins: farther waiters would only take CPU time
            // from the owner and from it. They sleep at once and are woken one ticket
            // ahead of their turn (see `unlock`).
            let spins = match BUDGET.spins() {
                budget if budget > 0 && self.is_next(ticket) => budget,
                _ => 0,
            };
            for _ in 0..spins {
                // Acquire: pairs with the Release store in `unlock`.
                if self.owner.load(Acquire) == ticket {
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
    fn is_next(&self, ticket: u16) -> bool {
        ticket.wrapping_sub(self.owner.load(Relaxed)) <= TICKET_INC
    }

    /// Announces this waiter and sleeps until kicked (or spuriously). Returns whether
    /// our ticket came up before we slept.
    fn sleep(&self, ticket: u16) -> bool {
        let bucket = bucket(self, ticket);
        // The store side of the lost wake-up race (module doc): sleepers, seq, SLOW
        // must all be visible to an unlocker that runs after our heavy barrier.
        bucket.sleepers.fetch_add(1, Relaxed);
        let seq = bucket.seq.load(Relaxed);
        self.next.fetch_or(SLOWPATH, Relaxed);
        let pairing = barrier::heavy();
        // Acquire: pairs with the Release store in `unlock`.
        let served = self.owner.load(Acquire) == ticket;
        if !served {
            park::wait_paired(&bucket.seq, seq, pairing);
        }
        // Relaxed: a stale count only costs an unlocker a needless wake syscall.
        bucket.sleepers.fetch_sub(1, Relaxed);
        served
    }

    /// Wake the waiter holding `ticket`, if it sleeps.
    #[cold]
    fn kick(&self, ticket: u16) {
        let bucket = bucket(self, ticket);
        // Relaxed: ordered after our `owner` store by the barrier pair: a waiter whose
        // `owner` check missed that store is visible here as a sleeper. The `seq` bump
        // makes its futex_wait return at once if it has not slept yet; the wake catches
        // it if it has.
        if bucket.sleepers.load(Relaxed) != 0 {
            bucket.seq.fetch_add(1, Relaxed);
            park::wake_all(&bucket.seq);
        }
    }

    /// `(ticket+2|1, ticket) -> (ticket+2|0, ticket)`: nobody waits behind the new
    /// owner, so nobody sleeps; the unlocks to come need not look for sleepers.
    fn clear_slowpath_if_alone(&self, ticket: u16) {
        let alone = ticket.wrapping_add(TICKET_INC);
        // Relaxed: a failed or racing clear only leaves the flag set, which costs a
        // bucket check in `unlock`, never a lost wake-up: a waiter that arrives later
        // sets the flag again before it sleeps.
        let _ = self
            .next
            .compare_exchange(alone | SLOWPATH, alone, Relaxed, Relaxed);
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

fn bucket(lock: &PvTicketLock, ticket: u16) -> &'static Bucket {
    &TABLE[bucket_index(lock, ticket)]
}

#[cfg(not(loom))]
fn bucket_index(lock: &PvTicketLock, ticket: u16) -> usize {
    let addr = lock as *const PvTicketLock as usize;
    // Fibonacci hashing of (address, ticket): neighbouring locks and consecutive
    // tickets land in different buckets.
    let key = (addr >> 2) ^ (usize::from(ticket >> 1) << 20);
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
fn bucket_index(_lock: &PvTicketLock, ticket: u16) -> usize {
    usize::from(ticket / TICKET_INC) % BUCKETS
}

#[cold]
#[inline(never)]
fn unlock_of_unlocked() -> ! {
    panic!("klocks: unlock of a PvTicketLock that is not locked");
}

impl std::fmt::Debug for PvTicketLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let next = self.next.load(Relaxed);
        f.debug_struct("PvTicketLock")
            .field("next", &(next & !SLOWPATH))
            .field("slowpath", &(next & SLOWPATH != 0))
            .field("owner", &self.owner.load(Relaxed))
            .finish()
    }
}

// SAFETY: as for `TicketLock`: each ticket is handed out once and `owner` moves only in
// `unlock`, by the holder; sleeping changes when a waiter looks, not what it sees.
raw_mutex!(for PvTicketLock);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::testing::{oversubscribed, stress};

    lock_basics_tests!(
        PvTicketLock,
        "klocks: unlock of a PvTicketLock that is not locked"
    );

    #[test]
    fn tickets_wrap_around() {
        let lock = PvTicketLock::new();
        for _ in 0..70_000 {
            lock.lock();
            lock.unlock();
        }
        assert!(lock.try_lock());
        lock.unlock();
    }

    /// Where the plain ticket lock crawls: 64x and 256x more threads than CPUs.
    #[test]
    fn stress_oversubscribed() {
        stress::<PvTicketLock>(oversubscribed);
    }
}
