//! How long a contended acquisition waited: from the try that failed to the moment
//! the lock was this thread's to take, with the profile's own stack walk counted only
//! while the lock stayed busy.
//!
//! A call that finds the lock busy walks its stack ([`super::stacks`], 2 to 3 µs)
//! before it waits, so that its contention point is known. The walk sits inside the
//! span the thread was kept from the lock, and its effect on that span depends on the
//! lock:
//!
//! ```text
//!   failed try      walk ends      acquired
//!   |-- walk -------|-- wait() ----|          lock still busy when the walk ends:
//!   failed ......................... end      waited = end - failed
//!
//!   |-- walk -------|  retry: 0               lock released during the walk (at R):
//!   failed ..... R                            waited = R - failed
//! ```
//!
//! Timing only `wait()` (the span after the walk) misses the walk in the first case,
//! and in the second records a few nanoseconds for a lock whose holder kept this
//! thread out for up to the whole walk: a lock held briefly but taken very often,
//! whose holders release it within microseconds (memcached's per-`set` locks), then
//! shows its waits in its count but almost none in its wait time, and sinks in the
//! ranking by wait below locks with a single long wait. Timing the whole span instead
//! charges the profile's walk to a lock that was free for most of it.
//!
//! So the wait starts at the failed try and, after the walk, the lock is tried again:
//! - still busy: the thread would have waited through the walk anyway (a thread that
//!   queues at the failed try gets the lock no earlier than the release that lets it
//!   in), so `wait()` runs and the wait ends at the acquisition;
//! - taken: the lock was released during the walk, and the wait ends at that release.
//!   A holder that releases a lock while threads wait for it notes the time in the
//!   lock's entry ([`Entry::note_release`], one clock read, paid only by releases of
//!   locks someone is waiting for); the waiter registers as waiting before it walks,
//!   so every release during its walk is noted. The note is clamped to the walk: one
//!   older than the failed try (a release between the try and the registration, or
//!   a note that had not yet landed) gives a wait of 0, the lower bound.

use std::ffi::c_int;

use libc::EBUSY;

use super::clock;
use super::table::Entry;

/// A contended acquisition's outcome: the lock call's result, its wait (ticks, from
/// the failed try) and when the lock became this thread's (ticks: the hold starts).
pub(super) struct Waited {
    pub(super) result: c_int,
    pub(super) ticks: u64,
    pub(super) acquired_at: u64,
}

/// After a try of the lock whose `entry` this is failed: registers the thread as
/// waiting, runs `walk` (the stack capture), tries the lock again with `retry`, and
/// if it is still busy (`EBUSY`) waits with `wait`; times the wait as the module doc
/// says. Any other answer of the retry is the call's, as a first try's would be.
/// Returns `walk`'s result and the outcome.
pub(super) fn wait_after_failed_try<S>(
    entry: &Entry,
    walk: impl FnOnce() -> S,
    retry: impl FnOnce() -> c_int,
    wait: impl FnOnce() -> c_int,
) -> (S, Waited) {
    let failed = clock::now();
    entry.start_waiting();
    let walked = walk();
    let walk_end = clock::now();
    let outcome = match retry() {
        0 => {
            // Released during the walk: the wait ended at that release (its note,
            // kept within the walk).
            let released = entry.last_release().clamp(failed, walk_end);
            Waited {
                result: 0,
                ticks: released - failed,
                acquired_at: walk_end,
            }
        }
        EBUSY => {
            let result = wait();
            let end = clock::now();
            Waited {
                result,
                ticks: end.saturating_sub(failed),
                acquired_at: end,
            }
        }
        // The try's own answer (a robust mutex whose holder died during the walk:
        // `EOWNERDEAD`, with the lock now the caller's), which the call returns as it
        // returns a first try's; waiting now would relock a lock the caller holds.
        error => Waited {
            result: error,
            ticks: walk_end - failed,
            acquired_at: walk_end,
        },
    };
    entry.stop_waiting();
    (walked, outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use libc::EOWNERDEAD;
    use std::time::Duration;

    /// A zeroed entry: a free one, as the table's zeroed mapping holds.
    fn entry() -> Box<Entry> {
        // SAFETY: every field of `Entry` is an atomic integer or flag (or an array
        // of structs of them), for which all-zero bytes are a valid value.
        unsafe { Box::new(std::mem::zeroed()) }
    }

    const WALK: Duration = Duration::from_millis(2);

    /// The lock stays busy through the walk: the walk is part of the wait, which runs
    /// from the failed try to the acquisition.
    #[test]
    fn a_lock_busy_through_the_walk_counts_the_walk() {
        let entry = entry();
        let before = clock::now();
        let (_, waited) =
            wait_after_failed_try(&entry, || std::thread::sleep(WALK), || EBUSY, || 0);
        let after = clock::now();
        assert_eq!(waited.result, 0);
        // The clock is CLOCK_MONOTONIC in nanoseconds until the profile starts it.
        assert!(waited.ticks >= WALK.as_nanos() as u64, "{}", waited.ticks);
        assert!(waited.ticks <= after - before);
        assert!(waited.acquired_at <= after);
    }

    /// The lock is released during the walk (a holder notes it, as `end_hold` does
    /// while threads wait) and the retry takes it: the wait ends at that release, not
    /// at the retry, and is not ~0 either.
    #[test]
    fn a_lock_released_during_the_walk_waits_until_the_release() {
        let entry = entry();
        let released = std::cell::Cell::new(0);
        let before = clock::now();
        let (_, waited) = wait_after_failed_try(
            &entry,
            || {
                std::thread::sleep(WALK);
                entry.note_release();
                released.set(clock::now());
                std::thread::sleep(WALK);
            },
            || 0,
            || panic!("the retry took the lock: no wait"),
        );
        // From the failed try (after `before`) to the release (noted before `released`).
        assert!(waited.ticks >= WALK.as_nanos() as u64, "{}", waited.ticks);
        assert!(waited.ticks <= released.get() - before, "{}", waited.ticks);
        assert!(waited.acquired_at >= released.get() + WALK.as_nanos() as u64);
    }

    /// A release noted before the failed try says nothing of this wait: the lock was
    /// freed between the try and the registration, and the wait is 0.
    #[test]
    fn a_release_before_the_failed_try_is_a_wait_of_zero() {
        let entry = entry();
        entry.start_waiting();
        entry.note_release();
        entry.stop_waiting();
        std::thread::sleep(Duration::from_millis(1));
        let (_, waited) = wait_after_failed_try(&entry, || (), || 0, || panic!("no wait"));
        assert_eq!(waited.ticks, 0);
    }

    /// A retry that answers an error (a robust mutex's holder died during the walk)
    /// is the call's answer: nothing waits.
    #[test]
    fn a_retry_error_is_the_answer_and_nothing_waits() {
        let entry = entry();
        let (_, waited) = wait_after_failed_try(
            &entry,
            || (),
            || EOWNERDEAD,
            || panic!("waited after an error"),
        );
        assert_eq!(waited.result, EOWNERDEAD);
    }

    /// Only a release while threads wait is noted.
    #[test]
    fn releases_are_noted_only_while_threads_wait() {
        let entry = entry();
        entry.note_release();
        assert_eq!(entry.last_release(), 0);
        entry.start_waiting();
        entry.note_release();
        assert_ne!(entry.last_release(), 0);
    }
}
