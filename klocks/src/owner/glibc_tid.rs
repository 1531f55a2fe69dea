//! The calling thread's kernel tid, read from glibc's thread descriptor.
//!
//! A shared library's thread-locals use the general-dynamic TLS model: each access
//! is a call to `__tls_get_addr`, which cost an interposed uncontended
//! `pthread_mutex_lock`/`unlock` pair about a tenth of its time, once for the lock
//! and once for the unlock. glibc keeps every thread's tid in its own descriptor
//! (`struct pthread`'s `tid`: written by the kernel at `clone` through
//! `CLONE_PARENT_SETTID`, for the main thread by `set_tid_address` at start, and
//! for a fork child's thread by `fork`), and on x86-64 `%fs:0` is that descriptor,
//! so the tid is one `%fs`-relative load away.
//!
//! The field's offset is not glibc's ABI, so [`calibrate`] finds it at run time:
//! the one 4-aligned offset in the first [`SCAN`] bytes of the descriptor that holds
//! the tid on the calling thread and on a second thread (a field that equals one
//! tid by chance does not equal another's). It starts a thread, so only a caller
//! that may do so calls it (the preload's constructor). Until then, or if no single
//! offset qualifies, [`read`] answers `None` and [`current_tid`](super::current_tid)
//! uses its thread-local cache.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// How far into the descriptor the search looks (glibc's `tid` is at 720 bytes on
/// x86-64 in glibc 2.3x; the descriptor is over 2 KiB).
const SCAN: usize = 1024;

/// Where `tid` sits in glibc's `struct pthread`, or [`SCAN`] (not found, or not
/// looked for).
static OFFSET: AtomicUsize = AtomicUsize::new(SCAN);

/// The calling thread's tid, if [`calibrate`] found where glibc keeps it.
#[inline(always)]
pub(super) fn read() -> Option<u32> {
    // Relaxed: the offset is a pure function of glibc's layout, stored once; a thread
    // that reads the old "not found" takes the thread-local, which gives the same tid.
    let offset = OFFSET.load(Relaxed);
    // SAFETY: `calibrate` stored an in-range, aligned offset (else it is `SCAN`).
    (offset < SCAN).then(|| unsafe { descriptor_u32(offset) })
}

/// Finds glibc's `tid` field (see the module doc); whether it was found. Starts and
/// joins one thread.
pub fn calibrate() -> bool {
    let here = tid_offsets();
    let there = std::thread::Builder::new()
        .name("klocks-tid".into())
        .spawn(tid_offsets)
        .ok()
        .and_then(|thread| thread.join().ok());
    let Some(there) = there else {
        return false;
    };
    let both: Vec<_> = here.into_iter().filter(|o| there.contains(o)).collect();
    match both[..] {
        [offset] => {
            // Relaxed: see `read`.
            OFFSET.store(offset, Relaxed);
            true
        }
        _ => false,
    }
}

/// The offsets of the calling thread's descriptor that hold its tid.
fn tid_offsets() -> Vec<usize> {
    // SAFETY: gettid has no preconditions and cannot fail.
    let tid = unsafe { libc::gettid() } as u32;
    (0..SCAN)
        .step_by(4)
        // SAFETY: in range and aligned.
        .filter(|&offset| unsafe { descriptor_u32(offset) } == tid)
        .collect()
}

/// The u32 at `offset` bytes into the calling thread's glibc descriptor.
///
/// # Safety
/// `offset + 4 <= SCAN` and 4-aligned.
#[inline(always)]
unsafe fn descriptor_u32(offset: usize) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        let value: u32;
        // SAFETY: on x86-64 `%fs:0` is glibc's `struct pthread` itself (its first
        // member is the TCB header), which is larger than `SCAN`.
        unsafe {
            std::arch::asm!(
                "mov {:e}, dword ptr fs:[{}]",
                out(reg) value,
                in(reg) offset,
                options(nostack, readonly, preserves_flags)
            )
        };
        value
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: glibc's `pthread_self` is its `struct pthread`, larger than `SCAN`.
        unsafe {
            (libc::pthread_self() as *const u8)
                .add(offset)
                .cast::<u32>()
                .read_volatile()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Once calibrated, the descriptor gives every thread the tid `gettid` gives it.
    #[test]
    fn the_descriptor_holds_each_threads_tid() {
        assert!(
            calibrate(),
            "glibc's tid not found in its thread descriptor"
        );
        // SAFETY: gettid has no preconditions and cannot fail.
        let tid = || (read(), unsafe { libc::gettid() } as u32);
        let (here, gettid) = tid();
        assert_eq!(here, Some(gettid));
        let (there, gettid_there) = std::thread::spawn(tid).join().unwrap();
        assert_eq!(there, Some(gettid_there));
        assert_ne!(there, here);
    }
}
