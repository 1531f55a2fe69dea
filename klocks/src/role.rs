//! The waiting roles a thread holds inside a lock's slow path, recorded for a signal
//! handler on the same thread.
//!
//! # Why
//!
//! Some waiting roles are *delegations*: other threads rely on the role's holder to
//! do something later. The default mutex's spinner is relied on to take the lock and
//! pass the sleepers' wake-up on (an unlock that finds `SPINNING` wakes nobody); a
//! claimant is relied on to take the lock reserved for it; the default rwlock's
//! writer spinner and a writer woken before the release are relied on to take
//! `WRITER` (the unlock leaves `WRITERS_WAITING` on a free word, which holds readers
//! back); a draining writer holds `WRITER` while the readers inside leave.
//!
//! A delegate that is preempted runs again later and does its duty. One that is
//! *interrupted by a signal handler on its own thread* does not, until the handler
//! returns: a handler that then waits on the same lock would wait for its own
//! thread. So a lock's slow path records each delegated role here before the lock's
//! word shows it, and a waiter that finds its own thread holding a role on the lock it
//! waits for never waits for that role:
//!
//! | role | recorded | a handler on the same thread, waiting on the same lock |
//! |---|---|---|
//! | [`Role::Spinner`] | before the flag is set, until after it is cleared | clears the flag before it sleeps, so the unlock wakes a sleeper (the interrupted spinner sets the flag again at its next look, as after any unlock that cleared it) |
//! | [`Role::Claimant`] | before the claim is made, until the claimant took the lock or gave the claim up | takes the lock reserved for its thread and consumes the claim; the interrupted claimant then waits as any waiter |
//! | [`Role::Writer`] | for the whole write slow path of a default rwlock | as a reader, enters a free lock past `WRITERS_WAITING` left for its thread |
//! | [`Role::Drainer`] | after `WRITER` is taken, until no reader is inside | enters alongside its thread's `WRITER`: as a reader at once, as a writer once the readers left, without releasing `WRITER` at its unlock |
//!
//! A record may name a role a moment longer than the word shows it (it is set before
//! the word and cleared after): the handler then clears a flag that was not its
//! thread's, which costs a wake-up and nothing else. Where the opposite could happen
//! (the word showing a role the record does not), the role is one of *holding* the
//! lock, such as the instant between a writer's taking `WRITER` and recording the
//! drain: a handler that waits for a lock its thread holds deadlocks, with every lock.
//!
//! The records are thread-locals that only their thread and its signal handlers
//! touch; they are atomics so that the interrupted code reads them again after a
//! handler ran, instead of a copy in a register, and each record is ordered before
//! the word's change by a compiler fence (a signal handler runs on the same CPU
//! thread, so no hardware fence is needed).

use std::sync::atomic::{compiler_fence, AtomicUsize, Ordering};

/// A delegated waiting role (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// The spinner whose flag makes unlocks skip their wake.
    Spinner,
    /// The default mutex's handoff claimant.
    Claimant,
    /// A writer in the default rwlock's write slow path.
    Writer,
    /// The default rwlock's writer that holds `WRITER` and waits for the readers.
    Drainer,
}

const ROLES: usize = 4;

#[cfg(not(loom))]
std::thread_local! {
    /// The lock (its address) this thread holds each role on, 0 if none. No
    /// destructor: readable during thread exit too.
    static HELD: [AtomicUsize; ROLES] = const {
        [const { AtomicUsize::new(0) }; ROLES]
    };
}
#[cfg(loom)]
loom::thread_local! {
    static HELD: [AtomicUsize; ROLES] = [
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ];
}

impl Role {
    /// The lock this thread holds the role on (its address), 0 if none.
    pub(crate) fn lock(self) -> usize {
        // Relaxed: a thread-local, shared only with signal handlers on this thread.
        HELD.with(|held| held[self as usize].load(Ordering::Relaxed))
    }

    /// Whether this thread holds the role on `lock`.
    pub(crate) fn held_on(self, lock: usize) -> bool {
        self.lock() == lock
    }

    /// Records the role on `lock`, before the lock's word shows it; returns the
    /// record it replaces (a handler nested in a lock operation puts it back with
    /// [`restore`](Self::restore)).
    pub(crate) fn enter(self, lock: usize) -> usize {
        // Relaxed: as in `lock`.
        let outer = HELD.with(|held| held[self as usize].swap(lock, Ordering::Relaxed));
        // The record first, then the word's change: a handler that sees the role in
        // the word finds it recorded.
        compiler_fence(Ordering::SeqCst);
        outer
    }

    /// Puts back the record `enter` replaced, after the lock's word stopped showing
    /// the role.
    pub(crate) fn restore(self, outer: usize) {
        // The word's change first, then the record (as in `enter`).
        compiler_fence(Ordering::SeqCst);
        // Relaxed: as in `lock`.
        HELD.with(|held| held[self as usize].store(outer, Ordering::Relaxed));
    }
}

#[cfg(all(test, not(loom)))]
mod matrix;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn roles_nest_and_are_per_role() {
        assert_eq!(Role::Spinner.lock(), 0);
        let outer = Role::Spinner.enter(0x40);
        assert_eq!(outer, 0);
        assert!(Role::Spinner.held_on(0x40));
        assert!(!Role::Claimant.held_on(0x40));
        let inner = Role::Spinner.enter(0x80);
        assert_eq!(inner, 0x40);
        Role::Spinner.restore(inner);
        assert!(Role::Spinner.held_on(0x40));
        Role::Spinner.restore(outer);
        assert_eq!(Role::Spinner.lock(), 0);
    }
}
