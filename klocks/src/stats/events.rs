//! The counted events and lock types, and where each (lock type, event) counter sits
//! in a block of counters: lock types in catalog order (mutexes first), one row of
//! [`Event::ALL`] each.

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
        "A waiter that waited too long reserved the lock's next release for itself (default's and default-rw's writers' claim, the rwsem's HANDOFF).";
    RunningClaim => "running_claim",
        "default: a waiter still on its CPU, whose spins the owner had outrun for 1 ms, reserved the lock's next release for itself.";
    Handoff => "handoff",
        "default, default-rw: an unlock released the lock reserved for its claimant and woke it.";
    Tick => "tick",
        "A sleep ended at its liveness tick, not by a wake: the sleeper looked again at a lock whose wake may rest on a delegate (default, spinfutex, default-rw).";
    ReservationBroken => "reservation_broken",
        "default: a waiter whose sleep ticked took a lock reserved for a claimant that had not taken it within the reservation's expiry; default-rw: a writer whose sleep ticked took WRITER past a writer's claim.";
    TurnOver => "turn_over",
        "default: a thread whose turn was over found the mutex held and went to sleep at once, behind the sleepers; default-rw: the same for a writer that found the lock write-held while writers slept (counted as a sleep too if it parked).";
    ReaderTurn => "reader_turn",
        "default-rw: a write unlock let sleeping readers in ahead of sleeping writers (a timed reader turn).";
    Drain => "drain",
        "default-rw: a writer that took the write bit waited for the readers inside to leave.";
    Timeout => "timeout",
        "A timed acquisition (try_lock_for/until) gave up at its deadline.";
    BiasOn => "bias_on",
        "default-rw: a reader that took the word turned the reader bias on (no writer, and the inhibit of the last revocation over).";
    BiasedRead => "biased_read",
        "default-rw: a reader took the lock through the table of visible readers (the reader bias on), not the word.";
    BiasRevoke => "bias_revoke",
        "default-rw: a writer revoked the reader bias: read its lock's column of the table of visible readers and waited for the readers there.";
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
pub(super) const EVENTS: usize = Event::ALL.len();
/// Counters per thread: one per (lock type, event).
#[cfg_attr(not(feature = "stats"), allow(dead_code))]
pub(super) const SLOTS: usize = LOCKS * EVENTS;

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
    pub(super) const fn slot(self, event: Event) -> usize {
        self.index() * EVENTS + event as usize
    }
}
