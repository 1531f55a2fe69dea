//! What the sleeping locks share about waiting: how long a waiter waits
//! ([`Patience`]), the microsecond clock their turns and handoff claims are timed by,
//! and the count of wakes an unlock leaves to a spinner. Their turns are
//! [`turn`](crate::turn)'s; their spin on the owner is
//! [`spin_on_owner`](crate::spin_on_owner)'s.
//!
//! [`RawMutex`](crate::RawMutex) and [`RawRwLock`](crate::RawRwLock) wait alike:
//! one spinner spins on the owner while the others sleep, an unlock that finds the
//! spinner leaves the sleepers' wake to it (but every [`FAIR_SKIPS`]-th), and a
//! thread that slept takes turns. Each lock keeps its own word and transitions; this
//! module keeps what their waits have in common, so that the two agree by
//! construction.

use crate::park;
use std::cell::Cell;

/// Every this many unlocks of a thread that leave sleepers to a spinner, one wakes a
/// sleeper anyway, so that sleepers rejoin the running threads and can claim.
const FAIR_SKIPS: u32 = 256;

// No destructor, so it can be read at any time, also during thread exit.
#[cfg(not(loom))]
std::thread_local! {
    /// Unlocks of this thread that left sleepers to a spinner (mod `FAIR_SKIPS`).
    static SKIPPED_WAKES: Cell<u32> = const { Cell::new(0) };
}
#[cfg(loom)]
loom::thread_local! {
    static SKIPPED_WAKES: Cell<u32> = Cell::new(0);
}

/// How a waiting thread ends its wait when it has a deadline.
#[derive(Clone, Copy)]
pub(crate) enum Patience {
    /// `lock`: waits as long as it takes, and may claim a handoff.
    Forever,
    /// `try_lock_until`: gives up at the deadline; never claims.
    #[cfg(not(loom))]
    Until(std::time::Instant),
}

impl Patience {
    pub(crate) fn deadline(self) -> Option<park::Deadline> {
        match self {
            Patience::Forever => None,
            #[cfg(not(loom))]
            Patience::Until(at) => Some(park::Deadline::at(at)),
        }
    }

    pub(crate) fn expired(self) -> bool {
        match self {
            Patience::Forever => false,
            #[cfg(not(loom))]
            Patience::Until(at) => std::time::Instant::now() >= at,
        }
    }

    /// Sleeps `at_most`, or until the deadline if it comes first: the wait of a
    /// thread that has no word to sleep on (a writer waiting for the readers of the
    /// reader bias's table, whose unlocks wake nobody).
    #[cfg(not(loom))]
    pub(crate) fn nap(self, at_most: std::time::Duration) {
        let nap = match self {
            Patience::Forever => at_most,
            Patience::Until(at) => {
                at_most.min(at.saturating_duration_since(std::time::Instant::now()))
            }
        };
        // nanosleep: async-signal-safe, as a handler's write lock may nap here.
        std::thread::sleep(nap);
    }

    /// Under loom (time is not modelled): lets another thread run.
    #[cfg(loom)]
    pub(crate) fn nap(self, _at_most: std::time::Duration) {
        crate::sync::yield_now();
    }
}

/// Counts an unlock of this thread that leaves sleepers to a spinner; whether this
/// one must wake a sleeper anyway (every [`FAIR_SKIPS`]-th).
pub(crate) fn count_skipped_wake() -> bool {
    SKIPPED_WAKES.with(|count| {
        let skipped = count.get().wrapping_add(1);
        count.set(skipped);
        skipped % FAIR_SKIPS == 0
    })
}

/// The monotonic clock in microseconds, wrapping at 2³² (71 minutes: differences of
/// the waits compared here are far shorter).
pub(crate) fn now_us() -> u32 {
    #[cfg(not(loom))]
    {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: writes the current time into `now`; CLOCK_MONOTONIC always exists.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        (now.tv_sec as u64 * 1_000_000 + now.tv_nsec as u64 / 1_000) as u32
    }
    #[cfg(loom)]
    0
}
