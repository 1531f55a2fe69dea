//! Every klocks lock by name: the one list from which the C API's kinds, the
//! preload's `KLOCKS_LOCK` and `KLOCKS_RWLOCK` values and lockbench's `--locks` and
//! `--rwlocks` are derived.
//!
//! A family is an enum ([`MutexKind`], [`RwLockKind`]) whose variants carry the
//! lock's name and a one-line description, and whose `visit` runs code generic over
//! the lock's type, monomorphized for the named lock (a `match`, no `dyn`). Each
//! listed type also names its own entry ([`CatalogMutex::KIND`]), so generic code
//! can print the name of the lock it was instantiated with.

/// Declares a family: the enum, its list, names, descriptions and visitor dispatch.
macro_rules! family {
    (
        $(#[$doc:meta])* $kind:ident, $entry:ident: $raw:path, $visitor:ident;
        $($(#[$attr:meta])* $variant:ident => $ty:ty, $name:literal, $about:literal;)*
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $kind {
            $($(#[$attr])* #[doc = $about] $variant,)*
        }

        impl $kind {
            /// Every lock of the family, in the catalog's order.
            pub const ALL: &'static [$kind] = &[$($(#[$attr])* $kind::$variant,)*];

            /// The lock's name, as `KLOCKS_LOCK`, `KLOCKS_RWLOCK` and lockbench take it.
            pub const fn name(self) -> &'static str {
                match self {
                    $($(#[$attr])* $kind::$variant => $name,)*
                }
            }

            /// The lock's Rust type, as the catalog spells it (`crate::QSpinLock`).
            pub const fn type_path(self) -> &'static str {
                match self {
                    $($(#[$attr])* $kind::$variant => stringify!($ty),)*
                }
            }

            /// What the lock is, in one line.
            pub const fn about(self) -> &'static str {
                match self {
                    $($(#[$attr])* $kind::$variant => $about,)*
                }
            }

            /// The lock called `name`, if there is one.
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|kind| kind.name() == name)
            }

            /// Runs `visitor` monomorphized for this lock's type.
            #[cfg(not(loom))]
            pub fn visit<V: $visitor>(self, visitor: V) -> V::Output {
                match self {
                    $($(#[$attr])* $kind::$variant => visitor.visit::<$ty>(),)*
                }
            }
        }

        /// A lock type of the catalog.
        #[cfg(not(loom))]
        pub trait $entry: $raw + Send + Sync + 'static {
            /// The type's entry.
            const KIND: $kind;
        }

        $(
            $(#[$attr])*
            #[cfg(not(loom))]
            impl $entry for $ty {
                const KIND: $kind = $kind::$variant;
            }
        )*
    };
}

/// Code generic over a klocks mutex type, run for the lock a [`MutexKind`] names.
#[cfg(not(loom))]
pub trait MutexVisitor {
    /// What the visit returns.
    type Output;
    /// Runs with `L` the named lock.
    fn visit<L: CatalogMutex>(self) -> Self::Output;
}

/// Code generic over a klocks reader-writer lock type, run for the lock a
/// [`RwLockKind`] names.
#[cfg(not(loom))]
pub trait RwLockVisitor {
    /// What the visit returns.
    type Output;
    /// Runs with `L` the named lock.
    fn visit<L: CatalogRwLock>(self) -> Self::Output;
}

family! {
    /// A klocks mutex.
    MutexKind, CatalogMutex: lock_api::RawMutex, MutexVisitor;
    Default => crate::RawMutex, "default",
        "klocks::Mutex, the one to pick: a barging futex mutex whose waiters spin while the owner runs and sleep otherwise; a waiter that waited 1 ms claims a handoff (bounded wait)";
    QSpinLockCmpxchg => crate::QSpinLockCmpxchgHandoff, "qspinlock-cmpxchg",
        "queued spinlock before seed 000: the queue head always takes the lock with cmpxchg (the seed's \"before\")";
    QSpinLock => crate::QSpinLock, "qspinlock",
        "queued spinlock, seed 000's \"after\": the queue head takes the lock with a simple write";
    #[cfg(all(feature = "x86-byte-store", target_arch = "x86_64"))]
    QSpinLockByteStore => crate::QSpinLockByteStore, "qspinlock-bytestore",
        "qspinlock with the kernel's x86-64 byte and halfword stores";
    PvQSpinLock => crate::PvQSpinLock, "pvqspinlock",
        "paravirt queued spinlock: waiters spin a calibrated budget, then sleep on a futex until kicked; running newcomers steal while the queue head sleeps or, for one budget, while a new head waits (at most 1024 in a row)";
    Ticket => crate::TicketLock, "ticket",
        "ticket spinlock";
    PvTicket => crate::PvTicketLock, "pvticket",
        "paravirt ticket lock, seed 003's \"patched\": a ticket lock whose waiters sleep after a bounded spin; the unlocker kicks the next ticket";
    Futex => crate::FutexMutex, "futex",
        "waiting futex mutex, seed 004's \"before\": a waiter sleeps on the futex at once (Drepper's mutex)";
    SpinFutex => crate::SpinFutexMutex, "spinfutex",
        "spinning futex mutex, seed 004's \"after\": one waiter spins while the owner runs, the others sleep";
}

family! {
    /// A klocks reader-writer lock.
    RwLockKind, CatalogRwLock: lock_api::RawRwLock, RwLockVisitor;
    Default => crate::RawRwLock, "default-rw",
        "klocks::RwLock, the one to pick: one-cmpxchg read and write paths, writers as klocks::Mutex, sleeping writers hold readers back, timed reader turns";
    RwSemAlways => crate::RwSem<crate::reader_spin::Always>, "rwsem-always",
        "rwsem, seed 001's \"before\": readers spin on a writer owner unconditionally";
    RwSemAdaptive => crate::RwSem<crate::reader_spin::Adaptive>, "rwsem-adaptive",
        "rwsem, seed 001's \"after\": reader spinning with the adaptive bits (a reader that spun in vain marks the writer nonspinnable, so later readers sleep at once)";
    RwSemNever => crate::RwSem<crate::reader_spin::Never>, "rwsem-never",
        "rwsem as in Linux 5.11+: writers spin, readers get one steal attempt, then sleep";
}

impl MutexKind {
    /// Whether a waiter can sleep. A pure spinlock's waiters spin until they get the
    /// lock, so with more runnable threads than CPUs it hands the lock to waiters
    /// that are not running (and a FIFO one collapses).
    pub const fn sleeps(self) -> bool {
        match self {
            MutexKind::QSpinLockCmpxchg | MutexKind::QSpinLock | MutexKind::Ticket => false,
            #[cfg(all(feature = "x86-byte-store", target_arch = "x86_64"))]
            MutexKind::QSpinLockByteStore => false,
            _ => true,
        }
    }

    /// Whether the lock is a seed experiment's variant of another, kept for
    /// re-running the experiment: the C API and the preload offer the others.
    pub const fn is_experiment_variant(self) -> bool {
        match self {
            MutexKind::QSpinLockCmpxchg => true,
            #[cfg(all(feature = "x86-byte-store", target_arch = "x86_64"))]
            MutexKind::QSpinLockByteStore => true,
            _ => false,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Checks that `L` excludes and names itself.
    struct NamesItself(MutexKind);

    impl MutexVisitor for NamesItself {
        type Output = ();
        fn visit<L: CatalogMutex>(self) {
            assert_eq!(L::KIND, self.0);
            let lock = <L as lock_api::RawMutex>::INIT;
            lock_api::RawMutex::lock(&lock);
            assert!(!lock_api::RawMutex::try_lock(&lock), "{}", self.0.name());
            // SAFETY: locked just above, on this thread.
            unsafe { lock_api::RawMutex::unlock(&lock) };
        }
    }

    struct RwNamesItself(RwLockKind);

    impl RwLockVisitor for RwNamesItself {
        type Output = ();
        fn visit<L: CatalogRwLock>(self) {
            assert_eq!(L::KIND, self.0);
            let lock = <L as lock_api::RawRwLock>::INIT;
            lock_api::RawRwLock::lock_shared(&lock);
            assert!(!lock_api::RawRwLock::try_lock_exclusive(&lock));
            // SAFETY: read-locked just above, on this thread.
            unsafe { lock_api::RawRwLock::unlock_shared(&lock) };
        }
    }

    #[test]
    fn every_entry_visits_its_own_type() {
        for &kind in MutexKind::ALL {
            kind.visit(NamesItself(kind));
        }
        for &kind in RwLockKind::ALL {
            kind.visit(RwNamesItself(kind));
        }
    }

    #[test]
    fn names_are_unique_across_families_and_found_again() {
        let mut names: Vec<&str> = MutexKind::ALL.iter().map(|k| k.name()).collect();
        names.extend(RwLockKind::ALL.iter().map(|k| k.name()));
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a name is used twice");
        for &kind in MutexKind::ALL {
            assert_eq!(MutexKind::from_name(kind.name()), Some(kind));
            assert!(!kind.about().is_empty());
        }
        for &kind in RwLockKind::ALL {
            assert_eq!(RwLockKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(MutexKind::from_name("glibc"), None);
    }
}
