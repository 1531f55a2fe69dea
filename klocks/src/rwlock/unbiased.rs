//! The default rwlock without its reader bias: the "before" of the bias, which
//! lockbench runs beside [`RawRwLock`] in the same runs to measure what the bias
//! brings. It is a `RawRwLock` made with an `inhibit_until` that never passes
//! (`raw_rwlock/bias.rs`), so no reader turns the bias on and no writer revokes it:
//! every reader writes the lock's word, and every transition is the word's
//! (`raw_rwlock.rs`).

use super::raw_rwlock::RawRwLock;

/// [`RawRwLock`] without reader bias: every reader writes the word, as before the
/// bias. Its own type, so that the catalog lists it beside the default rwlock (the
/// before of the bias, measured in the same runs); it is a `RawRwLock` whose
/// `inhibit_until` never passes, and derefs to it for everything else.
#[repr(transparent)]
pub struct RawRwLockUnbiased(RawRwLock);

impl RawRwLockUnbiased {
    /// An unlocked lock without reader bias.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self(RawRwLock::with_bias(false))
    }

    /// An unlocked lock without reader bias.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self(RawRwLock::with_bias(false))
    }
}

impl Default for RawRwLockUnbiased {
    fn default() -> Self {
        Self::new()
    }
}

impl std::ops::Deref for RawRwLockUnbiased {
    type Target = RawRwLock;
    fn deref(&self) -> &RawRwLock {
        &self.0
    }
}

impl std::fmt::Debug for RawRwLockUnbiased {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

// Not under loom, as `RawRwLock`'s (`raw_rwlock/lock_api_traits.rs`). The same lock
// (it derefs to one), whose reader bias never turns on.
#[cfg(not(loom))]
super::raw_rwlock::lock_api_traits::impl_lock_api_raw_rwlock!(RawRwLockUnbiased);
