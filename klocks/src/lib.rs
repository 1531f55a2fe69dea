//! klocks: the Linux kernel's lock designs as userspace Rust locks.
//!
//! Every lock here is a raw lock implementing [`lock_api::RawMutex`], so the typed
//! aliases give you `Mutex<T>` with guards, `try_lock`, mapped guards and the rest:
//!
//! ```
//! let counter = klocks::QSpinMutex::new(0u64);
//! *counter.lock() += 1;
//! assert_eq!(*counter.lock(), 1);
//! ```
//!
//! | lock | design | use it when | avoid it when |
//! |---|---|---|---|
//! | [`PvQSpinLock`] | kernel pv queued spinlock: spin, then sleep until kicked | klocks' first choice: short sections, survives any number of threads | sections that block; heavy oversubscription (std and parking_lot have more throughput and fairness there) |
//! | [`QSpinLock`] | kernel queued spinlock (seed 000) | short sections, threads ≤ CPUs, fairness matters | threads can outnumber CPUs |
//! | [`QSpinLockCmpxchgHandoff`] | the same before seed 000 | re-running seed 000's "before" | production: prefer `QSpinLock` |
//! | [`TicketLock`] | ticket spinlock | tiny sections on few CPUs | more threads than CPUs; many CPUs |
//! | [`PvTicketLock`] | seed 003: ticket lock whose waiters sleep after a bounded spin | FIFO order with threads that may outnumber CPUs | throughput under heavy oversubscription (a barging lock wins) |
//! | [`SpinFutexMutex`] | seed 004: futex mutex whose one spinner spins while the owner runs | sections of any length, any number of threads | tiny sections with threads ≤ CPUs (a queued spinlock hands over faster) |
//! | [`FutexMutex`] | seed 004's "before": Drepper's waiting futex mutex | re-running seed 004's "before" | production: prefer `SpinFutexMutex` or std |
//! | [`RwSem`] | seed 001: rwsem with writer (and, by policy, reader) optimistic spinning, FIFO sleepers, handoff | read-mostly data, sections of any length, any number of threads | writer-only use (a mutex is simpler and smaller) |
//! | [`Padded<L>`] | seed 002: lock alone on its line | hot locks next to other hot data | millions of locks |
//!
//! Pure spinlocks never sleep: with more runnable threads than CPUs a FIFO spinlock
//! hands the lock to preempted waiters and collapses. The pv ("paravirt") locks spin a
//! bounded time ([`budget`]) and then sleep on a futex until the unlocker kicks them.

#![warn(missing_docs)]

/// Implements `lock_api::RawMutex`, `Default` and, for the loom models, the test
/// client's `TestLock` for a klocks lock, all by delegating to its inherent `new`,
/// `lock`, `try_lock`, `unlock` and `is_locked`. The invoker writes the `// SAFETY:`
/// argument for why those methods exclude.
macro_rules! raw_mutex {
    (for $ty:ty) => {
        raw_mutex!(@impl [] for $ty, GuardSend);
    };
    // For locks that record their owner: a guard must be dropped on its thread.
    (for $ty:ty, guard = $marker:ident) => {
        raw_mutex!(@impl [] for $ty, $marker);
    };
    (<$g:ident: $bound:path> for $ty:ty) => {
        raw_mutex!(@impl [$g: $bound] for $ty, GuardSend);
    };
    (@impl [$($gen:tt)*] for $ty:ty, $marker:ident) => {
        #[cfg(not(loom))]
        unsafe impl<$($gen)*> lock_api::RawMutex for $ty {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self = Self::new();
            type GuardMarker = lock_api::$marker;

            #[inline]
            fn lock(&self) {
                <$ty>::lock(self);
            }

            #[inline]
            fn try_lock(&self) -> bool {
                <$ty>::try_lock(self)
            }

            #[inline]
            unsafe fn unlock(&self) {
                <$ty>::unlock(self);
            }

            #[inline]
            fn is_locked(&self) -> bool {
                <$ty>::is_locked(self)
            }
        }

        impl<$($gen)*> Default for $ty {
            fn default() -> Self {
                Self::new()
            }
        }

        #[cfg(all(loom, test))]
        impl<$($gen)*> crate::testing::TestLock for $ty {
            fn new_unlocked() -> Self {
                Self::new()
            }
            fn acquire(&self) {
                self.lock();
            }
            fn release(&self) {
                self.unlock();
            }
        }
    };
}

// `testing` first: its test macros are used by the lock modules' unit tests.
#[doc(hidden)]
#[macro_use]
pub mod testing;

mod barrier;
pub mod budget;
pub mod condvar;
pub mod config;
mod fault;
mod mutex;
pub mod owner;
mod padded;
mod park;
mod rwlock;
mod spin;
pub mod stamp;
mod streak;
mod sync;

#[cfg(not(loom))]
pub use condvar::Condvar;
pub use mutex::futex_mutex::FutexMutex;
pub use mutex::raw_mutex::RawMutex;
pub use mutex::spin_futex_mutex::SpinFutexMutex;
pub use padded::Padded;
pub use rwlock::rwsem::{reader_spin, ReaderSpin, RwSem};
pub use spin::mcs::MAX_SLOTS;
pub use spin::pv_qspinlock::PvQSpinLock;
pub use spin::pv_ticket::PvTicketLock;
#[cfg(all(feature = "x86-byte-store", target_arch = "x86_64", not(loom)))]
pub use spin::qspinlock::QSpinLockByteStore;
pub use spin::qspinlock::{Flavor, QSpinLock, QSpinLockCmpxchgHandoff, RawQSpinLock};
pub use spin::ticket::TicketLock;

/// Flavours of [`RawQSpinLock`] (how the queue head claims the lock, how the word is
/// written).
pub mod flavor {
    #[cfg(all(feature = "x86-byte-store", target_arch = "x86_64", not(loom)))]
    pub use crate::spin::qspinlock::X86ByteStore;
    pub use crate::spin::qspinlock::{CmpxchgHandoff, SimpleWrite};
}

/// The default mutex: `Mutex<T>` on a [`RawMutex`] (barging futex mutex that spins
/// while the owner runs, with a timed handoff that bounds every wait).
#[cfg(not(loom))]
pub type Mutex<T> = lock_api::Mutex<RawMutex, T>;
/// Guard of a [`Mutex`].
#[cfg(not(loom))]
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;
/// `Mutex<T>` on a [`QSpinLock`].
#[cfg(not(loom))]
pub type QSpinMutex<T> = lock_api::Mutex<QSpinLock, T>;
/// Guard of a [`QSpinMutex`].
#[cfg(not(loom))]
pub type QSpinMutexGuard<'a, T> = lock_api::MutexGuard<'a, QSpinLock, T>;
/// `Mutex<T>` on a [`TicketLock`].
#[cfg(not(loom))]
pub type TicketMutex<T> = lock_api::Mutex<TicketLock, T>;
/// Guard of a [`TicketMutex`].
#[cfg(not(loom))]
pub type TicketMutexGuard<'a, T> = lock_api::MutexGuard<'a, TicketLock, T>;
/// `Mutex<T>` on a [`PvQSpinLock`]: the recommended klocks mutex.
#[cfg(not(loom))]
pub type PvQSpinMutex<T> = lock_api::Mutex<PvQSpinLock, T>;
/// Guard of a [`PvQSpinMutex`].
#[cfg(not(loom))]
pub type PvQSpinMutexGuard<'a, T> = lock_api::MutexGuard<'a, PvQSpinLock, T>;
/// `Mutex<T>` on a [`PvTicketLock`].
#[cfg(not(loom))]
pub type PvTicketMutex<T> = lock_api::Mutex<PvTicketLock, T>;
/// Guard of a [`PvTicketMutex`].
#[cfg(not(loom))]
pub type PvTicketMutexGuard<'a, T> = lock_api::MutexGuard<'a, PvTicketLock, T>;
/// `Mutex<T>` on a [`SpinFutexMutex`]: seed 004's spinning futex.
#[cfg(not(loom))]
pub type SpinningFutex<T> = lock_api::Mutex<SpinFutexMutex, T>;
/// Guard of a [`SpinningFutex`].
#[cfg(not(loom))]
pub type SpinningFutexGuard<'a, T> = lock_api::MutexGuard<'a, SpinFutexMutex, T>;
/// `Mutex<T>` on a [`FutexMutex`]: seed 004's waiting futex.
#[cfg(not(loom))]
pub type WaitingFutex<T> = lock_api::Mutex<FutexMutex, T>;
/// Guard of a [`WaitingFutex`].
#[cfg(not(loom))]
pub type WaitingFutexGuard<'a, T> = lock_api::MutexGuard<'a, FutexMutex, T>;
/// `RwLock<T>` on an [`RwSem`] (seed 001), by default with adaptive reader spinning.
#[cfg(not(loom))]
pub type RwSemLock<T, P = reader_spin::Adaptive> = lock_api::RwLock<RwSem<P>, T>;
/// Read guard of an [`RwSemLock`].
#[cfg(not(loom))]
pub type RwSemReadGuard<'a, T, P = reader_spin::Adaptive> =
    lock_api::RwLockReadGuard<'a, RwSem<P>, T>;
/// Write guard of an [`RwSemLock`].
#[cfg(not(loom))]
pub type RwSemWriteGuard<'a, T, P = reader_spin::Adaptive> =
    lock_api::RwLockWriteGuard<'a, RwSem<P>, T>;
/// `Mutex<T>` on a cache-line-isolated [`QSpinLock`] (seed 002).
#[cfg(not(loom))]
pub type PaddedQSpinMutex<T> = lock_api::Mutex<Padded<QSpinLock>, T>;
/// `Mutex<T>` on a cache-line-isolated [`TicketLock`] (seed 002).
#[cfg(not(loom))]
pub type PaddedTicketMutex<T> = lock_api::Mutex<Padded<TicketLock>, T>;
