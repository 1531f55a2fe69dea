//! Fault-injection points: where klocks' own tests stop a thread in the middle of a
//! lock operation.
//!
//! [`after_release`] marks every point after which an unlock may no longer touch the
//! lock's memory: the releasing RMW of every unlock, and for a lock whose unlock
//! hands over to a waiter in several steps (the rwsem's grants), each step that lets
//! a waiter go. In normal builds it is an empty inline function; in klocks' unit
//! tests it runs the calling thread's hook, if one is set, which the "destroy right
//! after the last unlock" tests use to stall an unlocker there while the other
//! threads finish and the lock's page is made inaccessible (`tests` below).
//! [`after_early_wake`] marks the default rwlock's wake of a writer before its
//! release, where a test stalls the unlocker while a woken writer could give up;
//! [`unheld_read_unlock_wrapped`] the moment a misused read unlock of the default
//! rwlock has wrapped the count, where a test stalls it while readers wait.

/// An unlock has released the lock (or let a waiter go): from here the lock's memory
/// may be freed by the thread that takes it next.
#[inline(always)]
pub(crate) fn after_release() {
    #[cfg(all(test, not(loom)))]
    hook::fire(hook::Point::AfterRelease);
}

/// A write unlock of the default rwlock has made its early wake of a sleeping writer
/// (whether or not it found one) and still holds the lock: its releasing cmpxchg
/// comes next. The test of a writer that gives up meanwhile stalls the unlocker here.
#[inline(always)]
pub(crate) fn after_early_wake() {
    #[cfg(all(test, not(loom)))]
    hook::fire(hook::Point::AfterEarlyWake);
}

/// A read unlock of the default rwlock found no reader inside: its `fetch_sub` has
/// wrapped the count, and its undo comes next. The test of readers waiting meanwhile
/// stalls the misusing thread here.
#[inline(always)]
pub(crate) fn unheld_read_unlock_wrapped() {
    #[cfg(all(test, not(loom)))]
    hook::fire(hook::Point::UnheldReadUnlockWrapped);
}

/// The owner probe is registering the calling thread (between its place in the
/// budget and its slot): where a test runs what a signal handler on that thread
/// would. (The probe is not modelled under loom.)
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn during_registration() {
    #[cfg(all(test, not(loom)))]
    hook::fire(hook::Point::DuringRegistration);
}

#[cfg(all(test, not(loom)))]
pub(crate) mod hook {
    use std::cell::RefCell;

    /// Where a hook fires.
    #[derive(Clone, Copy)]
    pub(crate) enum Point {
        /// [`after_release`](super::after_release).
        AfterRelease,
        /// [`after_early_wake`](super::after_early_wake).
        AfterEarlyWake,
        /// [`unheld_read_unlock_wrapped`](super::unheld_read_unlock_wrapped).
        UnheldReadUnlockWrapped,
        /// [`during_registration`](super::during_registration).
        DuringRegistration,
    }

    type Hooks = [Option<Box<dyn FnMut()>>; 4];

    std::thread_local! {
        static HOOKS: RefCell<Hooks> = const { RefCell::new([None, None, None, None]) };
    }

    /// Runs the calling thread's hook for `point` (not re-entrantly: a hook that
    /// unlocks a lock fires no hook).
    pub(crate) fn fire(point: Point) {
        let _ = HOOKS.try_with(|hooks| {
            if let Ok(mut hooks) = hooks.try_borrow_mut() {
                if let Some(hook) = hooks[point as usize].as_mut() {
                    hook();
                }
            }
        });
    }

    /// Runs `body` with `hook` set for `point` on the calling thread.
    pub(crate) fn with<R>(
        point: Point,
        hook: impl FnMut() + 'static,
        body: impl FnOnce() -> R,
    ) -> R {
        HOOKS.with(|h| h.borrow_mut()[point as usize] = Some(Box::new(hook)));
        let result = body();
        HOOKS.with(|h| h.borrow_mut()[point as usize] = None);
        result
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
