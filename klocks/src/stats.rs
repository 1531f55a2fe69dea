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

use crate::catalog::{MutexKind, RwLockKind};

/// Declares the events: the enum, its list, names and one-line descriptions.
macro_rules! events {
    ($($variant:ident => $name:literal, $about:literal;)*) => {
        /// A slow-path event of a lock algorithm.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Event {
            $(#[doc = $about] $variant,)*
        }

        #[cfg_attr(not(feature = "stats"), allow(dead_code))]
        impl Event {
            /// Every event, in the order snapshots list them.
            pub const ALL: &'static [Event] = &[$(Event::$variant,)*];

            /// The event's name, as `lockbench --stats` prints it.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Event::$variant => $name,)*
                }
            }

            /// What the event means in the algorithm, in one line.
            pub const fn about(self) -> &'static str {
                match self {
                    $(Event::$variant => $about,)*
                }
            }

            /// The event called `name`, if there is one.
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|event| event.name() == name)
            }
        }
    };
}

events! {
    LockSlowpath => "lock_slowpath",
        "An exclusive acquisition (a mutex's lock, an rwlock's write lock) missed its fast path.";
    ReadSlowpath => "read_slowpath",
        "A read acquisition missed its fast path.";
    Pending => "pending",
        "qspinlock: the first waiter waited as the pending owner, with no queue node.";
    Queued => "queued",
        "An acquisition waited in the lock's FIFO queue (qspinlock's MCS queue, the rwsem's wait queue).";
    NoNode => "no_node",
        "qspinlock, pvqspinlock: no MCS node was free (or the thread's was busy): slot-less fallback.";
    Steal => "steal",
        "pvqspinlock: a newcomer took the lock ahead of its queue (the kernel's pv_lock_stealing).";
    StreakEnd => "streak_end",
        "A thread's run of queue bypasses (pvqspinlock steals, rwsem reader spins) reached its bound: it queued without trying.";
    HeadPending => "head_pending",
        "pvqspinlock: the queue head's patience ran out and it set pending, which stops steals.";
    WaitEarly => "wait_early",
        "pvqspinlock: a queued waiter stopped spinning early because its predecessor sleeps.";
    Sleep => "sleep",
        "A waiter went to sleep: one futex wait (the pv locks and the rwsem's queue only after their spin budget).";
    HeadSleep => "head_sleep",
        "pvqspinlock: of the sleeps, those of the queue head on the lock word (the rest sleep on their node).";
    Yield => "yield",
        "A waiter gave its CPU away (sched_yield) before sleeping or retrying (default: only after a spin whose budget ran out while the owner ran).";
    Wake => "wake",
        "An unlock or a waker made a futex wake call (a kick).";
    WakeNoSleeper => "wake_no_sleeper",
        "Of the wakes, those that found nobody asleep (the waiter had not slept yet, or was already woken).";
    WakeSkipped => "wake_skipped",
        "An unlock left the sleepers asleep because a spinner was about to take the lock (and inherit the duty to wake).";
    SpinAcquired => "spin_acquired",
        "The one spinning waiter took the lock by spinning (for default-rw's writers: saw it come free).";
    SpinFailed => "spin_failed",
        "The one spinning waiter gave up: budget spent, owner off CPU, nonspinnable, or a handoff was claimed.";
    OwnerOffCpu => "owner_off_cpu",
        "A spin ended because the owner probe said the owner was not running (also counted as a failed spin).";
    ReaderSpinAcquired => "reader_spin_acquired",
        "A reader took the lock by spinning on a writer (rwsem-always, rwsem-adaptive, default-rw).";
    ReaderSpinFailed => "reader_spin_failed",
        "A reader's spin ended without the lock.";
    ReaderSteal => "reader_steal",
        "rwsem-never: a reader's one steal kept its fast-path share of a lock no writer held.";
    PhaseJoin => "phase_join",
        "rwsem-adaptive: a reader that stopped spinning joined a read phase that began while it spun.";
    Nonspinnable => "nonspinnable",
        "rwsem: a writer timed out spinning on readers and marked the lock nonspinnable.";
    Granted => "granted",
        "rwsem: a waker granted the lock to a queued reader (counted by the waker, per reader).";
    Retry => "retry",
        "rwsem: a waker told a queued waiter to try again instead of granting it the lock (per waiter).";
    HandoffClaim => "handoff_claim",
        "A waiter that waited too long reserved the lock's next release for itself (default's claim, the rwsem's HANDOFF).";
    Handoff => "handoff",
        "default: an unlock released the lock reserved for its claimant and woke it.";
    TurnOver => "turn_over",
        "default: a thread whose turn was over found the mutex held and went to sleep at once, behind the sleepers; default-rw: the same for a writer that found the lock write-held while writers slept (counted as a sleep too if it parked).";
    ReaderTurn => "reader_turn",
        "default-rw: a write unlock let sleeping readers in ahead of sleeping writers (a timed reader turn).";
    Drain => "drain",
        "default-rw: a writer that took the write bit waited for the readers inside to leave.";
    Timeout => "timeout",
        "A timed acquisition (try_lock_for/until) gave up at its deadline.";
}

/// A lock type whose events are counted: a [`MutexKind`] or an [`RwLockKind`] of the
/// catalog. `Padded<L>` counts as `L`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lock {
    /// A mutex of the catalog.
    Mutex(MutexKind),
    /// A reader-writer lock of the catalog.
    RwLock(RwLockKind),
}

/// Mutexes in the catalog: the first indices.
const MUTEXES: usize = MutexKind::ALL.len();
/// Lock types counted.
const LOCKS: usize = MUTEXES + RwLockKind::ALL.len();
/// Events per lock type.
const EVENTS: usize = Event::ALL.len();
/// Counters per thread: one per (lock type, event).
#[cfg_attr(not(feature = "stats"), allow(dead_code))]
const SLOTS: usize = LOCKS * EVENTS;

#[cfg_attr(not(feature = "stats"), allow(dead_code))]
impl Lock {
    /// The lock's catalog name (`pvqspinlock`, `default-rw`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Lock::Mutex(kind) => kind.name(),
            Lock::RwLock(kind) => kind.name(),
        }
    }

    /// The lock called `name` in the catalog, if there is one.
    pub fn from_name(name: &str) -> Option<Self> {
        MutexKind::from_name(name)
            .map(Lock::Mutex)
            .or_else(|| RwLockKind::from_name(name).map(Lock::RwLock))
    }

    /// Every lock type, mutexes first, in catalog order.
    pub fn all() -> impl Iterator<Item = Lock> {
        let mutexes = MutexKind::ALL.iter().map(|&kind| Lock::Mutex(kind));
        mutexes.chain(RwLockKind::ALL.iter().map(|&kind| Lock::RwLock(kind)))
    }

    /// The lock's row in a block of counters. A family's discriminants follow its
    /// `ALL` order (no explicit values; a variant that is configured out does not
    /// exist, so the others stay dense).
    const fn index(self) -> usize {
        match self {
            Lock::Mutex(kind) => kind as usize,
            Lock::RwLock(kind) => MUTEXES + kind as usize,
        }
    }

    /// The counter of `event` for this lock.
    const fn slot(self, event: Event) -> usize {
        self.index() * EVENTS + event as usize
    }
}

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
    return counters::sum();
    #[cfg(loom)]
    Snapshot::default()
}

/// The calling thread's counts (exact). Zero under loom.
#[cfg(feature = "stats")]
pub fn this_thread() -> Snapshot {
    #[cfg(not(loom))]
    return counters::this_thread();
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

// The per-thread blocks and the registry (module doc, "Per-thread blocks").
#[cfg(all(feature = "stats", not(loom)))]
mod counters;

// Helpers for the locks' counting tests: a waiter thread whose counts come back,
// and whether it sleeps in the kernel.
#[cfg(all(test, feature = "stats", not(loom)))]
pub(crate) mod testing;

#[cfg(all(test, feature = "stats", not(loom)))]
mod tests;
