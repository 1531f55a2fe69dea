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
//! | [`PvQSpinLock`] | kernel pv queued spinlock: spin, then sleep until kicked | **the default**: short sections, any number of threads | critical sections that block |
//! | [`QSpinLock`] | kernel queued spinlock (seed 000) | short sections, threads ≤ CPUs, fairness matters | threads can outnumber CPUs |
//! | [`QSpinLockCmpxchgHandoff`] | the same before seed 000 | re-running seed 000's "before" | production: prefer `QSpinLock` |
//! | [`TicketLock`] | ticket spinlock | tiny sections on few CPUs | more threads than CPUs; many CPUs |
//! | [`PvTicketLock`] | seed 003: ticket lock whose waiters sleep after a bounded spin | FIFO order with threads that may outnumber CPUs | throughput under heavy oversubscription (a barging lock wins) |
//! | [`Padded<L>`] | seed 002: lock alone on its line | hot locks next to other hot data | millions of locks |
//!
//! Pure spinlocks never sleep: with more runnable threads than CPUs a FIFO spinlock
//! hands the lock to preempted waiters and collapses. The pv ("paravirt") locks spin a
//! bounded time ([`budget`]) and then sleep on a futex until the unlocker kicks them.

#![warn(missing_docs)]

mod barrier;
pub mod budget;
mod padded;
mod park;
mod spin;
mod sync;
#[doc(hidden)]
pub mod testing;

pub use padded::Padded;
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
/// `Mutex<T>` on a cache-line-isolated [`QSpinLock`] (seed 002).
#[cfg(not(loom))]
pub type PaddedQSpinMutex<T> = lock_api::Mutex<Padded<QSpinLock>, T>;
/// `Mutex<T>` on a cache-line-isolated [`TicketLock`] (seed 002).
#[cfg(not(loom))]
pub type PaddedTicketMutex<T> = lock_api::Mutex<Padded<TicketLock>, T>;
