//! `lock_api`'s raw rwlock traits on [`RawRwLock`], so that `lock_api::RwLock<RawRwLock, T>`
//! ([`RwLock`](crate::RwLock)) and its guards, downgrades, upgradable reads and timeouts
//! come for free. Each method is the inherent one of the same name. (Not under loom: the
//! models call the inherent methods.)

use super::*;

/// `lock_api::RawRwLock` on `$lock`: [`RawRwLock`], or a lock that derefs to one
/// (`RawRwLockUnbiased`); each method is `RawRwLock`'s inherent one.
macro_rules! impl_lock_api_raw_rwlock {
    ($lock:ty) => {
        // SAFETY: a writer enters only from a word with no writer and no reader
        // (the fast path's 0, or a cmpxchg that sets `WRITER` on a word without it,
        // then the drain until no reader is inside, word or table), and readers only
        // while no writer holds `WRITER` (`try_enter_reader`, or the table while
        // `BIAS` is set, which a writer clears and waits out before its section);
        // each leaves by clearing exactly what it entered with. Write guards are
        // not `Send`: the unlock checks the writer's id.
        unsafe impl lock_api::RawRwLock for $lock {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self = <$lock>::new();
            type GuardMarker = lock_api::GuardNoSend;

            #[inline]
            fn lock_shared(&self) {
                let class = $crate::lockdep::rust::before(
                    self as *const Self as *const (),
                    $crate::lockdep::Mode::Read,
                );
                $crate::rwlock::raw_rwlock::RawRwLock::lock_shared(self);
                $crate::lockdep::rust::after(
                    self as *const Self as *const (),
                    class,
                    $crate::lockdep::Mode::Read,
                );
            }

            #[inline]
            fn try_lock_shared(&self) -> bool {
                let taken = $crate::rwlock::raw_rwlock::RawRwLock::try_lock_shared(self);
                if taken {
                    $crate::lockdep::rust::after(
                        self as *const Self as *const (),
                        0,
                        $crate::lockdep::Mode::Read,
                    );
                }
                taken
            }

            #[inline]
            unsafe fn unlock_shared(&self) {
                $crate::lockdep::rust::release(self as *const Self as *const ());
                $crate::rwlock::raw_rwlock::RawRwLock::unlock_shared(self);
            }

            #[inline]
            fn lock_exclusive(&self) {
                let class = $crate::lockdep::rust::before(
                    self as *const Self as *const (),
                    $crate::lockdep::Mode::Exclusive,
                );
                $crate::rwlock::raw_rwlock::RawRwLock::lock_exclusive(self);
                $crate::lockdep::rust::after(
                    self as *const Self as *const (),
                    class,
                    $crate::lockdep::Mode::Exclusive,
                );
            }

            #[inline]
            fn try_lock_exclusive(&self) -> bool {
                let taken = $crate::rwlock::raw_rwlock::RawRwLock::try_lock_exclusive(self);
                if taken {
                    $crate::lockdep::rust::after(
                        self as *const Self as *const (),
                        0,
                        $crate::lockdep::Mode::Exclusive,
                    );
                }
                taken
            }

            #[inline]
            unsafe fn unlock_exclusive(&self) {
                $crate::lockdep::rust::release(self as *const Self as *const ());
                $crate::rwlock::raw_rwlock::RawRwLock::unlock_exclusive(self);
            }

            #[inline]
            fn is_locked(&self) -> bool {
                $crate::rwlock::raw_rwlock::RawRwLock::is_locked(self)
            }

            #[inline]
            fn is_locked_exclusive(&self) -> bool {
                $crate::rwlock::raw_rwlock::RawRwLock::is_locked_exclusive(self)
            }
        }
    };
}
pub(in crate::rwlock) use impl_lock_api_raw_rwlock;

impl_lock_api_raw_rwlock!(RawRwLock);

// SAFETY: the write lock becomes a read lock in one cmpxchg, with no window in which
// another writer could enter.
unsafe impl lock_api::RawRwLockDowngrade for RawRwLock {
    unsafe fn downgrade(&self) {
        RawRwLock::downgrade(self);
    }
}

// SAFETY: the upgradable lock is `WRITER` with `UPGRADABLE`: it excludes writers and
// other upgradable holders as the write lock does, and readers enter beside it only
// while `UPGRADABLE` is set; `upgrade` clears it and then drains the readers inside
// as a writer does, so the upgraded lock excludes every reader and writer.
unsafe impl lock_api::RawRwLockUpgrade for RawRwLock {
    #[inline]
    fn lock_upgradable(&self) {
        RawRwLock::lock_upgradable(self);
    }

    fn try_lock_upgradable(&self) -> bool {
        RawRwLock::try_lock_upgradable(self)
    }

    unsafe fn unlock_upgradable(&self) {
        RawRwLock::unlock_upgradable(self);
    }

    unsafe fn upgrade(&self) {
        RawRwLock::upgrade(self);
    }

    unsafe fn try_upgrade(&self) -> bool {
        RawRwLock::try_upgrade(self)
    }
}

// SAFETY: each downgrade is one RMW that lets readers in while keeping writers out
// (a read lock in `release_write`'s cmpxchg; `UPGRADABLE` set on a held `WRITER`).
unsafe impl lock_api::RawRwLockUpgradeDowngrade for RawRwLock {
    unsafe fn downgrade_upgradable(&self) {
        RawRwLock::downgrade_upgradable(self);
    }

    unsafe fn downgrade_to_upgradable(&self) {
        RawRwLock::downgrade_to_upgradable(self);
    }
}

// SAFETY: the timed variants acquire exactly as the untimed ones when they succeed.
unsafe impl lock_api::RawRwLockTimed for RawRwLock {
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;

    fn try_lock_shared_for(&self, timeout: Self::Duration) -> bool {
        match std::time::Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_lock_shared_until(deadline),
            None => {
                self.lock_shared();
                true
            }
        }
    }

    fn try_lock_shared_until(&self, deadline: Self::Instant) -> bool {
        RawRwLock::try_lock_shared_until(self, deadline)
    }

    fn try_lock_exclusive_for(&self, timeout: Self::Duration) -> bool {
        match std::time::Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_lock_exclusive_until(deadline),
            None => {
                self.lock_exclusive();
                true
            }
        }
    }

    fn try_lock_exclusive_until(&self, deadline: Self::Instant) -> bool {
        RawRwLock::try_lock_exclusive_until(self, deadline)
    }
}

// SAFETY: a recursive read enters by the same cmpxchg as any read, only from words
// whose writer cannot be in its section (no `WRITER`, `WRITER` upgradable, or a
// drain that waits for readers still inside, this thread's among them).
unsafe impl lock_api::RawRwLockRecursive for RawRwLock {
    fn lock_shared_recursive(&self) {
        let class = crate::lockdep::rust::before(
            self as *const Self as *const (),
            crate::lockdep::Mode::RecursiveRead,
        );
        RawRwLock::lock_shared_recursive(self);
        crate::lockdep::rust::after(
            self as *const Self as *const (),
            class,
            crate::lockdep::Mode::RecursiveRead,
        );
    }

    fn try_lock_shared_recursive(&self) -> bool {
        let taken = RawRwLock::try_lock_shared_recursive(self);
        if taken {
            crate::lockdep::rust::after(
                self as *const Self as *const (),
                0,
                crate::lockdep::Mode::RecursiveRead,
            );
        }
        taken
    }
}

// SAFETY: a timed recursive read acquires as `lock_shared_recursive` when it succeeds.
unsafe impl lock_api::RawRwLockRecursiveTimed for RawRwLock {
    fn try_lock_shared_recursive_for(&self, timeout: Self::Duration) -> bool {
        self.try_lock_shared_recursive()
            || lock_api::RawRwLockTimed::try_lock_shared_for(self, timeout)
    }

    fn try_lock_shared_recursive_until(&self, deadline: Self::Instant) -> bool {
        self.try_lock_shared_recursive() || RawRwLock::try_lock_shared_until(self, deadline)
    }
}

// SAFETY: the timed variants take and upgrade exactly as the untimed ones when they
// succeed; a timed upgrade that fails leaves the lock upgradable as it was.
unsafe impl lock_api::RawRwLockUpgradeTimed for RawRwLock {
    fn try_lock_upgradable_for(&self, timeout: Self::Duration) -> bool {
        match std::time::Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_lock_upgradable_until(deadline),
            None => {
                self.lock_upgradable();
                true
            }
        }
    }

    fn try_lock_upgradable_until(&self, deadline: Self::Instant) -> bool {
        RawRwLock::try_lock_upgradable_until(self, deadline)
    }

    unsafe fn try_upgrade_for(&self, timeout: Self::Duration) -> bool {
        match std::time::Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_upgrade_until(deadline),
            None => {
                self.upgrade();
                true
            }
        }
    }

    unsafe fn try_upgrade_until(&self, deadline: Self::Instant) -> bool {
        RawRwLock::try_upgrade_until(self, deadline)
    }
}
