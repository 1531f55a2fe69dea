//! Contention counters: how often each lock took each of its slow paths (cargo
//! feature `stats`, off by default).
//!
//! The model is the kernel's `lock_events` (`kernel/locking/lock_events_list.h`,
//! `CONFIG_LOCK_EVENT_COUNTS`): one counter per slow-path event of each lock
//! algorithm (`lock_pending`, `pv_wait_head`, `rwsem_opt_fail`, ...), kept per CPU
//! and summed when read. Here the counters are kept per thread and per lock type
//! ([`Lock`]: the [`catalog`](crate::catalog)'s entries), so a snapshot can say
//! "pvqspinlock: 15.8k sleeps, 15.8k wakes, 37k queued".
//!
//! # Cost
//!
//! Without the feature, `count` is an empty `#[inline(always)]` function and the
//! module's public API does not exist: every lock's fast path compiles to the same
//! machine code as before the counters were written (so do the slow paths, but for
//! the futex wake, which now returns how many it woke, and four `RwSem` slow paths,
//! which pass the lock type to the waiter's functions). With it, every count sits on a slow path (never on an uncontended
//! fast path) and costs a thread-local lookup plus a load and a store to a line only
//! the counting thread writes: no locked instruction, no shared cache line. A
//! thread's first count allocates its block of counters and registers it under a
//! mutex, once per thread.
//!
//! # Per-thread blocks
//!
//! Each thread that counts owns one block of `AtomicU64`s, written only by itself
//! (Relaxed load and store: nobody else writes, so no RMW is needed), registered in a
//! global list. [`snapshot`] sums the blocks of the live threads and the counts of
//! the threads that have exited: a thread's thread-local destructor folds its block
//! into that "retired" sum under the list's mutex, so a snapshot never loses an
//! exited thread's counts nor sees them twice. A snapshot taken while threads run is
//! approximate (each counter is read once, at some moment); one taken after the
//! counting threads were joined is exact. [`this_thread`] reads the calling thread's
//! block alone (exact, whatever other threads do: what the tests use).
//!
//! Counts made while the calling thread's thread-locals are being destroyed, and
//! counts made by a signal handler that interrupts the same thread's registration,
//! are dropped. Under `--cfg loom` the counters compile away, so the models never see
//! them.
//!
//! Counts follow the lock type that took the path: the rwsem's wait-queue lock is a
//! `SpinFutexMutex`, so contention on it counts as `spinfutex`'s, not the rwsem's.

#[cfg(feature = "stats")]
use events::SLOTS;
pub use events::{Event, Lock};

/// Counts one `event` of a `lock` on the calling thread. Slow paths only.
#[cfg(all(feature = "stats", not(loom)))]
#[inline]
pub(crate) fn count(lock: Lock, event: Event) {
    counters::add(lock.slot(event));
}

/// Without the feature (or under loom): nothing, so the lock code is unchanged.
#[cfg(not(all(feature = "stats", not(loom))))]
#[inline(always)]
pub(crate) fn count(_: Lock, _: Event) {}

/// Counts a futex wake that woke `woken` threads: a [`Event::Wake`], and a
/// [`Event::WakeNoSleeper`] if it found nobody.
#[inline(always)]
pub(crate) fn woke(lock: Lock, woken: u32) {
    count(lock, Event::Wake);
    if woken == 0 {
        count(lock, Event::WakeNoSleeper);
    }
}

/// The counts of every thread, the exited ones included (approximate while threads
/// count: see the module doc). Zero under loom.
#[cfg(feature = "stats")]
pub fn snapshot() -> Snapshot {
    #[cfg(not(loom))]
    return Snapshot {
        counts: counters::sum(),
    };
    #[cfg(loom)]
    Snapshot::default()
}

/// The calling thread's counts (exact). Zero under loom.
#[cfg(feature = "stats")]
pub fn this_thread() -> Snapshot {
    #[cfg(not(loom))]
    return counters::this_thread().map_or_else(Snapshot::default, |counts| Snapshot { counts });
    #[cfg(loom)]
    Snapshot::default()
}

/// Counts of every (lock type, event), from [`snapshot`] or [`this_thread`].
/// Subtract two to get what happened in between: `after - before` (a count that went
/// down, which monotonic counters never do, gives 0).
#[cfg(feature = "stats")]
#[derive(Clone, PartialEq, Eq)]
pub struct Snapshot {
    counts: Box<[u64]>,
}

#[cfg(feature = "stats")]
impl Default for Snapshot {
    /// All zero.
    fn default() -> Self {
        Self {
            counts: vec![0; SLOTS].into_boxed_slice(),
        }
    }
}

#[cfg(feature = "stats")]
impl Snapshot {
    /// How often `lock` saw `event`.
    pub fn get(&self, lock: Lock, event: Event) -> u64 {
        self.counts[lock.slot(event)]
    }

    /// Every nonzero count: lock types in catalog order, events in [`Event::ALL`]
    /// order.
    pub fn iter(&self) -> impl Iterator<Item = (Lock, Event, u64)> + '_ {
        Lock::all().flat_map(move |lock| self.of(lock).map(move |(event, n)| (lock, event, n)))
    }

    /// `lock`'s nonzero counts, in [`Event::ALL`] order.
    pub fn of(&self, lock: Lock) -> impl Iterator<Item = (Event, u64)> + '_ {
        Event::ALL
            .iter()
            .map(move |&event| (event, self.get(lock, event)))
            .filter(|&(_, n)| n != 0)
    }

    /// Whether every count is zero.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&n| n == 0)
    }
}

#[cfg(feature = "stats")]
impl std::ops::Sub<&Snapshot> for &Snapshot {
    type Output = Snapshot;

    fn sub(self, before: &Snapshot) -> Snapshot {
        let counts = self.counts.iter().zip(before.counts.iter());
        Snapshot {
            counts: counts.map(|(&a, &b)| a.saturating_sub(b)).collect(),
        }
    }
}

#[cfg(feature = "stats")]
impl std::ops::Sub for Snapshot {
    type Output = Snapshot;

    fn sub(self, before: Snapshot) -> Snapshot {
        &self - &before
    }
}

#[cfg(feature = "stats")]
impl std::fmt::Display for Snapshot {
    /// One line per lock type with counts: `pvqspinlock: lock_slowpath 12, queued 3`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for lock in Lock::all() {
            let mut events = self.of(lock).peekable();
            if events.peek().is_none() {
                continue;
            }
            write!(f, "{}:", lock.name())?;
            for (i, (event, n)) in events.enumerate() {
                write!(f, "{} {} {n}", if i == 0 { "" } else { "," }, event.name())?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

#[cfg(feature = "stats")]
impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counts = self
            .iter()
            .map(|(lock, event, n)| ((lock.name(), event.name()), n));
        f.debug_map().entries(counts).finish()
    }
}

// The events, the lock types and the counters' layout.
mod events;

// The per-thread blocks and the registry (module doc, "Per-thread blocks").
#[cfg(all(feature = "stats", not(loom)))]
mod counters;

// Helpers for the locks' counting tests: a waiter thread whose counts come back,
// and whether it sleeps in the kernel.
#[cfg(all(test, feature = "stats", not(loom)))]
pub(crate) mod testing;

#[cfg(all(test, feature = "stats", not(loom)))]
mod tests;
