//! glibc's locks as lockbench's peers: a `pthread_mutex_t` or `pthread_rwlock_t` of a
//! chosen type, initialised in place on the heap (a pthread lock must not move once
//! initialised, and the box never moves it), released by a guard so that a
//! panicking critical section unlocks.

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::mem::MaybeUninit;

/// One family of glibc lock objects: its attribute type and calls.
pub trait Family {
    /// `pthread_mutex_t` or `pthread_rwlock_t`.
    type Lock;
    /// Its attribute object.
    type Attr;
    /// The call prefix in error messages: `pthread_mutex` or `pthread_rwlock`.
    const PREFIX: &'static str;
    /// The static initializer, replaced by `init`'s.
    const INITIALIZER: Self::Lock;

    /// `*attr_init`.
    ///
    /// # Safety
    /// As the libc function.
    unsafe fn attr_init(attr: *mut Self::Attr) -> c_int;
    /// Sets the type (mutex) or kind (rwlock).
    ///
    /// # Safety
    /// As the libc function.
    unsafe fn attr_set(attr: *mut Self::Attr, kind: c_int) -> c_int;
    /// `*attr_destroy`.
    ///
    /// # Safety
    /// As the libc function.
    unsafe fn attr_destroy(attr: *mut Self::Attr) -> c_int;
    /// `*_init`.
    ///
    /// # Safety
    /// As the libc function.
    unsafe fn init(lock: *mut Self::Lock, attr: *const Self::Attr) -> c_int;
    /// `*_unlock` (one call for both sides of an rwlock).
    ///
    /// # Safety
    /// As the libc function.
    unsafe fn unlock(lock: *mut Self::Lock) -> c_int;
    /// `*_destroy`.
    ///
    /// # Safety
    /// As the libc function.
    unsafe fn destroy(lock: *mut Self::Lock) -> c_int;
}

/// The mutexes.
pub enum Mutex {}
/// The reader-writer locks.
pub enum RwLock {}

impl Family for Mutex {
    type Lock = libc::pthread_mutex_t;
    type Attr = libc::pthread_mutexattr_t;
    const PREFIX: &'static str = "pthread_mutex";
    const INITIALIZER: Self::Lock = libc::PTHREAD_MUTEX_INITIALIZER;

    unsafe fn attr_init(attr: *mut Self::Attr) -> c_int {
        // SAFETY: caller's contract.
        unsafe { libc::pthread_mutexattr_init(attr) }
    }
    unsafe fn attr_set(attr: *mut Self::Attr, kind: c_int) -> c_int {
        // SAFETY: caller's contract.
        unsafe { libc::pthread_mutexattr_settype(attr, kind) }
    }
    unsafe fn attr_destroy(attr: *mut Self::Attr) -> c_int {
        // SAFETY: caller's contract.
        unsafe { libc::pthread_mutexattr_destroy(attr) }
    }
    unsafe fn init(lock: *mut Self::Lock, attr: *const Self::Attr) -> c_int {
        // SAFETY: caller's contract.
        unsafe { libc::pthread_mutex_init(lock, attr) }
    }
    unsafe fn unlock(lock: *mut Self::Lock) -> c_int {
        // SAFETY: caller's contract.
        unsafe { libc::pthread_mutex_unlock(lock) }
    }
    unsafe fn destroy(lock: *mut Self::Lock) -> c_int {
        // SAFETY: caller's contract.
        unsafe { libc::pthread_mutex_destroy(lock) }
    }
}

impl Family for RwLock {
    type Lock = libc::pthread_rwlock_t;
    type Attr = libc::pthread_rwlockattr_t;
    const PREFIX: &'static str = "pthread_rwlock";
    const INITIALIZER: Self::Lock = libc::PTHREAD_RWLOCK_INITIALIZER;

    unsafe fn attr_init(attr: *mut Self::Attr) -> c_int {
        // SAFETY: caller's contract.
        unsafe { libc::pthread_rwlockattr_init(attr) }
    }
    unsafe fn attr_set(attr: *mut Self::Attr, kind: c_int) -> c_int {
        // SAFETY: caller's contract.
        unsafe { libc::pthread_rwlockattr_setkind_np(attr, kind) }
    }
    unsafe fn attr_destroy(attr: *mut Self::Attr) -> c_int {
        // SAFETY: caller's contract.
        unsafe { libc::pthread_rwlockattr_destroy(attr) }
    }
    unsafe fn init(lock: *mut Self::Lock, attr: *const Self::Attr) -> c_int {
        // SAFETY: caller's contract.
        unsafe { libc::pthread_rwlock_init(lock, attr) }
    }
    unsafe fn unlock(lock: *mut Self::Lock) -> c_int {
        // SAFETY: caller's contract.
        unsafe { libc::pthread_rwlock_unlock(lock) }
    }
    unsafe fn destroy(lock: *mut Self::Lock) -> c_int {
        // SAFETY: caller's contract.
        unsafe { libc::pthread_rwlock_destroy(lock) }
    }
}

/// Panics with the error name if a pthread call failed (only misuse can make it).
pub fn check<F: Family>(rc: c_int, call: &str) {
    assert!(
        rc == 0,
        "{}{call} failed: {}",
        F::PREFIX,
        std::io::Error::from_raw_os_error(rc)
    );
}

/// A glibc lock of family `F` and type (or kind) `KIND`.
pub struct Pthread<F: Family, const KIND: c_int> {
    lock: Box<UnsafeCell<F::Lock>>,
}

// SAFETY: a pthread lock is made to be taken and released from any thread; the
// `UnsafeCell` is only ever passed to the pthread functions.
unsafe impl<F: Family, const KIND: c_int> Sync for Pthread<F, KIND> {}

impl<F: Family, const KIND: c_int> Pthread<F, KIND> {
    /// An unlocked lock of type `KIND`.
    pub fn new() -> Self {
        let lock = Box::new(UnsafeCell::new(F::INITIALIZER));
        let mut attr = MaybeUninit::<F::Attr>::uninit();
        // SAFETY: `attr` is initialised by attr_init before any other use and
        // destroyed after its last; `lock` is a valid, heap-pinned lock object that no
        // other thread can see yet.
        unsafe {
            check::<F>(F::attr_init(attr.as_mut_ptr()), "attr_init");
            check::<F>(F::attr_set(attr.as_mut_ptr(), KIND), "attr_set");
            check::<F>(F::init(lock.get(), attr.as_ptr()), "_init");
            check::<F>(F::attr_destroy(attr.as_mut_ptr()), "attr_destroy");
        }
        Self { lock }
    }

    /// Runs `critical` after `take` (a lock call) succeeded, then unlocks, also when
    /// `critical` panics.
    #[inline]
    pub fn holding<R>(
        &self,
        take: unsafe extern "C" fn(*mut F::Lock) -> c_int,
        call: &str,
        critical: impl FnOnce() -> R,
    ) -> R {
        // SAFETY: the lock was initialised in `new` and is destroyed only in `drop`.
        check::<F>(unsafe { take(self.lock.get()) }, call);
        let _unlock = Unlock(self);
        critical()
    }
}

/// Unlocks a [`Pthread`] when dropped.
struct Unlock<'a, F: Family, const KIND: c_int>(&'a Pthread<F, KIND>);

impl<F: Family, const KIND: c_int> Drop for Unlock<'_, F, KIND> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: built only by `holding`, right after this thread took the lock.
        check::<F>(unsafe { F::unlock(self.0.lock.get()) }, "_unlock");
    }
}

impl<F: Family, const KIND: c_int> Drop for Pthread<F, KIND> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no thread holds or waits on the lock any more.
        check::<F>(unsafe { F::destroy(self.lock.get()) }, "_destroy");
    }
}
