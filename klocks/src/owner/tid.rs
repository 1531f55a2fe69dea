//! The calling thread's kernel thread id, the owner id in every lock word that keeps
//! one: read from glibc's thread descriptor where the `glibc-tid` feature found it,
//! else cached in a thread-local that a fork child forgets.

use super::fork_child::at_fork_child;
use crate::config::resolved::Resolved;
use std::cell::Cell;

std::thread_local! {
    /// The thread's tid, 0 until asked. No destructor: readable at any time,
    /// also from the fork handler.
    static TID: Cell<u32> = const { Cell::new(0) };
}

/// The calling thread's kernel thread id (`gettid`), cached in a thread-local.
#[cfg(not(all(feature = "glibc-tid", target_os = "linux", target_env = "gnu")))]
#[inline]
pub fn current_tid() -> u32 {
    cached_tid()
}

/// The calling thread's kernel thread id (`gettid`): read from glibc's thread
/// descriptor once [`calibrate_glibc_tid`](super::calibrate_glibc_tid) found it,
/// else cached in a thread-local (out of line: a `__tls_get_addr` call would make
/// every lock path that inlines this larger).
#[cfg(all(feature = "glibc-tid", target_os = "linux", target_env = "gnu"))]
#[inline]
pub fn current_tid() -> u32 {
    #[cold]
    #[inline(never)]
    fn fallback() -> u32 {
        cached_tid()
    }
    super::glibc_tid::read().unwrap_or_else(fallback)
}

/// The calling thread's kernel thread id if it can be read without a call: from
/// glibc's thread descriptor once calibrated (`None` before that, or if not found).
/// For a fast path that must stay a leaf (no stack frame), and that takes its general
/// path on `None`.
#[cfg(all(feature = "glibc-tid", target_os = "linux", target_env = "gnu"))]
#[inline(always)]
pub fn current_tid_inline() -> Option<u32> {
    super::glibc_tid::read()
}

/// The calling thread's kernel thread id: always, from the thread-local cache (inline
/// in an executable; in a shared library a thread-local is a `__tls_get_addr` call,
/// which the `glibc-tid` feature avoids).
#[cfg(not(all(feature = "glibc-tid", target_os = "linux", target_env = "gnu")))]
#[inline(always)]
pub fn current_tid_inline() -> Option<u32> {
    Some(cached_tid())
}

#[inline(always)]
fn cached_tid() -> u32 {
    TID.with(|tid| match tid.get() {
        0 => {
            let fresh = gettid();
            tid.set(fresh);
            fresh
        }
        cached => cached,
    })
}

#[cold]
fn gettid() -> u32 {
    // The cache must be dropped in a fork child before the child can use it.
    static FORGET_IN_CHILD: Resolved = Resolved::new();
    at_fork_child(&FORGET_IN_CHILD, forget_tid_in_child);
    // SAFETY: gettid has no preconditions and cannot fail.
    let tid = unsafe { libc::gettid() };
    tid as u32
}

/// In a fork child: the forking thread's tid in the parent, as its cache held it
/// (0 if the forking thread never asked the cache, or in the first process).
static FORKED_FROM: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Runs in a fork child, on its only thread, before the child's own code: the tid
/// changed. The old one is kept: a lock word that names it names the child's
/// continuation of the forking thread.
extern "C" fn forget_tid_in_child() {
    TID.with(|tid| {
        // Relaxed: written while the child has one thread; threads it creates later
        // are ordered after it by `pthread_create`.
        FORKED_FROM.store(tid.get(), std::sync::atomic::Ordering::Relaxed);
        tid.set(0)
    });
}

/// In a fork child, the tid that the forking thread had in the parent, if the
/// forking thread had cached it (every thread that took a lock recording its owner
/// has, unless the `glibc-tid` feature reads glibc's descriptor instead).
pub fn forking_thread_in_parent() -> Option<u32> {
    // Relaxed: see `forget_tid_in_child`.
    let tid = FORKED_FROM.load(std::sync::atomic::Ordering::Relaxed);
    (tid != 0).then_some(tid)
}
