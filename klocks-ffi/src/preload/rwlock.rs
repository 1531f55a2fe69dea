//! Interposed `pthread_rwlock_*`: klocks' default `RawRwLock` or its `RwSem`, real
//! shared/exclusive locks. In `lock`: the klocks rwlock inside a `pthread_rwlock_t`, how a
//! call is sorted (glibc's, invalid or klocks'), and the operations on it (read,
//! write, tries, timed, unlock, the fork repair); the exported functions that sort,
//! profile and run them are in `entries`, the lock type of each policy in `policy`,
//! the routes' fast paths in `routed`.
//!
//! # Layout
//!
//! A klocks-managed `pthread_rwlock_t` (56 bytes on x86-64) is read as [`RwLock`](lock::RwLock):
//!
//! | bytes | glibc's field | here |
//! |---|---|---|
//! | 0..48 | the lock's words | `RawRwLock` (16 bytes) or `RwSem<P>`, as the process chose (all zero: unlocked) |
//! | 48..52 | `__flags` | glibc's preference flag, kept but not used: the rwsem is FIFO with handoff, the default rwlock prefers writers with timed reader turns |
//! | 52..56 | padding | the fork generation last used in, or [`GLIBC_OWNED`](super::fork::GLIBC_OWNED) |
//!
//! A process-shared or writer-preferring rwlock, or one a real-time thread initialises,
//! is glibc's: `init` lets glibc write it (glibc clears all
//! 56 bytes first) and then marks the padding [`GLIBC_OWNED`](super::fork::GLIBC_OWNED).
//!
//! # Unlock finds the mode
//!
//! `pthread_rwlock_unlock` does not say which lock the caller holds. Both locks
//! name a writer exactly for the question "am I the writer?" (`exclusive_owner`); if not, and readers hold the lock, the caller is taken
//! to be one of them (readers are counted, not named, so a thread that holds nothing
//! releases another reader's share, as with glibc); else `EPERM`. The route of the
//! default rwlock (`route`, [`routed::Routed`]) decides from one load of the word where that
//! snapshot would say the same: readers inside and no writer bit, a read hold; the
//! writer bit alone with the caller's id as the writer, its write hold; anything else
//! (a free lock, a writer draining readers, a borrowed write lock) comes here.
//!
//! # Too many readers
//!
//! A read lock past the most readers the lock counts is `EAGAIN`, as glibc's. The
//! default rwlock counts 2²³ − 1 readers (`RawRwLock`'s `MAX_READERS`), and its read
//! entries here are the `_within_max` ones, which refuse that reader where
//! `lock_shared` would panic (aborting the process); the rwsem counts 2⁵⁶, more read
//! locks than a process can take.

mod lock;
mod policy;
mod routed;
pub(super) use policy::with_policy;
pub(super) use routed::{rdlock_as, tryrdlock_as, trywrlock_as, unlock_as, wrlock_as};

mod entries;

pub(super) use entries::{
    rdlock_with_site, tryrdlock_with_site, trywrlock_with_site, unlock_from, wrlock_with_site,
};
