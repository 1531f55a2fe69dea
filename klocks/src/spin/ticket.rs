//! The ticket spinlock (`include/asm-generic/ticket_spinlock.h`).
//!
//! # The algorithm
//!
//! A bakery: each arriving thread takes the next ticket with one `fetch_add` and spins
//! until the "now serving" counter shows its number; unlock advances "now serving" by
//! one. Strict FIFO, one atomic RMW to lock and a plain store to unlock, and every
//! waiter spins on the same cache line, so each unlock invalidates all waiters.
//! This is the lock the qspinlock replaced on x86 and the comparison base of seeds
//! 000 and 003.
//!
//! # The word
//!
//! ```text
//!  31            16 15             0
//! +----------------+----------------+
//! |      next      |     owner      |
//! +----------------+----------------+
//! ```
//!
//! `owner` is the ticket being served, `next` the next ticket to hand out; the lock is
//! free when they are equal. In `(next, owner)` notation:
//!
//! ```text
//! lock:     (t, o) -> (t+1, o), then wait until owner == t
//! try_lock: (o, o) -> (o+1, o)                             cmpxchg on `next`
//! unlock:   (*, o) -> (*, o+1)                              store by the owner
//! ```
//!
//! The two halves are separate 16-bit atomics, never written through one 32-bit
//! access, so nothing here mixes access sizes (see `qspinlock.rs` for why that
//! matters in Rust). Tickets wrap at 65536; more than 65535 simultaneous waiters
//! would alias, which no spinlock workload survives anyway.
//!
//! # When to use it, when not
//!
//! Use it for very short critical sections on few CPUs where FIFO fairness matters and
//! threads never outnumber CPUs. It is the cheapest lock uncontended, but all
//! waiters hammer one line, and **it collapses when threads outnumber CPUs**: the lock
//! goes to the next ticket even if that thread is preempted, and nobody else may take
//! it meanwhile. On a 2-CPU machine, 3 threads run thousands of times slower than 2.
//! Relocking from the owning thread deadlocks; unlocking an unlocked lock panics.

use crate::catalog::MutexKind;
use crate::stats::{self, Event, Lock};
use crate::sync::{cpu_relax, AtomicU16, Ordering::*};

/// Whose counters the `stats` feature bumps.
const STATS: Lock = Lock::Mutex(MutexKind::Ticket);

/// A FIFO ticket spinlock. See the module doc for when (not) to use it.
#[repr(C, align(4))]
pub struct TicketLock {
    owner: AtomicU16,
    next: AtomicU16,
}

impl TicketLock {
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

    /// Takes a ticket and spins until it is served.
    #[inline]
    pub fn lock(&self) {
        // Relaxed: taking a ticket orders nothing; the acquisition is the Acquire load
        // below that sees our number.
        let ticket = self.next.fetch_add(1, Relaxed);
        // Acquire (both loads): pairs with the Release store in `unlock` that served
        // our ticket. The loop is the `while` loop rotated (as the compiler emits it),
        // so that the slow path can be counted once without changing the code.
        if self.owner.load(Acquire) != ticket {
            stats::count(STATS, Event::LockSlowpath);
            loop {
                cpu_relax();
                if self.owner.load(Acquire) == ticket {
                    break;
                }
            }
        }
    }

    /// Takes the lock if nobody holds it or waits for it.
    #[inline]
    pub fn try_lock(&self) -> bool {
        // Acquire: pairs with the Release in the `unlock` that wrote this `owner`. If
        // `next` still equals it, every earlier ticket has been served and released,
        // and `owner` cannot move until we release, so the value read is current.
        let owner = self.owner.load(Acquire);
        self.next
            .compare_exchange(owner, owner.wrapping_add(1), Relaxed, Relaxed)
            .is_ok()
    }

    /// Serves the next ticket.
    ///
    /// # Panics
    /// If the lock is not locked. A lock held by another thread cannot be told apart
    /// from one held by this thread: releasing it is a bug the lock cannot see.
    #[inline]
    pub fn unlock(&self) {
        // Relaxed: only the owner writes `owner`, and we are the owner.
        let owner = self.owner.load(Relaxed);
        if self.next.load(Relaxed) == owner {
            unlock_of_unlocked();
        }
        // Release: pairs with the Acquire in `lock`'s wait and in `try_lock`.
        self.owner.store(owner.wrapping_add(1), Release);
        crate::fault::after_release();
    }

    /// Whether some thread holds the lock.
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.owner.load(Relaxed) != self.next.load(Relaxed)
    }
}

#[cold]
#[inline(never)]
fn unlock_of_unlocked() -> ! {
    panic!("klocks: unlock of a TicketLock that is not locked");
}

impl std::fmt::Debug for TicketLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TicketLock")
            .field("next", &self.next.load(Relaxed))
            .field("owner", &self.owner.load(Relaxed))
            .finish()
    }
}

// SAFETY: a ticket is served to exactly one thread at a time: `owner` moves only in
// `unlock`, by the holder, to the next ticket, and each ticket is handed out once.
raw_mutex!(for TicketLock);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::testing;

    lock_basics_tests!(
        TicketLock,
        "klocks: unlock of a TicketLock that is not locked"
    );

    #[test]
    fn tickets_wrap_around() {
        let lock = TicketLock::new();
        for _ in 0..70_000 {
            lock.lock();
            lock.unlock();
        }
        assert!(lock.try_lock());
        lock.unlock();
    }

    /// CPUs threads with volume, then CPUs + 1 briefly: a ticket lock collapses when
    /// oversubscribed, so that run only proves it stays correct, slowly.
    #[test]
    fn stress() {
        testing::stress::<TicketLock>(|cpus| vec![(cpus, 100_000), (cpus + 1, 300)]);
    }
}

#[cfg(all(test, feature = "stats", not(loom)))]
mod stats_tests {
    use super::*;
    use crate::stats::testing::*;

    /// The uncontended pair counts nothing; a thread that must wait for its ticket
    /// enters the slow path exactly once, and the unlock that serves it counts nothing.
    #[test]
    fn stats_one_slow_path_per_waiting_acquisition() {
        let lock: &'static TicketLock = Box::leak(Box::new(TicketLock::new()));
        // The waiter has taken its ticket.
        let (unlock, waited) = one_waiter(lock, STATS, |_| {
            lock.next.load(Relaxed) == lock.owner.load(Relaxed).wrapping_add(2)
        });
        expect(&waited, STATS)
            .exactly(LockSlowpath, 1)
            .nothing_else();
        expect(&unlock, STATS).nothing_else();
    }
}
