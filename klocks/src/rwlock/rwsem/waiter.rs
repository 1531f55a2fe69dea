//! The waiter: what it waits for and since when, its wait on its node (the node's
//! states are in the module doc, "The waiter's node"), and the wake-ups a waker
//! delivers once it has released the queue lock.

use crate::budget::SpinBudget;
use crate::rwlock::wait_queue::{Detached, Waiter};
use crate::stats::{self, Event, Lock};
use crate::sync::{cpu_relax, AtomicU32, Ordering::*};

/// The most readers one wake-up grants the lock to (the kernel's `MAX_READERS_WAKEUP`).
pub(super) const MAX_READERS_WAKEUP: usize = 256;
const _: () = assert!(MAX_READERS_WAKEUP.is_multiple_of(64));

/// The front waiter that has waited this long sets `HANDOFF`, and a sleeping reader
/// this long is granted the lock instead of being woken to retry. The kernel waits
/// one jiffy, at least 4 ms. Here a waiter that retries loses its place in the queue,
/// and with 40 readers and 40 writers on 2 CPUs 1 ms left some writers below a fifth
/// of their group's mean (`lockbench rw-fair`); 200 µs, six futex handoffs, did not.
#[cfg(not(loom))]
pub const HANDOFF_AFTER: std::time::Duration = std::time::Duration::from_micros(200);

/// Waiter states: queued, spinning on its own node.
pub(super) const WAITING: u32 = 0;
/// A writer is told to try again.
pub(super) const WOKEN: u32 = 1;
/// A reader is given the lock.
pub(super) const GRANTED: u32 = 2;
/// Queued and asleep (or about to be): its waker must make the futex syscall.
pub(super) const SLEEPING: u32 = 3;

/// The spin budget shared by every `RwSem`.
pub(super) static BUDGET: SpinBudget = SpinBudget::new();

/// What a waiter is waiting for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Read,
    Write,
}

/// How long a thread has waited for the lock, across its retries: since it first
/// queued (read lazily, as most slow paths end before they queue).
pub(super) struct Since {
    /// Times it was woken or refused without getting the lock.
    retries: std::cell::Cell<u32>,
    #[cfg(not(loom))]
    at: std::cell::Cell<Option<std::time::Instant>>,
}

impl Since {
    pub(super) fn new() -> Self {
        Self {
            retries: std::cell::Cell::new(0),
            #[cfg(not(loom))]
            at: std::cell::Cell::new(None),
        }
    }

    /// The thread queues: start the clock if this is the first time.
    pub(super) fn queued(&self) {
        #[cfg(not(loom))]
        if self.at.get().is_none() {
            self.at.set(Some(std::time::Instant::now()));
        }
    }

    pub(super) fn retried(&self) {
        self.retries.set(self.retries.get().saturating_add(1));
    }

    /// Whether this waiter is owed the lock: at the front, it may demand a handoff;
    /// asleep, it is granted the lock rather than woken to retry.
    #[cfg(not(loom))]
    pub(super) fn waited_long(&self) -> bool {
        self.at
            .get()
            .is_some_and(|at| at.elapsed() >= HANDOFF_AFTER)
    }

    /// Under loom: after one retry, so both sides of every decision are explored.
    #[cfg(loom)]
    pub(super) fn waited_long(&self) -> bool {
        self.retries.get() >= 1
    }

    /// How long until [`waited_long`](Self::waited_long) turns true (at least a
    /// microsecond, so that a sleep always ends).
    #[cfg(not(loom))]
    pub(super) fn left_until_owed(&self) -> std::time::Duration {
        let waited = self
            .at
            .get()
            .map_or(std::time::Duration::ZERO, |at| at.elapsed());
        HANDOFF_AFTER
            .saturating_sub(waited)
            .max(std::time::Duration::from_micros(1))
    }

    /// Under loom, sleeps are not timed (the futex model has no clock).
    #[cfg(loom)]
    pub(super) fn left_until_owed(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

/// A waiter's node data.
pub(super) struct Wait {
    pub(super) kind: Kind,
    pub(super) tid: u32,
    /// The owner word at slow-path entry: the last reader, or only `RD_NONSPINNABLE`.
    pub(super) last_rowner: u32,
    /// Owned by the waiting thread's stack frame, which outlives the node.
    since: *const Since,
}

impl Wait {
    pub(super) fn new(kind: Kind, tid: u32, last_rowner: u32, since: &Since) -> Self {
        Self {
            kind,
            tid,
            last_rowner,
            since,
        }
    }

    pub(super) fn since(&self) -> &Since {
        // SAFETY: `since` lives in the waiting thread's frame, which outlives its node
        // (and the node is only reached while linked, under the queue lock).
        unsafe { &*self.since }
    }
}

pub(super) type Node = Waiter<Wait>;

/// What a wake-up may do (the kernel's `rwsem_wake_type`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Wake {
    /// Wake the front waiter, a writer or readers.
    Any,
    /// Wake readers only, if one is at the front (the lock is reader-owned).
    Readers,
    /// Wake readers only, if one is at the front; the caller holds a read lock.
    ReadOwned,
}

/// Wake-ups decided under the queue lock and made after it is dropped: the kernel's
/// `wake_q`, extended to the state stores themselves. A waiter told to go may unlock
/// at once, and its unlock may be the last use of the rwsem before another thread
/// frees it; so a waker lets waiters go only once it is done with the rwsem (the
/// queue lock's release is its last access). Until then the waiters cannot have left
/// their lock calls, so nobody may free the rwsem (module doc, "No access after the
/// release").
pub(super) struct Deliveries {
    /// The front writer to tell `WOKEN` (still linked: it leaves the queue itself).
    pub(super) writer: *const Node,
    /// Readers unlinked from the queue, and which of them are granted the lock (the
    /// others are told to retry).
    pub(super) readers: Option<(Detached<Wait>, [u64; MAX_READERS_WAKEUP / 64])>,
}

impl Deliveries {
    pub(super) fn none() -> Self {
        Self {
            writer: std::ptr::null(),
            readers: None,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.writer.is_null() && self.readers.is_none()
    }

    /// Tells each waiter its new state, waking those that sleep. Call it with the
    /// queue lock dropped; it touches the waiters' nodes only, never the rwsem. The
    /// wakes count as `lock`'s.
    pub(super) fn deliver(self, lock: Lock) {
        // SAFETY: the front writer stays linked and waiting, its node alive in its
        // frame, until it sees a state other than WAITING or SLEEPING, which only this
        // delivery stores (WRITER_WOKEN kept every other waker off it). After the swap
        // only the word's address is used.
        if let Some(writer) = unsafe { self.writer.as_ref() } {
            let word: *const AtomicU32 = &writer.state;
            // Relaxed: the writer re-reads everything under the queue lock.
            if writer.state.swap(WOKEN, Relaxed) == SLEEPING {
                stats::woke(lock, crate::park::wake_one_at(word));
            }
            crate::fault::after_release();
        }
        let Some((readers, grant)) = self.readers else {
            return;
        };
        readers.release_each(|i, node| {
            let to = if grant[i / 64] & (1 << (i % 64)) != 0 {
                GRANTED
            } else {
                WOKEN
            };
            let word: *const AtomicU32 = &node.state;
            // Release: pairs with the Acquire in `wait_on_node`; a granted reader holds
            // the lock from here, and may be gone: only `word`'s address is used below.
            if node.state.swap(to, Release) == SLEEPING {
                stats::woke(lock, crate::park::wake_one_at(word));
            }
            crate::fault::after_release();
        });
    }
}

/// A queued waiter's wait for its waker (the pv locks' protocol, seed 003): spin on the
/// node for the spin budget, then announce `SLEEPING` and sleep until the state
/// changes. A waker that finds the waiter still spinning saves the futex syscall and
/// the waiter its sleep, each worth ~1,000 lock handoffs here. Returns the new state.
///
/// With `timeout`, the sleep ends after it too (the waiter is then still queued, its
/// state `WAITING` or `SLEEPING`, and must re-check under the queue lock). Its sleeps
/// count as `lock`'s.
pub(super) fn wait_on_node(node: &Node, timeout: Option<std::time::Duration>, lock: Lock) -> u32 {
    for _ in 0..BUDGET.spins() {
        // Acquire: pairs with the Release swap of a grant in `mark_wake`.
        let state = node.state.load(Acquire);
        if state != WAITING {
            return state;
        }
        cpu_relax();
    }
    // Relaxed on success: the announcement orders nothing, it only makes the waker
    // call the futex (an RMW on the same word, so it cannot miss it). Acquire on
    // failure: as above.
    if let Err(state) = node
        .state
        .compare_exchange(WAITING, SLEEPING, Relaxed, Acquire)
    {
        return state;
    }
    loop {
        stats::count(lock, Event::Sleep);
        match timeout {
            None => crate::park::wait(&node.state, SLEEPING),
            Some(timeout) => {
                crate::park::wait_at_most(&node.state, SLEEPING, timeout);
                // Acquire: as above.
                return node.state.load(Acquire);
            }
        }
        // Acquire: as above.
        let state = node.state.load(Acquire);
        if state != SLEEPING {
            return state;
        }
    }
}

/// Monotonic nanoseconds since the first call in this process.
#[cfg(not(loom))]
pub(super) fn clock() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}
