//! `klocks_rwsem_t`: klocks' `RwSem<P>` with pthread_rwlock's calling conventions.
//!
//! The reader-spin policy chosen at `klocks_rwsem_init` is kept in the object's tag
//! (see the crate doc) and picks `RwSem<Adaptive>`, `RwSem<Always>` or
//! `RwSem<Never>` for the body.
//!
//! # One unlock for both modes
//!
//! As `pthread_rwlock_unlock`, `klocks_rwsem_unlock` must find out which mode the
//! caller holds: the write lock if the caller is the writer, else a read lock if
//! readers hold the rwsem, else `EPERM`. `RwSem` keeps its writer in its owner word
//! but offers no accessor, so this layer keeps its own copy in the header's `writer`
//! field: the writer's thread id, stored after `lock_exclusive`/`try_lock_exclusive`
//! succeed and cleared before `unlock_exclusive`.
//!
//! Why `Relaxed` is enough for the `writer` field: the only question ever asked of
//! it is "is it me?", by the thread `me` itself. Only `me` writes `me` there, after
//! acquiring the write lock, and `me` clears it before releasing. While `me` holds
//! the write lock nobody else writes the field (a writer writes only after
//! acquiring), so `me` reads its own last write, `me`. When `me` does not hold it,
//! its own last write (if any) was the clear, and read-write coherence forbids its
//! later load from seeing an older value: it reads 0 or another writer's id, never
//! `me`. No other memory is published through the field; the data is ordered by the
//! rwsem's count.
//!
//! Readers are not recorded (`RwSem` counts them, it does not name them), so a read
//! unlock by a thread that holds no read lock, while other threads do, releases one
//! of their shares (debug builds of klocks catch it: the panic becomes `EINVAL`).

use std::ffi::c_int;
use std::mem::{align_of, size_of};
use std::ptr;
use std::sync::atomic::Ordering::Relaxed;

use klocks_core::owner::current_tid;
use klocks_core::reader_spin::{Adaptive, Always, Never};
use klocks_core::RwSem;
use libc::{EBUSY, EDEADLK, EPERM};

use crate::object::{Object, Tag};

/// `sizeof(klocks_rwsem_t)`: 8 bytes of header and room for `RwSem` (48 bytes today).
pub const RWSEM_SIZE: usize = 64;
const BODY_WORDS: usize = (RWSEM_SIZE - 8) / 8;

/// The C `klocks_rwsem_t`: opaque, caller-owned, 64 bytes aligned to 8. Its holder
/// field is the `writer` of the module doc.
#[allow(non_camel_case_types)]
pub type klocks_rwsem_t = Object<BODY_WORDS>;

const _: () = assert!(klocks_rwsem_t::fits::<RwSem<Adaptive>>());
const _: () = assert!(klocks_rwsem_t::fits::<RwSem<Always>>());
const _: () = assert!(klocks_rwsem_t::fits::<RwSem<Never>>());
const _: () = assert!(size_of::<klocks_rwsem_t>() == RWSEM_SIZE);
const _: () = assert!(align_of::<klocks_rwsem_t>() == 8);

/// The C `klocks_rwsem_policy` values.
#[derive(Clone, Copy)]
enum Policy {
    Adaptive = 1,
    Always = 2,
    Never = 3,
}

impl Tag for Policy {
    /// A `klocks_rwsem_t` must be initialised: it has no static initialiser.
    const ZEROED: Option<Policy> = None;

    fn raw(self) -> u32 {
        self as u32
    }

    fn from_raw(raw: u32) -> Option<Policy> {
        Some(match raw {
            1 => Policy::Adaptive,
            2 => Policy::Always,
            3 => Policy::Never,
            _ => return None,
        })
    }
}

/// Runs `$body` with `$sem: &RwSem<P>` for the policy `$policy` in `$r`'s body.
///
/// Contract (a macro cannot be `unsafe`): `$r` points to a live `klocks_rwsem_t`
/// whose tag [`policy_of`] decoded to `$policy`. Every invocation follows that check.
macro_rules! with_sem {
    ($r:expr, $policy:expr, $sem:ident => $body:expr) => {{
        // SAFETY: the invoker passes an initialised object.
        let body = unsafe { klocks_rwsem_t::body($r) };
        match $policy {
            Policy::Adaptive => {
                // SAFETY (all arms): the tag names this type, so `init` wrote one here
                // and no `destroy` followed; the body is aligned to 8 and large enough
                // (`assert_fits!`). The rwsem's atomics give interior mutability.
                let $sem = unsafe { &*body.cast::<RwSem<Adaptive>>() };
                $body
            }
            Policy::Always => {
                let $sem = unsafe { &*body.cast::<RwSem<Always>>() };
                $body
            }
            Policy::Never => {
                let $sem = unsafe { &*body.cast::<RwSem<Never>>() };
                $body
            }
        }
    }};
}

/// Initialises `*r` as an unlocked rwsem with reader-spin `policy`. See
/// `include/klocks.h`.
///
/// # Safety
/// `r` is null or points to writable storage of `klocks_rwsem_t`'s size that no
/// other thread uses during the call.
#[no_mangle]
pub unsafe extern "C" fn klocks_rwsem_init(r: *mut klocks_rwsem_t, policy: c_int) -> c_int {
    let write = |body: *mut u8, policy| {
        // SAFETY: `init` passes the body, large and aligned enough for every policy
        // (the asserts above), ours to write.
        unsafe {
            match policy {
                Policy::Adaptive => ptr::write(body.cast(), RwSem::<Adaptive>::new()),
                Policy::Always => ptr::write(body.cast(), RwSem::<Always>::new()),
                Policy::Never => ptr::write(body.cast(), RwSem::<Never>::new()),
            }
        }
    };
    // SAFETY: caller's contract; `write` writes an rwsem of the policy.
    unsafe { klocks_rwsem_t::init(r, policy, write) }
}

/// Destroys an unlocked rwsem; later calls on it return `EINVAL` until it is
/// initialised again. See `include/klocks.h`.
///
/// # Safety
/// `r` is null or points to a `klocks_rwsem_t`-sized object.
#[no_mangle]
pub unsafe extern "C" fn klocks_rwsem_destroy(r: *mut klocks_rwsem_t) -> c_int {
    // An unlocked rwsem has no waiters (they would hold the count's WAITERS bit only
    // while it is locked). `policy` is the valid tag of `*r`.
    let locked = |policy: Policy| with_sem!(r, policy, sem => sem.is_locked());
    // SAFETY: caller's contract.
    unsafe { klocks_rwsem_t::destroy(r, locked) }
}

/// Takes a read lock; `EDEADLK` if the caller holds the write lock. See
/// `include/klocks.h`.
///
/// # Safety
/// `r` is null or points to a `klocks_rwsem_t`-sized object that is not moved or
/// freed during the call.
#[no_mangle]
pub unsafe extern "C" fn klocks_rwsem_rdlock(r: *mut klocks_rwsem_t) -> c_int {
    let op = |policy: Policy| {
        // Relaxed: "is it me?" (module doc). A writer that read-locks would wait for
        // itself forever.
        // SAFETY: `*r` is an initialised rwsem.
        if unsafe { klocks_rwsem_t::holder(r) }.load(Relaxed) == current_tid() {
            return EDEADLK;
        }
        // `policy` is the valid tag of `*r`.
        with_sem!(r, policy, sem => sem.lock_shared());
        0
    };
    // SAFETY: caller's contract.
    unsafe { klocks_rwsem_t::call(r, op) }
}

/// Takes a read lock if that needs no waiting; `EBUSY` otherwise. See
/// `include/klocks.h`.
///
/// # Safety
/// As for [`klocks_rwsem_rdlock`].
#[no_mangle]
pub unsafe extern "C" fn klocks_rwsem_tryrdlock(r: *mut klocks_rwsem_t) -> c_int {
    let op = |policy: Policy| {
        // `policy` is the valid tag of `*r`.
        if with_sem!(r, policy, sem => sem.try_lock_shared()) {
            0
        } else {
            EBUSY
        }
    };
    // SAFETY: caller's contract.
    unsafe { klocks_rwsem_t::call(r, op) }
}

/// Takes the write lock; `EDEADLK` if the caller holds it already. See
/// `include/klocks.h`.
///
/// # Safety
/// As for [`klocks_rwsem_rdlock`].
#[no_mangle]
pub unsafe extern "C" fn klocks_rwsem_wrlock(r: *mut klocks_rwsem_t) -> c_int {
    let op = |policy: Policy| {
        let me = current_tid();
        // SAFETY: `*r` is an initialised rwsem.
        let writer = unsafe { klocks_rwsem_t::holder(r) };
        // Relaxed: "is it me?" (module doc).
        if writer.load(Relaxed) == me {
            return EDEADLK;
        }
        // `policy` is the valid tag of `*r`.
        with_sem!(r, policy, sem => sem.lock_exclusive());
        // Relaxed: read only by ourselves (module doc).
        writer.store(me, Relaxed);
        0
    };
    // SAFETY: caller's contract.
    unsafe { klocks_rwsem_t::call(r, op) }
}

/// Takes the write lock if nobody holds the rwsem or waits for it; `EBUSY`
/// otherwise. See `include/klocks.h`.
///
/// # Safety
/// As for [`klocks_rwsem_rdlock`].
#[no_mangle]
pub unsafe extern "C" fn klocks_rwsem_trywrlock(r: *mut klocks_rwsem_t) -> c_int {
    let op = |policy: Policy| {
        // `policy` is the valid tag of `*r`.
        if !with_sem!(r, policy, sem => sem.try_lock_exclusive()) {
            return EBUSY;
        }
        // Relaxed: read only by ourselves (module doc).
        // SAFETY: `*r` is an initialised rwsem.
        unsafe { klocks_rwsem_t::holder(r) }.store(current_tid(), Relaxed);
        0
    };
    // SAFETY: caller's contract.
    unsafe { klocks_rwsem_t::call(r, op) }
}

/// Releases the caller's write lock, or else a read lock; `EPERM` if the rwsem is
/// not locked or another thread holds its write lock. See `include/klocks.h`.
///
/// # Safety
/// As for [`klocks_rwsem_rdlock`].
#[no_mangle]
pub unsafe extern "C" fn klocks_rwsem_unlock(r: *mut klocks_rwsem_t) -> c_int {
    let op = |policy: Policy| {
        // SAFETY: `*r` is an initialised rwsem.
        let writer = unsafe { klocks_rwsem_t::holder(r) };
        // Relaxed: "is it me?" (module doc).
        if writer.load(Relaxed) == current_tid() {
            // Relaxed: cleared before the unlock's Release, so the next writer's
            // store comes after ours in the field's modification order.
            writer.store(0, Relaxed);
            // `policy` is the valid tag of `*r`.
            with_sem!(r, policy, sem => sem.unlock_exclusive());
            return 0;
        }
        // Not the writer. Snapshots (Relaxed inside `RwSem`): a caller that holds a
        // read lock sees readers and no writer, since its share keeps writers out;
        // for any other caller the answer is misuse either way.
        // `policy` is the valid tag of `*r`.
        let (locked, exclusive) =
            with_sem!(r, policy, sem => (sem.is_locked(), sem.is_locked_exclusive()));
        if !locked || exclusive {
            return EPERM;
        }
        // `policy` is the valid tag of `*r`.
        with_sem!(r, policy, sem => sem.unlock_shared());
        0
    };
    // SAFETY: caller's contract.
    unsafe { klocks_rwsem_t::call(r, op) }
}
