//! Interposed `pthread_mutex_*`: the klocks mutex inside a `pthread_mutex_t`, how
//! a call is sorted (glibc's, invalid or klocks'), and the operations on it (lock,
//! trylock, timed lock, unlock, the fork repair); the exported functions that sort,
//! profile and run them are in `entries`.
//!
//! # Layout
//!
//! A klocks-managed `pthread_mutex_t` (40 bytes on x86-64) is read as [`Mutex`]:
//!
//! | bytes | glibc's field | here |
//! |---|---|---|
//! | 0..8 | `__lock`, `__count` | the klocks lock of the process's kind (all zero: unlocked) |
//! | 8..16 | `__owner`, `__nusers` | the holder's tid (`fork::this_thread`), 0 when free |
//! | 16..20 | `__kind` | glibc's: the type, and the bits that send the mutex to glibc |
//! | 20..24 | `__spins`, `__elision` | the fork generation last used in (see `fork`) |
//! | 24..28 | `__list` (first half) | recursive mutexes: holds beyond the first |
//! | 28..40 | `__list` (rest) | unused (glibc's robust list; robust mutexes are glibc's) |
//!
//! `__kind` is never changed except by `init` and `destroy`, so its meaning is
//! glibc's: `PTHREAD_MUTEX_INITIALIZER` is a normal mutex, the `_NP` initialisers
//! give recursive and error-checking ones, the robust/PI/PP/process-shared bits
//! (set only by glibc's `init`) send every call on the object to glibc, and -1 is
//! glibc's "destroyed".
//!
//! # The owner field
//!
//! Written by the holder only: its tid after it acquires, 0 before it releases (the
//! C API's protocol, whose module doc gives the argument that `Relaxed` suffices for
//! the one question asked of it, "is it me?"). It answers error-checking and
//! recursive relocks, and tells a fork child which thread held the lock. The tid, as
//! glibc keeps here, and read as cheaply as a thread pointer (see
//! `fork::this_thread`): a thread pointer is handed to the next thread at once, which
//! could then unlock an error-checking mutex a dead thread left locked.
//!
//! # A normal mutex released by another thread
//!
//! glibc lets any thread unlock a normal mutex, and programs use one as a binary
//! semaphore: taken in one thread, given back in another, often while the taker
//! blocks locking it again. Every kind does the same here. The kinds whose lock words
//! name no owner simply unlock; `default` and `spinfutex`, whose words name their
//! owner and whose `unlock` panics for anyone else, release through
//! `unlock_for_owner`, the holder's own release made on its behalf. The releasing
//! thread clears the owner field before the release, as the holder would. The field
//! then has a second writer, and a holder's "is it me?" may read 0 before the
//! release or its own id after it; so for these kinds a lock call asks the lock word
//! (`held_by_current_thread`) before it calls the lock, and a holder whose mutex is
//! not yet given back waits for another thread's release, as glibc's relock of a
//! normal mutex does. Its unlock of a hold it no longer has is the misuse of two
//! threads releasing one hold.

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::mem::size_of;
use std::sync::atomic::{
    AtomicI32, AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed},
};
use std::time::Duration;

use klocks_core::catalog::{CatalogMutex, MutexKind};
use libc::{pthread_mutex_t, EAGAIN, EBUSY, EDEADLK, EINVAL, EPERM, ETIMEDOUT};

use super::config;
use super::fork::{self, this_thread, Holder, Patience};
use super::time::Deadline;
use crate::mutex::{init_at, with_lock_at};

/// A klocks-managed `pthread_mutex_t`; see the module doc.
#[repr(C)]
struct Mutex {
    body: UnsafeCell<u64>,
    owner: AtomicU64,
    kind: AtomicI32,
    stamp: AtomicU32,
    depth: AtomicU32,
    _rest: [u32; 3],
}
const _: () = assert!(size_of::<Mutex>() == size_of::<pthread_mutex_t>());
const _: () = assert!(std::mem::align_of::<Mutex>() <= std::mem::align_of::<pthread_mutex_t>());

/// glibc's `__kind` bits for robust, priority-inheritance, priority-protect and
/// process-shared mutexes (`PTHREAD_MUTEX_ROBUST_NORMAL_NP`, `_PRIO_INHERIT_NP`,
/// `_PRIO_PROTECT_NP`, `PTHREAD_MUTEX_PSHARED_BIT`).
const GLIBC_ONLY: i32 = 16 | 32 | 64 | 128;
/// The owner of a lock held, at a fork, by a thread the child does not have.
const GONE: u64 = u64::MAX;
/// glibc's `__kind` of a destroyed mutex.
const DESTROYED: i32 = -1;

/// The POSIX type, from the low bits of `__kind` (glibc's adaptive type, 3, is a
/// normal mutex that spins; every klocks kind decides its own spinning).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Type {
    Normal,
    Recursive,
    ErrorCheck,
}

/// Where a call on a mutex goes.
enum Target<'a> {
    Glibc,
    Invalid,
    Klocks(&'a Mutex, MutexKind, Type),
}

/// Sorts a call on `m`.
///
/// # Safety
/// `m` is null or points to a `pthread_mutex_t` that lives for `'a`.
#[inline]
unsafe fn target<'a>(m: *mut pthread_mutex_t) -> Target<'a> {
    if m.is_null() {
        return Target::Invalid;
    }
    let Some(kind) = config::choice().mutex else {
        return Target::Glibc;
    };
    // SAFETY: non-null, and a live `pthread_mutex_t` (caller's contract), which has
    // `Mutex`'s size and alignment; every field is an integer or an atomic.
    let mutex = unsafe { &*m.cast::<Mutex>() };
    // Relaxed: `init` happens-before other calls (POSIX's rule), as in the C API.
    match mutex.kind.load(Relaxed) {
        DESTROYED => Target::Invalid,
        bits if bits & GLIBC_ONLY != 0 => Target::Glibc,
        bits => {
            let ty = match bits & 3 {
                1 => Type::Recursive,
                2 => Type::ErrorCheck,
                _ => Type::Normal,
            };
            Target::Klocks(mutex, kind, ty)
        }
    }
}

/// Whether `m` is a mutex klocks runs (not glibc's, nor invalid).
///
/// # Safety
/// As for [`target`].
pub(super) unsafe fn is_klocks(m: *mut pthread_mutex_t) -> bool {
    // SAFETY: caller's contract.
    matches!(unsafe { target(m) }, Target::Klocks(..))
}

/// A normal mutex (`__kind` 0) of this fork generation, in a process that runs a
/// klocks kind: the case [`lock_entry`] handles without [`target`].
///
/// # Safety
/// As for [`target`].
#[inline(always)]
unsafe fn plain<'a>(m: *mut pthread_mutex_t) -> Option<(&'a Mutex, MutexKind)> {
    if m.is_null() {
        return None;
    }
    let kind = config::mutex_kind()?;
    // SAFETY: as in `target`.
    let mutex = unsafe { &*m.cast::<Mutex>() };
    mutex.is_plain().then_some((mutex, kind))
}

impl Mutex {
    fn body(&self) -> *mut u8 {
        self.body.get().cast()
    }

    /// Whether this is a normal mutex (`__kind` 0) of this fork generation.
    #[inline(always)]
    fn is_plain(&self) -> bool {
        // Relaxed: as in `target`. Acquire: as in `current`.
        self.kind.load(Relaxed) == 0 && self.stamp.load(Acquire) == fork::generation()
    }

    /// Repairs the mutex if it was last used before a fork (see `fork`); whether it
    /// is current (`false` once `patience` ran out).
    #[inline]
    fn current(&self, kind: MutexKind, patience: Patience) -> bool {
        // Acquire: pairs with the Release in `fork::repair`, which publishes the body.
        self.stamp.load(Acquire) == fork::generation() || self.repair(kind, patience)
    }

    #[cold]
    fn repair(&self, kind: MutexKind, patience: Patience) -> bool {
        fork::repair(
            &self.stamp,
            patience,
            // Relaxed: written in an older generation, before the fork this thread
            // comes after (and ordered by the repair's CAS since).
            |stale| fork::holder_by_tid(stale, self.owner.load(Relaxed) as u32),
            // Any thread may re-take a lock for the continuation, except one of a kind
            // that tracks its owner, whose word names its holder by tid: the lock
            // words of the other kinds
            // name nobody, and the owner field keeps the continuation's thread
            // pointer, which was the forking thread's.
            |thread| !kind.tracks_owner() || thread == this_thread(),
            |holder| match holder {
                Holder::Nobody => {
                    // SAFETY: the body is 8 aligned bytes that only we touch now.
                    unsafe { init_at(self.body(), kind) };
                    self.depth.store(0, Relaxed);
                }
                Holder::Continuation(holder) => {
                    // SAFETY: as above; then the lock is free and ours to take, for
                    // `holder`.
                    unsafe { init_at(self.body(), kind) };
                    with_lock_at!(self.body(), kind, lock => lock.lock());
                    self.owner.store(holder, Relaxed);
                }
                // Held by a thread the child does not have: it stays held, by nobody
                // a new thread could be taken for (they may reuse its thread block).
                // Its waiters, if any, queue on klocks' static node table, never on
                // a stack, so the lock can keep them. (Relaxed, here and above: the
                // election gives us the object, and its Release publishes it.)
                Holder::Gone => self.owner.store(GONE, Relaxed),
            },
        )
    }

    /// What a lock call by the holder gets: `None` to go on and lock (a normal mutex
    /// then deadlocks, as POSIX says), else the answer.
    fn by_holder(&self, ty: Type, me: u64, errorcheck: c_int) -> Option<c_int> {
        // Relaxed: "is it me?" (module doc).
        if ty == Type::Normal || self.owner.load(Relaxed) != me {
            return None;
        }
        Some(match ty {
            Type::Recursive => self.deeper(),
            _ => errorcheck,
        })
    }

    /// One more hold of a recursive mutex the caller holds.
    fn deeper(&self) -> c_int {
        // Relaxed: only the holder reads and writes `depth`.
        match self.depth.load(Relaxed).checked_add(1) {
            Some(depth) => {
                self.depth.store(depth, Relaxed);
                0
            }
            None => EAGAIN,
        }
    }

    fn try_acquire(&self, kind: MutexKind) -> bool {
        with_lock_at!(self.body(), kind, lock => lock.try_lock())
    }

    fn acquired(&self, me: u64) -> c_int {
        // Relaxed: see the module doc.
        self.owner.store(me, Relaxed);
        0
    }
}

/// A normal mutex of a kind that tracks its owner (`default`, `spinfutex`) locked
/// again by its holder, whose `lock` would panic. glibc's holder waits until another
/// thread unlocks the mutex (module doc, "A normal mutex released by another
/// thread"), and forever if none does (POSIX's deadlock); so does this one. It cannot
/// queue behind its own hold, so it polls `try_lock`, 1 µs to 1 ms apart: the lock's
/// `try_lock` refuses while the word names the caller and takes a lock released to
/// nobody (never a reserved one), so the waiting thread changes no waiter's role.
fn relock(mutex: &Mutex, kind: MutexKind) {
    let mut nap = Duration::from_micros(1);
    while !mutex.try_acquire(kind) {
        super::nap(nap);
        nap = (nap * 2).min(Duration::from_millis(1));
    }
}

/// Locks the body; a holder of an owner-tracking kind waits in [`relock`] (module
/// doc, "A normal mutex released by another thread").
#[inline(always)]
fn lock_body(mutex: &Mutex, kind: MutexKind) {
    if kind.tracks_owner() {
        if mutex.try_acquire(kind) {
            return;
        }
        if with_lock_at!(mutex.body(), kind, lock => lock.held_by_current_thread()) {
            return relock(mutex, kind);
        }
    }
    with_lock_at!(mutex.body(), kind, lock => lock.lock());
}

fn lock(mutex: &Mutex, kind: MutexKind, ty: Type) -> c_int {
    mutex.current(kind, Patience::Forever);
    let me = this_thread();
    if let Some(answer) = mutex.by_holder(ty, me, EDEADLK) {
        return answer;
    }
    lock_body(mutex, kind);
    mutex.acquired(me)
}

fn trylock(mutex: &Mutex, kind: MutexKind, ty: Type) -> c_int {
    // Stale and held by the forking thread's continuation: busy, at once.
    if !mutex.current(kind, Patience::Try) {
        return EBUSY;
    }
    let me = this_thread();
    if let Some(answer) = mutex.by_holder(ty, me, EBUSY) {
        return answer;
    }
    if !mutex.try_acquire(kind) {
        return EBUSY;
    }
    mutex.acquired(me)
}

fn clocklock(mutex: &Mutex, kind: MutexKind, ty: Type, deadline: Deadline) -> c_int {
    if !mutex.current(kind, Patience::Until(deadline)) {
        return if deadline.is_valid() {
            ETIMEDOUT
        } else {
            EINVAL
        };
    }
    let me = this_thread();
    if let Some(answer) = mutex.by_holder(ty, me, EDEADLK) {
        return answer;
    }
    match deadline.poll(|| mutex.try_acquire(kind)) {
        0 => mutex.acquired(me),
        error => error,
    }
}

fn unlock(mutex: &Mutex, kind: MutexKind, ty: Type) -> c_int {
    // Stale and held by the forking thread's continuation, which is not the caller.
    if !mutex.current(kind, Patience::Try) {
        return EPERM;
    }
    let me = this_thread();
    // Relaxed: "is it me?" (module doc).
    let mine = mutex.owner.load(Relaxed) == me;
    match ty {
        Type::Recursive | Type::ErrorCheck if !mine => return EPERM,
        Type::Recursive if mutex.depth.load(Relaxed) > 0 => {
            // Relaxed: only the holder reads and writes `depth`.
            mutex.depth.store(mutex.depth.load(Relaxed) - 1, Relaxed);
            return 0;
        }
        Type::Normal if !mine => return release_for_owner(mutex, kind),
        Type::Normal if !with_lock_at!(mutex.body(), kind, lock => lock.is_locked()) => {
            return EPERM
        }
        _ => {}
    }
    release(mutex, kind)
}

/// Releases a mutex the checks let through.
#[inline(always)]
fn release(mutex: &Mutex, kind: MutexKind) -> c_int {
    // Relaxed: cleared before the unlock's Release (module doc).
    mutex.owner.store(0, Relaxed);
    // Two threads racing to unlock one hold: the second may pass the checks above and
    // meet the lock's own, whose panic ends the process (see the `preload` doc).
    with_lock_at!(mutex.body(), kind, lock => lock.unlock());
    0
}

/// Releases a normal mutex for the thread that holds it (module doc, "A normal mutex
/// released by another thread"); `EPERM` if it is not locked.
#[cold]
fn release_for_owner(mutex: &Mutex, kind: MutexKind) -> c_int {
    if !with_lock_at!(mutex.body(), kind, lock => lock.is_locked()) {
        return EPERM;
    }
    // Relaxed: cleared before the release, as the holder would (module doc).
    mutex.owner.store(0, Relaxed);
    // SAFETY: the holder gave this one release to the caller (glibc's contract for a
    // normal mutex); two threads racing to release one hold are the misuse whose
    // panic ends the process (see `release`). A lock whose word names no owner simply
    // unlocks: its unlock is anyone's.
    let released = with_lock_at!(mutex.body(), kind, lock => unsafe { lock.unlock_for_owner() });
    if released {
        0
    } else {
        EPERM
    }
}

pub(super) mod entries;
