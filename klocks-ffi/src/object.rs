//! The C lock objects' layout and what every entry point does before it reaches the
//! Rust lock: the crate doc's header (tag, holder) and body, the tag check, and the
//! `init` and `destroy` protocols, shared by `klocks_mutex_t`, `klocks_rwlock_t`,
//! `klocks_rwsem_t` and `klocks_cond_t`.

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::mem::{align_of, size_of, MaybeUninit};
use std::ptr::{self, addr_of};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use libc::{EBUSY, EINVAL};

use crate::{configured, guarded, tag_kind, usable, TAG_DESTROYED, TAG_MAGIC};

/// A C lock object: 8 bytes of header, then `WORDS` 8-byte words of body.
#[repr(C, align(8))]
pub struct Object<const WORDS: usize> {
    tag: AtomicU32,
    /// The holder's thread id, where the C layer keeps one (`mutex`, `rwsem`).
    holder: AtomicU32,
    /// The lock the tag names; uninitialised bytes while the tag is not valid.
    body: UnsafeCell<[MaybeUninit<u64>; WORDS]>,
}

/// What a valid tag's low byte names: a C kind or policy value (1..=255).
pub(crate) trait Tag: Copy {
    /// What an all-zero object is: the default kind, unlocked, for the types whose
    /// static initialiser is zero bytes (`KLOCKS_MUTEX_INITIALIZER`, ...); `None` for
    /// a type that must be initialised.
    const ZEROED: Option<Self>;

    /// The value the C caller passed, if it names one.
    fn from_raw(raw: u32) -> Option<Self>;
    /// The C value.
    fn raw(self) -> u32;
}

impl<const WORDS: usize> Object<WORDS> {
    /// Whether a `T` fits the body (size, and alignment at most 8).
    pub(crate) const fn fits<T>() -> bool {
        size_of::<T>() <= WORDS * 8 && align_of::<T>() <= 8
    }

    /// The kind of an initialised object (a zero tag: [`Tag::ZEROED`]), or `None` for
    /// a null, misaligned, never initialised or destroyed one.
    ///
    /// # Safety
    /// `obj` is null or points to `size_of::<Self>()` readable bytes.
    pub(crate) unsafe fn kind<K: Tag>(obj: *const Self) -> Option<K> {
        if !usable(obj) {
            return None;
        }
        // Relaxed: `init` must happen-before any other call on the object (the header
        // says so; pthread has the same rule), and that happens-before edge, made by
        // whatever published the object to this thread, orders the tag and the lock.
        // A zero tag needs no write before first use, so threads racing to use a
        // zero-filled object first all read the same kind from bytes nobody changes.
        // SAFETY: `obj` points to an object (caller's contract).
        let tag = unsafe { &*addr_of!((*obj).tag) }.load(Relaxed);
        match tag {
            0 => K::ZEROED,
            tag => tag_kind(tag).and_then(K::from_raw),
        }
    }

    /// The holder field (see the module doc of its user for its protocol).
    ///
    /// # Safety
    /// `obj` points to an object.
    pub(crate) unsafe fn holder<'a>(obj: *const Self) -> &'a AtomicU32 {
        // SAFETY: caller's contract.
        unsafe { &*addr_of!((*obj).holder) }
    }

    /// The body's address, aligned to 8.
    ///
    /// # Safety
    /// `obj` points to an object.
    pub(crate) unsafe fn body(obj: *const Self) -> *mut u8 {
        // SAFETY: caller's contract.
        UnsafeCell::raw_get(unsafe { addr_of!((*obj).body) }).cast()
    }

    /// An entry point's body: `EINVAL` unless `obj` is an initialised object, else
    /// `call(kind)`; a panic becomes `EINVAL` ([`guarded`]).
    ///
    /// # Safety
    /// `obj` is null or points to an object that is not moved or freed during the
    /// call.
    pub(crate) unsafe fn call<K: Tag>(obj: *const Self, call: impl FnOnce(K) -> c_int) -> c_int {
        guarded(|| {
            // SAFETY: caller's contract.
            match unsafe { Self::kind(obj) } {
                Some(kind) => call(kind),
                None => EINVAL,
            }
        })
    }

    /// `init`: checks the kind, the pointer and the `KLOCKS_*` settings (`EINVAL`),
    /// then writes the body with `write`, clears the holder, and writes the tag last.
    ///
    /// # Safety
    /// `obj` is null or points to writable storage of the object's size that no other
    /// thread uses during the call; `write(body, kind)` writes a lock of `kind` that
    /// [`fits`](Self::fits) at `body`.
    pub(crate) unsafe fn init<K: Tag>(
        obj: *mut Self,
        kind: c_int,
        write: impl FnOnce(*mut u8, K),
    ) -> c_int {
        guarded(|| {
            let Some(kind) = u32::try_from(kind).ok().and_then(K::from_raw) else {
                return EINVAL;
            };
            if !usable(obj) {
                return EINVAL;
            }
            if let Err(error) = configured() {
                return error;
            }
            // SAFETY: the storage is ours to write (caller's contract), non-null and
            // aligned; the old bytes are not a lock (every kind is plain words).
            unsafe {
                write(Self::body(obj), kind);
                ptr::write(addr_of!((*obj).holder).cast_mut(), AtomicU32::new(0));
                // Last: the tag is what makes the body a lock (see `kind`).
                ptr::write(
                    addr_of!((*obj).tag).cast_mut(),
                    AtomicU32::new(TAG_MAGIC | kind.raw()),
                );
            }
            0
        })
    }

    /// `destroy`: `EBUSY` while `locked(kind)`, else the tag becomes
    /// [`TAG_DESTROYED`] and later calls return `EINVAL`. No drop: no kind owns a
    /// resource (an unlocked lock has no waiters).
    ///
    /// # Safety
    /// As for [`call`](Self::call); no other call on the object races with it.
    pub(crate) unsafe fn destroy<K: Tag>(obj: *mut Self, locked: impl FnOnce(K) -> bool) -> c_int {
        let op = |kind| {
            if locked(kind) {
                return EBUSY;
            }
            // Relaxed: as in `kind`; destroy must not race with other calls.
            // SAFETY: `obj` is an initialised object (`call` checked).
            unsafe { &*addr_of!((*obj).tag) }.store(TAG_DESTROYED, Relaxed);
            0
        };
        // SAFETY: caller's contract.
        unsafe { Self::call(obj, op) }
    }
}
