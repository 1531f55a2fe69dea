//! The locks lockbench measures, behind one trait, and the dispatch from a lock's name
//! to code monomorphized for its type (no `dyn` anywhere near a hot loop).

use std::sync::{LazyLock, PoisonError};

use klocks::catalog::{CatalogMutex, MutexKind, MutexVisitor};
use lock_api::RawMutex;

use crate::handicap::{self, Handicapped};
use crate::pthread;

pub use crate::bench_lock::BenchLock;

/// Releases a raw lock when dropped, so a panicking critical section unlocks.
struct Unlock<'a, L: RawMutex>(&'a L);

impl<L: RawMutex> Drop for Unlock<'_, L> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: an `Unlock` is only built by `with_raw`, right after this thread
        // acquired the lock, and is dropped on the same thread exactly once.
        unsafe { self.0.unlock() }
    }
}

#[inline]
fn with_raw<L: RawMutex, R>(lock: &L, critical: impl FnOnce() -> R) -> R {
    lock.lock();
    let _unlock = Unlock(lock);
    critical()
}

/// A klocks lock, benchmarked under the name its catalog entry gives it (a mutex
/// here, a reader-writer lock in [`crate::rwlocks`]).
///
/// The one generic impl for every lock of [`klocks::catalog`]: a lock added there is
/// measured without a line here.
pub struct Klocks<L>(pub(crate) L);

impl<L: CatalogMutex> BenchLock for Klocks<L> {
    const NAME: &'static str = L::KIND.name();

    fn new() -> Self {
        Klocks(L::INIT)
    }

    #[inline]
    fn with<R>(&self, critical: impl FnOnce() -> R) -> R {
        with_raw(&self.0, critical)
    }

    unsafe fn forget_waiters(&self) {
        // SAFETY: the caller's contract is this method's.
        unsafe { self.0.forget_waiters() }
    }
}

/// Implements [`BenchLock`] for the peers' `lock_api` raw mutexes.
macro_rules! raw_bench_lock {
    ($($ty:ty => $name:literal,)*) => {$(
        impl BenchLock for $ty {
            const NAME: &'static str = $name;

            fn new() -> Self {
                <$ty as RawMutex>::INIT
            }

            #[inline]
            fn with<R>(&self, critical: impl FnOnce() -> R) -> R {
                with_raw(self, critical)
            }
        }
    )*};
}

raw_bench_lock! {
    spin::mutex::SpinMutex<()> => "spin",
    parking_lot::RawMutex => "parking_lot",
    parking_lot::RawFairMutex => "parking_lot-fair",
    // The negative control: a test-then-set lock that lets two threads in at once.
    klocks::testing::BustedLock => "busted",
    // The negative control of `torture --signals same`: a wake left to a spinner
    // that a signal handler on its own thread waits behind.
    klocks::testing::BustedDelegation => "busted-delegation",
}

impl BenchLock for std::sync::Mutex<()> {
    const NAME: &'static str = "std";

    fn new() -> Self {
        std::sync::Mutex::new(())
    }

    #[inline]
    fn with<R>(&self, critical: impl FnOnce() -> R) -> R {
        // A poisoned lock still excludes; the panic that poisoned it is reported by
        // the thread that panicked.
        let _guard = self.lock().unwrap_or_else(PoisonError::into_inner);
        critical()
    }
}

/// glibc's default mutex (`PTHREAD_MUTEX_NORMAL`): futex, no spinning.
pub type Pthread = pthread::Pthread<pthread::Mutex, { libc::PTHREAD_MUTEX_DEFAULT }>;
/// glibc's adaptive mutex: spins a bounded while before sleeping on the futex.
pub type PthreadAdaptive = pthread::Pthread<pthread::Mutex, { libc::PTHREAD_MUTEX_ADAPTIVE_NP }>;

/// Implements [`BenchLock`] for glibc's mutex types.
macro_rules! pthread_bench_lock {
    ($($ty:ty => $name:literal,)*) => {$(
        impl BenchLock for $ty {
            const NAME: &'static str = $name;

            fn new() -> Self {
                pthread::Pthread::new()
            }

            #[inline]
            fn with<R>(&self, critical: impl FnOnce() -> R) -> R {
                self.holding(libc::pthread_mutex_lock, "_lock", critical)
            }
        }
    )*};
}

pthread_bench_lock! {
    Pthread => "glibc",
    PthreadAdaptive => "glibc-adaptive",
}

/// Code generic over a lock type, run for the lock a [`LockName`] names.
pub trait LockVisitor {
    /// What the visit returns.
    type Output;
    /// Runs with `L` the named lock.
    fn visit<L: BenchLock>(self) -> Self::Output;
}

/// Code generic over a `lock_api` raw lock (the ones [`klocks::Padded`] can wrap).
pub trait RawLockVisitor {
    /// What the visit returns.
    type Output;
    /// Runs with `L` the lock called `name`.
    fn visit<L: RawMutex + Send + Sync + 'static>(self, name: &'static str) -> Self::Output;
}

/// Runs a [`LockVisitor`] for a klocks lock, as [`Klocks<L>`].
struct Bridge<V>(V);

impl<V: LockVisitor> MutexVisitor for Bridge<V> {
    type Output = V::Output;
    fn visit<L: CatalogMutex>(self) -> V::Output {
        self.0.visit::<Klocks<L>>()
    }
}

/// Runs a [`RawLockVisitor`] for a klocks lock.
struct RawBridge<V>(V);

impl<V: RawLockVisitor> MutexVisitor for RawBridge<V> {
    type Output = V::Output;
    fn visit<L: CatalogMutex>(self) -> V::Output {
        self.0.visit::<L>(L::KIND.name())
    }
}

/// The peers: the name enum's other variants, their descriptions, and both
/// dispatchers. `raw` marks the locks that implement `lock_api::RawMutex`.
macro_rules! lock_table {
    ($($variant:ident => $ty:ty $(, $raw:ident)?: $about:literal;)*) => {
        /// A lock `--locks` can name: klocks' (from its catalog) or a peer's.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum LockName {
            /// A lock of [`klocks::catalog`].
            Klocks(MutexKind),
            $(#[doc = concat!("`", stringify!($ty), "`")] $variant,)*
        }

        impl LockName {
            /// The peers, in table order.
            const PEERS: &'static [LockName] = &[$(LockName::$variant,)*];

            /// Runs `visitor` monomorphized for this lock.
            pub fn visit<V: LockVisitor>(self, visitor: V) -> V::Output {
                match self {
                    LockName::Klocks(MutexKind::Default) if handicap::on() => {
                        visitor.visit::<Handicapped<Klocks<klocks::RawMutex>>>()
                    }
                    LockName::Klocks(kind) => kind.visit(Bridge(visitor)),
                    $(LockName::$variant => visitor.visit::<$ty>(),)*
                }
            }

            /// Runs `visitor` for this lock if it is a `lock_api` raw lock.
            pub fn visit_raw<V: RawLockVisitor>(self, visitor: V) -> Option<V::Output> {
                match self {
                    LockName::Klocks(MutexKind::Default) if handicap::on() => {
                        let name = MutexKind::Default.name();
                        Some(visitor.visit::<Handicapped<klocks::RawMutex>>(name))
                    }
                    LockName::Klocks(kind) => Some(kind.visit(RawBridge(visitor))),
                    $(LockName::$variant => lock_table!(@raw visitor, $ty $(, $raw)?),)*
                }
            }

            /// What the lock is, in one line.
            pub fn about(self) -> &'static str {
                match self {
                    LockName::Klocks(kind) => kind.about(),
                    $(LockName::$variant => $about,)*
                }
            }
        }
    };
    (@raw $visitor:ident, $ty:ty, raw) => {
        Some($visitor.visit::<$ty>(<$ty as BenchLock>::NAME))
    };
    (@raw $visitor:ident, $ty:ty) => { None };
}

lock_table! {
    Spin => spin::mutex::SpinMutex<()>, raw: "spin 0.9 SpinMutex: test-and-set spinlock, not FIFO";
    Std => std::sync::Mutex<()>: "std::sync::Mutex<()>: futex, spins briefly before sleeping";
    ParkingLot => parking_lot::RawMutex, raw: "parking_lot::RawMutex: spins a little, then parks";
    ParkingLotFair => parking_lot::RawFairMutex, raw:
        "parking_lot::FairMutex's raw lock: every unlock hands the lock to the first parked thread";
    Pthread => Pthread: "glibc pthread_mutex_t, default type: futex, no spinning";
    PthreadAdaptive => PthreadAdaptive:
        "glibc PTHREAD_MUTEX_ADAPTIVE_NP: bounded spin, then futex";
    Busted => klocks::testing::BustedLock, raw: "the negative control: lets two threads in at once";
    BustedDelegation => klocks::testing::BustedDelegation, raw:
        "the negative control of torture --signals same: leaves a wake to a spinner that a handler on its thread waits behind";
}

/// klocks' default mutex (`klocks::Mutex`), compared with [`ALTERNATIVES`].
pub const DEFAULT: LockName = LockName::Klocks(MutexKind::Default);

/// The mutexes a user would otherwise pick, which klocks' locks are compared with.
pub const ALTERNATIVES: [LockName; 4] = [
    LockName::Std,
    LockName::ParkingLot,
    LockName::Pthread,
    LockName::PthreadAdaptive,
];

/// Reads a lock's [`BenchLock::NAME`].
struct NameOf;

impl LockVisitor for NameOf {
    type Output = &'static str;
    fn visit<L: BenchLock>(self) -> &'static str {
        L::NAME
    }
}

impl LockName {
    /// Every lock: klocks' in catalog order, then the peers.
    pub fn all() -> &'static [LockName] {
        static ALL: LazyLock<Vec<LockName>> = LazyLock::new(|| {
            let klocks = MutexKind::ALL.iter().map(|&kind| LockName::Klocks(kind));
            klocks.chain(LockName::PEERS.iter().copied()).collect()
        });
        &ALL
    }

    /// The name `--locks` accepts.
    pub fn name(self) -> &'static str {
        self.visit(NameOf)
    }

    /// Whether a waiter sleeps or yields (else it spins until it gets the lock).
    pub fn sleeps(self) -> bool {
        match self {
            LockName::Klocks(kind) => kind.sleeps(),
            LockName::Spin => false,
            _ => true,
        }
    }

    /// The negative control: accepted by `--locks`, never listed or run by default.
    pub fn is_hidden(self) -> bool {
        matches!(self, LockName::Busted | LockName::BustedDelegation)
    }

    /// The locks a scenario runs when `--locks` is not given.
    pub fn defaults() -> Vec<LockName> {
        Self::all()
            .iter()
            .copied()
            .filter(|l| !l.is_hidden())
            .collect()
    }
}

/// The names lockbench gave glibc's locks before they were named after glibc, as
/// the preload (`KLOCKS_LOCK=glibc`), `app` and the summary name them: (old, new).
/// `--locks`, `--rwlocks`, `compare --relative-to` and older `--json` files still
/// read them.
pub const RENAMED: [(&str, &str); 4] = [
    ("pthread", "glibc"),
    ("pthread-adaptive", "glibc-adaptive"),
    ("pthread-rw", "glibc-rw"),
    ("pthread-rw-writer", "glibc-rw-writer"),
];

/// The current name of the lock an older name (any case) stood for; `None` for a
/// name that was not renamed.
pub fn renamed(name: &str) -> Option<&'static str> {
    RENAMED
        .iter()
        .find(|(old, _)| old.eq_ignore_ascii_case(name))
        .map(|&(_, new)| new)
}

/// The possible value of a lock called `name` on the command line: matched in any
/// case (the preload's variables ignore case too), under an older name as well.
pub fn possible_value(name: &'static str, hidden: bool) -> clap::builder::PossibleValue {
    let old = RENAMED.iter().filter(|&&(_, new)| new == name);
    clap::builder::PossibleValue::new(name)
        .hide(hidden)
        .aliases(old.map(|&(old, _)| old))
}

impl clap::ValueEnum for LockName {
    fn value_variants<'a>() -> &'a [Self] {
        Self::all()
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(possible_value(self.name(), self.is_hidden()))
    }
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    /// Every mutex of the catalog is in lockbench's list, under its catalog name, and
    /// `--locks` takes that name (the C API, the preload, the header and the docs'
    /// table: klocks-ffi's `every_catalog_mutex_reaches_every_consumer`; the
    /// reader-writer locks: `rwlocks`' `every_catalog_rwlock_is_an_rwlock_name`).
    #[test]
    fn every_catalog_lock_is_a_lock_name() {
        for &kind in MutexKind::ALL {
            let lock = LockName::Klocks(kind);
            assert!(LockName::all().contains(&lock), "{}", kind.name());
            assert_eq!(lock.name(), kind.name());
            assert_eq!(LockName::from_str(kind.name(), false), Ok(lock));
        }
    }

    #[test]
    fn the_handicapped_lock_keeps_its_name_and_still_excludes() {
        type Default = Handicapped<Klocks<klocks::RawMutex>>;
        assert_eq!(Default::NAME, "default");
        let lock = Default::new();
        assert_eq!(lock.with(|| 7), 7);
        let raw = <Handicapped<klocks::RawMutex> as RawMutex>::INIT;
        raw.lock();
        assert!(!raw.try_lock(), "a held lock refuses a second owner");
        // SAFETY: this thread locked it just above.
        unsafe { raw.unlock() };
        assert!(raw.try_lock());
        // SAFETY: this thread holds it from the try_lock.
        unsafe { raw.unlock() };
    }
}
