//! The negative controls, locks broken on purpose that the client and lockbench's
//! torture must catch (the kernel's `lock_busted`): a test-and-set lock that tests
//! and sets in two steps, its reader-writer form, and a futex mutex that leaves its
//! sleepers' wake to a spinner a signal handler may be interrupting.

#[cfg(loom)]
use super::ops::{TestLock, TestRwLock};
use crate::sync::{AtomicU32, Ordering::Relaxed};

/// The negative control (the kernel's `lock_busted`): a test-and-set lock whose
/// test and set are two separate steps, so two threads can both see it free.
/// Every stress test and loom model must be able to catch it.
#[derive(Debug)]
pub struct BustedLock(AtomicU32);

impl BustedLock {
    /// An unlocked busted lock.
    pub fn new() -> Self {
        Self(AtomicU32::new(0))
    }
}

#[cfg(not(loom))]
// SAFETY: none; this lock is broken on purpose and exists only to be caught.
unsafe impl lock_api::RawMutex for BustedLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self(AtomicU32::new(0));
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        while self.0.load(crate::sync::Ordering::Acquire) != 0 {
            crate::sync::cpu_relax();
        }
        widen_the_race();
        self.0.store(1, Relaxed);
    }

    fn try_lock(&self) -> bool {
        false
    }

    unsafe fn unlock(&self) {
        self.0.store(0, crate::sync::Ordering::Release);
    }
}

/// The negative control of handlers that take the lock their own thread waits for:
/// a futex mutex whose one spinner is relied on to pass the sleepers' wake on (its
/// unlock wakes nobody while `SPINNING` is set), as the default mutex's spinner is,
/// but which does not record the role. A signal handler that interrupts the spinner
/// and locks the same mutex sleeps behind its own thread, and so does every later
/// sleeper while the flag stands: `lockbench torture --signals same` must catch it.
/// It excludes correctly otherwise.
#[cfg(not(loom))]
pub struct BustedDelegation(AtomicU32);

#[cfg(not(loom))]
impl BustedDelegation {
    const LOCKED: u32 = 1;
    const SPINNING: u32 = 2;
    const WAITERS: u32 = 4;

    /// An unlocked lock.
    pub const fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    fn lock_slow(&self) {
        let mut slept = false;
        loop {
            // Relaxed: picks the transition; the cmpxchg below is the Acquire.
            let val = self.0.load(Relaxed);
            if val & Self::LOCKED == 0 {
                let waiters = if slept { Self::WAITERS } else { 0 };
                // Acquire: pairs with the Release in `unlock`.
                if self
                    .0
                    .compare_exchange(
                        val,
                        val | Self::LOCKED | waiters,
                        crate::sync::Ordering::Acquire,
                        Relaxed,
                    )
                    .is_ok()
                {
                    return;
                }
                continue;
            }
            // Become the spinner (Relaxed: the flag protects no data) and spin for
            // ~50 µs; the take inside clears the flag.
            if val & Self::SPINNING == 0
                && self
                    .0
                    .compare_exchange(val, val | Self::SPINNING, Relaxed, Relaxed)
                    .is_ok()
            {
                for _ in 0..2_000 {
                    let now = self.0.load(Relaxed);
                    let waiters = if slept { Self::WAITERS } else { 0 };
                    let new = ((now | waiters) & !Self::SPINNING) | Self::LOCKED;
                    // Acquire: as above.
                    if now & Self::LOCKED == 0
                        && self
                            .0
                            .compare_exchange(now, new, crate::sync::Ordering::Acquire, Relaxed)
                            .is_ok()
                    {
                        return;
                    }
                    std::hint::spin_loop();
                }
                // Relaxed: as above.
                self.0.fetch_and(!Self::SPINNING, Relaxed);
                continue;
            }
            // Sleep on a held lock (Relaxed: the unlock reads WAITERS by its RMW).
            if val & Self::WAITERS == 0
                && self
                    .0
                    .compare_exchange(val, val | Self::WAITERS, Relaxed, Relaxed)
                    .is_err()
            {
                continue;
            }
            crate::park::wait(&self.0, val | Self::WAITERS);
            slept = true;
        }
    }
}

#[cfg(not(loom))]
impl Default for BustedDelegation {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(not(loom))]
// SAFETY: it excludes (one cmpxchg sets LOCKED on a word without it, and only the
// holder clears it); what is broken is a wake left to a spinner that cannot run.
unsafe impl lock_api::RawMutex for BustedDelegation {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        // Acquire: pairs with the Release in `unlock`.
        if self
            .0
            .compare_exchange(0, Self::LOCKED, crate::sync::Ordering::Acquire, Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
    }

    fn try_lock(&self) -> bool {
        // Acquire: as in `lock`.
        self.0
            .fetch_update(crate::sync::Ordering::Acquire, Relaxed, |val| {
                (val & Self::LOCKED == 0).then_some(val | Self::LOCKED)
            })
            .is_ok()
    }

    unsafe fn unlock(&self) {
        // Release: pairs with the Acquire of the next acquisition. While a spinner
        // spins, the sleepers' wake is left to it: the delegation under test.
        let before = self
            .0
            .fetch_update(crate::sync::Ordering::Release, Relaxed, |val| {
                Some(match val & (Self::SPINNING | Self::WAITERS) {
                    Self::WAITERS => 0,
                    flags => flags,
                })
            })
            .unwrap_or_else(|val| val);
        if before & (Self::SPINNING | Self::WAITERS) == Self::WAITERS {
            crate::park::wake_one_at(&self.0);
        }
    }
}

/// The busted lock's window between "saw it free" and "took it": wide enough (~1.5 µs)
/// that a preemption tick lands in it even when the scheduler packs every contending
/// thread onto one CPU (then only a preemption there lets two threads in).
#[cfg(not(loom))]
fn widen_the_race() {
    for _ in 0..64 {
        std::hint::spin_loop();
    }
}

#[cfg(loom)]
impl TestLock for BustedLock {
    fn new_unlocked() -> Self {
        Self::new()
    }
    fn acquire(&self) {
        while self.0.load(crate::sync::Ordering::Acquire) != 0 {
            crate::sync::cpu_relax();
        }
        self.0.store(1, Relaxed);
    }
    fn release(&self) {
        self.0.store(0, crate::sync::Ordering::Release);
    }
}

impl Default for BustedLock {
    fn default() -> Self {
        Self::new()
    }
}

/// The reader-writer negative control: writers take a [`BustedLock`], readers take
/// nothing at all.
#[derive(Debug, Default)]
pub struct BustedRwLock(BustedLock);

#[cfg(not(loom))]
// SAFETY: none; broken on purpose, to be caught.
unsafe impl lock_api::RawRwLock for BustedRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self(<BustedLock as lock_api::RawMutex>::INIT);
    type GuardMarker = lock_api::GuardSend;

    fn lock_shared(&self) {}
    fn try_lock_shared(&self) -> bool {
        true
    }
    unsafe fn unlock_shared(&self) {}
    fn lock_exclusive(&self) {
        lock_api::RawMutex::lock(&self.0);
    }
    fn try_lock_exclusive(&self) -> bool {
        false
    }
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: passes the caller's promise on.
        unsafe { lock_api::RawMutex::unlock(&self.0) }
    }
}

#[cfg(loom)]
impl TestRwLock for BustedRwLock {
    fn new_unlocked() -> Self {
        Self(BustedLock::new())
    }
    fn read(&self) {}
    fn read_done(&self) {}
    fn write(&self) {
        self.0.acquire();
    }
    fn write_done(&self) {
        self.0.release();
    }
}
