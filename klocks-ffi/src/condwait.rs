//! The waiting half of klocks' condition variable, shared by the interposer's
//! `pthread_cond_t` (`preload::cond`) and the C API's `klocks_cond_t` (`cond`):
//! `klocks::condvar::SeqCondvar`'s words, waited on with futex calls, around a
//! mutex that each user releases and re-takes in its own way ([`Relock`]).
//!
//! # The protocol
//!
//! `klocks::condvar::SeqCondvar`, whose module doc gives it with its no-lost-wake-up
//! argument, and whose loom models check it; this layer adds the futex calls, with
//! `FUTEX_WAIT_BITSET` for an absolute deadline on either clock. Spurious wake-ups (a
//! signal meant for an earlier waiter, a timeout racing a signal, a Unix signal)
//! return 0, as POSIX allows.
//!
//! # Cancellation
//!
//! A wait is a cancellation point, as POSIX requires of `pthread_cond_wait`: a thread
//! cancelled while it waits (or that waits with a cancellation pending) re-acquires
//! the mutex, and then its cleanup handlers run. It is done as glibc's own blocking
//! calls do it (`__pthread_enable_asynccancel`): around the one futex system call,
//! and nowhere else, the thread's cancel type is asynchronous, so that
//! `pthread_cancel` signals it and glibc's handler starts the forced unwind from the
//! system call; a glibc cleanup buffer (`_pthread_cleanup_push`, which glibc's
//! unwinder runs when it leaves this frame) first leaves the condvar and relocks the
//! mutex. Unwinding through Rust frames is sound only as glibc's C frames are
//! unwound: the entry points that wait are `extern "C-unwind"` and call no
//! `catch_unwind` around the wait, and no frame between them and the system call
//! holds a value with a destructor, so none has a landing pad or a
//! language-specific table (what a forced unwind through a Rust frame may not
//! meet); the system call itself is inline assembly on x86-64 and AArch64, so the
//! asynchronous window contains no call a personality routine would have to know
//! about. Nothing in the wait panics (atomics, arithmetic, and mutex calls that
//! answer errno values), so no Rust panic can unwind through those entry points
//! either.

use std::ffi::c_int;
use std::sync::atomic::AtomicU32;

use klocks_core::condvar::SeqCondvar;
use libc::{timespec, CLOCK_REALTIME, EINVAL, ETIMEDOUT};

use crate::time::Deadline;

/// The mutex a condvar wait releases before it sleeps and re-takes after.
pub(crate) trait Relock: Copy {
    /// Releases the mutex the caller holds: 0, or an errno value (then the wait
    /// returns it at once).
    ///
    /// # Safety
    /// The mutex is live for the call.
    unsafe fn unlock(self) -> c_int;

    /// Takes the mutex again: 0, or an errno value. Must not unwind (it also runs
    /// from a cancellation's cleanup).
    ///
    /// # Safety
    /// As for [`unlock`](Self::unlock).
    unsafe fn lock(self) -> c_int;
}

/// The futex word operations (private: process-shared condvars are glibc's, and
/// `klocks_cond_t` is not process-shared).
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

/// Leaves after waiting: the last one out wakes a waiting [`destroy`].
pub(crate) fn leave(words: &SeqCondvar) {
    // Taken before `leave`: once it returns true the condvar may be freed, and only
    // this address is used (as `Arc`'s drop, nothing is read through `words` after
    // the decrement).
    let waiters: *const AtomicU32 = words.waiters_word();
    if words.leave() {
        futex::wake(waiters, i32::MAX);
    }
}

/// Waits on `words` with `mutex`, which the caller holds: releases it, sleeps until
/// notified, `deadline` or a cancellation (module doc), and re-takes it. 0 (also for
/// a spurious wake-up), `ETIMEDOUT`, `EINVAL` for malformed nanoseconds, or the
/// errno value of the mutex's unlock or relock. No value with a destructor may live
/// in this frame (module doc, "Cancellation").
///
/// # Safety
/// `mutex` is live for the call; the condvar outlives the wait.
pub(crate) unsafe fn wait<M: Relock>(
    words: &SeqCondvar,
    mutex: M,
    deadline: Option<Deadline>,
) -> c_int {
    if deadline.is_some_and(|d| !d.is_valid()) {
        return EINVAL;
    }
    // A cancellation already pending is acted on here, with the mutex held.
    // SAFETY: no preconditions; it may unwind (a forced unwind), which this frame
    // allows (module doc).
    unsafe { cancel::pthread_testcancel() };
    let seq = words.register();
    // SAFETY: caller's contract.
    let unlocked = unsafe { mutex.unlock() };
    if unlocked != 0 {
        leave(words);
        return unlocked;
    }
    let timed_out = deadline.is_some_and(|d| d.at.tv_sec < 0)
        || cancel::wait(words, mutex, seq, deadline.as_ref());
    leave(words);
    // SAFETY: as above.
    match unsafe { mutex.lock() } {
        0 if timed_out => ETIMEDOUT,
        relocked => relocked,
    }
}

/// Wakes up to `count` waiters (`i32::MAX`: all), if any registered.
pub(crate) fn notify(words: &SeqCondvar, count: i32) {
    if words.notify() {
        futex::wake(words.seq_word(), count);
    }
}

/// Refuses new waiters' registrations as `SeqCondvar::begin_destroy` does and
/// returns once the threads woken from the condvar have left it (POSIX allows
/// destroying a condvar right after a broadcast).
pub(crate) fn destroy(words: &SeqCondvar) {
    words.begin_destroy();
    while let Err(waiting) = words.drained() {
        futex::wait(words.waiters_word(), waiting, None);
    }
}

/// The cancellable futex wait (module doc, "Cancellation").
mod cancel {
    use std::ffi::{c_int, c_void};

    use klocks_core::condvar::SeqCondvar;

    use super::{leave, Deadline, Relock, CLOCK_REALTIME, ETIMEDOUT};

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

    extern "C-unwind" {
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
    struct Waiting<M> {
        words: *const SeqCondvar,
        mutex: M,
    }

    /// Run by glibc's unwinder when a cancellation leaves [`wait`]'s frame: leave the
    /// condvar, relock the mutex (POSIX: the cleanup handlers see it held).
    unsafe extern "C" fn relock<M: Relock>(arg: *mut c_void) {
        // SAFETY: `arg` is the `Waiting` in `wait`'s frame, which the unwinder has not
        // popped yet when it calls this; the condvar and mutex outlive the wait.
        unsafe {
            let waiting = &*arg.cast::<Waiting<M>>();
            leave(&*waiting.words);
            waiting.mutex.lock();
        }
    }

    /// Sleeps on the condvar's sequence word while it reads `seq`, until woken,
    /// `deadline` or a cancellation (which does not return); whether it timed out.
    pub(super) fn wait<M: Relock>(
        words: &SeqCondvar,
        mutex: M,
        seq: u32,
        deadline: Option<&Deadline>,
    ) -> bool {
        let waiting = Waiting { words, mutex };
        let mut buffer = std::mem::MaybeUninit::<CleanupBuffer>::uninit();
        let mut kind = 0;
        let mut op = libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG;
        if deadline.is_some_and(|d| d.clock == CLOCK_REALTIME) {
            op |= libc::FUTEX_CLOCK_REALTIME;
        }
        let at = deadline.map_or(std::ptr::null(), |d| &d.at as *const libc::timespec);
        let word = words.seq_word().as_ptr();
        // SAFETY: glibc's cleanup-buffer protocol: pushed and popped in this frame,
        // which outlives it; `waiting` lives as long. The type is restored before the
        // pop. In between, only the system call runs (the asynchronous window).
        let rc = unsafe {
            _pthread_cleanup_push(
                buffer.as_mut_ptr(),
                relock::<M>,
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
