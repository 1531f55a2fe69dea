//! Asymmetric barriers: make the rare side of a store-buffering handshake pay for both.
//!
//! A pv lock's waiter announces "I am going to sleep" (a store), then checks the lock
//! (a load); the unlocker releases the lock (a store), then checks for sleepers (a
//! load). Each side must see the other's store or the wake-up is lost, which normally
//! takes a full fence on both sides, including every unlock. Sleeping is already a
//! ~30 µs affair and unlocking a ~1 ns one, so klocks moves the cost: the sleeper calls
//! [`heavy`] (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`: every running thread of
//! the process executes a full barrier, by IPI, before it returns), and the unlocker's
//! [`light`] is only a compiler fence. Either the unlocker's barrier point falls after
//! its store (then the sleeper's load sees it) or before its load (then that load sees
//! the sleeper's store): no wake-up is lost. Where membarrier is unavailable (kernels
//! before 4.14, seccomp filters), both sides fall back to a SeqCst fence.
//!
//! Under loom both are SeqCst fences: the C11 model of the same guarantee.

#[cfg(not(loom))]
use std::sync::atomic::{compiler_fence, fence, AtomicU8, Ordering::*};

#[cfg(not(loom))]
const UNKNOWN: u8 = 0;
#[cfg(not(loom))]
const MEMBARRIER: u8 = 1;
#[cfg(not(loom))]
const FENCES: u8 = 2;

/// How this process pairs the barriers, probed on first use; it never changes after.
#[cfg(not(loom))]
static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// The unlocker's side: free when membarrier works.
#[inline(always)]
pub(crate) fn light() {
    #[cfg(not(loom))]
    {
        // Relaxed: MODE only ever moves from UNKNOWN to a final value, and `heavy`
        // settles it before any sleeper relies on it (see `mode`).
        if MODE.load(Relaxed) == MEMBARRIER {
            compiler_fence(SeqCst);
        } else {
            fence(SeqCst);
        }
    }
    #[cfg(loom)]
    loom::sync::atomic::fence(crate::sync::Ordering::SeqCst);
}

/// The sleeper's side: a full barrier on every running thread of the process.
pub(crate) fn heavy() {
    #[cfg(not(loom))]
    {
        if mode() == MEMBARRIER {
            // SAFETY: membarrier takes no pointers; registration succeeded in `mode`.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_membarrier,
                    libc::MEMBARRIER_CMD_PRIVATE_EXPEDITED,
                    0,
                )
            };
            // Unlockers that read MEMBARRIER no longer fence, so there is no safe way
            // back. The call fails only for an unregistered process (EPERM) or an
            // unknown command (EINVAL), both excluded by `mode`.
            assert_eq!(rc, 0, "klocks: membarrier failed after registration");
        } else {
            fence(SeqCst);
        }
    }
    #[cfg(loom)]
    loom::sync::atomic::fence(crate::sync::Ordering::SeqCst);
}

/// Registers for expedited membarrier once; falls back to fences if refused.
///
/// An unlocker that still reads UNKNOWN fences, which is only stronger. Two threads
/// racing here both register (idempotent) and store the same answer.
#[cfg(not(loom))]
fn mode() -> u8 {
    let mode = MODE.load(Relaxed);
    if mode != UNKNOWN {
        return mode;
    }
    // SAFETY: membarrier registration takes no pointers.
    let registered = unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            libc::MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
            0,
        )
    } == 0;
    let mode = if registered { MEMBARRIER } else { FENCES };
    MODE.store(mode, Relaxed);
    mode
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn heavy_settles_a_mode_and_light_follows_it() {
        heavy();
        let mode = MODE.load(Relaxed);
        assert!(mode == MEMBARRIER || mode == FENCES, "mode {mode}");
        light();
    }
}
