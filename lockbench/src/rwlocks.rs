//! The reader-writer locks lockbench measures (rwsem, rw-fair, rw-mix), behind one trait,
//! and the dispatch from a lock's name to code monomorphized for its type: the
//! reader-writer counterpart of [`crate::locks`].

use std::sync::atomic::{
    AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::{LazyLock, PoisonError};

use klocks::catalog::{CatalogRwLock, RwLockKind};
use lock_api::RawRwLock;

use crate::locks::Klocks;
use crate::pthread;

/// A reader-writer lock as the scenarios use it: build one, run a read-side or a
/// write-side critical section under it.
///
/// Closures instead of split lock/unlock so that locks whose only API is a guard
/// (`std::sync::RwLock`) fit the same generic code as raw locks.
pub trait BenchRwLock: Send + Sync + 'static {
    /// The name `--rwlocks` accepts and the tables print.
    const NAME: &'static str;

    /// An unlocked lock.
    fn new() -> Self;

    /// Runs `critical` holding the lock shared, beside other readers.
    fn read<R>(&self, critical: impl FnOnce() -> R) -> R;

    /// Runs `critical` holding the lock exclusive.
    fn write<R>(&self, critical: impl FnOnce() -> R) -> R;

    /// Whether the lock names the calling thread as its writer (holding, or draining
    /// the readers): for `torture --freeze`, which freezes only threads that hold
    /// nothing. `false` for locks that do not tell.
    fn writer_is_current_thread(&self) -> bool {
        false
    }

    /// A fork child's repair of its copy of the lock (see `BenchLock`).
    ///
    /// # Safety
    /// In a fork child, on the forking thread's continuation, before any other use.
    unsafe fn forget_waiters(&self) {}
}

/// Releases a raw lock's read side when dropped, so a panicking section unlocks.
struct UnlockShared<'a, L: RawRwLock>(&'a L);

impl<L: RawRwLock> Drop for UnlockShared<'_, L> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: built only by `BenchRwLock::read` of a raw lock, right after this
        // thread took the lock shared, and dropped on the same thread exactly once.
        unsafe { self.0.unlock_shared() }
    }
}

/// Releases a raw lock's write side when dropped.
struct UnlockExclusive<'a, L: RawRwLock>(&'a L);

impl<L: RawRwLock> Drop for UnlockExclusive<'_, L> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: built only by `BenchRwLock::write` of a raw lock, right after this
        // thread took the lock exclusive, and dropped on the same thread exactly once.
        unsafe { self.0.unlock_exclusive() }
    }
}

#[inline]
fn read_raw<L: RawRwLock, R>(lock: &L, critical: impl FnOnce() -> R) -> R {
    lock.lock_shared();
    let _unlock = UnlockShared(lock);
    critical()
}

#[inline]
fn write_raw<L: RawRwLock, R>(lock: &L, critical: impl FnOnce() -> R) -> R {
    lock.lock_exclusive();
    let _unlock = UnlockExclusive(lock);
    critical()
}

impl<L: CatalogRwLock> BenchRwLock for Klocks<L> {
    const NAME: &'static str = L::KIND.name();

    fn new() -> Self {
        Klocks(L::INIT)
    }

    #[inline]
    fn read<R>(&self, critical: impl FnOnce() -> R) -> R {
        read_raw(&self.0, critical)
    }

    #[inline]
    fn write<R>(&self, critical: impl FnOnce() -> R) -> R {
        write_raw(&self.0, critical)
    }

    fn writer_is_current_thread(&self) -> bool {
        self.0.writer_is_current_thread()
    }

    unsafe fn forget_waiters(&self) {
        // SAFETY: the caller's contract is this method's.
        unsafe { self.0.forget_waiters() }
    }
}

impl BenchRwLock for parking_lot::RawRwLock {
    const NAME: &'static str = "parking_lot-rw";

    fn new() -> Self {
        <Self as RawRwLock>::INIT
    }

    #[inline]
    fn read<R>(&self, critical: impl FnOnce() -> R) -> R {
        read_raw(self, critical)
    }

    #[inline]
    fn write<R>(&self, critical: impl FnOnce() -> R) -> R {
        write_raw(self, critical)
    }
}

impl BenchRwLock for std::sync::RwLock<()> {
    const NAME: &'static str = "std-rw";

    fn new() -> Self {
        std::sync::RwLock::new(())
    }

    #[inline]
    fn read<R>(&self, critical: impl FnOnce() -> R) -> R {
        // A poisoned lock still excludes; the panic that poisoned it is reported by
        // the thread that panicked.
        let _guard = self.read().unwrap_or_else(PoisonError::into_inner);
        critical()
    }

    #[inline]
    fn write<R>(&self, critical: impl FnOnce() -> R) -> R {
        let _guard = self.write().unwrap_or_else(PoisonError::into_inner);
        critical()
    }
}

/// glibc's `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP` (pthread.h), which the libc
/// crate only declares for uClibc. The plain `PREFER_WRITER_NP` (1) behaves as the
/// default, reader-preferring kind in glibc; only this one makes readers queue behind
/// a waiting writer.
const PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP: libc::c_int = 2;

/// glibc's default kind: `PTHREAD_RWLOCK_PREFER_READER_NP` (0).
const PTHREAD_RWLOCK_DEFAULT_NP: libc::c_int = 0;

/// glibc's default rwlock: readers enter whenever no writer holds the lock, so a
/// steady stream of readers can starve a writer.
pub type PthreadRw = pthread::Pthread<pthread::RwLock, PTHREAD_RWLOCK_DEFAULT_NP>;
/// glibc's writer-preferring rwlock: a waiting writer holds back new readers.
pub type PthreadRwWriter =
    pthread::Pthread<pthread::RwLock, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP>;

/// Implements [`BenchRwLock`] for the glibc rwlock kinds.
macro_rules! pthread_bench_rwlock {
    ($($ty:ty => $name:literal,)*) => {$(
        impl BenchRwLock for $ty {
            const NAME: &'static str = $name;

            fn new() -> Self {
                pthread::Pthread::new()
            }

            #[inline]
            fn read<R>(&self, critical: impl FnOnce() -> R) -> R {
                self.holding(libc::pthread_rwlock_rdlock, "_rdlock", critical)
            }

            #[inline]
            fn write<R>(&self, critical: impl FnOnce() -> R) -> R {
                self.holding(libc::pthread_rwlock_wrlock, "_wrlock", critical)
            }
        }
    )*};
}

pthread_bench_rwlock! {
    PthreadRw => "glibc-rw",
    PthreadRwWriter => "glibc-rw-writer",
}

/// The negative control: a reader-writer lock whose write side forgets to wait.
///
/// The read side is right (count in, back out and wait if a writer is there); the
/// write side only sets `WRITER` and walks in, past readers and past another writer
/// (whose unlock then clears the bit under it, letting readers in too). The rwsem and
/// rw-fair verification must catch it: torn reads, and updates lost between writers.
///
/// Not `klocks::testing::BustedRwLock`, which breaks the other side (its readers take
/// nothing, its writers a test-and-set with a widened race) for klocks' unit tests
/// and loom models: this one fails on every write, so a 100 ms window catches it.
pub struct BustedRwLock {
    /// `WRITER` plus `READER` per reader inside.
    state: AtomicUsize,
}

impl BustedRwLock {
    const WRITER: usize = 1;
    const READER: usize = 2;
}

/// Backs a reader out on drop.
struct BustedReadUnlock<'a>(&'a BustedRwLock);

impl Drop for BustedReadUnlock<'_> {
    fn drop(&mut self) {
        self.0.state.fetch_sub(BustedRwLock::READER, Release);
    }
}

/// Clears the writer bit on drop (whoever else may also have set it).
struct BustedWriteUnlock<'a>(&'a BustedRwLock);

impl Drop for BustedWriteUnlock<'_> {
    fn drop(&mut self) {
        self.0.state.fetch_and(!BustedRwLock::WRITER, Release);
    }
}

impl BenchRwLock for BustedRwLock {
    const NAME: &'static str = "busted-rw";

    fn new() -> Self {
        Self {
            state: AtomicUsize::new(0),
        }
    }

    fn read<R>(&self, critical: impl FnOnce() -> R) -> R {
        loop {
            if self.state.fetch_add(Self::READER, Acquire) & Self::WRITER == 0 {
                break;
            }
            self.state.fetch_sub(Self::READER, Relaxed);
            while self.state.load(Relaxed) & Self::WRITER != 0 {
                std::hint::spin_loop();
            }
        }
        let _unlock = BustedReadUnlock(self);
        critical()
    }

    fn write<R>(&self, critical: impl FnOnce() -> R) -> R {
        // The bug: neither waits for readers to leave nor for the bit to be clear.
        self.state.fetch_or(Self::WRITER, Acquire);
        let _unlock = BustedWriteUnlock(self);
        critical()
    }
}

/// Code generic over a reader-writer lock type, run for the lock an [`RwLockName`]
/// names.
pub trait RwLockVisitor {
    /// What the visit returns.
    type Output;
    /// Runs with `L` the named lock.
    fn visit<L: BenchRwLock>(self) -> Self::Output;
}

/// Runs an [`RwLockVisitor`] for a klocks lock, as [`Klocks<L>`].
struct Bridge<V>(V);

impl<V: RwLockVisitor> klocks::catalog::RwLockVisitor for Bridge<V> {
    type Output = V::Output;
    fn visit<L: CatalogRwLock>(self) -> V::Output {
        self.0.visit::<Klocks<L>>()
    }
}

/// The peers: the name enum's other variants, their descriptions, the dispatcher.
macro_rules! rwlock_table {
    ($($variant:ident => $ty:ty: $about:literal;)*) => {
        /// A reader-writer lock `--rwlocks` can name: klocks' (from its catalog) or a
        /// peer's.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum RwLockName {
            /// A reader-writer lock of [`klocks::catalog`].
            Klocks(RwLockKind),
            $(#[doc = concat!("`", stringify!($ty), "`")] $variant,)*
        }

        impl RwLockName {
            /// The peers, in table order.
            const PEERS: &'static [RwLockName] = &[$(RwLockName::$variant,)*];

            /// Runs `visitor` monomorphized for this lock.
            pub fn visit<V: RwLockVisitor>(self, visitor: V) -> V::Output {
                match self {
                    RwLockName::Klocks(kind) => kind.visit(Bridge(visitor)),
                    $(RwLockName::$variant => visitor.visit::<$ty>(),)*
                }
            }

            /// What the lock is, in one line.
            pub fn about(self) -> &'static str {
                match self {
                    RwLockName::Klocks(kind) => kind.about(),
                    $(RwLockName::$variant => $about,)*
                }
            }
        }
    };
}

rwlock_table! {
    Std => std::sync::RwLock<()>: "std::sync::RwLock<()>: futex, writer-preferring";
    ParkingLot => parking_lot::RawRwLock:
        "parking_lot::RawRwLock: spins a little, then parks; task-fair (a waiting writer holds back new readers)";
    Pthread => PthreadRw: "glibc pthread_rwlock_t, default kind: reader-preferring";
    PthreadWriter => PthreadRwWriter:
        "glibc PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP: a waiting writer holds back new readers";
    Busted => BustedRwLock: "the negative control: its write side does not wait";
}

/// klocks' default reader-writer lock (`klocks::RwLock`), compared with
/// [`RW_ALTERNATIVES`].
pub const RW_DEFAULT: RwLockName = RwLockName::Klocks(RwLockKind::Default);

/// The reader-writer locks a user would otherwise pick, which klocks' are compared
/// with.
pub const RW_ALTERNATIVES: [RwLockName; 4] = [
    RwLockName::Std,
    RwLockName::ParkingLot,
    RwLockName::Pthread,
    RwLockName::PthreadWriter,
];

/// Reads a lock's [`BenchRwLock::NAME`].
struct NameOf;

impl RwLockVisitor for NameOf {
    type Output = &'static str;
    fn visit<L: BenchRwLock>(self) -> &'static str {
        L::NAME
    }
}

impl RwLockName {
    /// Every reader-writer lock: klocks' in catalog order, then the peers.
    pub fn all() -> &'static [RwLockName] {
        static ALL: LazyLock<Vec<RwLockName>> = LazyLock::new(|| {
            let klocks = RwLockKind::ALL.iter().map(|&kind| RwLockName::Klocks(kind));
            klocks.chain(RwLockName::PEERS.iter().copied()).collect()
        });
        &ALL
    }

    /// The name `--rwlocks` accepts.
    pub fn name(self) -> &'static str {
        self.visit(NameOf)
    }

    /// The negative control: accepted by `--rwlocks`, never listed or run by default.
    pub fn is_hidden(self) -> bool {
        self == RwLockName::Busted
    }

    /// The locks a scenario runs when `--rwlocks` is not given.
    pub fn defaults() -> Vec<RwLockName> {
        Self::all()
            .iter()
            .copied()
            .filter(|l| !l.is_hidden())
            .collect()
    }
}

impl clap::ValueEnum for RwLockName {
    fn value_variants<'a>() -> &'a [Self] {
        Self::all()
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(crate::locks::possible_value(self.name(), self.is_hidden()))
    }
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    /// Every reader-writer lock of the catalog is in lockbench's list, under its
    /// catalog name, and `--rwlocks` takes that name (the mutexes: `locks`'
    /// `every_catalog_lock_is_a_lock_name`).
    #[test]
    fn every_catalog_rwlock_is_an_rwlock_name() {
        for &kind in RwLockKind::ALL {
            let lock = RwLockName::Klocks(kind);
            assert!(RwLockName::all().contains(&lock), "{}", kind.name());
            assert_eq!(lock.name(), kind.name());
            assert_eq!(RwLockName::from_str(kind.name(), false), Ok(lock));
        }
    }

    /// Takes both sides of `L` in turn, then two writers take turns with it.
    struct Excludes;

    impl RwLockVisitor for Excludes {
        type Output = ();
        fn visit<L: BenchRwLock>(self) {
            let lock = L::new();
            lock.read(|| ());
            lock.write(|| ());
            lock.read(|| ());
            let counter = std::sync::Mutex::new(0_u64);
            std::thread::scope(|scope| {
                for _ in 0..2 {
                    scope.spawn(|| {
                        for _ in 0..1000 {
                            lock.write(|| *counter.lock().unwrap() += 1);
                        }
                    });
                }
            });
            assert_eq!(*counter.lock().unwrap(), 2000, "{}", L::NAME);
        }
    }

    #[test]
    fn every_listed_lock_takes_both_sides() {
        for name in RwLockName::defaults() {
            name.visit(Excludes);
        }
    }

    #[test]
    fn names_are_unique_and_busted_is_hidden() {
        let names: Vec<&str> = RwLockName::all().iter().map(|l| l.name()).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        assert_eq!(RwLockName::defaults().len(), names.len() - 1);
        assert!(!RwLockName::defaults().contains(&RwLockName::Busted));
    }

    #[test]
    fn the_busted_write_side_does_not_wait() {
        let lock = BustedRwLock::new();
        lock.read(|| lock.write(|| lock.write(|| ())));
    }
}
