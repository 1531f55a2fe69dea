//! `klocks_cond_t`: klocks' condition variable for the C API, usable with every
//! `klocks_mutex_t` kind.
//!
//! It is the interposer's condvar (`condwait`: `klocks::condvar::SeqCondvar` with
//! futex calls, a cancellation point as `pthread_cond_wait`), waiting with a
//! `klocks_mutex_t`, which it releases and re-takes with `klocks_mutex_unlock` and
//! `klocks_mutex_lock`, so a wait on a mutex the caller does not hold answers
//! `EPERM` from the unlock.
//!
//! # Layout and the clock
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | the tag: the clock of `timedwait` deadlines ([`Clock`]), or 0 (`KLOCKS_COND_INITIALIZER`: `CLOCK_REALTIME`) |
//! | 4..8 | unused |
//! | 8..16 | the `SeqCondvar` (all zero: no waiter) |
//! | 16..24 | room to grow |
//!
//! The waiting entry points are `extern "C-unwind"` and do not run inside
//! [`guarded`](crate::guarded): a cancellation's forced unwind must pass through them
//! (`condwait`'s module doc says why that is sound), and `catch_unwind` would stop
//! it. Nothing they run panics: the tag check and `condwait::wait` are atomics and
//! arithmetic, and the mutex calls are guarded entry points that answer errno values.

use std::ffi::c_int;
use std::mem::{align_of, size_of};
use std::ptr;

use klocks_core::condvar::SeqCondvar;
use libc::{clockid_t, timespec, CLOCK_MONOTONIC, CLOCK_REALTIME, EINVAL};

use crate::condwait::{self, Relock};
use crate::mutex::{klocks_mutex_lock, klocks_mutex_t, klocks_mutex_unlock};
use crate::object::{Object, Tag};
use crate::time::Deadline;

/// `sizeof(klocks_cond_t)`: 8 bytes of header, 8 for the `SeqCondvar`, 8 to grow.
pub const COND_SIZE: usize = 24;
const BODY_WORDS: usize = (COND_SIZE - 8) / 8;

/// The C `klocks_cond_t`: opaque, caller-owned, 24 bytes aligned to 8.
#[allow(non_camel_case_types)]
pub type klocks_cond_t = Object<BODY_WORDS>;

const _: () = assert!(klocks_cond_t::fits::<SeqCondvar>());
const _: () = assert!(size_of::<klocks_cond_t>() == COND_SIZE);
const _: () = assert!(align_of::<klocks_cond_t>() == 8);

/// The clock of a condvar's `timedwait` deadlines, kept in its tag.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Clock {
    Realtime = 1,
    Monotonic = 2,
}

impl Tag for Clock {
    /// `KLOCKS_COND_INITIALIZER`: zero bytes are a condvar on `CLOCK_REALTIME` with
    /// no waiter (`SeqCondvar::new()` is zero bytes), as `PTHREAD_COND_INITIALIZER`.
    const ZEROED: Option<Clock> = Some(Clock::Realtime);

    fn from_raw(raw: u32) -> Option<Clock> {
        match raw {
            1 => Some(Clock::Realtime),
            2 => Some(Clock::Monotonic),
            _ => None,
        }
    }

    fn raw(self) -> u32 {
        self as u32
    }
}

impl Clock {
    /// The `clockid_t`.
    fn id(self) -> clockid_t {
        match self {
            Clock::Realtime => CLOCK_REALTIME,
            Clock::Monotonic => CLOCK_MONOTONIC,
        }
    }

    /// The clock `id` names, if a condvar can wait on it.
    fn from_id(id: clockid_t) -> Option<Clock> {
        match id {
            CLOCK_REALTIME => Some(Clock::Realtime),
            CLOCK_MONOTONIC => Some(Clock::Monotonic),
            _ => None,
        }
    }
}

/// The condvar in `*c`'s body.
///
/// # Safety
/// `c` points to a live `klocks_cond_t` whose tag decoded (`init` wrote a
/// `SeqCondvar` there, or it is zero bytes, which is `SeqCondvar::new()`), not moved
/// or freed while the reference lives.
unsafe fn words_of<'a>(c: *const klocks_cond_t) -> &'a SeqCondvar {
    // SAFETY: caller's contract; the body is aligned to 8 and large enough (asserts
    // above). Its atomics give interior mutability.
    unsafe { &*klocks_cond_t::body(c).cast::<SeqCondvar>() }
}

/// The `klocks_mutex_t` a wait releases and re-takes.
#[derive(Clone, Copy)]
struct CMutex(*mut klocks_mutex_t);

impl Relock for CMutex {
    unsafe fn unlock(self) -> c_int {
        // SAFETY: caller's contract; the entry point checks the object itself.
        unsafe { klocks_mutex_unlock(self.0) }
    }

    unsafe fn lock(self) -> c_int {
        // SAFETY: as above.
        unsafe { klocks_mutex_lock(self.0) }
    }
}

/// Writes an unlocked condvar on `clock` at `c` (`Object::init`'s checks).
///
/// # Safety
/// `c` is null or points to writable storage of `klocks_cond_t`'s size that no
/// other thread uses during the call.
unsafe fn init(c: *mut klocks_cond_t, clock: Clock) -> c_int {
    // SAFETY: `init` passes the body, large and aligned enough, ours to write.
    let write = |body: *mut u8, _: Clock| unsafe { ptr::write(body.cast(), SeqCondvar::new()) };
    // SAFETY: caller's contract.
    unsafe { klocks_cond_t::init(c, clock as c_int, write) }
}

/// Initialises `*c` as a condvar whose `timedwait` deadlines are on
/// `CLOCK_REALTIME`. See `include/klocks.h`.
///
/// # Safety
/// `c` is null or points to writable storage of `klocks_cond_t`'s size that no
/// other thread uses during the call.
#[no_mangle]
pub unsafe extern "C" fn klocks_cond_init(c: *mut klocks_cond_t) -> c_int {
    // SAFETY: caller's contract.
    unsafe { init(c, Clock::Realtime) }
}

/// Initialises `*c` as a condvar whose `timedwait` deadlines are on `clock`
/// (`CLOCK_REALTIME` or `CLOCK_MONOTONIC`; `EINVAL` for another). See
/// `include/klocks.h`.
///
/// # Safety
/// As for [`klocks_cond_init`].
#[no_mangle]
pub unsafe extern "C" fn klocks_cond_init_clock(c: *mut klocks_cond_t, clock: clockid_t) -> c_int {
    match Clock::from_id(clock) {
        // SAFETY: caller's contract.
        Some(clock) => unsafe { init(c, clock) },
        None => EINVAL,
    }
}

/// Destroys a condvar once the threads woken from it have left it; later calls on
/// it return `EINVAL` until it is initialised again. See `include/klocks.h`.
///
/// # Safety
/// `c` is null or points to a `klocks_cond_t`-sized object; no thread waits on it
/// or starts to.
#[no_mangle]
pub unsafe extern "C" fn klocks_cond_destroy(c: *mut klocks_cond_t) -> c_int {
    let drained = |_: Clock| {
        // SAFETY: `destroy` checked the tag.
        condwait::destroy(unsafe { words_of(c) });
        false
    };
    // SAFETY: caller's contract.
    unsafe { klocks_cond_t::destroy(c, drained) }
}

/// The wait: `EINVAL` for a condvar that is not initialised, else `condwait::wait`
/// with the deadline on the condvar's clock.
///
/// # Safety
/// `c` and `m` are null or point to live objects of their types; `abstime` is null
/// or points to a readable `timespec`.
unsafe fn wait(
    c: *mut klocks_cond_t,
    m: *mut klocks_mutex_t,
    abstime: Option<*const timespec>,
) -> c_int {
    // Unguarded (module doc): `kind` only reads the tag.
    // SAFETY: caller's contract.
    let Some(clock) = (unsafe { klocks_cond_t::kind::<Clock>(c) }) else {
        return EINVAL;
    };
    let deadline = match abstime {
        None => None,
        // SAFETY: `at` is null or readable (caller's contract).
        Some(at) => match unsafe { Deadline::new(clock.id(), at) } {
            Ok(deadline) => Some(deadline),
            Err(error) => return error,
        },
    };
    // SAFETY: the tag decoded; `m` is checked by the mutex calls themselves.
    unsafe { condwait::wait(words_of(c), CMutex(m), deadline) }
}

/// Releases `*m`, waits until signalled, and re-takes `*m`. A cancellation point.
/// See `include/klocks.h`.
///
/// # Safety
/// `c` and `m` are null or point to live objects of their types, not moved or freed
/// during the call.
#[no_mangle]
pub unsafe extern "C-unwind" fn klocks_cond_wait(
    c: *mut klocks_cond_t,
    m: *mut klocks_mutex_t,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe { wait(c, m, None) }
}

/// As [`klocks_cond_wait`], until the time `*abstime` on the condvar's clock
/// (`ETIMEDOUT`). See `include/klocks.h`.
///
/// # Safety
/// As for [`klocks_cond_wait`]; `abstime` is null or points to a readable `timespec`.
#[no_mangle]
pub unsafe extern "C-unwind" fn klocks_cond_timedwait(
    c: *mut klocks_cond_t,
    m: *mut klocks_mutex_t,
    abstime: *const timespec,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe { wait(c, m, Some(abstime)) }
}

/// Wakes at least one waiter, if any. See `include/klocks.h`.
///
/// # Safety
/// `c` is null or points to a live `klocks_cond_t`.
#[no_mangle]
pub unsafe extern "C" fn klocks_cond_signal(c: *mut klocks_cond_t) -> c_int {
    let op = |_: Clock| {
        // SAFETY: caller's contract; `call` checked the tag.
        condwait::notify(unsafe { words_of(c) }, 1);
        0
    };
    // SAFETY: caller's contract.
    unsafe { klocks_cond_t::call(c, op) }
}

/// Wakes every waiter. See `include/klocks.h`.
///
/// # Safety
/// `c` is null or points to a live `klocks_cond_t`.
#[no_mangle]
pub unsafe extern "C" fn klocks_cond_broadcast(c: *mut klocks_cond_t) -> c_int {
    let op = |_: Clock| {
        // SAFETY: caller's contract; `call` checked the tag.
        condwait::notify(unsafe { words_of(c) }, i32::MAX);
        0
    };
    // SAFETY: caller's contract.
    unsafe { klocks_cond_t::call(c, op) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `KLOCKS_COND_INITIALIZER` relies on it.
    #[test]
    fn a_condvar_without_waiters_is_zero_bytes() {
        let words = SeqCondvar::new();
        assert_eq!(size_of::<SeqCondvar>(), 8);
        // Relaxed: a fresh local.
        assert_eq!(
            words.seq_word().load(std::sync::atomic::Ordering::Relaxed),
            0
        );
        assert_eq!(
            words
                .waiters_word()
                .load(std::sync::atomic::Ordering::Relaxed),
            0
        );
    }

    #[test]
    fn clocks_round_trip() {
        for clock in [Clock::Realtime, Clock::Monotonic] {
            assert_eq!(Clock::from_id(clock.id()), Some(clock));
            assert_eq!(Clock::from_raw(clock.raw()), Some(clock));
        }
        assert_eq!(Clock::from_id(libc::CLOCK_PROCESS_CPUTIME_ID), None);
    }
}
