//! glibc's own pthread functions, for what klocks passes through.
//!
//! Each is looked up once with `dlsym(RTLD_NEXT)` (the next definition after this
//! library: libc's) and cached. On the architectures glibc supported before 2.3.2
//! the condvar functions have two versions (on x86-64 `GLIBC_2.2.5`, the pre-2.3.2
//! layout, and `GLIBC_2.3.2`), and plain `dlsym` may return the old one, so they are
//! asked for by version with `dlvsym` ([`CONDVAR_VERSION`]).

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering::Relaxed};

use libc::{
    clockid_t, pthread_cond_t, pthread_condattr_t, pthread_mutex_t, pthread_mutexattr_t,
    pthread_rwlock_t, pthread_rwlockattr_t, pthread_spinlock_t, timespec,
};

/// The symbol version of glibc's condvar functions, or `None` for plain `dlsym`.
///
/// Versions are per architecture: `dlvsym` with a version the architecture's glibc
/// never had fails, and the process would abort at its first condvar call.
///
/// - `GLIBC_2.3.2` where glibc keeps the pre-2.3.2 condvar as an older version
///   (`GLIBC_2.2.5` on x86-64, `GLIBC_2.0`/`2.2`/`2.3` on the others named here;
///   from glibc's `libc.abilist` files). Not x32, whose only version is `GLIBC_2.16`.
/// - `GLIBC_2.17` on aarch64: its first and only version.
/// - Plain `dlsym` elsewhere: it returns the default version, and an architecture
///   added after 2.3.2 has no pre-2.3.2 layout, so its only version is the right one.
///   Architectures not named here that keep the old layout too (alpha, hppa, m68k,
///   sh, 32-bit sparc and s390) get what plain `dlsym` gives: the newest version in
///   current glibc (`DL_LOOKUP_RETURN_NEWEST`), not guaranteed by older ones.
const CONDVAR_VERSION: Option<&CStr> = if cfg!(any(
    all(target_arch = "x86_64", target_pointer_width = "64"),
    target_arch = "x86",
    target_arch = "powerpc",
    all(target_arch = "powerpc64", target_endian = "big"),
    target_arch = "s390x",
    target_arch = "sparc64",
    target_arch = "mips",
    target_arch = "mips64",
)) {
    Some(c"GLIBC_2.3.2")
} else if cfg!(target_arch = "aarch64") {
    Some(c"GLIBC_2.17")
} else {
    None
};

/// The address of glibc's `name` (a NUL-terminated name; of `version`, if given),
/// cached in `slot`.
#[inline]
fn resolve(slot: &AtomicPtr<c_void>, name: &str, version: Option<&CStr>) -> *mut c_void {
    // Relaxed: the address of code that was mapped before `dlsym` returned it; every
    // thread that resolves finds the same one (as lazy PLT binding does).
    let cached = slot.load(Relaxed);
    if cached.is_null() {
        look_up(slot, name, version)
    } else {
        cached
    }
}

/// The address of glibc's `name` (NUL-terminated), for a route (see `route`).
pub(super) fn address(name: &str) -> *mut c_void {
    look_up(&AtomicPtr::new(std::ptr::null_mut()), name, None)
}

#[cold]
fn look_up(slot: &AtomicPtr<c_void>, name: &str, version: Option<&CStr>) -> *mut c_void {
    let name = CStr::from_bytes_with_nul(name.as_bytes()).expect("a NUL-terminated name");
    // SAFETY: both names are NUL-terminated strings that live for the call.
    let found = unsafe {
        match version {
            None => libc::dlsym(libc::RTLD_NEXT, name.as_ptr()),
            Some(version) => libc::dlvsym(libc::RTLD_NEXT, name.as_ptr(), version.as_ptr()),
        }
    };
    if found.is_null() {
        super::stderr::say(&format!(
            "glibc has no {} to pass a call to; aborting",
            name.to_string_lossy()
        ));
        std::process::abort();
    }
    // Relaxed: as in `resolve`.
    slot.store(found, Relaxed);
    found
}

/// Declares `pub(super) unsafe fn name(args) -> c_int` calling glibc's `name`.
macro_rules! glibc_fns {
    ($($(#[version = $version:expr])? fn $name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        /// glibc's function of the same name.
        ///
        /// # Safety
        /// glibc's contract for it.
        pub(super) unsafe fn $name($($arg: $ty),*) -> c_int {
            static SLOT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
            let version: Option<&CStr> = None $(.or($version))?;
            let address = resolve(&SLOT, concat!(stringify!($name), "\0"), version);
            // SAFETY: glibc's symbol of this name has this C signature.
            // "C-unwind": glibc's condvar waits are cancellation points, whose forced
            // unwind passes through this frame and the interposed caller's (both
            // without destructors, see `cond`'s module doc).
            let function: unsafe extern "C-unwind" fn($($ty),*) -> c_int =
                unsafe { std::mem::transmute::<*mut c_void, _>(address) };
            // SAFETY: the caller keeps glibc's contract.
            unsafe { function($($arg),*) }
        }
    )*};
}

glibc_fns! {
    fn pthread_mutex_init(m: *mut pthread_mutex_t, attr: *const pthread_mutexattr_t);
    fn pthread_mutex_destroy(m: *mut pthread_mutex_t);
    fn pthread_mutex_lock(m: *mut pthread_mutex_t);
    fn pthread_mutex_trylock(m: *mut pthread_mutex_t);
    fn pthread_mutex_timedlock(m: *mut pthread_mutex_t, at: *const timespec);
    fn pthread_mutex_clocklock(m: *mut pthread_mutex_t, clock: clockid_t, at: *const timespec);
    fn pthread_mutex_unlock(m: *mut pthread_mutex_t);
    fn pthread_rwlock_init(r: *mut pthread_rwlock_t, attr: *const pthread_rwlockattr_t);
    fn pthread_rwlock_destroy(r: *mut pthread_rwlock_t);
    fn pthread_rwlock_rdlock(r: *mut pthread_rwlock_t);
    fn pthread_rwlock_tryrdlock(r: *mut pthread_rwlock_t);
    fn pthread_rwlock_timedrdlock(r: *mut pthread_rwlock_t, at: *const timespec);
    fn pthread_rwlock_clockrdlock(r: *mut pthread_rwlock_t, clock: clockid_t, at: *const timespec);
    fn pthread_rwlock_wrlock(r: *mut pthread_rwlock_t);
    fn pthread_rwlock_trywrlock(r: *mut pthread_rwlock_t);
    fn pthread_rwlock_timedwrlock(r: *mut pthread_rwlock_t, at: *const timespec);
    fn pthread_rwlock_clockwrlock(r: *mut pthread_rwlock_t, clock: clockid_t, at: *const timespec);
    fn pthread_rwlock_unlock(r: *mut pthread_rwlock_t);
    fn pthread_spin_init(s: *mut pthread_spinlock_t, pshared: c_int);
    fn pthread_spin_destroy(s: *mut pthread_spinlock_t);
    fn pthread_spin_lock(s: *mut pthread_spinlock_t);
    fn pthread_spin_trylock(s: *mut pthread_spinlock_t);
    fn pthread_spin_unlock(s: *mut pthread_spinlock_t);
    #[version = CONDVAR_VERSION]
    fn pthread_cond_init(c: *mut pthread_cond_t, attr: *const pthread_condattr_t);
    #[version = CONDVAR_VERSION]
    fn pthread_cond_destroy(c: *mut pthread_cond_t);
    #[version = CONDVAR_VERSION]
    fn pthread_cond_wait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t);
    #[version = CONDVAR_VERSION]
    fn pthread_cond_timedwait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, at: *const timespec);
    fn pthread_cond_clockwait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, clock: clockid_t, at: *const timespec);
    #[version = CONDVAR_VERSION]
    fn pthread_cond_signal(c: *mut pthread_cond_t);
    #[version = CONDVAR_VERSION]
    fn pthread_cond_broadcast(c: *mut pthread_cond_t);
}
