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
//! | [`Role::Claimant`] | before the claim is made, until the claimant took the lock or gave the claim up | the mutex: takes the lock reserved for its thread and consumes the claim, and the interrupted claimant then waits as any waiter; the rwlock: takes `WRITER` past its thread's claim and leaves it, and the interrupted claimant takes the next release |
//! | [`Role::Sleeper`] | before a default mutex waiter's first sleep, until it took the lock or gave up | takes a lock that a fair unlock reserved for a thread that slept (its thread may be the one that unlock woke); the interrupted waiter then waits as any waiter |
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
//! # Nesting
//!
//! Handlers nest (a handler may be interrupted by another signal), and each level may
//! hold roles on different locks: a thread spins on lock A, a handler on it spins on
//! lock B, a nested handler locks A. So each role's record is a small stack per
//! thread: a level [`enter`](Role::enter)s a record on top and
//! [`restore`](Role::restore)s the stack to the height it found, and
//! [`held_on`](Role::held_on) asks every level. A level that never restores (a
//! `siglongjmp` out of the lock call) leaves its record below the next ones: its
//! thread then treats that lock's role as its own a while longer, which costs a
//! wake-up or an unfair turn, and nothing a waiter's liveness rests on, since no
//! sleeper waits on a delegate unbounded (`crate::wait`, the liveness tick). Past
//! [`DEPTH`] levels a record is dropped: the deeper handler waits like any other
//! thread, and the tick bounds its wait on its own thread's role too.
//!
//! The records are thread-locals that only their thread and its signal handlers
//! touch; they are atomics so that the interrupted code reads them again after a
//! handler ran, instead of a copy in a register, and each record is ordered before
//! the word's change by a compiler fence (a signal handler runs on the same CPU
//! thread, so no hardware fence is needed). A level claims its place (the height)
//! before it writes the record, and clears its records before it lowers the height,
//! so that a handler landing between the two sees a height that covers what the
//! interrupted level may still write, and pushes above it.

use std::sync::atomic::{compiler_fence, AtomicUsize, Ordering};

/// A delegated waiting role (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// The spinner whose flag makes unlocks skip their wake.
    Spinner,
    /// The default mutex's handoff claimant, and the default rwlock's writer that
    /// holds a claim.
    Claimant,
    /// A default mutex waiter that has slept: a fair unlock may have woken it and
    /// reserved the lock for it.
    Sleeper,
    /// A writer in the default rwlock's write slow path.
    Writer,
    /// The default rwlock's writer that holds `WRITER` and waits for the readers.
    Drainer,
}

const ROLES: usize = 5;

/// How many nested levels of one role a thread records (module doc, "Nesting").
pub(crate) const DEPTH: usize = 8;

/// One role's records on one thread: the locks (their addresses, 0 for none) and the
/// height of the stack.
struct Stack {
    locks: [AtomicUsize; DEPTH],
    height: AtomicUsize,
}

#[cfg(not(loom))]
std::thread_local! {
    /// This thread's records, one stack per role. No destructor: readable during
    /// thread exit too.
    static HELD: [Stack; ROLES] = const {
        [const {
            Stack {
                locks: [const { AtomicUsize::new(0) }; DEPTH],
                height: AtomicUsize::new(0),
            }
        }; ROLES]
    };
}
#[cfg(loom)]
loom::thread_local! {
    static HELD: [Stack; ROLES] = std::array::from_fn(|_| Stack {
        locks: std::array::from_fn(|_| AtomicUsize::new(0)),
        height: AtomicUsize::new(0),
    });
}

/// The height a level found, for [`Role::restore`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub(crate) struct Mark(usize);

// Relaxed throughout: thread-locals, shared only with signal handlers on this thread
// (the compiler fences order them against the lock words' changes).
impl Role {
    fn with<R>(self, f: impl FnOnce(&Stack) -> R) -> R {
        HELD.with(|held| f(&held[self as usize]))
    }

    /// The height of this thread's stack of the role, to restore later.
    pub(crate) fn mark(self) -> Mark {
        Mark(self.with(|s| s.height.load(Ordering::Relaxed)))
    }

    /// Whether this thread holds the role on `lock`, at any level.
    pub(crate) fn held_on(self, lock: usize) -> bool {
        self.with(|s| {
            let height = s.height.load(Ordering::Relaxed).min(DEPTH);
            s.locks[..height]
                .iter()
                .any(|l| l.load(Ordering::Relaxed) == lock)
        })
    }

    /// Records the role on `lock` on top of this thread's stack, before the lock's
    /// word shows it; returns the height it found, for [`restore`](Self::restore).
    pub(crate) fn enter(self, lock: usize) -> Mark {
        let mark = self.mark();
        self.with(|s| {
            // The place first, then the record (module doc, "Nesting").
            s.height.store(mark.0 + 1, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            if let Some(slot) = s.locks.get(mark.0) {
                slot.store(lock, Ordering::Relaxed);
            }
        });
        // The record first, then the word's change: a handler that sees the role in
        // the word finds it recorded.
        compiler_fence(Ordering::SeqCst);
        mark
    }

    /// Takes this thread's stack of the role back to `mark`, after the lock's word
    /// stopped showing the records above it.
    pub(crate) fn restore(self, mark: Mark) {
        // The word's change first, then the records (as in `enter`).
        compiler_fence(Ordering::SeqCst);
        self.with(|s| {
            let height = s.height.load(Ordering::Relaxed).min(DEPTH);
            for slot in s.locks.iter().take(height).skip(mark.0) {
                slot.store(0, Ordering::Relaxed);
            }
            // The records first, then the height (module doc, "Nesting").
            compiler_fence(Ordering::SeqCst);
            s.height.store(mark.0, Ordering::Relaxed);
        });
    }

    /// Drops this thread's records of the role on `lock`, at every level: a handler
    /// that consumed what its interrupted level held (a reservation it took).
    pub(crate) fn forget(self, lock: usize) {
        compiler_fence(Ordering::SeqCst);
        self.with(|s| {
            for slot in &s.locks {
                // Relaxed: as above; a failed exchange leaves another lock's record.
                let _ = slot.compare_exchange(lock, 0, Ordering::Relaxed, Ordering::Relaxed);
            }
        });
    }
}

#[cfg(all(test, not(loom)))]
mod frozen;
#[cfg(all(test, not(loom)))]
mod matrix;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn roles_nest_and_are_per_role() {
        assert!(!Role::Spinner.held_on(0x40));
        let outer = Role::Spinner.enter(0x40);
        assert!(Role::Spinner.held_on(0x40));
        assert!(!Role::Claimant.held_on(0x40));
        let inner = Role::Spinner.enter(0x80);
        // The outer level's role stays visible beneath the inner one: a nested
        // handler that locks the outer lock finds its thread's role there.
        assert!(Role::Spinner.held_on(0x40));
        assert!(Role::Spinner.held_on(0x80));
        Role::Spinner.restore(inner);
        assert!(Role::Spinner.held_on(0x40));
        assert!(!Role::Spinner.held_on(0x80));
        Role::Spinner.restore(outer);
        assert!(!Role::Spinner.held_on(0x40));
    }

    #[test]
    fn a_level_that_never_restores_is_cleared_by_the_level_below() {
        let outer = Role::Writer.enter(0x10);
        // A level abandoned by a longjmp: entered, never restored.
        let _abandoned = Role::Writer.enter(0x20);
        Role::Writer.restore(outer);
        assert!(!Role::Writer.held_on(0x10));
        assert!(!Role::Writer.held_on(0x20));
    }

    #[test]
    fn forget_drops_every_level_of_one_lock() {
        let outer = Role::Claimant.enter(0x30);
        let inner = Role::Claimant.enter(0x50);
        Role::Claimant.forget(0x30);
        assert!(!Role::Claimant.held_on(0x30));
        assert!(Role::Claimant.held_on(0x50));
        Role::Claimant.restore(inner);
        Role::Claimant.restore(outer);
    }

    #[test]
    fn levels_past_the_depth_are_not_recorded_and_restore_cleanly() {
        let marks: Vec<_> = (1..=DEPTH + 2)
            .map(|i| Role::Drainer.enter(i * 8))
            .collect();
        assert!(Role::Drainer.held_on(8 * DEPTH));
        assert!(!Role::Drainer.held_on(8 * (DEPTH + 1)));
        for mark in marks.into_iter().rev() {
            Role::Drainer.restore(mark);
        }
        assert!(!Role::Drainer.held_on(8));
        assert_eq!(Role::Drainer.mark(), Mark(0));
    }
}
