//! The C ABI of klocks: `libklocks.so` behind `include/klocks.h`.
//!
//! C programs get klocks' mutexes ([`mutex`]), its default rwlock ([`rwlock`]), its
//! rwsem ([`rwsem`]) and a condition variable ([`cond`]) as caller-owned objects, in
//! the manner of `pthread_mutex_t`: the caller provides the storage (no allocation
//! here), calls `init` with a kind (or uses a static initialiser), then
//! lock/unlock, then `destroy`. Every function returns 0 or an errno value, as
//! pthread does.
//!
//! Which kind: `KLOCKS_DEFAULT` (`klocks::Mutex`: spins while the owner runs, sleeps
//! otherwise, every wait bounded) unless you need strict FIFO (`KLOCKS_PVTICKET`) or
//! are re-running a seed experiment; `docs/design.md`'s lock table gives each
//! kind's trade-off (its names are `KLOCKS_LOCK`'s, lower case). Unmodified programs get the same
//! locks through the [`preload`] interposer: `LD_PRELOAD=libklocks.so
//! KLOCKS_LOCK=default` (`docs/preload.md`).
//!
//! # The object layout
//!
//! C sees `klocks_mutex_t`, `klocks_rwlock_t`, `klocks_rwsem_t` and `klocks_cond_t`
//! as opaque byte arrays aligned to 8; here the same bytes are a header and the Rust
//! lock:
//!
//! | bytes | field | written by |
//! |---|---|---|
//! | 0..4 | `tag`: [`TAG_MAGIC`] `|` kind while initialised; 0 for the default kind (below); [`TAG_DESTROYED`] after `destroy`; anything else is not an object | `init`, `destroy` |
//! | 4..8 | `owner`: the holder's thread id, where the C layer keeps one (below) | the holder only |
//! | 8.. | the Rust lock of that kind (`PvQSpinLock`, `RwSem<Adaptive>`, ...) | the lock |
//!
//! The tag is checked by every call, so an uninitialised or destroyed object is
//! refused with `EINVAL` instead of being taken for a lock of some kind (a magic in
//! the upper bits makes garbage unlikely to pass). Which lock type lives in the body
//! is decided by the tag alone, so a valid tag is what makes the casts in [`mutex`],
//! [`rwlock`], [`rwsem`] and [`cond`] sound.
//!
//! # All-zero is the default object
//!
//! A zero tag names the type's default kind (`KLOCKS_DEFAULT` mutex, the rwlock, a
//! `CLOCK_REALTIME` condvar; the rwsem has none and refuses zero), whose unlocked
//! lock is zero bytes, with a zero owner meaning nobody: so the static initialisers
//! (`KLOCKS_MUTEX_INITIALIZER`, ...) are all-zero and zero-filled memory is a usable
//! object. Nothing is initialised lazily, so any number of threads may make the
//! first call at once: each reads a zero tag nobody writes and takes the lock as
//! any contended lock. `destroy` writes [`TAG_DESTROYED`], not zero, so a destroyed
//! object is still refused.
//!
//! # Misuse is answered before Rust is called
//!
//! The Rust locks panic on misuse (unlocking a lock that is not locked, a
//! `SpinFutexMutex` unlocked by a thread that does not hold it, an `RwSem` relocked
//! by its writer). Each entry point checks those cases first and returns an errno
//! value, and [`guarded`] wraps every body in `catch_unwind` so that a panic that
//! still happens (a racing misuse the checks cannot see, a bad `KLOCKS_SPIN_NS`)
//! becomes `EINVAL` instead of unwinding into C, which would be undefined behaviour.

#![warn(missing_docs)]

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod cond;
mod condwait;
pub mod mutex;
mod object;
pub mod preload;
pub mod rwlock;
pub mod rwsem;
mod time;

/// The upper 24 bits of a valid tag ("KLK"); the low byte is the kind or policy.
pub const TAG_MAGIC: u32 = 0x4B4C_4B00;
/// The tag `destroy` writes: the magic with no kind, so every later call is `EINVAL`.
pub const TAG_DESTROYED: u32 = TAG_MAGIC | 0xFF;

/// Decodes a tag into its kind number (1..), if the magic is there.
fn tag_kind(tag: u32) -> Option<u32> {
    if tag & !0xFF == TAG_MAGIC {
        Some(tag & 0xFF)
    } else {
        None
    }
}

/// Runs an entry point's body; a panic becomes `EINVAL` instead of unwinding into
/// C. The message has been printed by the panic hook by then.
fn guarded(body: impl FnOnce() -> c_int) -> c_int {
    // AssertUnwindSafe: after a panic the object is only reported as `EINVAL`; the
    // klocks locks check misuse before they change their words, so the lock is left
    // as it was.
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(libc::EINVAL)
}

/// `EINVAL`, with the reason on stderr, when a `KLOCKS_*` setting is invalid: `init`
/// refuses then, with the object untouched, so that a misconfiguration is an error
/// the program sees. (The locks themselves never fail for it: they report it and use
/// the automatic setting, see `klocks::config`.)
fn configured() -> Result<(), c_int> {
    klocks_core::config::check().map_err(|problem| {
        klocks_core::config::report(&problem, "init returns EINVAL");
        libc::EINVAL
    })
}

/// Whether `ptr` is non-null and aligned to 8, as the header's `_Alignas(8)` promises.
fn usable<T>(ptr: *const T) -> bool {
    !ptr.is_null() && (ptr as usize).is_multiple_of(8)
}

/// The version of libklocks, as a NUL-terminated string with static lifetime
/// (`"0.1.0"`).
#[no_mangle]
pub extern "C" fn klocks_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// `klocks_lockdep_class`: names the lock validator's class of the lock at `lock`
/// (`klocks::lockdep::name_class`); 0, or `EINVAL` for a null pointer or a name that
/// is not UTF-8.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn klocks_lockdep_class(lock: *const c_void, name: *const c_char) -> c_int {
    if lock.is_null() || name.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: a NUL-terminated string (caller's contract).
    match unsafe { std::ffi::CStr::from_ptr(name) }.to_str() {
        Ok(name) => {
            klocks_core::lockdep::name_class(lock as usize, name);
            0
        }
        Err(_) => libc::EINVAL,
    }
}

#[cfg(test)]
mod tests {
    /// The header's sizes are this library's sizes: a C program that reserved fewer
    /// bytes than the lock writes would corrupt its neighbours.
    #[test]
    fn header_sizes_match() {
        let header = include_str!("../../include/klocks.h");
        let define = |name: &str| -> usize {
            let line = header
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("klocks.h defines no {name}"));
            line.split_whitespace().nth(2).unwrap().parse().unwrap()
        };
        assert_eq!(define("KLOCKS_MUTEX_SIZE"), super::mutex::MUTEX_SIZE);
        assert_eq!(define("KLOCKS_RWSEM_SIZE"), super::rwsem::RWSEM_SIZE);
        assert_eq!(define("KLOCKS_RWLOCK_SIZE"), super::rwlock::RWLOCK_SIZE);
        assert_eq!(define("KLOCKS_COND_SIZE"), super::cond::COND_SIZE);
        assert_eq!(
            define("KLOCKS_RWLOCK_MAX_READERS"),
            klocks_core::RawRwLock::MAX_READERS as usize
        );
        assert_eq!(
            std::mem::size_of::<super::mutex::klocks_mutex_t>(),
            super::mutex::MUTEX_SIZE
        );
        assert_eq!(
            std::mem::size_of::<super::rwsem::klocks_rwsem_t>(),
            super::rwsem::RWSEM_SIZE
        );
    }

    #[test]
    fn tags_decode() {
        assert_eq!(super::tag_kind(super::TAG_MAGIC | 3), Some(3));
        assert_eq!(super::tag_kind(0), None);
        assert_eq!(super::tag_kind(3), None);
    }
}
