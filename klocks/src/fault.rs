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

/// An unlock has released the lock (or let a waiter go): from here the lock's memory
/// may be freed by the thread that takes it next.
#[inline(always)]
pub(crate) fn after_release() {
    #[cfg(all(test, not(loom)))]
    hook::fire();
}

#[cfg(all(test, not(loom)))]
pub(crate) mod hook {
    use std::cell::RefCell;

    std::thread_local! {
        static HOOK: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
    }

    /// Runs the calling thread's hook (not re-entrantly: a hook that unlocks a lock
    /// does not fire itself).
    pub(crate) fn fire() {
        let _ = HOOK.try_with(|hook| {
            if let Ok(mut hook) = hook.try_borrow_mut() {
                if let Some(hook) = hook.as_mut() {
                    hook();
                }
            }
        });
    }

    /// Runs `body` with `hook` set on the calling thread.
    pub(crate) fn with<R>(hook: impl FnMut() + 'static, body: impl FnOnce() -> R) -> R {
        HOOK.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
        let result = body();
        HOOK.with(|h| *h.borrow_mut() = None);
        result
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
