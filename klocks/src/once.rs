//! [`Once`]: run an initialization exactly once, parking_lot 0.12's `Once` on klocks'
//! futex ([`park`](crate::park)), as std's futex `Once` is built.
//!
//! # The word
//!
//! One 32-bit word, one state at a time:
//!
//! ```text
//! NEW ──cas──> RUNNING ──cas (a waiter)──> QUEUED
//!  ^              │                           │
//!  │              ├─ the closure returns: swap COMPLETE (wake all if QUEUED was seen)
//! POISONED <──────┴─ the closure panics:  swap POISONED (wake all if QUEUED was seen)
//! ```
//!
//! - A caller that finds `NEW` (or `POISONED`, through `call_once_force`) takes the
//!   run by cmpxchg to `RUNNING` and calls the closure; a guard swaps in the outcome
//!   when the closure returns or unwinds, so a panic poisons the `Once` instead of
//!   leaving it running forever.
//! - A caller that finds `RUNNING` marks the word `QUEUED` (so that the runner knows
//!   to wake) and sleeps on it while it reads `QUEUED`; the futex compares the value
//!   with its sleep atomically, so the runner's swap either comes before the sleep
//!   (the sleeper sees the outcome and returns at once) or finds it asleep.
//! - `COMPLETE` is final. The runner's swap is Release and every check of
//!   `COMPLETE` Acquire: whatever the closure wrote happens before the return of
//!   every `call_once` that sees it done.
//!
//! A woken waiter that finds `POISONED` panics from `call_once`, or from
//! `call_once_force` takes the run itself (with [`OnceState::Poisoned`]).
//!
//! # Misuse
//!
//! A `call_once` on the same `Once` from inside its own closure waits for itself
//! forever, as parking_lot's does.

use crate::park;
use crate::sync::{AtomicU32, Ordering::*};

/// Nobody ran the closure yet.
const NEW: u32 = 0;
/// A closure panicked: the next `call_once_force` may run again.
const POISONED: u32 = 1;
/// A thread runs the closure; nobody sleeps.
const RUNNING: u32 = 2;
/// A thread runs the closure and others may sleep on the word.
const QUEUED: u32 = 3;
/// A closure returned: the `Once` is done for good.
const COMPLETE: u32 = 4;

/// Where a [`Once`] is, as [`Once::state`] reads it (parking_lot's `OnceState`).
#[derive(Copy, Clone, Eq, PartialEq, Debug)]
pub enum OnceState {
    /// No closure has run yet.
    New,
    /// A closure panicked; `call_once` panics, `call_once_force` runs again.
    Poisoned,
    /// A thread is running a closure.
    InProgress,
    /// A closure returned: no other will run.
    Done,
}

impl OnceState {
    /// Whether a closure panicked (and none has completed since).
    pub fn poisoned(self) -> bool {
        matches!(self, OnceState::Poisoned)
    }

    /// Whether a closure returned.
    pub fn done(self) -> bool {
        matches!(self, OnceState::Done)
    }
}

/// Runs a one-time initialization: the first `call_once` runs its closure, the
/// others wait until it has returned (and see what it wrote). parking_lot's `Once`,
/// 4 bytes, `const fn new()`.
///
/// ```
/// static INIT: klocks::Once = klocks::Once::new();
/// static mut VALUE: u32 = 0;
/// INIT.call_once(|| unsafe { VALUE = 42 });
/// INIT.call_once(|| unreachable!());
/// assert!(INIT.state().done());
/// ```
pub struct Once {
    state: AtomicU32,
}

impl Once {
    /// A `Once` whose closure has not run.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            state: AtomicU32::new(NEW),
        }
    }

    /// A `Once` whose closure has not run.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            state: AtomicU32::new(NEW),
        }
    }

    /// Where this `Once` is.
    pub fn state(&self) -> OnceState {
        // Acquire: a caller that sees `Done` may read what the closure wrote; pairs
        // with the runner's Release swap.
        match self.state.load(Acquire) {
            NEW => OnceState::New,
            POISONED => OnceState::Poisoned,
            RUNNING | QUEUED => OnceState::InProgress,
            _ => OnceState::Done,
        }
    }

    /// Runs `f` if no closure has completed on this `Once`, else returns at once;
    /// while another thread runs one, waits until it has returned.
    ///
    /// # Panics
    /// If a closure panicked on this `Once` before (it is poisoned), or if `f` does
    /// (which poisons it).
    #[inline]
    pub fn call_once(&self, f: impl FnOnce()) {
        // Acquire: as in `state`.
        if self.state.load(Acquire) == COMPLETE {
            return;
        }
        let mut f = Some(f);
        self.call_once_slow(false, &mut |_| (f.take().expect("run once"))());
    }

    /// [`call_once`](Self::call_once) that runs `f` on a poisoned `Once` too, telling
    /// it whether it is ([`OnceState::Poisoned`] or [`OnceState::New`]).
    #[inline]
    pub fn call_once_force(&self, f: impl FnOnce(OnceState)) {
        // Acquire: as in `state`.
        if self.state.load(Acquire) == COMPLETE {
            return;
        }
        let mut f = Some(f);
        self.call_once_slow(true, &mut |state| (f.take().expect("run once"))(state));
    }

    /// Not generic, so that every closure type shares it; `FnMut` because a
    /// `dyn FnOnce` cannot be called without a box.
    #[cold]
    fn call_once_slow(&self, ignore_poison: bool, f: &mut dyn FnMut(OnceState)) {
        // Acquire: as in `state`.
        let mut state = self.state.load(Acquire);
        loop {
            match state {
                COMPLETE => return,
                POISONED if !ignore_poison => {
                    panic!("Once instance has previously been poisoned")
                }
                NEW | POISONED => {
                    // NEW/POISONED -> RUNNING. Acquire: a run after a poisoned one
                    // sees what that one wrote (pairs with its Release swap).
                    if let Err(now) = self
                        .state
                        .compare_exchange_weak(state, RUNNING, Acquire, Acquire)
                    {
                        state = now;
                        continue;
                    }
                    let mut outcome = Outcome {
                        once: self,
                        set: POISONED,
                    };
                    f(if state == POISONED {
                        OnceState::Poisoned
                    } else {
                        OnceState::New
                    });
                    outcome.set = COMPLETE;
                    return;
                }
                RUNNING => {
                    // RUNNING -> QUEUED: the runner must wake. Relaxed: publishes
                    // nothing; a failure re-reads with Acquire, as the load above.
                    if let Err(now) = self
                        .state
                        .compare_exchange_weak(RUNNING, QUEUED, Relaxed, Acquire)
                    {
                        state = now;
                        continue;
                    }
                    state = QUEUED;
                }
                _ => {
                    park::wait(&self.state, QUEUED);
                    // Acquire: as in `state`.
                    state = self.state.load(Acquire);
                }
            }
        }
    }
}

/// The runner's last word: swaps in `set` when the closure returns (`COMPLETE`) or
/// unwinds (`POISONED`, the value it starts with), and wakes the sleepers.
struct Outcome<'a> {
    once: &'a Once,
    set: u32,
}

impl Drop for Outcome<'_> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire of every later look at the word, which
        // then sees what the closure wrote.
        if self.once.state.swap(self.set, Release) == QUEUED {
            park::wake_all(&self.once.state);
        }
    }
}

impl Default for Once {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Once {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Once")
            .field("state", &self.state())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

/// Two threads race to run the closure; the loser must see what the winner wrote
/// (loom's cell checks the happens-before), and the closure runs once.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::sync::{spawn, Arc, UnsafeCell};

    #[test]
    fn the_closure_runs_once_and_its_writes_are_seen() {
        loom::model(|| {
            let shared = Arc::new((Once::new(), UnsafeCell::new(0u32)));
            let racer = {
                let shared = shared.clone();
                spawn(move || run(&shared))
            };
            run(&shared);
            racer.join().unwrap();
            shared.1.with(|value| assert_eq!(unsafe { *value }, 1));
        });
    }

    fn run(shared: &(Once, UnsafeCell<u32>)) {
        let (once, value) = shared;
        once.call_once(|| value.with_mut(|value| unsafe { *value += 1 }));
        // SAFETY (of the read): the closure's write happens before this return.
        value.with(|value| assert_eq!(unsafe { *value }, 1));
        assert!(once.state().done());
    }

    /// The negative control: a waiter that sleeps without marking the word
    /// `QUEUED` is never woken (the runner's swap sees `RUNNING`), and loom reports
    /// the deadlock.
    #[test]
    #[should_panic]
    fn a_sleeper_that_does_not_mark_the_word_is_caught() {
        loom::model(|| {
            let once: &'static Once = Box::leak(Box::new(Once::new()));
            let racer = spawn(move || {
                if once.state.load(Acquire) == RUNNING {
                    park::wait(&once.state, RUNNING);
                }
            });
            once.call_once(|| {});
            racer.join().unwrap();
        });
    }
}
