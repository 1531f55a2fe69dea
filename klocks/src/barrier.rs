//! Asymmetric barriers: make the rare side of a store-buffering handshake pay for both.
//!
//! A pv lock's waiter announces "I am going to sleep" (a store), then checks the lock
//! (a load); the unlocker releases the lock (a store), then checks for sleepers (a
//! load). Each side must see the other's store or the wake-up is lost, which normally
//! takes a full fence on both sides, including every unlock. Sleeping already costs
//! thousands of times what an unlock does, so klocks moves the cost
//! (`docs/decisions/waiting.md`: heavy-barrier-on-the-sleeper): the sleeper calls
//! [`heavy`] (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`: every running thread of
//! the process executes a full barrier, by IPI, before it returns), and the unlocker's
//! [`light`] is only a compiler fence. Either the unlocker's barrier point falls after
//! its store (then the sleeper's load sees it) or before its load (then that load sees
//! the sleeper's store): no wake-up is lost.
//!
//! The mode is settled by the first sleeper, so unlockers that run before it know
//! nothing yet; they must not pay a fence for that (it doubles an uncontended ticket
//! lock's cost). They need not: a sleeper's membarrier reaches every running thread
//! whatever it read. Only where membarrier is refused (kernels before 4.14, seccomp
//! filters) does the pairing weaken: from then on unlockers fence, but one that read
//! the mode before may not have, so [`heavy`] then tells the sleeper to bound its
//! sleep ([`Pairing::Bounded`]): a wake-up lost to that race costs one timeout, never a
//! hang.
//!
//! Under loom both sides are SeqCst fences, the C11 model of the exact pairing.

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

/// How far a sleeper can trust the barrier pair it just completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pairing {
    /// No wake-up can be lost: sleep until woken.
    Exact,
    /// An unlocker may have skipped its fence: sleep at most [`BOUNDED_SLEEP`].
    /// (Never under loom, which models the exact pairing.)
    #[cfg_attr(loom, allow(dead_code))]
    Bounded,
}

/// The longest a sleeper sleeps when the pairing is only [`Pairing::Bounded`].
pub(crate) const BOUNDED_SLEEP: std::time::Duration = std::time::Duration::from_millis(1);

/// The unlocker's side: a compiler fence, unless membarrier is known to be refused.
#[inline(always)]
pub(crate) fn light() {
    #[cfg(not(loom))]
    {
        // Relaxed: a stale UNKNOWN or MEMBARRIER is covered by the sleeper's IPI; a
        // stale read of FENCES only fences needlessly (module doc).
        if MODE.load(Relaxed) == FENCES {
            fence(SeqCst);
        } else {
            compiler_fence(SeqCst);
        }
    }
    #[cfg(loom)]
    loom::sync::atomic::fence(crate::sync::Ordering::SeqCst);
}

/// The sleeper's side: a full barrier on every running thread of the process.
pub(crate) fn heavy() -> Pairing {
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
            // The call fails only for an unregistered process (EPERM) or an unknown
            // command (EINVAL), both excluded by `mode`; a seccomp filter could still
            // refuse it. The sleeper has announced itself (a lock word changed), so it
            // must not panic here: fence, switch unlockers to fences from now on, and
            // bound this sleep, since an unlocker that read MEMBARRIER did not fence.
            if rc == 0 {
                return Pairing::Exact;
            }
            MODE.store(FENCES, Relaxed);
            fence(SeqCst);
            Pairing::Bounded
        } else {
            fence(SeqCst);
            Pairing::Bounded
        }
    }
    #[cfg(loom)]
    {
        loom::sync::atomic::fence(crate::sync::Ordering::SeqCst);
        Pairing::Exact
    }
}

/// Registers for expedited membarrier once; falls back to fences if refused. Two
/// threads racing here both register (idempotent) and store the same answer.
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
    fn heavy_settles_a_mode_and_reports_its_pairing() {
        let pairing = heavy();
        let mode = MODE.load(Relaxed);
        assert!(mode == MEMBARRIER || mode == FENCES, "mode {mode}");
        assert_eq!(pairing == Pairing::Exact, mode == MEMBARRIER);
        light();
    }
}
