//! What the sleeping locks share about waiting: how long a waiter waits
//! ([`Patience`]), the bounded sleep that keeps a wait from resting on a delegate
//! ([`Patience::sleep`]), the microsecond clock their turns and handoff claims are
//! timed by, and the count of wakes an unlock leaves to a spinner. Their turns are
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
use crate::sync::AtomicU32;
use std::cell::Cell;

/// The first bound of one sleep on a lock (µs): the liveness tick.
///
/// # Why every sleep is bounded
///
/// A sleeping lock's unlock may leave its sleepers' wake to a *delegate*: a spinner
/// that will take the lock and pass the wake on, a claimant the lock is reserved for,
/// a writer the unlock left `WRITERS_WAITING` for, the unlocker itself after its
/// release. Each is a promise about another thread's future, and that thread may not
/// keep it for as long as it likes: a signal handler on it may block (in `read(2)` on
/// a pipe that a sleeper of this very lock would write to), it may `siglongjmp` out of
/// the lock call, be stopped, or be preempted for good. So no sleeper sleeps on such a
/// promise unbounded: each sleep ends after a tick at the latest, and a sleeper whose
/// tick passed without a wake (`ticked`) looks at the lock again and takes what the
/// delegate left: a free word, whatever spinner flag it shows, and a reservation
/// older than its expiry. A wait whose sleeps keep ticking doubles its tick, up to
/// [`MAX_TICK_US`], so a lock held for long costs its sleepers a wake per tick that
/// halves its rate each time: a frozen delegate delays a waiter by at most about the
/// time it had already waited, or `MAX_TICK_US`. The tick costs nothing where the
/// lock moves: a sleeper woken in time never sees it.
// Ticked sleeps are native only (loom has no time).
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const TICK_US: u32 = 2_000;

/// The longest tick (µs).
// Used by the native clock only (time is not modelled under loom).
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const MAX_TICK_US: u32 = 128_000;

/// Every this many unlocks of a thread that leave sleepers to a spinner, one wakes a
/// sleeper anyway, so that sleepers rejoin the running threads and can claim.
const FAIR_SKIPS: u32 = 256;

// No destructor, so it can be read at any time, also during thread exit.
#[cfg(not(loom))]
std::thread_local! {
    /// Unlocks of this thread that left sleepers to a spinner (mod `FAIR_SKIPS`).
    static SKIPPED_WAKES: Cell<u32> = const { Cell::new(0) };
    /// This thread's current tick, as a shift of [`TICK_US`]: doubled by each sleep
    /// that ticked, back to the first by one that was woken. Shared by nested waits
    /// (a signal handler's): each only shortens or lengthens the other's next tick.
    static TICK_SHIFT: Cell<u32> = const { Cell::new(0) };
}
#[cfg(loom)]
std::thread_local! {
    /// Whether a bounded sleep ticks under loom: then it does not sleep at all but
    /// returns at once as if its tick had passed (time is not modelled), so that a
    /// model whose delegate never acts explores the sleepers that take over from it.
    /// Off by default: the other models explore the sleeps that wakes end. A std
    /// thread-local: loom runs a model's threads on the thread that called `check`.
    pub(crate) static TICKS_IN_MODELS: Cell<bool> = const { Cell::new(false) };
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
    /// Whether the wait has a deadline (a timed try): one that would wait for its
    /// own thread fails instead of panicking, as `try_lock` does, since it cannot
    /// deadlock.
    pub(crate) fn gives_up(self) -> bool {
        !matches!(self, Patience::Forever)
    }

    pub(crate) fn expired(self) -> bool {
        match self {
            Patience::Forever => false,
            #[cfg(not(loom))]
            Patience::Until(at) => std::time::Instant::now() >= at,
        }
    }

    /// Sleeps on `word` while it holds `expected`, as a sleeper of class `bits`
    /// ([`park::wait_as`]), until woken, until the deadline, or until the liveness
    /// tick passes (the module doc, [`TICK_US`]). Whether the tick passed: the sleeper
    /// was not woken, and a delegate it may have slept behind has had a tick to act.
    #[cfg(not(loom))]
    pub(crate) fn sleep(self, word: &AtomicU32, expected: u32, bits: u32) -> bool {
        self.sleep_woke(word, expected, bits).0
    }

    /// [`sleep`](Self::sleep), also telling whether the thread slept at all: `false`
    /// if the word differed from `expected` when the kernel compared it (or a signal
    /// cut the sleep short), so that the call returned without sleeping.
    #[cfg(not(loom))]
    pub(crate) fn sleep_woke(self, word: &AtomicU32, expected: u32, bits: u32) -> (bool, bool) {
        let shift = TICK_SHIFT.with(Cell::get);
        let tick = std::time::Duration::from_micros(u64::from(TICK_US << shift));
        let (deadline, by_tick) = match self {
            Patience::Forever => (park::Deadline::after(tick), true),
            Patience::Until(at) => {
                let left = at.saturating_duration_since(std::time::Instant::now());
                if left <= tick {
                    (park::Deadline::at(at), false)
                } else {
                    (park::Deadline::after(tick), true)
                }
            }
        };
        let woke = park::wait_as_until_woke(word, expected, bits, deadline);
        let ticked = woke == park::Woke::TimedOut && by_tick;
        let next = if ticked {
            (shift + 1).min((MAX_TICK_US / TICK_US).ilog2())
        } else {
            0
        };
        TICK_SHIFT.with(|s| s.set(next));
        (ticked, woke != park::Woke::NotAsleep)
    }

    /// Under loom: a plain sleep, or, in the models that turn ticks on
    /// ([`TICKS_IN_MODELS`]), no sleep and a passed tick.
    #[cfg(loom)]
    pub(crate) fn sleep(self, word: &AtomicU32, expected: u32, bits: u32) -> bool {
        self.sleep_woke(word, expected, bits).0
    }

    /// Under loom: as [`sleep`](Self::sleep), and whether the thread slept (a passed
    /// tick counts as a sleep).
    #[cfg(loom)]
    pub(crate) fn sleep_woke(self, word: &AtomicU32, expected: u32, bits: u32) -> (bool, bool) {
        if TICKS_IN_MODELS.with(Cell::get) {
            crate::sync::yield_now();
            return (true, true);
        }
        let woke = park::wait_bits_model(word, expected, bits);
        (false, woke != park::Woke::NotAsleep)
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
