//! The waiting futex mutex: seed 004's "before".
//!
//! # The algorithm
//!
//! Ulrich Drepper's mutex from "Futexes Are Tricky" (2004, "mutex3"), the design under
//! glibc's default `pthread_mutex_t`: one word, three values. A waiter never spins: if
//! the lock is taken it marks the word "contended" and sleeps on it with `futex_wait`;
//! the unlocker of a contended lock wakes one sleeper, which competes again (no
//! handoff, so a running thread may take the lock first: barging). A woken thread
//! cannot know whether others still sleep, so it takes the lock as "contended",
//! which costs one needless `futex_wake` at the end of each contention episode.
//!
//! # The word
//!
//! ```text
//! 0  unlocked
//! 1  locked, nobody sleeps
//! 2  locked, threads may sleep on the word (CONTENDED)
//! ```
//!
//! ```text
//! fast path:   0 -> 1                     cmpxchg
//! contend:     * -> 2                     xchg; returned 0: we own it (as 2)
//! sleep:       futex_wait(word, 2)        returns at once if the word is not 2
//! unlock:      1 -> 0                     xchg
//! unlock:      2 -> 0, futex_wake(1)
//! ```
//!
//! No lost wake-up: a sleeper sleeps only while the word reads 2 (the kernel checks
//! that atomically with queueing it), and the unlock that clears a 2 wakes one.
//! Every thread that ever slept takes the lock as 2, so each woken thread passes the
//! duty on.
//!
//! # When to use it, when not
//!
//! It is the baseline the spinning futex mutex
//! ([`SpinFutexMutex`](super::spin_futex_mutex::SpinFutexMutex)) is measured against;
//! prefer that one, or `std::sync::Mutex`, in real code. Every contended handoff costs
//! a sleep and a wake (~33 µs on a VM). The word does not record the owner: unlocking
//! a lock another thread holds is not detected, only unlocking an unlocked one is.

use crate::catalog::MutexKind;
use crate::park;
use crate::stats::{self, Event, Lock};
use crate::sync::{AtomicU32, Ordering::*};

/// Whose counters the `stats` feature bumps.
const STATS: Lock = Lock::Mutex(MutexKind::Futex);

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
const CONTENDED: u32 = 2;

/// A futex mutex whose waiters sleep at once. See the module doc.
pub struct FutexMutex {
    word: AtomicU32,
}

impl FutexMutex {
    /// An unlocked mutex.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            word: AtomicU32::new(UNLOCKED),
        }
    }

    /// An unlocked mutex.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            word: AtomicU32::new(UNLOCKED),
        }
    }

    /// Acquires the mutex, sleeping while another thread holds it.
    #[inline]
    pub fn lock(&self) {
        if !self.try_lock() {
            self.lock_contended();
        }
    }

    /// `0 -> 1`, if the mutex is free.
    #[inline]
    pub fn try_lock(&self) -> bool {
        // Acquire: pairs with the Release in `unlock`.
        self.word
            .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed)
            .is_ok()
    }

    /// Releases the mutex, waking one sleeper if there may be any.
    ///
    /// # Panics
    /// If the mutex is not locked (the word is left unlocked).
    #[inline]
    pub fn unlock(&self) {
        let word: *const AtomicU32 = &self.word;
        // Release: pairs with the Acquire of the next acquisition. The last access to
        // the mutex: the next holder may free it at once; the wake uses its address.
        let before = self.word.swap(UNLOCKED, Release);
        crate::fault::after_release();
        match before {
            LOCKED => {}
            CONTENDED => stats::woke(STATS, park::wake_one_at(word)),
            _ => unlock_of_unlocked(),
        }
    }

    /// Whether some thread holds the mutex.
    #[inline]
    pub fn is_locked(&self) -> bool {
        // Relaxed: a snapshot for the caller; it orders nothing.
        self.word.load(Relaxed) != UNLOCKED
    }

    /// `* -> 2` until the swap returns 0, sleeping in between.
    #[cold]
    fn lock_contended(&self) {
        stats::count(STATS, Event::LockSlowpath);
        // Acquire: pairs with the Release in `unlock` when the swap returns 0.
        while self.word.swap(CONTENDED, Acquire) != UNLOCKED {
            stats::count(STATS, Event::Sleep);
            park::wait(&self.word, CONTENDED);
        }
    }
}

#[cold]
#[inline(never)]
fn unlock_of_unlocked() -> ! {
    panic!("klocks: unlock of a FutexMutex that is not locked");
}

impl std::fmt::Debug for FutexMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let val = self.word.load(Relaxed);
        f.debug_struct("FutexMutex")
            .field("locked", &(val != UNLOCKED))
            .field("contended", &(val == CONTENDED))
            .finish()
    }
}

// SAFETY: the word leaves 0 only by cmpxchg or swap that returned 0 (the winner alone
// sees it), and returns to 0 only in `unlock`, by the holder.
raw_mutex!(for FutexMutex);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::testing::{oversubscribed, stress};

    lock_basics_tests!(
        FutexMutex,
        "klocks: unlock of a FutexMutex that is not locked"
    );

    #[test]
    fn stress_oversubscribed() {
        stress::<FutexMutex>(oversubscribed);
    }
}

#[cfg(all(test, feature = "stats", not(loom)))]
mod stats_tests {
    use super::*;
    use crate::stats::testing::*;

    /// A waiter sleeps once and its owner's unlock wakes it once; the woken thread
    /// took the lock as CONTENDED, so its own unlock makes Drepper's one needless
    /// wake, which finds nobody.
    #[test]
    fn stats_one_sleep_one_wake_then_one_needless_wake() {
        let lock: &'static FutexMutex = Box::leak(Box::new(FutexMutex::new()));
        let (unlock, waited) = one_waiter(lock, STATS, |waiter| {
            lock.word.load(Relaxed) == CONTENDED && waiter.asleep()
        });
        expect(&unlock, STATS).exactly(Wake, 1).nothing_else();
        expect(&waited, STATS)
            .exactly(LockSlowpath, 1)
            .exactly(Sleep, 1)
            .exactly(Wake, 1)
            .exactly(WakeNoSleeper, 1)
            .nothing_else();
    }
}
