//! The turn clock: when a thread that sleeps on a lock has had its turn and should
//! queue behind the sleepers instead of spinning or barging.
//!
//! With more runnable threads than CPUs, a barging lock goes for a whole scheduler
//! slice to whichever threads the scheduler happens to run while it is free, and a
//! woken sleeper that finds it held goes back to the end of the queue (after u-SCL's
//! lock slices, EuroSys 2020). So a thread's *turn* begins when it wakes from a sleep
//! on the lock, and once the turn is [`TURN_US`] old, the next time the thread finds
//! the lock taken (as its lock defines it: [`RawMutex`](crate::RawMutex) when it is
//! held at all, [`RawRwLock`](crate::RawRwLock) when it is write-held while writers
//! sleep) it sleeps at once, behind the sleepers already there; the lock goes round
//! them instead of staying with the running threads. A thread that has not slept for
//! [`TURNS_LAPSE_US`] takes no turns until it sleeps again: where spinning serves every
//! waiter (threads ≤ CPUs), nobody sleeps for fairness' sake alone.
//!
//! Each [`Turn`] is a thread-local clock per kind of lock, across all locks of that
//! kind: the time of the thread's last wake, with the low bit set (0: no turn), touched
//! only on slow paths.
//!
//! # A thread that never slept has not had its turn
//!
//! It has none: turns order only threads that sleep. (The default rwlock's writers
//! once counted a writer that had never slept as one whose turn was over, and made it
//! queue behind the sleeping writers at once; the default mutex did not. One clock
//! needs one answer, and this is the mutex's.) Ending a running thread's turn hands
//! the lock to a sleeper, and a woken sleeper is runnable but not yet running: with
//! more threads than CPUs it runs a scheduling round later, and the lock waits for it
//! meanwhile, as a reserved lock waits idle for a claimant that the scheduler has not
//! run yet. A thread that has never slept on the lock is one the scheduler keeps
//! running, the best holder the lock has; sending it to sleep swaps it for one that
//! is not running, and makes one more sleeper, which will wait in its turn (and, on
//! the mutex, may claim a handoff that reserves the lock for it: more idle
//! reservations). What bounds a sleeper's wait behind threads that never sleep is
//! each lock's own rule: the mutex's handoff claim; the rwlock's writers-first flag
//! and wakes in turn. And every thread that waits with more threads than CPUs soon
//! sleeps (it sees its lock's owner preempted and stops spinning), and from then on
//! takes turns.
//!
//! The turn begins when the thread returns from its sleep, when it runs again, not
//! when it was woken: the time it spent runnable but not running was not its turn.
//!
//! Under loom time is not modelled: [`Turn::is_over`] answers what the model asks for
//! with `TURNS_OVER_IN_MODELS`.

use std::cell::Cell;

/// How long a thread's turn lasts after it woke from a sleep on a lock (µs). For the
/// mutex, longer turns were no fairer, shorter ones no fairer and slept more often
/// (`docs/results/tuning.md`); for the rwlock's writers, `rw-fair` (40 readers and 40
/// writers on 2 CPUs) gave the slowest writer 0.24–0.29 of the writers' mean with
/// 1 ms, 0.27 with 300 µs, 0.06–0.23 without turns
/// (`docs/results/rw-writer-turns-2026-11-26.txt`).
// Used by the native clock only (time is not modelled under loom).
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const TURN_US: u32 = 1_000;

/// A thread that has not slept on a lock of a kind for this long (µs) takes no turns
/// on that kind until it sleeps again (module doc, `docs/results/tuning.md`).
// Used by the native clock only (time is not modelled under loom).
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const TURNS_LAPSE_US: u32 = 50_000;

/// Whose turn: one clock per kind of lock.
#[derive(Clone, Copy)]
pub(crate) enum Turn {
    /// [`RawMutex`](crate::RawMutex)'s waiters.
    Mutex,
    /// [`RawRwLock`](crate::RawRwLock)'s writers.
    RwLockWriter,
}

/// How many kinds of turn there are: one clock each.
#[cfg(not(loom))]
const TURN_KINDS: usize = Turn::RwLockWriter as usize + 1;

#[cfg(not(loom))]
std::thread_local! {
    /// When this thread's turn of each kind began (µs, wrapping, low bit set); 0 if it
    /// takes no turns of that kind. No destructor, so it can be read at any time, also
    /// during thread exit.
    static TURN_BEGAN: [Cell<u32>; TURN_KINDS] = const {
        [const { Cell::new(0) }; TURN_KINDS]
    };
}

#[cfg(loom)]
std::thread_local! {
    /// Whether every thread's turn is over under loom, so that each contended lock
    /// that finds the lock taken sleeps at once. Off except in the models that turn
    /// it on. A std thread-local: loom runs a model's threads on the thread that
    /// called `check`.
    pub(crate) static TURNS_OVER_IN_MODELS: Cell<bool> = const { Cell::new(false) };
}

impl Turn {
    /// Whether the calling thread's turn is over: it last woke from a sleep on a lock
    /// of this kind at least [`TURN_US`] and less than [`TURNS_LAPSE_US`] ago (one
    /// that lapsed is forgotten). Under loom, whatever the model asks for.
    pub(crate) fn is_over(self) -> bool {
        #[cfg(not(loom))]
        return TURN_BEGAN.with(|turns| {
            let began = &turns[self as usize];
            if began.get() == 0 {
                return false;
            }
            let since = crate::wait::now_us().wrapping_sub(began.get());
            if since >= TURNS_LAPSE_US {
                // Spinning has served this thread for a while: it takes no more
                // turns until it sleeps again.
                began.set(0);
                return false;
            }
            since >= TURN_US
        });
        #[cfg(loom)]
        {
            let _ = self;
            TURNS_OVER_IN_MODELS.with(Cell::get)
        }
    }

    /// The calling thread has just returned from a sleep on a lock of this kind: its
    /// turn begins now.
    pub(crate) fn begin(self) {
        #[cfg(not(loom))]
        TURN_BEGAN.with(|turns| turns[self as usize].set(crate::wait::now_us() | 1));
        #[cfg(loom)]
        let _ = self;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_turn_is_over_after_its_length_and_only_after_a_sleep() {
        std::thread::spawn(|| {
            assert!(
                !Turn::Mutex.is_over(),
                "a thread that never slept has no turn"
            );
            Turn::Mutex.begin();
            std::thread::sleep(Duration::from_micros(u64::from(TURN_US) + 500));
            assert!(Turn::Mutex.is_over());
            assert!(
                !Turn::RwLockWriter.is_over(),
                "each kind of lock has its own clock"
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_turn_lapses_when_the_thread_has_not_slept_for_long() {
        std::thread::spawn(|| {
            Turn::RwLockWriter.begin();
            std::thread::sleep(Duration::from_micros(u64::from(TURNS_LAPSE_US) + 5_000));
            assert!(!Turn::RwLockWriter.is_over(), "a lapsed turn is no turn");
            Turn::RwLockWriter.begin();
            std::thread::sleep(Duration::from_micros(u64::from(TURN_US) + 500));
            assert!(
                Turn::RwLockWriter.is_over(),
                "a new sleep starts a new turn"
            );
        })
        .join()
        .unwrap();
    }
}
