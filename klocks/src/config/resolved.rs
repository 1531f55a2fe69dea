//! A value resolved once per process by whichever thread needs it first, without
//! making any other thread wait, and resolved again in a fork child whose parent was
//! resolving it (the config module doc says why).

/// A value resolved once per process (module doc).
#[cfg(not(loom))]
pub(crate) struct Resolved {
    /// [`UNRESOLVED`], [`READY`], or `pid + 1` of the process whose thread resolves.
    state: std::sync::atomic::AtomicU64,
    value: std::sync::atomic::AtomicU64,
}

#[cfg(not(loom))]
const UNRESOLVED: u64 = 0;
#[cfg(not(loom))]
const READY: u64 = u64::MAX;

#[cfg(not(loom))]
impl Resolved {
    pub(crate) const fn new() -> Self {
        Self {
            state: std::sync::atomic::AtomicU64::new(UNRESOLVED),
            value: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The value, and whether it is final: `resolve()` runs on the first caller;
    /// callers that come while it runs get `(provisional, false)` at once.
    #[inline]
    pub(crate) fn get(&self, resolve: impl FnOnce() -> u64, provisional: u64) -> (u64, bool) {
        use std::sync::atomic::Ordering::{Acquire, Relaxed};
        // Acquire: pairs with the Release in `resolve_from`, which publishes `value`.
        match self.state.load(Acquire) {
            // Relaxed: ordered by the Acquire above.
            READY => (self.value.load(Relaxed), true),
            seen => self.resolve_from(seen, resolve, provisional),
        }
    }

    #[cold]
    fn resolve_from(
        &self,
        seen: u64,
        resolve: impl FnOnce() -> u64,
        provisional: u64,
    ) -> (u64, bool) {
        use std::sync::atomic::Ordering::{Relaxed, Release};
        let mine = u64::from(std::process::id()) + 1;
        // Another thread of this process resolves (or this thread, interrupted by a
        // signal handler that takes a lock): do not wait for it.
        if seen == mine {
            return (provisional, false);
        }
        // Unresolved, or left half-resolved by a parent's thread before a fork: ours.
        // Relaxed: the CAS only elects a resolver; nothing is published yet.
        if self
            .state
            .compare_exchange(seen, mine, Relaxed, Relaxed)
            .is_err()
        {
            return (provisional, false);
        }
        let value = resolve();
        // Relaxed: published by the Release store of the state.
        self.value.store(value, Relaxed);
        // Release: pairs with the Acquire in `get`.
        self.state.store(READY, Release);
        (value, true)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_value_resolves_once_and_racers_get_the_provisional_one() {
        let cell = Resolved::new();
        // A caller that comes while the resolver runs (here: from inside it).
        let (value, done) = cell.get(
            || {
                assert_eq!(cell.get(|| unreachable!(), 7), (7, false));
                42
            },
            7,
        );
        assert_eq!((value, done), (42, true));
        assert_eq!(cell.get(|| unreachable!(), 7), (42, true));
    }

    #[test]
    fn a_resolver_left_behind_by_another_process_is_replaced() {
        let cell = Resolved::new();
        // The state a fork child inherits from a parent (another pid) mid-resolution.
        let parent = u64::from(std::process::id()) + 2;
        cell.state
            .store(parent, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(cell.get(|| 5, 1), (5, true));
    }
}
