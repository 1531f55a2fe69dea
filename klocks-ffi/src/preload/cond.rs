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
//! pending) re-acquires the mutex, and then its cleanup handlers run. It is done as
//! glibc's own blocking calls do it (`__pthread_enable_asynccancel`): around the one
//! futex system call, and nowhere else, the thread's cancel type is asynchronous, so
//! that `pthread_cancel` signals it and glibc's handler starts the forced unwind from
//! the system call; a glibc cleanup buffer (`_pthread_cleanup_push`, which glibc's
//! unwinder runs when it leaves this frame) first leaves the condvar and relocks the
//! mutex. Unwinding through Rust frames is sound only as glibc's C frames are
//! unwound: the interposed functions are `extern "C-unwind"`, and no frame between
//! them and the system call holds a value with a destructor, so none has a landing
//! pad or a language-specific table (what a forced unwind through a Rust frame may
//! not meet); the system call itself is inline assembly on x86-64 and AArch64, so
//! the asynchronous window contains no call a personality routine would have to
//! know about.
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
//! `klocks::condvar::SeqCondvar`, whose module doc gives it with its no-lost-wake-up
//! argument, and whose loom models check it; this layer adds the futex calls, with
//! `FUTEX_WAIT_BITSET` for an absolute deadline on either clock. Spurious wake-ups (a signal meant for an earlier waiter,
//! a timeout racing a signal, a Unix signal) return 0, as POSIX allows.

use std::ffi::c_int;
use std::mem::size_of;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use klocks_core::condvar::SeqCondvar;

use libc::{
    clockid_t, pthread_cond_t, pthread_condattr_t, pthread_mutex_t, timespec, CLOCK_MONOTONIC,
    CLOCK_REALTIME, EINVAL, ETIMEDOUT,
};

use super::mutex::{pthread_mutex_lock, pthread_mutex_unlock};
use super::profile;
use super::time::Deadline;
use super::{config, glibc};

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

/// The futex word operations (private: process-shared condvars are glibc's).
mod futex {
    use super::*;

    /// Sleeps while `*word == value`, until woken or `deadline`; whether it timed out.
    pub(super) fn wait(word: &AtomicU32, value: u32, deadline: Option<&Deadline>) -> bool {
        let mut op = libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG;
        if deadline.is_some_and(|d| d.clock == CLOCK_REALTIME) {
            op |= libc::FUTEX_CLOCK_REALTIME;
        }
        let at = deadline.map_or(std::ptr::null(), |d| &d.at as *const timespec);
        // SAFETY: `word` is a live, aligned u32; FUTEX_WAIT_BITSET reads it and takes
        // `at` as an absolute time on the chosen clock (null: no timeout).
        let done = unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                op,
                value,
                at,
                std::ptr::null::<u32>(),
                libc::FUTEX_BITSET_MATCH_ANY,
            )
        };
        done == -1 && std::io::Error::last_os_error().raw_os_error() == Some(ETIMEDOUT)
    }

    /// Wakes up to `count` threads sleeping on the word at `word`, which may be gone
    /// (a private futex wake only hashes the address).
    pub(super) fn wake(word: *const AtomicU32, count: i32) {
        // SAFETY: see above; FUTEX_WAKE never dereferences the address in userspace.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.cast::<u32>(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                count,
            )
        };
    }
}

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

    /// Leaves after waiting: the last one out wakes a waiting `destroy`.
    fn leave(&self) {
        // Taken before `leave`: once it returns true the condvar may be freed, and
        // only this address is used (as `Arc`'s drop, nothing is read through `self`
        // after the decrement).
        let waiters: *const AtomicU32 = self.words.waiters_word();
        if self.words.leave() {
            futex::wake(waiters, i32::MAX);
        }
    }

    /// The wait; no value with a destructor may live in this frame (see the module
    /// doc, "Cancellation").
    fn wait(&self, m: *mut pthread_mutex_t, deadline: Option<Deadline>) -> c_int {
        if deadline.is_some_and(|d| !d.is_valid()) {
            return EINVAL;
        }
        // A cancellation already pending is acted on here, with the mutex held.
        // SAFETY: no preconditions; it may unwind (a forced unwind), which this frame
        // allows (module doc).
        unsafe { cancel::pthread_testcancel() };
        let seq = self.words.register();
        // SAFETY: `m` is the caller's mutex (POSIX's contract for the wait).
        let unlocked = unsafe { pthread_mutex_unlock(m) };
        if unlocked != 0 {
            self.leave();
            return unlocked;
        }
        let timed_out = deadline.is_some_and(|d| d.at.tv_sec < 0)
            || cancel::wait(self, m, seq, deadline.as_ref());
        self.leave();
        // SAFETY: as above.
        match unsafe { pthread_mutex_lock(m) } {
            0 if timed_out => ETIMEDOUT,
            relocked => relocked,
        }
    }

    fn notify(&self, count: i32) {
        if self.words.notify() {
            futex::wake(self.words.seq_word(), count);
        }
    }

    fn destroy(&self) {
        self.words.begin_destroy();
        while let Err(waiting) = self.words.drained() {
            futex::wait(self.words.waiters_word(), waiting, None);
        }
    }
}

/// The cancellable futex wait (module doc, "Cancellation").
mod cancel {
    use std::ffi::{c_int, c_void};

    use super::{Cond, Deadline, CLOCK_REALTIME, ETIMEDOUT};
    use crate::preload::mutex::pthread_mutex_lock;
    use libc::pthread_mutex_t;

    /// glibc's `struct _pthread_cleanup_buffer`.
    #[repr(C)]
    struct CleanupBuffer {
        routine: unsafe extern "C" fn(*mut c_void),
        arg: *mut c_void,
        canceltype: c_int,
        prev: *mut CleanupBuffer,
    }

    /// glibc's values (`<pthread.h>`).
    const PTHREAD_CANCEL_ASYNCHRONOUS: c_int = 1;

    /// glibc's value (`<pthread.h>`).
    pub(super) const PTHREAD_CANCEL_DISABLE: c_int = 1;

    extern "C-unwind" {
        pub(super) fn pthread_setcancelstate(state: c_int, old: *mut c_int) -> c_int;
        // These may start a cancellation's forced unwind (a pending cancellation is
        // acted on when the type turns asynchronous, or at a test), which passes
        // through the caller: hence "C-unwind".
        pub(super) fn pthread_testcancel();
        fn pthread_setcanceltype(kind: c_int, old: *mut c_int) -> c_int;
        fn _pthread_cleanup_push(
            buffer: *mut CleanupBuffer,
            routine: unsafe extern "C" fn(*mut c_void),
            arg: *mut c_void,
        );
        fn _pthread_cleanup_pop(buffer: *mut CleanupBuffer, execute: c_int);
    }

    /// What a cancelled waiter must undo before its own cleanup handlers run.
    struct Waiting {
        cond: *const Cond,
        mutex: *mut pthread_mutex_t,
    }

    /// Run by glibc's unwinder when a cancellation leaves [`wait`]'s frame: leave the
    /// condvar, relock the mutex (POSIX: the cleanup handlers see it held).
    unsafe extern "C" fn relock(arg: *mut c_void) {
        // SAFETY: `arg` is the `Waiting` in `wait`'s frame, which the unwinder has not
        // popped yet when it calls this; the condvar and mutex outlive the wait.
        unsafe {
            let waiting = &*arg.cast::<Waiting>();
            (*waiting.cond).leave();
            pthread_mutex_lock(waiting.mutex);
        }
    }

    /// Sleeps on the condvar's sequence word while it reads `seq`, until woken,
    /// `deadline` or a cancellation (which does not return); whether it timed out.
    pub(super) fn wait(
        cond: &Cond,
        mutex: *mut pthread_mutex_t,
        seq: u32,
        deadline: Option<&Deadline>,
    ) -> bool {
        let waiting = Waiting { cond, mutex };
        let mut buffer = std::mem::MaybeUninit::<CleanupBuffer>::uninit();
        let mut kind = 0;
        let mut op = libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG;
        if deadline.is_some_and(|d| d.clock == CLOCK_REALTIME) {
            op |= libc::FUTEX_CLOCK_REALTIME;
        }
        let at = deadline.map_or(std::ptr::null(), |d| &d.at as *const libc::timespec);
        let word = cond.words.seq_word().as_ptr();
        // SAFETY: glibc's cleanup-buffer protocol: pushed and popped in this frame,
        // which outlives it; `waiting` lives as long. The type is restored before the
        // pop. In between, only the system call runs (the asynchronous window).
        let rc = unsafe {
            _pthread_cleanup_push(
                buffer.as_mut_ptr(),
                relock,
                std::ptr::addr_of!(waiting).cast_mut().cast(),
            );
            if ASYNC_WINDOW {
                pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &mut kind);
            }
            let rc = futex_wait_bitset(word, op, seq, at);
            if ASYNC_WINDOW {
                pthread_setcanceltype(kind, &mut kind);
            }
            _pthread_cleanup_pop(buffer.as_mut_ptr(), 0);
            rc
        };
        rc == -(ETIMEDOUT as isize)
    }

    /// `futex(word, op, value, at, NULL, FUTEX_BITSET_MATCH_ANY)` as one instruction:
    /// returns the kernel's result (a negative errno on failure).
    ///
    /// # Safety
    /// `word` points to a live u32; `at` is null or a live timespec.
    #[cfg(target_arch = "x86_64")]
    unsafe fn futex_wait_bitset(
        word: *mut u32,
        op: c_int,
        value: u32,
        at: *const libc::timespec,
    ) -> isize {
        let rc: isize;
        // SAFETY: the Linux x86-64 system call ABI; the futex call reads `*word` and
        // `*at` only (caller's contract).
        unsafe {
            std::arch::asm!(
                "syscall",
                inlateout("rax") libc::SYS_futex as isize => rc,
                in("rdi") word,
                in("rsi") op as isize,
                in("rdx") value as isize,
                in("r10") at,
                in("r8") 0isize,
                in("r9") libc::FUTEX_BITSET_MATCH_ANY as isize,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        rc
    }

    /// See the x86-64 version.
    ///
    /// # Safety
    /// As there.
    #[cfg(target_arch = "aarch64")]
    unsafe fn futex_wait_bitset(
        word: *mut u32,
        op: c_int,
        value: u32,
        at: *const libc::timespec,
    ) -> isize {
        let rc: isize;
        // SAFETY: the Linux AArch64 system call ABI, as above.
        unsafe {
            std::arch::asm!(
                "svc 0",
                in("x8") libc::SYS_futex as isize,
                inlateout("x0") word as isize => rc,
                in("x1") op as isize,
                in("x2") value as isize,
                in("x3") at,
                in("x4") 0isize,
                in("x5") libc::FUTEX_BITSET_MATCH_ANY as isize,
                options(nostack),
            );
        }
        rc
    }

    /// Elsewhere through glibc's `syscall`, which (declared `nounwind` by the `libc`
    /// crate) a cancellation must not unwind through: there the type stays deferred
    /// and the wait is not a cancellation point ([`ASYNC_WINDOW`]).
    ///
    /// # Safety
    /// As for the x86-64 version.
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    unsafe fn futex_wait_bitset(
        word: *mut u32,
        op: c_int,
        value: u32,
        at: *const libc::timespec,
    ) -> isize {
        // SAFETY: caller's contract.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_futex,
                word,
                op,
                value,
                at,
                std::ptr::null::<u32>(),
                libc::FUTEX_BITSET_MATCH_ANY,
            )
        };
        if rc == -1 {
            // SAFETY: glibc's thread-local errno.
            -(unsafe { *libc::__errno_location() } as isize)
        } else {
            rc as isize
        }
    }

    /// Whether the system call above may be the asynchronous window.
    const ASYNC_WINDOW: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));
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
        return if profile::on() {
            profile::cond_wait(m as usize, wait)
        } else {
            wait()
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
    let unlocked = unsafe { super::mutex::pthread_mutex_unlock(m) };
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
        unsafe { super::mutex::pthread_mutex_lock(m) };
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
            cond.destroy();
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
            cond.notify(1);
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
            cond.notify(i32::MAX);
            0
        }
        // SAFETY: the caller's contract is glibc's.
        None => unsafe { glibc::pthread_cond_broadcast(c) },
    }
}
