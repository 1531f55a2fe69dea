//! klocks: the Linux kernel's lock designs as userspace Rust locks.
//!
//! Pick [`Mutex`] and [`RwLock`] (with [`Condvar`]) unless you know why not: they
//! spin while the owner runs on a CPU and sleep otherwise, barge for throughput and
//! bound every wait, and they are 8 and 16 bytes with `const fn new()`:
//!
//! ```
//! let counter = klocks::Mutex::new(0u64);
//! *counter.lock() += 1;
//! assert_eq!(*counter.lock(), 1);
//!
//! let table = klocks::RwLock::new(vec![1, 2, 3]);
//! assert_eq!(table.read().len(), 3);
//! table.write().push(4);
//! ```
//!
//! Every lock here is a raw lock implementing [`lock_api::RawMutex`] (or
//! `RawRwLock`), so the typed aliases give you guards, `try_lock`, mapped guards,
//! guards that own an `Arc` of their lock ([`ArcMutexGuard`]) and the rest:
//!
//! ```
//! use std::sync::Arc;
//! let shared = Arc::new(klocks::Mutex::new(vec![1]));
//! let mut guard: klocks::ArcMutexGuard<klocks::RawMutex, Vec<i32>> = shared.lock_arc();
//! guard.push(2);
//! drop(guard);
//! let readings = Arc::new(klocks::RwLock::new(0u32));
//! *readings.write_arc() += 1;
//! assert_eq!(*readings.read_arc() + shared.lock().len() as u32, 3);
//! ```
//!
//! (A guard of `Mutex` and `RwLock` is released on the thread that took it: the
//! lock records its owner to catch misuse, so the guards are not `Send`.)
//!
//! # Coming from parking_lot
//!
//! Replacing `parking_lot::` with `klocks::` compiles: [`Mutex`], [`FairMutex`],
//! [`RwLock`], [`Condvar`], [`ReentrantMutex`], [`Once`] and every guard, `Raw*`
//! type, `const_*` constructor and `Arc` guard of parking_lot 0.12's root have the
//! same names and methods (`tests/parking_lot_port.rs` uses each), and
//! `MutexGuard::unlock_fair` and `bump` pass the lock to a sleeper as parking_lot's
//! do ([`RawMutex::unlock_fair`]). What differs:
//!
//! - **Left out:** the `deadlock` module (parking_lot's optional deadlock detector,
//!   which needs its global parking table; klocks locks have none).
//! - **Misuse panics instead of deadlocking.** Locking a [`Mutex`] again from the
//!   thread that holds it, or an [`RwLock`] for writing (or reading) while holding
//!   it for writing, panics where the `lock_api` method docs say it deadlocks;
//!   unlocking from a thread that does not hold it panics too. The `try_` and timed
//!   `try_*_for`/`_until` methods return `None` there, as parking_lot's. A recursive
//!   read is `read_recursive`, as in parking_lot; a plain `read` by a thread that
//!   reads already may wait behind a writer (and deadlock with it).
//! - **Guards are not `Send`** (parking_lot's are not either, without its
//!   `send_guard` feature, which klocks does not have).
//! - [`Condvar`] matches parking_lot's: no spurious wake-ups, `notify_one` and
//!   `notify_all` say how many they woke, and one condvar with two mutexes at once
//!   panics. It works with any `lock_api` mutex, not only [`Mutex`].
//! - Linux only: the locks sleep on the futex and read the owner's CPU state.
//!
//! The others are the kernel designs of the seeds (the five kernel changes klocks
//! re-implements, `000`–`004`: qspinlock, the rwsem's optimistic spinning,
//! cache-line-isolated locks, the paravirt ticket lock and the spinning futex), each
//! with its measured trade-off. [`catalog`] lists every lock with its name, what it
//! is, when to use it and when not; the table of them all, with the kernel design
//! behind each and its size, is `docs/design.md`'s "All the locks" in the
//! repository.
//!
//! Pure spinlocks never sleep: with more runnable threads than CPUs a FIFO spinlock
//! hands the lock to preempted waiters and collapses. The pv ("paravirt") locks spin a
//! bounded time ([`budget`]) and then sleep on a futex until the unlocker kicks them.
//!
//! With the cargo feature `stats` (off by default), the module `stats` counts every
//! lock's slow-path events per lock type (the kernel's `lock_events`: pending waits,
//! steals, sleeps, wakes, failed spins, handoffs, ...), per thread and summed on
//! demand (`klocks::stats::snapshot()`). Without the feature the module and its API do
//! not exist and every counting call is an empty function: the locks' fast paths
//! compile to the same code.

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
                let class = $crate::lockdep::rust::before(self as *const Self as *const (), $crate::lockdep::Mode::Exclusive);
                <$ty>::lock(self);
                $crate::lockdep::rust::after(self as *const Self as *const (), class, $crate::lockdep::Mode::Exclusive);
            }

            #[inline]
            fn try_lock(&self) -> bool {
                let taken = <$ty>::try_lock(self);
                if taken {
                    $crate::lockdep::rust::after(self as *const Self as *const (), 0, $crate::lockdep::Mode::Exclusive);
                }
                taken
            }

            #[inline]
            unsafe fn unlock(&self) {
                $crate::lockdep::rust::release(self as *const Self as *const ());
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

// `testing` first: its test macros are used by the lock modules' unit tests. Not
// part of the library's API: built for klocks' own tests, and for lockbench (its
// negative controls) with the `testing` feature.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
#[macro_use]
pub mod testing;

mod backoff;
mod barrier;
pub mod budget;
pub mod catalog;
pub mod condvar;
pub mod config;
mod fault;
#[cfg(not(loom))]
pub mod lockdep;
mod mutex;
mod once;
pub mod owner;
mod padded;
mod park;
mod role;
mod rwlock;
mod spin;
mod spin_on_owner;
// Public for klocks-ffi's fork repair of the objects it interposes, not part of the
// library's API: it stays here, beside the loom models of its election, because
// klocks-ffi has no loom build.
#[doc(hidden)]
pub mod stamp;
#[cfg(feature = "stats")]
pub mod stats;
// Without the feature the counting calls stay in the locks as empty functions.
#[cfg(not(feature = "stats"))]
mod stats;
mod streak;
mod sync;
mod turn;
mod wait;

#[cfg(not(loom))]
pub use condvar::{Condvar, WaitTimeoutResult};
pub use mutex::fair_mutex::RawFairMutex;
pub use mutex::futex_mutex::FutexMutex;
pub use mutex::raw_mutex::RawMutex;
pub use mutex::reentrant::RawThreadId;
pub use mutex::spin_futex_mutex::SpinFutexMutex;
pub use once::{Once, OnceState};
pub use padded::Padded;
pub use rwlock::raw_rwlock::read::TooManyReaders;
pub use rwlock::raw_rwlock::RawRwLock;
pub use rwlock::rwsem::reader_spin;
// Also `reader_spin::ReaderSpin`, where the docs show it.
#[doc(hidden)]
pub use rwlock::rwsem::reader_spin::ReaderSpin;
pub use rwlock::rwsem::RwSem;
pub use rwlock::unbiased::RawRwLockUnbiased;
// Every spinlock type, and the queue's slot limit (the list is `spin/mod.rs`).
pub use spin::*;

/// Flavours of [`RawQSpinLock`] (how the queue head claims the lock, how the word is
/// written).
pub mod flavor {
    #[cfg(all(feature = "x86-byte-store", target_arch = "x86_64", not(loom)))]
    pub use crate::spin::qspinlock::X86ByteStore;
    pub use crate::spin::qspinlock::{CmpxchgHandoff, SimpleWrite};
}

/// The default mutex: `Mutex<T>` on a [`RawMutex`] (barging futex mutex that spins
/// while the owner runs, with a timed handoff that bounds every wait).
///
/// Where the inherited `lock_api` docs say that locking a mutex the thread already
/// holds deadlocks, klocks' mutex panics instead (`try_lock` and the timed tries
/// return `None`), and unlocking it from a thread that does not hold it panics.
#[cfg(not(loom))]
pub type Mutex<T> = lock_api::Mutex<RawMutex, T>;
/// Guard of a [`Mutex`].
#[cfg(not(loom))]
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;
/// The default reader-writer lock: `RwLock<T>` on a [`RawRwLock`] (one-cmpxchg fast
/// paths, writers that spin and sleep as a [`RawMutex`]'s waiters, timed turns that
/// bound every reader's wait).
///
/// Where the inherited `lock_api` docs say that a relock deadlocks: a write or read
/// lock taken by the thread that holds the write lock panics instead (the `try_` and
/// timed tries return `None`); a read lock taken again by a reader may wait behind a
/// writer and deadlock with it, as the docs say, unless taken by
/// `read_recursive`.
#[cfg(not(loom))]
pub type RwLock<T> = lock_api::RwLock<RawRwLock, T>;
/// Read guard of an [`RwLock`].
#[cfg(not(loom))]
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLock, T>;
/// Write guard of an [`RwLock`].
#[cfg(not(loom))]
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLock, T>;
/// A [`MutexGuard`] mapped to a part of the data ([`lock_api::MutexGuard::map`]).
#[cfg(not(loom))]
pub type MappedMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawMutex, T>;
/// Upgradable read guard of an [`RwLock`]: readers enter beside it, and it can
/// become a write guard without letting a writer in between.
#[cfg(not(loom))]
pub type RwLockUpgradableReadGuard<'a, T> = lock_api::RwLockUpgradableReadGuard<'a, RawRwLock, T>;
/// An [`RwLockReadGuard`] mapped to a part of the data.
#[cfg(not(loom))]
pub type MappedRwLockReadGuard<'a, T> = lock_api::MappedRwLockReadGuard<'a, RawRwLock, T>;
/// An [`RwLockWriteGuard`] mapped to a part of the data.
#[cfg(not(loom))]
pub type MappedRwLockWriteGuard<'a, T> = lock_api::MappedRwLockWriteGuard<'a, RawRwLock, T>;
/// The `lock_api` crate that klocks' typed locks are built on, as parking_lot
/// re-exports it.
pub use lock_api;
/// Guards that own an `Arc` of their lock (`lock_arc`, `read_arc`, `write_arc`,
/// `upgradable_read_arc`), generic over the raw lock as parking_lot re-exports them:
/// `ArcMutexGuard<RawMutex, T>` is a [`Mutex`]'s.
#[cfg(not(loom))]
pub use lock_api::{
    ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard,
    ArcRwLockWriteGuard,
};

/// A mutex whose every unlock is fair (parking_lot's `FairMutex`): `Mutex<T>` on a
/// [`RawFairMutex`]. When threads sleep on it, an unlock passes it to one of them
/// (in the futex's order: priority, then arrival), and neither the unlocking thread
/// nor any other running thread can take it in between; when nobody sleeps, it
/// unlocks as [`Mutex`] does. Each waiter that sleeps gets its turn, at the price of
/// a wake-up per contended unlock: pick [`Mutex`], whose waits are bounded too
/// (by its timed handoff), unless the waiters must take turns.
///
/// As for [`Mutex`], a relock by the owner panics instead of deadlocking, and guards
/// are released on the thread that took them.
///
/// ```
/// let turns = klocks::FairMutex::new(Vec::new());
/// std::thread::scope(|s| {
///     for id in 0..4 {
///         let turns = &turns;
///         s.spawn(move || turns.lock().push(id));
///     }
/// });
/// assert_eq!(turns.lock().len(), 4);
/// ```
#[cfg(not(loom))]
pub type FairMutex<T> = lock_api::Mutex<RawFairMutex, T>;
/// Guard of a [`FairMutex`]; its drop is a fair unlock.
#[cfg(not(loom))]
pub type FairMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawFairMutex, T>;
/// A [`FairMutexGuard`] mapped to a part of the data ([`lock_api::MutexGuard::map`]).
#[cfg(not(loom))]
pub type MappedFairMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawFairMutex, T>;

/// A [`FairMutex`] in a `const` or `static` initializer, as parking_lot's
/// `const_fair_mutex`.
#[cfg(not(loom))]
pub const fn const_fair_mutex<T>(val: T) -> FairMutex<T> {
    FairMutex::const_new(RawFairMutex::new(), val)
}

/// A [`Mutex`] in a `const` or `static` initializer, as parking_lot's `const_mutex`.
#[cfg(not(loom))]
pub const fn const_mutex<T>(val: T) -> Mutex<T> {
    Mutex::const_new(RawMutex::new(), val)
}

/// An [`RwLock`] in a `const` or `static` initializer, as parking_lot's
/// `const_rwlock`.
#[cfg(not(loom))]
pub const fn const_rwlock<T>(val: T) -> RwLock<T> {
    RwLock::const_new(RawRwLock::new(), val)
}

/// A mutex that the thread holding it may lock again (parking_lot's
/// `ReentrantMutex`): `lock_api`'s reentrant mutex on a [`RawMutex`], giving shared
/// access only (`&T`), since the owner may hold several guards at once.
#[cfg(not(loom))]
pub type ReentrantMutex<T> = lock_api::ReentrantMutex<RawMutex, RawThreadId, T>;
/// Guard of a [`ReentrantMutex`].
#[cfg(not(loom))]
pub type ReentrantMutexGuard<'a, T> = lock_api::ReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;
/// A [`ReentrantMutexGuard`] mapped to a part of the data.
#[cfg(not(loom))]
pub type MappedReentrantMutexGuard<'a, T> =
    lock_api::MappedReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

/// A [`ReentrantMutex`] in a `const` or `static` initializer, as parking_lot's
/// `const_reentrant_mutex`.
#[cfg(not(loom))]
pub const fn const_reentrant_mutex<T>(val: T) -> ReentrantMutex<T> {
    ReentrantMutex::const_new(RawMutex::new(), RawThreadId, val)
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
/// `Mutex<T>` on a [`PvQSpinLock`].
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
