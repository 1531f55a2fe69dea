//! `klocks_mutex_t`: the klocks mutexes of the C API (the catalog's mutexes with a `c_kind`) behind one C type.
//!
//! The kind chosen at `klocks_mutex_init` is kept in the object's tag (see the crate
//! doc); every call decodes it and dispatches to the Rust lock in the body.
//!
//! # Owner tracking (DEFAULT and SPINFUTEX)
//!
//! `RawMutex` and `SpinFutexMutex` panic when a thread that does not hold them
//! unlocks them, and when their holder locks them again; the C API answers `EPERM`
//! and `EDEADLK` instead, so it must know the holder before calling in. The Rust lock keeps the holder in its
//! word but offers no accessor, so this layer keeps its own copy in the header's
//! `owner` field: stored after `lock`/`try_lock` succeed, cleared before `unlock`.
//! The other kinds record no owner (as in the kernel): there, unlocking another
//! thread's lock cannot be detected, and relocking deadlocks, as with pthread's
//! default mutex.
//!
//! # Fork
//!
//! A fork child inherits each mutex as the parent's threads left it: a word may name
//! sleepers, a spinner, a queue or a reservation for threads the child does not
//! have. So every mutex keeps the fork generation it was last used in (the
//! interposer's generations, `preload/fork.rs`) in the body's third word,
//! [`STAMP_OFFSET`] (0 in a zero-filled mutex: generation 0; `init` writes the
//! current one), and the holder's tid in the header for every kind (for the kinds
//! that do not track their owner, the field serves only this). The first call on a
//! mutex from an older generation repairs it while the child's other threads wait
//! (`klocks::stamp::make_current`'s election), by who held it at the fork:
//!
//! | at the fork | in the child |
//! |---|---|
//! | free (with sleepers, a spinner, a queue, pending or a reservation, or none) | a new, free lock of the kind: every waiter trace is gone |
//! | held by the forking thread | a new lock of the kind, held by the child's continuation of that thread (its tid there), which unlocks it as usual |
//! | held by another thread | held for good, as glibc's: `lock` waits forever, `trylock` is `EBUSY`, `unlock` `EPERM` for the kinds that track their owner |
//!
//! The holder is stored after the lock is taken and cleared before it is released:
//! a fork in between sees a lock held by a vanished thread as free, which is the
//! more useful answer, never the reverse. A try (`trylock`, `unlock`, `destroy`)
//! that finds another thread's repair in progress waits a few spins for it, then
//! answers as for a busy lock (`EBUSY`, or `EPERM` from `unlock`).
//!
//! Why `Relaxed` is enough for the `owner` field: the only question ever asked of it
//! is "is it me?", by the thread `me` itself. Only `me` writes `me` there, after
//! acquiring, and `me` clears it before releasing. If `me` holds the lock, its own
//! last write to the field is `me` and nobody else writes it meanwhile (others write
//! only after acquiring, which the lock excludes), so `me` reads `me`. If `me` does
//! not hold it, its own last write (if any) was the clear, and read-write coherence
//! forbids its later load from seeing a value older than that write: it reads 0 or
//! another thread's id, never `me`. No other memory is published through the field.

use std::ffi::c_int;
use std::mem::{align_of, size_of};
use std::ptr;
use std::sync::atomic::{
    AtomicU32,
    Ordering::{Acquire, Relaxed},
};

use klocks_core::catalog::MutexKind;
use klocks_core::owner::current_tid;
use klocks_core::RawMutex;
use libc::{timespec, CLOCK_REALTIME, EBUSY, EDEADLK, EINVAL, EPERM, ETIMEDOUT};

use crate::object::{Object, Tag};
use crate::preload::fork::{self, Holder, Patience};
use crate::time::Deadline;

/// Where a mutex keeps its fork generation: the body's third 8-byte word (the lock,
/// at most 8 bytes, is the first), zero in a zero-filled mutex (module doc, "Fork").
const STAMP_OFFSET: usize = 16;
const _: () = assert!(STAMP_OFFSET + 4 <= BODY_WORDS * 8);

/// The holder field of a mutex held, at a fork, by a thread the child does not
/// have: no thread's tid.
const GONE: u32 = u32::MAX;

/// `sizeof(klocks_mutex_t)`: 8 bytes of header and 24 for the lock: the largest (8
/// bytes today: `SpinFutexMutex`) with room to grow without changing the ABI.
pub const MUTEX_SIZE: usize = 32;
const BODY_WORDS: usize = (MUTEX_SIZE - 8) / 8;

/// The C `klocks_mutex_t`: opaque, caller-owned, 32 bytes aligned to 8. Its holder
/// field is the `owner` of the module doc.
#[allow(non_camel_case_types)]
pub type klocks_mutex_t = Object<BODY_WORDS>;

/// Declares, from the catalog's list ([`klocks_core::for_each_mutex!`]), the check
/// that every C kind fits the body and `with_kind!`, the one map from a kind to its
/// type. `$d` is `$`, for the metavariables of `with_kind!`.
macro_rules! kinds {
    ($d:tt
        $(
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
        )*
    ) => {
        // Every kind fits in the body and needs no more than its alignment, and
        // leaves the fork stamp's bytes alone.
        $($(const _: () = assert!($c_kind > 0 && klocks_mutex_t::fits::<$ty>());)?)*
        $($(const _: () = assert!($c_kind > 0 && size_of::<$ty>() <= STAMP_OFFSET);)?)*

        /// Runs `$body` with the type alias `$ty` naming the lock type of `$kind`, a
        /// C kind: the one place that maps each kind to its type.
        macro_rules! with_kind {
            ($d kind:expr, $d alias:ident => $d body:expr) => {{
                match $d kind {
                    $($(klocks_core::catalog::MutexKind::$variant => {
                        // The C kinds only: the arm exists for an entry with a number.
                        const _: u32 = $c_kind;
                        type $d alias = $ty;
                        $d body
                    })?)*
                    other => unreachable!("{} is not a C kind", other.name()),
                }
            }};
        }
    };
}

klocks_core::for_each_mutex!(kinds! { $ });
pub(crate) use with_kind;

const _: () = assert!(size_of::<klocks_mutex_t>() == MUTEX_SIZE);
const _: () = assert!(align_of::<klocks_mutex_t>() == 8);

impl Tag for MutexKind {
    /// `KLOCKS_MUTEX_INITIALIZER`: a zero-filled mutex is an unlocked `KLOCKS_DEFAULT`
    /// (`RawMutex` is all-zero when unlocked, and a zero owner is nobody).
    const ZEROED: Option<MutexKind> = Some(MutexKind::Default);

    fn from_raw(raw: u32) -> Option<MutexKind> {
        MutexKind::from_c_kind(raw)
    }

    fn raw(self) -> u32 {
        match self.c_kind() {
            Some(raw) => raw,
            None => unreachable!("a C mutex is of a C kind ({})", self.name()),
        }
    }
}

/// Runs `$body` with `$lock: &L` for the lock type of `$kind` in `$m`'s body.
///
/// Contract (a macro cannot be `unsafe`): `$m` points to a live `klocks_mutex_t`
/// whose tag [`kind_of`] decoded to `$kind`. Every invocation follows that check.
macro_rules! with_lock {
    ($m:expr, $kind:expr, $lock:ident => $body:expr) => {{
        // SAFETY: the invoker passes an initialised object.
        with_lock_at!(unsafe { klocks_mutex_t::body($m) }, $kind, $lock => $body)
    }};
}

/// Runs `$body` with `$lock: &L` for the lock type of `$kind` at `$at`.
///
/// Contract (a macro cannot be `unsafe`): `$at` is a pointer, aligned to 8, to a live
/// lock of the type `$kind` names, written by [`init_at`] (or all-zero bytes, which
/// every kind reads as its unlocked `new()`: see the tests). Shared with the
/// pthread interposer, whose mutexes keep a lock of the process's kind inside the
/// `pthread_mutex_t`.
macro_rules! with_lock_at {
    ($at:expr, $kind:expr, $lock:ident => $body:expr) => {{
        let at = $at;
        $crate::mutex::with_kind!($kind, KindLock => {
            // SAFETY: by the contract, a lock of this type lives at `at`; its own
            // atomics give interior mutability.
            let $lock = unsafe { &*at.cast::<KindLock>() };
            $body
        })
    }};
}
pub(crate) use with_lock_at;

/// Writes an unlocked lock of `kind` at `at`.
///
/// # Safety
/// `at` is aligned to 8 and points to at least 8 writable bytes that no other thread
/// uses during the call. The old bytes are not dropped (every kind is plain words).
pub(crate) unsafe fn init_at(at: *mut u8, kind: MutexKind) {
    // SAFETY: caller's contract; every kind is at most 8 bytes, aligned to at most 8
    // (the `fits` checks of `kinds!` and the test `every_kind_is_eight_zero_bytes`).
    with_kind!(kind, KindLock => unsafe { ptr::write(at.cast::<KindLock>(), KindLock::new()) })
}

/// Initialises `*m` as an unlocked mutex of `kind`. See `include/klocks.h`.
///
/// # Safety
/// `m` is null or points to writable storage of `klocks_mutex_t`'s size that no
/// other thread uses during the call.
#[no_mangle]
pub unsafe extern "C" fn klocks_mutex_init(m: *mut klocks_mutex_t, kind: c_int) -> c_int {
    // SAFETY: caller's contract; `init_at` writes a lock of the kind, which fits the
    // body (`assert_fits!`).
    unsafe {
        klocks_mutex_t::init(m, kind, |body, kind| {
            init_at(body, kind);
            // A mutex of this generation: nothing to repair. (Not shared yet: the
            // caller's contract; `init` happens-before any other call on it.)
            ptr::write(
                body.add(STAMP_OFFSET).cast(),
                AtomicU32::new(fork::generation()),
            );
        })
    }
}

/// The mutex's fork stamp (module doc, "Fork").
///
/// # Safety
/// `m` points to an initialised (or zero-filled) `klocks_mutex_t`.
unsafe fn stamp<'a>(m: *const klocks_mutex_t) -> &'a AtomicU32 {
    // SAFETY: the body is 8-aligned and 24 bytes; no kind's lock reaches
    // `STAMP_OFFSET` (asserted in `kinds!`), and `init` wrote an atomic there (or
    // the caller zero-filled it).
    unsafe {
        &*klocks_mutex_t::body(m)
            .add(STAMP_OFFSET)
            .cast::<AtomicU32>()
    }
}

/// Repairs `*m` if it was last used before a fork (module doc, "Fork"); whether it
/// is current (`false` once `patience` ran out first).
///
/// # Safety
/// As for [`stamp`], with `kind` the mutex's kind.
#[inline]
unsafe fn current(m: *mut klocks_mutex_t, kind: MutexKind, patience: Patience) -> bool {
    // SAFETY: the caller's contract.
    let stamp = unsafe { stamp(m) };
    // Acquire: pairs with the Release in `fork::repair`, which publishes the body.
    stamp.load(Acquire) == fork::generation() || unsafe { repair(m, kind, patience) }
}

/// [`current`]'s repair, for the one thread that wins the stale mutex.
///
/// # Safety
/// As for [`current`].
#[cold]
unsafe fn repair(m: *mut klocks_mutex_t, kind: MutexKind, patience: Patience) -> bool {
    // SAFETY: the caller's contract.
    let (stamp, holder) = unsafe { (stamp(m), klocks_mutex_t::holder(m)) };
    fork::repair(
        stamp,
        patience,
        // Relaxed: written in an older generation, before the fork this thread comes
        // after (and ordered by the election's CAS since).
        |stale| fork::holder_by_tid(stale, holder.load(Relaxed)),
        // The kinds that track their owner keep the holder's tid in their word: only
        // the continuation itself may re-take its lock. The others name nobody.
        |thread| !kind.tracks_owner() || thread == u64::from(current_tid()),
        |held| {
            // SAFETY (each arm): the election gives this thread the body; a new lock
            // of the kind drops every waiter trace of the parent's.
            match held {
                Holder::Nobody => {
                    unsafe { init_at(klocks_mutex_t::body(m), kind) };
                    // Relaxed (here and below): the election's Release publishes it.
                    holder.store(0, Relaxed);
                }
                Holder::Continuation(tid) => {
                    unsafe { init_at(klocks_mutex_t::body(m), kind) };
                    with_lock!(m, kind, lock => lock.lock());
                    holder.store(tid as u32, Relaxed);
                }
                // Held by a thread the child does not have: it stays held, by no tid
                // a thread of the child could have (its waiters' traces are moot:
                // nobody will release it).
                Holder::Gone => holder.store(GONE, Relaxed),
            }
        },
    )
}

/// Destroys an unlocked mutex; later calls on it return `EINVAL` until it is
/// initialised again. See `include/klocks.h`.
///
/// # Safety
/// `m` is null or points to a `klocks_mutex_t`-sized object.
#[no_mangle]
pub unsafe extern "C" fn klocks_mutex_destroy(m: *mut klocks_mutex_t) -> c_int {
    // `kind` is the valid tag of `*m`.
    let locked = |kind: MutexKind| {
        // SAFETY: `*m` is an initialised mutex of `kind`.
        !unsafe { current(m, kind, Patience::Try) } || with_lock!(m, kind, lock => lock.is_locked())
    };
    // SAFETY: caller's contract.
    unsafe { klocks_mutex_t::destroy(m, locked) }
}

/// Locks the mutex, waiting as the kind waits. See `include/klocks.h`.
///
/// # Safety
/// `m` is null or points to a `klocks_mutex_t`-sized object that is not moved or
/// freed during the call.
#[no_mangle]
pub unsafe extern "C" fn klocks_mutex_lock(m: *mut klocks_mutex_t) -> c_int {
    let op = |kind: MutexKind| {
        // SAFETY: `*m` is an initialised mutex of `kind`; a blocking call waits.
        unsafe { current(m, kind, Patience::Forever) };
        let me = current_tid();
        // SAFETY: `*m` is an initialised mutex.
        let owner = unsafe { klocks_mutex_t::holder(m) };
        // Relaxed: "is it me?" (module doc).
        if kind.tracks_owner() && owner.load(Relaxed) == me {
            return EDEADLK;
        }
        // `kind` is the valid tag of `*m`.
        with_lock!(m, kind, lock => lock.lock());
        // Relaxed: read only by ourselves, and by a fork child (module doc).
        owner.store(me, Relaxed);
        0
    };
    // SAFETY: caller's contract.
    unsafe { klocks_mutex_t::call(m, op) }
}

/// Locks the mutex if no thread holds it; `EBUSY` otherwise. See
/// `include/klocks.h`.
///
/// # Safety
/// As for [`klocks_mutex_lock`].
#[no_mangle]
pub unsafe extern "C" fn klocks_mutex_trylock(m: *mut klocks_mutex_t) -> c_int {
    let op = |kind: MutexKind| {
        // SAFETY: `*m` is an initialised mutex of `kind`. `kind` is its valid tag.
        if !unsafe { current(m, kind, Patience::Try) }
            || !with_lock!(m, kind, lock => lock.try_lock())
        {
            return EBUSY;
        }
        // Relaxed: read only by ourselves, and by a fork child (module doc).
        // SAFETY: `*m` is an initialised mutex.
        unsafe { klocks_mutex_t::holder(m) }.store(current_tid(), Relaxed);
        0
    };
    // SAFETY: caller's contract.
    unsafe { klocks_mutex_t::call(m, op) }
}

/// Locks the mutex unless the `CLOCK_REALTIME` time `*abstime` passes first
/// (`ETIMEDOUT`), as `pthread_mutex_timedlock`. See `include/klocks.h`.
///
/// `KLOCKS_DEFAULT` sleeps until the lock is handed over or the deadline comes
/// (`RawMutex::try_lock_until`). The other kinds cannot leave a queue once in it
/// (a queue slot is handed the lock), so their timed waiter tries the lock with a
/// doubling sleep in between ([`Deadline::poll`]), as the interposer's timed calls
/// do: under steady contention it may time out however long its deadline.
///
/// # Safety
/// As for [`klocks_mutex_lock`]; `abstime` is null or points to a readable
/// `timespec`.
#[no_mangle]
pub unsafe extern "C" fn klocks_mutex_timedlock(
    m: *mut klocks_mutex_t,
    abstime: *const timespec,
) -> c_int {
    let op = |kind: MutexKind| {
        // SAFETY: `abstime` is null or readable (caller's contract).
        let deadline = match unsafe { Deadline::new(CLOCK_REALTIME, abstime) } {
            Ok(deadline) => deadline,
            Err(error) => return error,
        };
        // SAFETY: `*m` is an initialised mutex of `kind`.
        if !unsafe { current(m, kind, Patience::Until(deadline)) } {
            return ETIMEDOUT;
        }
        let me = current_tid();
        // SAFETY: `*m` is an initialised mutex.
        let owner = unsafe { klocks_mutex_t::holder(m) };
        // Relaxed: "is it me?" (module doc).
        if kind.tracks_owner() && owner.load(Relaxed) == me {
            return EDEADLK;
        }
        let took = match kind {
            MutexKind::Default => {
                // SAFETY: the tag names `Default`, so a `RawMutex` lives in the body.
                let lock = unsafe { &*klocks_mutex_t::body(m).cast::<RawMutex>() };
                timed_default(lock, &deadline)
            }
            // `kind` is the valid tag of `*m`.
            _ => deadline.poll(|| with_lock!(m, kind, lock => lock.try_lock())),
        };
        if took == 0 {
            // Relaxed: read only by ourselves, and by a fork child (module doc).
            owner.store(me, Relaxed);
        }
        took
    };
    // SAFETY: caller's contract.
    unsafe { klocks_mutex_t::call(m, op) }
}

/// `RawMutex`'s timed lock with pthread's answers: 0, `ETIMEDOUT`, or `EINVAL` for
/// malformed nanoseconds when the lock is not free at once (POSIX checks them only
/// when the call would block).
fn timed_default(lock: &RawMutex, deadline: &Deadline) -> c_int {
    if lock.try_lock() {
        0
    } else if !deadline.is_valid() {
        EINVAL
    } else if lock.try_lock_until(deadline.instant()) {
        0
    } else {
        ETIMEDOUT
    }
}

/// Unlocks the mutex: `EPERM` if it is not locked (or, for DEFAULT and SPINFUTEX,
/// not held by the caller). See `include/klocks.h`.
///
/// # Safety
/// As for [`klocks_mutex_lock`].
#[no_mangle]
pub unsafe extern "C" fn klocks_mutex_unlock(m: *mut klocks_mutex_t) -> c_int {
    let op = |kind: MutexKind| {
        // SAFETY: `*m` is an initialised mutex of `kind`. A mutex another thread is
        // repairing, or that waits for the forking thread's continuation, is not
        // the caller's to unlock.
        if !unsafe { current(m, kind, Patience::Try) } {
            return EPERM;
        }
        // SAFETY: `*m` is an initialised mutex.
        let owner = unsafe { klocks_mutex_t::holder(m) };
        if kind.tracks_owner() {
            // Relaxed: "is it me?" (module doc). Not me also covers "not locked".
            if owner.load(Relaxed) != current_tid() {
                return EPERM;
            }
        } else if !with_lock!(m, kind, lock => lock.is_locked()) {
            // A snapshot: two threads racing to unlock one hold can both pass it;
            // the second then meets the lock's own panic, which `guarded` turns into
            // EINVAL.
            return EPERM;
        }
        // Relaxed: cleared before the unlock's Release, so the next holder's store
        // comes after ours in the field's modification order.
        owner.store(0, Relaxed);
        // `kind` is the valid tag of `*m`.
        with_lock!(m, kind, lock => lock.unlock());
        0
    };
    // SAFETY: caller's contract.
    unsafe { klocks_mutex_t::call(m, op) }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The bytes of a value (for types made of atomics only, so without padding).
    fn bytes_of<T>(value: &T) -> Vec<u8> {
        // SAFETY: `value` is a live `T` of `size_of::<T>()` initialised bytes: every
        // kind is a struct of integer atomics, which has no padding.
        unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }
            .to_vec()
    }

    /// The pthread interposer relies on this: a zero-filled `pthread_mutex_t`
    /// (`PTHREAD_MUTEX_INITIALIZER`) holds an unlocked lock of every kind; and so does
    /// `KLOCKS_MUTEX_INITIALIZER`, an unlocked `KLOCKS_DEFAULT`.
    #[test]
    fn every_kind_is_eight_zero_bytes() {
        for kind in MutexKind::C_KINDS {
            with_kind!(kind, KindLock => {
                let lock = KindLock::new();
                assert!(size_of::<KindLock>() <= 8, "{}", kind.name());
                assert!(bytes_of(&lock).iter().all(|&b| b == 0), "{}", kind.name());
            });
        }
    }

    /// The `klocks_kind` constants of `klocks.h`, in order, with their values (an
    /// enumerator without `= N` is one more than the one before it, as in C).
    pub(crate) fn header_kinds(header: &str) -> Vec<(String, u32)> {
        let body = header
            .split("typedef enum {")
            .find_map(|rest| rest.split_once("} klocks_kind;").map(|(body, _)| body))
            .expect("klocks.h declares `typedef enum { ... } klocks_kind;`");
        let mut next = 0;
        let mut kinds = Vec::new();
        for line in body.lines().map(str::trim) {
            if line.starts_with("/*") || line.starts_with('*') || line.is_empty() {
                continue;
            }
            let entry = line.trim_end_matches(',');
            let (name, value) = match entry.split_once('=') {
                Some((name, value)) => (name.trim(), value.trim().parse().unwrap()),
                None => (entry, next),
            };
            kinds.push((name.to_owned(), value));
            next = value + 1;
        }
        kinds
    }

    /// The kind's `klocks_kind` constant: its name in capitals, `-` as `_`
    /// (`KLOCKS_PVQSPINLOCK`).
    pub(crate) fn c_name(kind: MutexKind) -> String {
        format!(
            "KLOCKS_{}",
            kind.name().to_ascii_uppercase().replace('-', "_")
        )
    }

    /// The catalog's C kinds, as `klocks.h` should declare them.
    pub(crate) fn rust_kinds() -> Vec<(String, u32)> {
        MutexKind::C_KINDS
            .iter()
            .map(|&kind| (c_name(kind), kind.c_kind().unwrap()))
            .collect()
    }

    /// klocks.h's `klocks_kind` is `MutexKind`, constant for constant and value for
    /// value: a C program passes these numbers to `klocks_mutex_init`.
    #[test]
    fn the_header_declares_every_kind_with_its_value() {
        let header = include_str!("../../include/klocks.h");
        assert_eq!(header_kinds(header), rust_kinds());
    }

    /// The header's parser sees a kind that the header lacks, renumbers or adds.
    #[test]
    fn a_header_that_disagrees_is_caught() {
        let header = include_str!("../../include/klocks.h");
        let (last, _) = header_kinds(header).pop().unwrap();
        let last_line = format!("    {last}\n");
        let one_more = format!("    {last},\n    KLOCKS_MCS\n");
        for (from, to) in [
            ("    KLOCKS_TICKET,\n", ""),
            ("KLOCKS_PVQSPINLOCK = 1", "KLOCKS_PVQSPINLOCK = 0"),
            (&last_line, &one_more),
        ] {
            assert!(header.contains(from), "{from:?}");
            let changed = header.replacen(from, to, 1);
            assert_ne!(header_kinds(&changed), rust_kinds(), "{from:?} -> {to:?}");
        }
    }

    #[test]
    fn kinds_round_trip_through_raw_and_name() {
        for kind in MutexKind::C_KINDS {
            assert_eq!(MutexKind::from_c_kind(kind.c_kind().unwrap()), Some(kind));
            assert_eq!(
                MutexKind::C_KINDS
                    .iter()
                    .filter(|k| k.name() == kind.name())
                    .count(),
                1
            );
        }
    }

    #[test]
    fn the_c_api_offers_every_catalog_mutex_but_the_experiment_variants() {
        let offered = MutexKind::C_KINDS;
        for &kind in MutexKind::ALL {
            assert_eq!(
                offered.contains(&kind),
                !kind.is_experiment_variant(),
                "{}",
                kind.name()
            );
        }
    }
}
