//! Every klocks lock by name: the one list of locks. The C API's mutex kinds and
//! their `klocks_kind` numbers, the preload's `KLOCKS_LOCK` and `KLOCKS_RWLOCK`
//! values and `help` text, lockbench's `--locks` and `--rwlocks`, and the lock table
//! of `docs/design.md` (checked by a test) all come from it.
//!
//! A family is an enum ([`MutexKind`], [`RwLockKind`]) whose variants carry the
//! lock's name, a one-line description and when to use it and when not; and whose
//! `visit` runs code generic over the lock's type, monomorphized for the named lock
//! (a `match`, no `dyn`). Each listed type also names its own entry
//! ([`CatalogMutex::KIND`]), so generic code can print the name of the lock it was
//! instantiated with.
//!
//! The mutexes are written once, in [`for_each_mutex!`](crate::for_each_mutex), and
//! the reader-writer locks in [`for_each_rwlock!`](crate::for_each_rwlock), which hand
//! their list to any macro: this module's enums and trait impls expand from them, and
//! so do crates that need one item per lock (klocks-ffi's C kinds and the preload's
//! rwlocks). An entry:
//!
//! ```text
//! Variant => $crate::LockType {
//!     name: "name",               // KLOCKS_LOCK, lockbench --locks; unique
//!     about: "what it is",        // one line
//!     use_when: "...",            // KLOCKS_LOCK=help, docs/design.md's table
//!     avoid_when: "...",          // docs/design.md's table
//!     known_as: "klocks::Mutex",  // the type users know it by (the crate's picks
//!                                 // and FairMutex): lockbench's verdicts name it so
//!     lends_roles: true,          // a signal handler gets the lock while its own
//!                                 // thread waits for it (docs/misuse.md)
//!     c_kind: 8,                  // mutex: its klocks_kind number; none: not in the C API
//!     tracks_owner: false,        // mutex: its word names its holder (CatalogMutex's methods)
//!     sleeps: false,              // mutex: a waiter can sleep (else it spins)
//! };
//! ```

/// Passes every mutex of the catalog, in catalog order, to `$callback!`, after the
/// tokens given in braces: `for_each_mutex!(my_macro! { prefix })` expands to
/// `my_macro! { prefix Variant => Type { name: ..., ... }; ... }` (the module doc
/// describes an entry). An entry with `#[cfg]` attributes is in some builds only, and
/// has no `c_kind` (the C API is the same in every build). This is the one list of
/// the mutexes: adding one here adds it to the C API, the preload and lockbench.
#[doc(hidden)]
#[macro_export]
macro_rules! for_each_mutex {
    ($callback:ident! { $($prefix:tt)* }) => {
        $callback! { $($prefix)*
            Default => $crate::RawMutex {
                name: "default",
                about: "klocks::Mutex, the one to pick: a barging futex mutex whose waiters spin while the owner runs and sleep otherwise; a waiter that waited 1 ms claims a handoff (bounded wait)",
                use_when: "any section, any threads",
                avoid_when: "strict FIFO; even progress of many threads on few CPUs",
                known_as: "klocks::Mutex",
                lends_roles: true,
                c_kind: 7,
                tracks_owner: true,
                sleeps: true,
            };
            Fair => $crate::RawFairMutex {
                name: "fair",
                about: "klocks::FairMutex: klocks::Mutex whose every unlock is fair: with threads asleep on it the lock passes to one of them, which no running thread can take first (parking_lot's FairMutex)",
                use_when: "waiters must take turns, not win by luck",
                avoid_when: "throughput with more threads than CPUs (each contended unlock waits for a woken thread)",
                known_as: "klocks::FairMutex",
                lends_roles: true,
                tracks_owner: true,
                sleeps: true,
            };
            QSpinLockCmpxchg => $crate::QSpinLockCmpxchgHandoff {
                name: "qspinlock-cmpxchg",
                about: "queued spinlock before seed 000: the queue head always takes the lock with cmpxchg (the seed's \"before\")",
                use_when: "re-running seed 000's \"before\"",
                avoid_when: "production",
                lends_roles: false,
                tracks_owner: false,
                sleeps: false,
            };
            QSpinLock => $crate::QSpinLock {
                name: "qspinlock",
                about: "queued spinlock, seed 000's \"after\": the queue head takes the lock with a simple write",
                use_when: "short sections, FIFO, no more threads than CPUs (never sleeps)",
                avoid_when: "threads can outnumber CPUs",
                lends_roles: false,
                c_kind: 2,
                tracks_owner: false,
                sleeps: false,
            };
            #[cfg(all(feature = "x86-byte-store", target_arch = "x86_64"))]
            QSpinLockByteStore => $crate::QSpinLockByteStore {
                name: "qspinlock-bytestore",
                about: "qspinlock with the kernel's x86-64 byte and halfword stores",
                use_when: "the kernel's exact x86-64 costs",
                avoid_when: "staying inside Rust's memory model",
                lends_roles: false,
                tracks_owner: false,
                sleeps: false,
            };
            PvQSpinLock => $crate::PvQSpinLock {
                name: "pvqspinlock",
                about: "paravirt queued spinlock: waiters spin a calibrated budget, then sleep on a futex until kicked; running newcomers steal while the queue head sleeps or, for one budget, while a new head waits (at most 1024 in a row)",
                use_when: "short sections, any number of threads",
                avoid_when: "blocking sections; back-to-back re-takes, threads > CPUs",
                lends_roles: true,
                c_kind: 1,
                tracks_owner: false,
                sleeps: true,
            };
            Ticket => $crate::TicketLock {
                name: "ticket",
                about: "ticket spinlock",
                use_when: "tiny sections on very few CPUs (never sleeps)",
                avoid_when: "threads > CPUs; many CPUs",
                lends_roles: false,
                c_kind: 3,
                tracks_owner: false,
                sleeps: false,
            };
            PvTicket => $crate::PvTicketLock {
                name: "pvticket",
                about: "paravirt ticket lock, seed 003's \"patched\": a ticket lock whose waiters sleep after a bounded spin; the unlocker kicks the next ticket",
                use_when: "strict FIFO with threads that may outnumber CPUs",
                avoid_when: "throughput under oversubscription",
                lends_roles: false,
                c_kind: 4,
                tracks_owner: false,
                sleeps: true,
            };
            Futex => $crate::FutexMutex {
                name: "futex",
                about: "waiting futex mutex, seed 004's \"before\": a waiter sleeps on the futex at once (Drepper's mutex)",
                use_when: "re-running seed 004's \"before\"",
                avoid_when: "production",
                lends_roles: true,
                c_kind: 5,
                tracks_owner: false,
                sleeps: true,
            };
            SpinFutex => $crate::SpinFutexMutex {
                name: "spinfutex",
                about: "spinning futex mutex, seed 004's \"after\": one waiter spins while the owner runs, the others sleep",
                use_when: "re-running seed 004's \"after\"",
                avoid_when: "production",
                lends_roles: true,
                c_kind: 6,
                tracks_owner: true,
                sleeps: true,
            };
        }
    };
}

/// Declares a family: the enum, its list, names, descriptions and visitor dispatch,
/// and each type's impl of the family's trait (whose extra items, in braces, the
/// entries' extra fields fill through [`catalog_item!`]).
macro_rules! family {
    (
        $(#[$doc:meta])* $kind:ident, $entry:ident: $raw:path, $visitor:ident {
            $($trait_item:tt)*
        }
        $(
            $(#[$attr:meta])* $variant:ident => $ty:ty {
                name: $name:literal,
                about: $about:literal,
                use_when: $use_when:literal,
                avoid_when: $avoid_when:literal,
                $(known_as: $known_as:literal,)?
                lends_roles: $lends_roles:literal,
                // `tt`, not `literal`: a fragment captured as a literal reaches
                // `catalog_item!` opaque, and its `true` arm would never match.
                $($field:ident: $value:tt,)*
            };
        )*
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

            /// The lock's Rust type, as the catalog spells it (`$crate::QSpinLock`).
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

            /// What to pick the lock for, in a few words (`KLOCKS_LOCK=help`, and
            /// the "use it when" of `docs/design.md`'s table).
            pub const fn use_when(self) -> &'static str {
                match self {
                    $($(#[$attr])* $kind::$variant => $use_when,)*
                }
            }

            /// When not to pick it, in a few words (the "do not use it when" of
            /// `docs/design.md`'s table).
            pub const fn avoid_when(self) -> &'static str {
                match self {
                    $($(#[$attr])* $kind::$variant => $avoid_when,)*
                }
            }

            /// The type users know the lock by (`klocks::Mutex`), for the crate's two
            /// picks and `klocks::FairMutex`, whose lockbench names (`default`,
            /// `fair`) say less; `None` for the others, known by their name.
            pub const fn known_as(self) -> Option<&'static str> {
                match self {
                    $($(#[$attr])* $kind::$variant => optional!($($known_as)?),)*
                }
            }

            /// Whether a signal handler that takes the lock while its own thread
            /// waits for it gets the lock once the holder releases it: every waiting
            /// role of the interrupted thread is lent to the handler
            /// (`docs/misuse.md`). A lock whose waiter holds a place in a FIFO line
            /// that cannot be lent deadlocks there instead.
            pub const fn lends_roles(self) -> bool {
                match self {
                    $($(#[$attr])* $kind::$variant => $lends_roles,)*
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

            $($trait_item)*
        }

        $(
            $(#[$attr])*
            #[cfg(not(loom))]
            impl $entry for $ty {
                const KIND: $kind = $kind::$variant;

                $(catalog_item!($field: $value);)*
            }
        )*
    };
}

/// What an entry's extra field adds to its type's impl of the family's trait: a lock
/// whose word names its holder (`tracks_owner: true`) answers [`CatalogMutex`]'s
/// owner questions with its own methods; the other fields add nothing there.
#[cfg(not(loom))]
macro_rules! catalog_item {
    (tracks_owner: true) => {
        fn held_by_current_thread(&self) -> bool {
            Self::held_by_current_thread(self)
        }

        unsafe fn forget_waiters(&self) {
            // SAFETY: the caller's contract is this method's.
            unsafe { Self::forget_waiters(self) }
        }

        unsafe fn unlock_for_owner(&self) -> bool {
            // SAFETY: the caller's contract is this method's.
            unsafe { Self::unlock_for_owner(self) }
        }

        #[inline(always)]
        fn try_lock_quick(&self, me: u32) -> bool {
            Self::try_lock_quick(self, me)
        }

        #[inline(always)]
        unsafe fn try_unlock_quick(&self, me: u32) -> bool {
            // SAFETY: the caller's contract is this method's.
            unsafe { Self::try_unlock_quick(self, me) }
        }
    };
    (names_writer: true) => {
        fn writer_is_current_thread(&self) -> bool {
            self.exclusive_owner() == Some($crate::owner::current_tid())
        }

        unsafe fn forget_waiters(&self) {
            // SAFETY: the caller's contract is this method's.
            unsafe { $crate::RawRwLock::forget_waiters(self) }
        }
    };
    ($field:ident: $value:literal) => {};
}

/// The mutex-only fields of the entries: [`MutexKind`]'s C kind, owner tracking and
/// sleeping.
macro_rules! mutex_fields {
    ($(
        $(#[$attr:meta])* $variant:ident => $ty:ty {
            name: $name:literal,
            about: $about:literal,
            use_when: $use_when:literal,
            avoid_when: $avoid_when:literal,
            $(known_as: $known_as:literal,)?
            lends_roles: $lends_roles:literal,
            $(c_kind: $c_kind:literal,)?
            tracks_owner: $tracks_owner:literal,
            sleeps: $sleeps:literal,
        };
    )*) => {
        impl MutexKind {
            /// The mutexes of the C API, in catalog order (sorted by number:
            /// [`MutexKind::C_KINDS`]).
            const C_KINDS_UNSORTED: &'static [MutexKind] =
                &[$($(c_kind_entry!($c_kind, MutexKind::$variant),)?)*];

            /// The lock's `klocks_kind` number in the C API (`include/klocks.h`);
            /// `None` for a lock the C API does not offer (a seed experiment's
            /// variant of another, kept for re-running the experiment).
            pub const fn c_kind(self) -> Option<u32> {
                match self {
                    $($(#[$attr])* MutexKind::$variant => optional!($($c_kind)?),)*
                }
            }

            /// The mutex whose `klocks_kind` number is `raw`.
            #[inline]
            pub const fn from_c_kind(raw: u32) -> Option<MutexKind> {
                match raw {
                    $($($c_kind => Some(MutexKind::$variant),)?)*
                    _ => None,
                }
            }

            /// Whether the lock's word names its holder, so that it panics on an
            /// unlock by another thread or a relock by the holder (and answers
            /// [`CatalogMutex::held_by_current_thread`]).
            pub const fn tracks_owner(self) -> bool {
                match self {
                    $($(#[$attr])* MutexKind::$variant => $tracks_owner,)*
                }
            }

            /// Whether a waiter can sleep. A pure spinlock's waiters spin until they
            /// get the lock, so with more runnable threads than CPUs it hands the
            /// lock to waiters that are not running (and a FIFO one collapses).
            pub const fn sleeps(self) -> bool {
                match self {
                    $($(#[$attr])* MutexKind::$variant => $sleeps,)*
                }
            }
        }
    };
}

/// `Some(value)` for an entry's optional field given as `field: value`, `None`
/// without it.
macro_rules! optional {
    () => {
        None
    };
    ($value:literal) => {
        Some($value)
    };
}

/// An entry of [`MutexKind::C_KINDS_UNSORTED`]: the kind, for an entry that has a
/// C kind (`$c_kind` only selects the entries).
macro_rules! c_kind_entry {
    ($c_kind:literal, $kind:expr) => {
        $kind
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

for_each_mutex!(family! {
    /// A klocks mutex.
    MutexKind, CatalogMutex: lock_api::RawMutex, MutexVisitor {
        /// Whether the lock's word names the calling thread as its holder: for a
        /// lock that tracks its owner ([`MutexKind::tracks_owner`]), which must not
        /// `lock` while it holds (it panics); `false` for the others, whose words
        /// name nobody.
        fn held_by_current_thread(&self) -> bool {
            false
        }

        /// A fork child's repair of the lock's copy (`RawMutex::forget_waiters`) for
        /// a lock that tracks its owner; nothing for the others (the queued
        /// spinlocks repair themselves, the rest keep no waiter in their words).
        ///
        /// # Safety
        /// As `RawMutex::forget_waiters`: in a fork child, on the forking thread's
        /// continuation, before any other thread uses the lock.
        unsafe fn forget_waiters(&self) {}

        /// Releases the lock for the thread that holds it (glibc lets any thread
        /// unlock a normal mutex): a lock that tracks its owner releases its holder's
        /// hold, the others simply unlock. Whether the lock was held to release.
        ///
        /// # Safety
        /// The lock is held, and its holder gave this one release to the caller; no
        /// other thread releases the same hold.
        unsafe fn unlock_for_owner(&self) -> bool {
            // SAFETY: held, and this release is the caller's (contract above).
            unsafe { self.unlock() };
            true
        }

        /// Takes the lock if one atomic step on a free lock takes it, for the
        /// thread whose [`owner::current_tid`](crate::owner::current_tid) is `me`
        /// (read once by the caller): the interposer's fast path, which must stay
        /// small enough to need no stack frame. `false` leaves the decision to
        /// `lock` or `try_lock` (a lock that is held, has waiters, or whose word
        /// holds anything else).
        #[inline(always)]
        fn try_lock_quick(&self, me: u32) -> bool {
            let _ = me;
            self.try_lock()
        }

        /// Releases the lock in one atomic step if its word holds nothing but the
        /// hold of `me`; `false`, the lock untouched, leaves the release to `unlock`.
        /// The interposer's fast path, as [`try_lock_quick`](Self::try_lock_quick).
        ///
        /// # Safety
        /// The thread whose id is `me`, the caller, holds the lock.
        #[inline(always)]
        unsafe fn try_unlock_quick(&self, me: u32) -> bool {
            let _ = me;
            // SAFETY: held by the caller (contract above).
            unsafe { self.unlock() };
            true
        }
    }
});

for_each_mutex!(mutex_fields! {});

impl MutexKind {
    /// The mutexes of the C API, by `klocks_kind` number (1, 2, ...).
    pub const C_KINDS: [MutexKind; MutexKind::C_KINDS_UNSORTED.len()] = {
        let mut kinds = [MutexKind::Default; MutexKind::C_KINDS_UNSORTED.len()];
        let mut i = 0;
        while i < kinds.len() {
            let kind = MutexKind::C_KINDS_UNSORTED[i];
            let Some(number) = kind.c_kind() else {
                panic!("C_KINDS_UNSORTED holds the kinds with a number");
            };
            assert!(
                number >= 1 && number as usize <= kinds.len(),
                "the C kinds are numbered 1, 2, ... without a gap"
            );
            kinds[number as usize - 1] = kind;
            i += 1;
        }
        i = 0;
        while i < kinds.len() {
            assert!(
                matches!(kinds[i].c_kind(), Some(n) if n as usize == i + 1),
                "two C kinds share a number"
            );
            i += 1;
        }
        kinds
    };

    /// Whether the lock is a seed experiment's variant of another, kept for
    /// re-running the experiment: the C API and the preload offer the others.
    pub const fn is_experiment_variant(self) -> bool {
        self.c_kind().is_none()
    }
}

/// Passes every reader-writer lock of the catalog, in catalog order, to `$callback!`,
/// as [`for_each_mutex!`](crate::for_each_mutex) passes the mutexes (the module doc
/// describes an entry; a reader-writer lock's has no mutex fields). This is the one
/// list of the reader-writer locks: adding one here adds it to the preload's
/// `KLOCKS_RWLOCK` and to lockbench.
#[doc(hidden)]
#[macro_export]
macro_rules! for_each_rwlock {
    ($callback:ident! { $($prefix:tt)* }) => {
        $callback! { $($prefix)*
            Default => $crate::RawRwLock {
                name: "default-rw",
                about: "klocks::RwLock, the one to pick: one-cmpxchg read and write paths, writers as klocks::Mutex, sleeping writers hold readers back, timed reader turns",
                use_when: "data that is read and written",
                avoid_when: "many more writers than CPUs that must each progress (writers barge; use `RwSem`); recursive reads; a write-heavy lock hammered with no work between its operations (its spinning then hands the lock between CPUs at nearly every write)",
                known_as: "klocks::RwLock",
                lends_roles: true,
                names_writer: true,
            };
            DefaultUnbiased => $crate::RawRwLockUnbiased {
                name: "default-rw-unbiased",
                about: "the default rwlock without reader bias, the before of the bias: every reader writes the lock's word",
                use_when: "measuring what the reader bias brings",
                avoid_when: "production (read-mostly data bounces the word's cache line between CPUs)",
                lends_roles: true,
                names_writer: true,
            };
            RwSemAlways => $crate::RwSem<$crate::reader_spin::Always> {
                name: "rwsem-always",
                about: "rwsem, seed 001's \"before\": readers spin on a writer owner unconditionally",
                use_when: "re-running seed 001's \"before\"",
                avoid_when: "production",
                lends_roles: false,
            };
            RwSemAdaptive => $crate::RwSem<$crate::reader_spin::Adaptive> {
                name: "rwsem-adaptive",
                about: "rwsem, seed 001's \"after\": reader spinning with the adaptive bits (a reader that spun in vain marks the writer nonspinnable, so later readers sleep at once)",
                use_when: "FIFO among readers and writers",
                avoid_when: "only writers; tight memory (48 B); recursive reads",
                lends_roles: false,
            };
            RwSemNever => $crate::RwSem<$crate::reader_spin::Never> {
                name: "rwsem-never",
                about: "rwsem as in Linux 5.11+: writers spin, readers get one steal attempt, then sleep",
                use_when: "FIFO, with readers that sleep at once (Linux 5.11+)",
                avoid_when: "only writers; tight memory (48 B); recursive reads",
                lends_roles: false,
            };
        }
    };
}

for_each_rwlock!(family! {
    /// A klocks reader-writer lock.
    RwLockKind, CatalogRwLock: lock_api::RawRwLock, RwLockVisitor {
        /// Whether the lock names the calling thread as its writer: it holds the
        /// write lock, or has taken the writer's place and waits for the readers
        /// inside to leave, which holds every other thread out as a hold does
        /// (`names_writer: true`); `false` for the locks whose words name nobody.
        fn writer_is_current_thread(&self) -> bool {
            false
        }

        /// A fork child's repair of the lock's copy (`RawRwLock::forget_waiters`);
        /// nothing for the locks that need none or have none.
        ///
        /// # Safety
        /// As `RawRwLock::forget_waiters`: in a fork child, on the forking thread's
        /// continuation, before any other thread uses the lock.
        unsafe fn forget_waiters(&self) {}
    }
});

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

    /// Checks, through the trait as generic code calls it, that `L`'s owner methods
    /// and one-step fast paths are the lock's own where its word names its holder.
    struct AnswersAsItsWord(MutexKind);

    impl MutexVisitor for AnswersAsItsWord {
        type Output = ();
        fn visit<L: CatalogMutex>(self) {
            let name = self.0.name();
            let me = crate::owner::current_tid();
            let lock = <L as lock_api::RawMutex>::INIT;
            assert!(!lock.held_by_current_thread(), "{name}");
            assert!(lock.try_lock_quick(me), "{name}: free, yet not taken");
            assert_eq!(
                lock.held_by_current_thread(),
                self.0.tracks_owner(),
                "{name}"
            );
            assert!(!lock.try_lock_quick(me), "{name}: taken twice");
            // SAFETY: taken just above, by this thread.
            assert!(unsafe { lock.try_unlock_quick(me) }, "{name}");
            assert!(!lock_api::RawMutex::is_locked(&lock), "{name}");
            lock_api::RawMutex::lock(&lock);
            // SAFETY: locked just above; this thread gives its release to the call.
            assert!(unsafe { lock.unlock_for_owner() }, "{name}");
            assert!(!lock.held_by_current_thread(), "{name}");
            if self.0.tracks_owner() {
                // SAFETY: not held: the word names nobody, which the owner's release
                // reports without touching it.
                assert!(
                    !unsafe { lock.unlock_for_owner() },
                    "{name}: released twice"
                );
            }
        }
    }

    #[test]
    fn generic_code_gets_each_locks_own_owner_methods() {
        for &kind in MutexKind::ALL {
            kind.visit(AnswersAsItsWord(kind));
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
