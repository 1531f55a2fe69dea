//! The process-shared spinlock: a spinning futex lock whose word says that it is one.
//!
//! # The algorithm
//!
//! Ulrich Drepper's mutex from "Futexes Are Tricky" (2004, "mutex3", the one under
//! glibc's default `pthread_mutex_t`) with a bounded spin in front, on a futex that is
//! *not* private. It is what a `pthread_spinlock_t` initialised `PTHREAD_PROCESS_SHARED`
//! becomes under the interposer's `KLOCKS_SPIN`: the queued spinlocks cannot serve it,
//! since their tail names a queue node by its slot in *this* process's table and their
//! sleeps are private futexes. This lock keeps all its state in the word, and the
//! kernel keys a shared futex by the memory behind the word (page and offset), so any
//! process, through any mapping of that memory, sleeps and wakes on the same queue.
//!
//! A contender spins (test-and-test-and-set with `pause`) for the spin budget
//! ([`budget`](crate::budget)), then marks the word "sleepers" and sleeps on it. The
//! unlock swaps the word free and wakes one sleeper if it was marked; the woken thread
//! competes again (no handoff: a running thread may take the lock first). A woken
//! thread cannot know whether others still sleep, so it takes the lock as "sleepers",
//! which costs one needless wake at the end of each contention episode.
//!
//! # The word
//!
//! ```text
//! 0x80  FREE      shared, unlocked
//! 0x81  HELD      shared, locked, nobody sleeps
//! 0x82  SLEEPERS  shared, locked, threads may sleep on the word
//! ```
//!
//! ```text
//! fast path:   FREE -> HELD                        cmpxchg
//! spin:        while word != FREE: pause; FREE -> HELD cmpxchg      (budget)
//! contend:     * -> SLEEPERS                       xchg; returned FREE: we own it
//! sleep:       futex_wait(word, SLEEPERS)          returns at once if the word differs
//! unlock:      HELD -> FREE                        xchg
//! unlock:      SLEEPERS -> FREE, futex_wake(1)
//! ```
//!
//! No lost wake-up: a sleeper sleeps only while the word reads `SLEEPERS` (the kernel
//! checks that atomically with queueing it), and the unlock that clears a `SLEEPERS`
//! wakes one. Every thread that ever slept takes the lock as `SLEEPERS`, so each
//! woken thread passes the duty on.
//!
//! # The mark: why a shared word is never a queued spinlock's
//!
//! Bit 7 ([`SHARED_BIT`]) is set in every word of this lock and in no word of
//! [`QSpinLock`](super::qspinlock::QSpinLock) or
//! [`PvQSpinLock`](super::pv_qspinlock::PvQSpinLock), so one load tells which lock a
//! 4-byte word is ([`is_shared_word`](SharedFutexSpinLock::is_shared_word)):
//!
//! - Bits 0-7 are the queued spinlocks' `locked` byte. `QSpinLock` stores 0 and 1
//!   there (`fetch_or`/`fetch_add` of 1 into a clear byte, `fetch_sub` of 1 from a
//!   set one); `PvQSpinLock` also 3 (`SLOW_VAL`, set by cmpxchg from 1) and 2
//!   (between the two subtractions of its slow unlock). Every value is below `0x80`,
//!   asserted below. `pending` (bit 8; `PvQSpinLock`'s steal count in bits 9-15) and
//!   the tail (bits 16-31) are above bit 7: whatever they hold, bit 7 stays clear.
//! - The only write that could carry into bit 7 is an unlock of a clear byte, which
//!   both locks check before and after their `fetch_sub`: the second check panics
//!   (in the interposer, a panic ends the process), so no thread goes on using such
//!   a word.
//! - This lock writes only the three values above, whole: bits 8-31 stay 0, bit 7
//!   stays 1, and no value is 0, so the queued spinlocks' fast path (a cmpxchg from
//!   0) fails on it, and this lock's cmpxchg from `FREE` fails on theirs.
//!
//! A word changes lock only by initialisation, which POSIX orders before every other
//! call on the lock, so a reader never sees one lock's word turn into the other's.
//!
//! # When to use it, when not
//!
//! For a spinlock in memory that several processes map: it is a sleeping lock, so it
//! survives more threads than CPUs, but it is neither fair nor local-spinning (every
//! waiter spins on the one word). Within one process prefer
//! [`PvQSpinLock`](super::pv_qspinlock::PvQSpinLock). The word does not record the
//! owner: unlocking a lock another thread holds releases it; unlocking an unlocked
//! one panics. Every process that shares the word must use this lock: glibc's own
//! spinlock reads another encoding (on x86-64, 1 free, 0 held).

use super::pv_qspinlock::SLOW_VAL;
use super::qspinlock::LOCKED_VAL;
use crate::budget::SpinBudget;
use crate::park;
use crate::sync::{cpu_relax, AtomicU32, Ordering::*};

/// The bit that marks a word as this lock's (module doc, "The mark").
pub const SHARED_BIT: u32 = 0x80;

const FREE: u32 = SHARED_BIT;
const HELD: u32 = SHARED_BIT | 1;
const SLEEPERS: u32 = SHARED_BIT | 2;

// Every locked byte the queued spinlocks store (0, 1, 2 and 3) is below the mark.
const _: () = assert!(LOCKED_VAL < SHARED_BIT && SLOW_VAL < SHARED_BIT);
// The three words carry the mark and nothing above the locked byte.
const _: () = assert!(FREE & SHARED_BIT != 0 && HELD & SHARED_BIT != 0);
const _: () = assert!(SLEEPERS & SHARED_BIT != 0 && SLEEPERS < 0x100);

/// The spin budget of every `SharedFutexSpinLock` in this process.
static BUDGET: SpinBudget = SpinBudget::new();

/// A 4-byte spinning futex lock that works across processes and mappings. See the
/// module doc.
#[repr(transparent)]
pub struct SharedFutexSpinLock {
    word: AtomicU32,
}

impl SharedFutexSpinLock {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            word: AtomicU32::new(FREE),
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            word: AtomicU32::new(FREE),
        }
    }

    /// Whether `word`, read from a 4-byte lock, is this lock's rather than a
    /// `QSpinLock`'s or a `PvQSpinLock`'s (module doc, "The mark").
    #[inline]
    pub const fn is_shared_word(word: u32) -> bool {
        word & SHARED_BIT != 0
    }

    /// Whether this lock's word carries the mark: `false` if the memory holds a queued
    /// spinlock (or anything else) instead.
    #[inline]
    pub fn is_shared(&self) -> bool {
        // Relaxed: the mark changes only at initialisation, ordered before this call
        // by the caller (module doc).
        Self::is_shared_word(self.word.load(Relaxed))
    }

    /// Acquires the lock: spins for the budget, then sleeps until an unlock wakes it.
    #[inline]
    pub fn lock(&self) {
        if !self.try_lock() {
            self.lock_contended();
        }
    }

    /// `FREE -> HELD`, if the lock is free.
    #[inline]
    pub fn try_lock(&self) -> bool {
        // Acquire: pairs with the Release swap in `unlock`.
        self.word
            .compare_exchange(FREE, HELD, Acquire, Relaxed)
            .is_ok()
    }

    /// Releases the lock, waking one sleeper if there may be any.
    ///
    /// # Panics
    /// If the lock is not locked (the word is left free).
    #[inline]
    pub fn unlock(&self) {
        let word: *const AtomicU32 = &self.word;
        // Release: pairs with the Acquire of the next acquisition (the cmpxchg in
        // `try_lock` or the swap in `lock_contended`). The last access to the lock:
        // the next holder may unmap it at once; the wake uses its address only.
        let before = self.word.swap(FREE, Release);
        crate::fault::after_release();
        match before {
            HELD => {}
            SLEEPERS => {
                park::wake_one_shared_at(word);
            }
            _ => unlock_of_unlocked(),
        }
    }

    /// Whether some thread holds the lock.
    #[inline]
    pub fn is_locked(&self) -> bool {
        // Relaxed: a snapshot for the caller; it orders nothing.
        self.word.load(Relaxed) != FREE
    }

    /// Spin for the budget, then `* -> SLEEPERS` until the swap returns `FREE`,
    /// sleeping in between.
    #[cold]
    fn lock_contended(&self) {
        for _ in 0..BUDGET.spins() {
            // Relaxed: only decides when to try; the cmpxchg in `try_lock` acquires.
            if self.word.load(Relaxed) == FREE && self.try_lock() {
                return;
            }
            cpu_relax();
        }
        // Acquire: pairs with the Release swap in `unlock` when this swap returns FREE.
        while self.word.swap(SLEEPERS, Acquire) != FREE {
            park::wait_shared(&self.word, SLEEPERS);
        }
    }
}

#[cold]
#[inline(never)]
fn unlock_of_unlocked() -> ! {
    panic!("klocks: unlock of a SharedFutexSpinLock that is not locked");
}

impl std::fmt::Debug for SharedFutexSpinLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let val = self.word.load(Relaxed);
        f.debug_struct("SharedFutexSpinLock")
            .field("locked", &(val != FREE))
            .field("sleepers", &(val == SLEEPERS))
            .finish()
    }
}

// SAFETY: the word leaves FREE only by a cmpxchg or swap that returned FREE (the
// winner alone sees it), and returns to FREE only in `unlock`, by the holder.
raw_mutex!(for SharedFutexSpinLock);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::testing::{oversubscribed, stress};

    lock_basics_tests!(
        SharedFutexSpinLock,
        "klocks: unlock of a SharedFutexSpinLock that is not locked"
    );

    #[test]
    fn stress_oversubscribed() {
        stress::<SharedFutexSpinLock>(oversubscribed);
    }

    #[test]
    fn the_mark_tells_the_locks_apart() {
        let shared = SharedFutexSpinLock::new();
        assert!(shared.is_shared());
        shared.lock();
        assert!(shared.is_shared());
        shared.unlock();
        let queued = crate::PvQSpinLock::new();
        queued.lock();
        // SAFETY: both are one AtomicU32 (PvQSpinLock's only field; this type is
        // `repr(transparent)`), read here only.
        let word = unsafe { &*(&queued as *const crate::PvQSpinLock).cast::<AtomicU32>() };
        assert!(!SharedFutexSpinLock::is_shared_word(word.load(Relaxed)));
        queued.unlock();
        assert!(!SharedFutexSpinLock::is_shared_word(0));
        // The queued spinlocks' fast path fails on every shared word and returns it.
        for value in [FREE, HELD, SLEEPERS] {
            let word = AtomicU32::new(value);
            // SAFETY: as above: one AtomicU32 seen as each lock, for the fast path only.
            let (pv, q) = unsafe {
                let at = (&word as *const AtomicU32).cast::<crate::PvQSpinLock>();
                (&*at, &*at.cast::<crate::QSpinLock>())
            };
            assert_eq!(pv.try_lock_fast(), Err(value));
            assert_eq!(q.try_lock_fast(), Err(value));
            assert!(SharedFutexSpinLock::is_shared_word(value));
            assert_eq!(word.load(Relaxed), value);
        }
    }

    /// Two mappings of one memfd page in this process: a holder through one address
    /// keeps a waiter through the other asleep until its unlock, whose wake must find
    /// the waiter. A private futex keys the two addresses apart: the wake is lost and
    /// the waiter sleeps on, which fails the test after 10 s.
    #[test]
    fn a_waiter_through_another_mapping_is_woken() {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        use std::time::{Duration, Instant};
        // SAFETY: an anonymous memfd, sized to one page and mapped twice shared; the
        // mappings are never unmapped (`'static`), the page holds one lock.
        let (first, second): (&'static SharedFutexSpinLock, &'static SharedFutexSpinLock) = unsafe {
            let fd = libc::memfd_create(c"klocks-shared-spin".as_ptr(), 0);
            assert!(fd >= 0);
            assert_eq!(libc::ftruncate(fd, 4096), 0);
            let map = || {
                let at = libc::mmap(
                    std::ptr::null_mut(),
                    4096,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd,
                    0,
                );
                assert_ne!(at, libc::MAP_FAILED);
                at.cast::<SharedFutexSpinLock>()
            };
            let (first, second) = (map(), map());
            libc::close(fd);
            first.write(SharedFutexSpinLock::new());
            (&*first, &*second)
        };
        assert_ne!(first as *const _, second as *const _);
        first.lock();
        assert!(second.is_locked());
        static GOT_IT: AtomicBool = AtomicBool::new(false);
        std::thread::spawn(move || {
            second.lock();
            GOT_IT.store(true, SeqCst);
            second.unlock();
        });
        while first.word.load(Relaxed) != SLEEPERS {
            std::thread::sleep(Duration::from_millis(1));
        }
        // The waiter marked the word; give it time to be inside its futex wait.
        std::thread::sleep(Duration::from_millis(50));
        assert!(!GOT_IT.load(SeqCst));
        first.unlock();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !GOT_IT.load(SeqCst) {
            assert!(
                Instant::now() < deadline,
                "the unlock's wake did not reach the waiter"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        while first.is_locked() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
