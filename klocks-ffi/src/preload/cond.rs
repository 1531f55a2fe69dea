//! Interposed `pthread_cond_*`: a sequence-counter condition variable.
//!
//! glibc's condvar unlocks and relocks the mutex with its internal functions, which
//! would read a klocks mutex as a glibc one; so while klocks runs the mutexes, the
//! condvars are klocks' too. They unlock and relock through the interposed
//! `pthread_mutex_*` calls, so they work with every mutex, glibc's passed-through
//! ones included. Process-shared condvars stay glibc's (`init` lets glibc write
//! them, which sets their bit in `__wrefs`): another process sharing one may not run
//! klocks, and their mutex is process-shared, so glibc's too.
//!
//! # Cancellation
//!
//! `pthread_cond_wait`, `timedwait` and `clockwait` are cancellation points, as POSIX
//! requires: a thread cancelled while it waits (or that waits with a cancellation
//! pending) re-acquires the mutex, and then its cleanup handlers run. How, and why it
//! is sound to unwind through these `extern "C-unwind"` functions: `condwait`.
//!
//! # Layout
//!
//! A `pthread_cond_t` (48 bytes) is read as [`Cond`]:
//!
//! | bytes | glibc's field | here |
//! |---|---|---|
//! | 0..8 | `__wseq` | a `SeqCondvar`: the `seq` word, then the `waiters` word |
//! | 36..40 | `__wrefs` | glibc's bits: 1 process-shared (then glibc runs it), 2 `CLOCK_MONOTONIC` for `timedwait` |
//!
//! All zero (`PTHREAD_COND_INITIALIZER`) is a private condvar on `CLOCK_REALTIME`,
//! as for glibc, whose `init` sets the same two bits.
//!
//! # The protocol
//!
//! `klocks::condvar::SeqCondvar` with futex calls (`condwait`, shared with the C
//! API's `klocks_cond_t`). Spurious wake-ups return 0, as POSIX allows.

use std::ffi::c_int;
use std::mem::size_of;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use klocks_core::condvar::SeqCondvar;

use libc::{
    clockid_t, pthread_cond_t, pthread_condattr_t, pthread_mutex_t, timespec, CLOCK_MONOTONIC,
    CLOCK_REALTIME, EINVAL, ETIMEDOUT,
};

use super::profile;
use super::route::{pthread_mutex_lock, pthread_mutex_unlock};
use super::time::Deadline;
use super::{config, glibc};
use crate::condwait::{self, Relock};

/// A klocks-managed `pthread_cond_t`; see the module doc.
#[repr(C)]
struct Cond {
    words: SeqCondvar,
    _glibc: [u32; 7],
    flags: AtomicU32,
    _tail: [u32; 2],
}
const _: () = assert!(size_of::<Cond>() == size_of::<pthread_cond_t>());
const _: () = assert!(std::mem::align_of::<Cond>() <= std::mem::align_of::<pthread_cond_t>());

/// `flags`: glibc's `__PTHREAD_COND_SHARED_MASK` and `__PTHREAD_COND_CLOCK_MONOTONIC_MASK`.
const SHARED: u32 = 1;
const MONOTONIC: u32 = 2;

impl Cond {
    /// The clock of `timedwait` deadlines: glibc's bit in `__wrefs` (ours keep it).
    fn clock(&self) -> clockid_t {
        // Relaxed: written by init, which happens-before other calls.
        if self.flags.load(Relaxed) & MONOTONIC != 0 {
            CLOCK_MONOTONIC
        } else {
            CLOCK_REALTIME
        }
    }

    /// The wait (`condwait::wait`, which is a cancellation point).
    fn wait(&self, m: *mut pthread_mutex_t, deadline: Option<Deadline>) -> c_int {
        // SAFETY: `m` is the caller's mutex and the condvar outlives the wait
        // (POSIX's contract for the wait).
        unsafe { condwait::wait(&self.words, Pthread(m), deadline) }
    }
}

/// The interposed mutex a `pthread_cond_t` wait releases and re-takes: through the
/// interposed calls, so glibc's passed-through mutexes work too.
#[derive(Clone, Copy)]
struct Pthread(*mut pthread_mutex_t);

impl Relock for Pthread {
    unsafe fn unlock(self) -> c_int {
        // SAFETY: caller's contract.
        unsafe { pthread_mutex_unlock(self.0) }
    }

    unsafe fn lock(self) -> c_int {
        // SAFETY: caller's contract.
        unsafe { pthread_mutex_lock(self.0) }
    }
}

/// glibc's cancellation state, held off around a wait in glibc's condvar.
mod cancel {
    use std::ffi::c_int;

    /// glibc's value (`<pthread.h>`).
    pub(super) const PTHREAD_CANCEL_DISABLE: c_int = 1;

    extern "C-unwind" {
        pub(super) fn pthread_setcancelstate(state: c_int, old: *mut c_int) -> c_int;
        // May start a pending cancellation's forced unwind, which passes through the
        // caller: hence "C-unwind".
        pub(super) fn pthread_testcancel();
    }
}

/// A condvar wait as the caller made it.
#[derive(Clone, Copy)]
enum GlibcCall {
    Wait,
    /// On the condvar's clock.
    Timed(*const timespec),
    Clock(clockid_t, *const timespec),
}

/// The longest a waiter on a glibc condvar with a klocks mutex sleeps before it
/// returns (spuriously, as POSIX allows): the bound on a wake-up lost to the gap
/// between its release of the mutex and its registration in glibc's condvar.
const GLIBC_CONDVAR_SLICE: std::time::Duration = std::time::Duration::from_millis(10);

/// A wait on a condvar glibc runs (a process-shared one). With a glibc mutex (every
/// process-shared mutex is glibc's), glibc's own wait. With a klocks mutex, glibc's
/// wait would unlock and relock it with glibc's internal functions, reading the klocks
/// lock as a glibc word; so the waiter releases the klocks mutex itself and waits on
/// the condvar with a private glibc mutex of its own (glibc's condvar does not tie
/// itself to one mutex), for at most [`GLIBC_CONDVAR_SLICE`]: a signal that falls
/// between the release and the registration is then late by that much, never lost.
/// Cancellation is held off during glibc's wait (its cleanup would relock the
/// private mutex, not the caller's) and acted on once the caller's mutex is back.
///
/// # Safety
/// POSIX's contract for the wait.
unsafe fn glibc_wait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, call: GlibcCall) -> c_int {
    // SAFETY: caller's contract.
    if !unsafe { super::mutex::is_klocks(m) } {
        // SAFETY: the caller's contract is glibc's.
        let wait = || unsafe {
            match call {
                GlibcCall::Wait => glibc::pthread_cond_wait(c, m),
                GlibcCall::Timed(at) => glibc::pthread_cond_timedwait(c, m, at),
                GlibcCall::Clock(clock, at) => glibc::pthread_cond_clockwait(c, m, clock, at),
            }
        };
        // glibc releases and retakes the mutex inside, unseen by the profile.
        let profiled = || {
            if profile::on() {
                profile::cond_wait(m as usize, wait)
            } else {
                wait()
            }
        };
        // The validator sees the release and the re-take too.
        return if super::lockdep::on() {
            super::lockdep::cond_wait(m, profiled)
        } else {
            profiled()
        };
    }
    // SAFETY: `c` is a live condvar (caller's contract), `at` readable.
    let deadline = match call {
        GlibcCall::Wait => None,
        GlibcCall::Timed(at) => match unsafe { Deadline::new((*c.cast::<Cond>()).clock(), at) } {
            Ok(deadline) => Some(deadline),
            Err(error) => return error,
        },
        // SAFETY: as above.
        GlibcCall::Clock(clock, at) => match unsafe { Deadline::new(clock, at) } {
            Ok(deadline) => Some(deadline),
            Err(error) => return error,
        },
    };
    if deadline.is_some_and(|d| !d.is_valid()) {
        return EINVAL;
    }
    // SAFETY: a glibc mutex of our own, initialised by glibc, used only here.
    let mut private: pthread_mutex_t = unsafe { std::mem::zeroed() };
    let private = std::ptr::addr_of_mut!(private);
    // SAFETY: as above; glibc's calls on our private mutex and the caller's condvar.
    unsafe {
        glibc::pthread_mutex_init(private, std::ptr::null());
        glibc::pthread_mutex_lock(private);
    }
    let mut state = 0;
    // SAFETY: no preconditions.
    unsafe { cancel::pthread_setcancelstate(cancel::PTHREAD_CANCEL_DISABLE, &mut state) };
    // SAFETY: `m` is the caller's mutex, held (POSIX's contract).
    let unlocked = unsafe { super::route::pthread_mutex_unlock(m) };
    let mut timed_out = false;
    if unlocked == 0 {
        let slice = match deadline {
            None => GLIBC_CONDVAR_SLICE,
            Some(d) => d.left().map_or(std::time::Duration::ZERO, |left| {
                left.min(GLIBC_CONDVAR_SLICE)
            }),
        };
        let slice_end = Deadline::after(slice).at;
        // SAFETY: glibc's condvar with our private mutex, held.
        let rc = unsafe { glibc::pthread_cond_clockwait(c, private, CLOCK_MONOTONIC, &slice_end) };
        timed_out = rc == ETIMEDOUT && deadline.is_some_and(|d| d.left().is_none());
        // SAFETY: as above.
        unsafe { super::route::pthread_mutex_lock(m) };
    }
    // SAFETY: ours, held; destroyed unlocked.
    unsafe {
        glibc::pthread_mutex_unlock(private);
        glibc::pthread_mutex_destroy(private);
        cancel::pthread_setcancelstate(state, &mut state);
        cancel::pthread_testcancel();
    }
    match unlocked {
        0 if timed_out => ETIMEDOUT,
        result => result,
    }
}

/// The klocks condvar at `c`, or `None` for one glibc runs: every condvar when
/// klocks does not run the mutexes, and process-shared ones (glibc's `init` marks
/// them in `__wrefs`; the other processes may not run klocks).
///
/// # Safety
/// `c` points to a live `pthread_cond_t`.
unsafe fn ours<'a>(c: *mut pthread_cond_t) -> Option<&'a Cond> {
    config::choice().mutex?;
    // SAFETY: caller's contract; same size and alignment, integer fields only.
    let cond = unsafe { &*c.cast::<Cond>() };
    // Relaxed: written by init, which happens-before other calls.
    (cond.flags.load(Relaxed) & SHARED == 0).then_some(cond)
}

/// `pthread_cond_init`: a klocks condvar, or glibc's for a process-shared one.
///
/// # Safety
/// POSIX's contract for `pthread_cond_init`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_init(
    c: *mut pthread_cond_t,
    attr: *const pthread_condattr_t,
) -> c_int {
    if c.is_null() {
        return EINVAL;
    }
    let (mut clock, mut pshared) = (CLOCK_REALTIME, libc::PTHREAD_PROCESS_PRIVATE);
    // SAFETY: `attr` points to an attribute object when non-null; glibc's getters
    // read it.
    if !attr.is_null()
        && unsafe {
            libc::pthread_condattr_getclock(attr, &mut clock) != 0
                || libc::pthread_condattr_getpshared(attr, &mut pshared) != 0
        }
    {
        return EINVAL;
    }
    if config::choice().mutex.is_none() || pshared != libc::PTHREAD_PROCESS_PRIVATE {
        // SAFETY: the caller's contract is glibc's.
        return unsafe { glibc::pthread_cond_init(c, attr) };
    }
    let flags = if clock == CLOCK_MONOTONIC {
        MONOTONIC
    } else {
        0
    };
    // SAFETY: `c` is writable storage of `Cond`'s size and alignment that no other
    // thread uses during init (POSIX's rule).
    unsafe {
        c.cast::<Cond>().write(Cond {
            words: SeqCondvar::new(),
            _glibc: [0; 7],
            flags: AtomicU32::new(flags),
            _tail: [0; 2],
        })
    };
    0
}

/// `pthread_cond_destroy`: waits until threads woken from the condvar left it.
///
/// # Safety
/// POSIX's contract for `pthread_cond_destroy`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_destroy(c: *mut pthread_cond_t) -> c_int {
    if c.is_null() {
        return EINVAL;
    }
    // SAFETY: caller's contract.
    match unsafe { ours(c) } {
        Some(cond) => {
            condwait::destroy(&cond.words);
            0
        }
        // SAFETY: the caller's contract is glibc's.
        None => unsafe { glibc::pthread_cond_destroy(c) },
    }
}

/// `pthread_cond_wait`.
///
/// # Safety
/// POSIX's contract for `pthread_cond_wait`.
#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
) -> c_int {
    if c.is_null() || m.is_null() {
        return EINVAL;
    }
    // SAFETY: caller's contract.
    match unsafe { ours(c) } {
        Some(cond) => cond.wait(m, None),
        // SAFETY: the caller's contract is glibc's.
        None => unsafe { glibc_wait(c, m, GlibcCall::Wait) },
    }
}

/// `pthread_cond_timedwait`: a deadline on the condvar's clock (`CLOCK_REALTIME`
/// unless its attributes chose `CLOCK_MONOTONIC`).
///
/// # Safety
/// POSIX's contract for `pthread_cond_timedwait`.
#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_timedwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    at: *const timespec,
) -> c_int {
    if c.is_null() || m.is_null() {
        return EINVAL;
    }
    // SAFETY: caller's contract.
    let Some(cond) = (unsafe { ours(c) }) else {
        // SAFETY: the caller's contract is glibc's.
        return unsafe { glibc_wait(c, m, GlibcCall::Timed(at)) };
    };
    // SAFETY: `at` is readable (caller's contract).
    match unsafe { Deadline::new(cond.clock(), at) } {
        Ok(deadline) => cond.wait(m, Some(deadline)),
        Err(error) => error,
    }
}

/// `pthread_cond_clockwait` (glibc 2.30): a deadline on the caller's clock.
///
/// # Safety
/// POSIX's contract for `pthread_cond_clockwait`.
#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_clockwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clock: clockid_t,
    at: *const timespec,
) -> c_int {
    if c.is_null() || m.is_null() {
        return EINVAL;
    }
    // SAFETY: caller's contract.
    let Some(cond) = (unsafe { ours(c) }) else {
        // SAFETY: the caller's contract is glibc's.
        return unsafe { glibc_wait(c, m, GlibcCall::Clock(clock, at)) };
    };
    // SAFETY: `at` is readable (caller's contract).
    match unsafe { Deadline::new(clock, at) } {
        Ok(deadline) => cond.wait(m, Some(deadline)),
        Err(error) => error,
    }
}

/// `pthread_cond_signal`: wakes at least one blocked waiter, if any.
///
/// # Safety
/// POSIX's contract for `pthread_cond_signal`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    if c.is_null() {
        return EINVAL;
    }
    // SAFETY: caller's contract.
    match unsafe { ours(c) } {
        Some(cond) => {
            condwait::notify(&cond.words, 1);
            0
        }
        // SAFETY: the caller's contract is glibc's.
        None => unsafe { glibc::pthread_cond_signal(c) },
    }
}

/// `pthread_cond_broadcast`: wakes every blocked waiter.
///
/// # Safety
/// POSIX's contract for `pthread_cond_broadcast`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    if c.is_null() {
        return EINVAL;
    }
    // SAFETY: caller's contract.
    match unsafe { ours(c) } {
        Some(cond) => {
            condwait::notify(&cond.words, i32::MAX);
            0
        }
        // SAFETY: the caller's contract is glibc's.
        None => unsafe { glibc::pthread_cond_broadcast(c) },
    }
}
