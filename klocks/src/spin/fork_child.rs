//! Queued spinlocks in a fork child: the words that name threads the child does not
//! have are repaired at their first contended use.
//!
//! # The problem
//!
//! A [`QSpinLock`](super::QSpinLock) or [`PvQSpinLock`](super::PvQSpinLock) word is 4
//! bytes: `(tail, pending, locked)`. `fork()` copies it as the parent's threads left
//! it. A word whose `pending` bit or `tail` was set by a parent thread other than
//! the forking one names a waiter that does not exist in the child: nobody will ever
//! clear that `pending` bit, take the lock as that queue head, or pass headship on
//! from that node. Such a word is free (`locked == 0`) or will be once its holder
//! unlocks it, and yet the child's first slow path waits behind the phantom waiter
//! forever, and its `try_lock` (which needs a zero word) fails forever.
//!
//! # Why the word cannot say it, and what can
//!
//! A `pthread_spinlock_t` is 4 bytes and every bit of the word is taken: there is no
//! room for a fork-generation stamp beside it (as the interposer keeps in a
//! `pthread_mutex_t`). Nor can a fork handler enumerate the spinlocks of a process.
//! But it can enumerate the *waiters*: every `pending` bit and every `tail` is set by
//! a thread inside a lock's slow path, and such a thread records the lock it waits
//! for before it touches the word, in a table indexed by its queue slot
//! ([`mcs`](super::mcs); one record per nesting level, so that a signal handler's
//! wait on the same thread does not hide the wait it interrupted). The records are
//! cleared when the slow path has the lock. So at the instant of the fork, the
//! records name every lock whose word may hold waiter state.
//!
//! The child handler (registered with `pthread_atfork` by the process's first slow
//! path, before it records its wait; the interposer and the C API register it from
//! their library's constructor, as a slow path may run inside an allocator, which
//! `pthread_atfork` may call) runs on the child's only thread. It copies the recorded addresses of every parent
//! thread but the forking one into the **stale list** and clears their records.
//! It does not touch the words: a lock at a recorded address may live in memory the
//! child shares with the parent (`MAP_SHARED`), where only a lock the child actually
//! uses is the child's business. Instead, each slow path (and each `try_lock` that
//! finds the word busy) first looks its word's address up in the stale list, while
//! the list has entries left; one Acquire load of the count of unrepaired entries when
//! it has none, which is always the case in a process that never forked with waiters.
//!
//! # The repair
//!
//! `(t, p, l) -> (0, 0, l)`: the tail, the pending byte (and the pv lock's steal
//! count in it) are cleared; the locked byte is kept. That is sound at the first
//! slow-path entry in the child, whoever set the bits: every thread of the child that
//! could set them (only a slow path does) looks the address up first and waits while
//! the entry is being repaired, so at that moment every waiter bit of the word is a
//! parent thread's, and the child has none of them. What the child sees, by the
//! parent's state at the fork:
//!
//! | the parent's word | in the child |
//! |---|---|
//! | free, nobody waiting | free |
//! | free, with a pending waiter or a queue (`0x100`, `0x10000`, ...) | free: the first lock or trylock repairs it and takes it |
//! | held by the forking thread, with or without waiters | held by the child's continuation of it, which unlocks it; then free |
//! | held by another thread (with or without waiters) | held for good, as glibc's spinlock: `lock` spins (the pv lock sleeps) forever, `try_lock` fails |
//! | a queue head that has just set `locked` | held by that (vanished) head: as the row above |
//!
//! A pv lock's `SLOW` locked byte (a sleeping head) is kept as it is: the holder's
//! unlock then wakes a futex nobody sleeps on.
//!
//! # Limits
//!
//! A thread that waits without a queue slot (more than
//! [`MAX_SLOTS`](super::MAX_SLOTS) threads hold one, or inside a thread-local
//! destructor) and sets `pending` records nothing, nor does a wait nested more than
//! [`WAIT_DEPTH`] deep in signal handlers: a fork at that moment leaves that word to
//! the child as the parent had it. The stale list holds [`STALE_CAPACITY`] entries;
//! a fork child whose parent had more recorded waits keeps the words beyond it
//! unrepaired. A fork made from a signal handler that interrupted the forking
//! thread's own spinlock wait leaves that wait to the continuation, which goes on
//! waiting behind whatever the queue held. The records are written only in the slow
//! path; the uncontended lock and unlock are unchanged.
//!
//! # Ordering
//!
//! A record is stored before the first RMW of the word that makes the thread a
//! waiter, with a Release fence between them: a fork copies memory as some instant
//! of the parent's execution, and the fence keeps the hardware from making the
//! waiter bit visible before the record. In the child, the stale list is written
//! before any other thread exists (ordered for them by `pthread_create`). A
//! repair's word write happens-before its entry's Release store of 0, which every
//! thread that proceeds past the entry has read with Acquire; the election is
//! loom-checked (`spin::loom_models`).

use crate::sync::{cpu_relax, AtomicU32, Ordering};

pub use super::mcs::WAIT_DEPTH;

/// How many stale addresses a fork child keeps.
// The fork repair is native only.
#[cfg_attr(loom, allow(dead_code))]
pub const STALE_CAPACITY: usize = super::mcs::MAX_SLOTS * WAIT_DEPTH;

/// The bit that marks an entry being repaired (lock words are 4-aligned).
const REPAIRING: usize = 1;

/// The locked byte of both queued spinlocks' words, which a repair keeps.
const LOCKED_BYTE: u32 = 0xff;

/// A queued spinlock's slow path on `word`: after the repair of a word a fork left
/// with waiters this process does not have, with the wait recorded for a fork child
/// of this process (module doc).
#[inline]
pub(super) fn slow_path<R>(word: &AtomicU32, wait: impl FnOnce() -> R) -> R {
    settle(word);
    install();
    super::mcs::with_wait_record(word, wait)
}

/// The stale list: lock words a fork child inherited with waiter state from threads
/// it does not have, not yet repaired.
#[cfg_attr(all(loom, not(test)), allow(dead_code))]
pub(crate) struct StaleList<const N: usize> {
    /// An address (stale), the address with [`REPAIRING`] (being repaired), or 0
    /// (repaired, or never stale).
    entries: [crate::sync::AtomicU64; N],
    /// Entries in use (`0..len`); written only by the fork child handler.
    len: crate::sync::AtomicU64,
    /// Entries not repaired yet: 0 lets a slow path skip the list.
    unrepaired: crate::sync::AtomicU64,
}

#[cfg_attr(all(loom, not(test)), allow(dead_code))]
impl<const N: usize> StaleList<N> {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Self {
            entries: [const { crate::sync::AtomicU64::new(0) }; N],
            len: crate::sync::AtomicU64::new(0),
            unrepaired: crate::sync::AtomicU64::new(0),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        Self {
            entries: std::array::from_fn(|_| crate::sync::AtomicU64::new(0)),
            len: crate::sync::AtomicU64::new(0),
            unrepaired: crate::sync::AtomicU64::new(0),
        }
    }

    /// Whether any entry is left to repair.
    #[inline(always)]
    pub(crate) fn any(&self) -> bool {
        // Acquire: pairs with the Release decrement that ends each repair, so a
        // thread that reads 0 sees every repaired word (its loads, not only its RMWs,
        // come after the repair's write).
        self.unrepaired.load(Ordering::Acquire) != 0
    }

    /// Adds `word` (the fork child handler, on the child's only thread). Dropped
    /// when the list is full; a duplicate is not added twice.
    pub(crate) fn add(&self, word: usize) {
        // Relaxed (all): the child has one thread; threads it creates later are
        // ordered after these stores by `pthread_create`.
        let len = self.len.load(Ordering::Relaxed) as usize;
        if (0..len).any(|i| self.entries[i].load(Ordering::Relaxed) == word as u64) || len == N {
            return;
        }
        self.entries[len].store(word as u64, Ordering::Relaxed);
        self.len.store(len as u64 + 1, Ordering::Relaxed);
        self.unrepaired.fetch_add(1, Ordering::Relaxed);
    }

    /// Drops repaired entries (the fork child handler, before it adds its own).
    #[cfg(not(loom))]
    fn compact(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        // Relaxed (all): as in `add`. An entry being repaired at the fork belonged to
        // a thread of the parent, which the child does not have: it is stale again.
        let len = self.len.load(Relaxed) as usize;
        let mut kept = 0;
        for i in 0..len {
            let entry = self.entries[i].load(Relaxed) & !(REPAIRING as u64);
            self.entries[i].store(0, Relaxed);
            if entry != 0 {
                self.entries[kept].store(entry, Relaxed);
                kept += 1;
            }
        }
        self.len.store(kept as u64, Relaxed);
        self.unrepaired.store(kept as u64, Relaxed);
    }

    /// Before a slow path on `word`: if the list names it, one thread runs `repair`
    /// while every other thread that comes here for `word` waits; returns once no
    /// entry names `word`.
    pub(crate) fn settle(&self, word: usize, mut repair: impl FnMut()) {
        let stale = word as u64;
        let busy = stale | REPAIRING as u64;
        // Relaxed: written before this thread existed (see `add`).
        let len = self.len.load(Ordering::Relaxed) as usize;
        for entry in &self.entries[..len] {
            loop {
                // Acquire: pairs with the Release store of 0 that ends a repair, so
                // the repaired word is what this thread then works on.
                let seen = entry.load(Ordering::Acquire);
                if seen == busy {
                    cpu_relax();
                    continue;
                }
                if seen != stale {
                    break;
                }
                // Acquire on success: as above (an earlier repair of a duplicate is
                // ordered before ours). The CAS elects the one repairing thread.
                if entry
                    .compare_exchange(stale, busy, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    repair();
                    // Release: publishes the repaired word to the threads waiting
                    // above (their Acquire load of 0).
                    entry.store(0, Ordering::Release);
                    // Release: pairs with the Acquire in `any`.
                    self.unrepaired.fetch_sub(1, Ordering::Release);
                    break;
                }
            }
        }
    }
}

/// The process's stale list (empty unless this process is a fork child).
#[cfg(not(loom))]
static STALE: StaleList<STALE_CAPACITY> = StaleList::new();

/// Before a slow path (or after a failed `try_lock`) on `word`: repairs it if a
/// fork left it waiter state of threads this process does not have (module doc).
#[inline(always)]
pub(super) fn settle(word: &AtomicU32) {
    #[cfg(not(loom))]
    if STALE.any() {
        settle_slow(word);
    }
    #[cfg(loom)]
    let _ = word;
}

/// Whether some word may still need a repair (a `try_lock` that failed retries
/// after [`settle`] only then).
#[inline(always)]
pub(super) fn any_stale() -> bool {
    #[cfg(not(loom))]
    return STALE.any();
    #[cfg(loom)]
    false
}

#[cfg(not(loom))]
#[cold]
fn settle_slow(word: &AtomicU32) {
    STALE.settle(word.as_ptr() as usize, || repair(word));
}

/// `(t, p, l) -> (0, 0, l)`.
#[cfg_attr(all(loom, not(test)), allow(dead_code))]
pub(crate) fn repair(word: &AtomicU32) {
    // Relaxed: the election gives this thread the repair; the entry's Release store
    // publishes it; an unlock by the holder racing with it is an RMW too.
    word.fetch_and(LOCKED_BYTE, Ordering::Relaxed);
}

/// Registers the child handler, once per process. Called by the first recorded
/// wait; the interposer and the C API call it from their constructor, so that a
/// program's first contended lock does not run `pthread_atfork` (which may take
/// glibc's locks and allocate) inside a lock call.
#[cfg(not(loom))]
pub fn install() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    if INSTALLED.is_completed() {
        return;
    }
    INSTALLED.call_once(|| {
        // SAFETY: `in_child` lives as long as the process and does only what is
        // allowed in a fork child before exec: atomics and a const thread-local.
        // A failure leaves the child as without this module (nothing to report to).
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    });
}

/// Under loom there is no fork.
#[cfg(loom)]
pub fn install() {}

/// The child handler: the parent's recorded waits, but the forking thread's, become
/// the stale list.
#[cfg(not(loom))]
extern "C" fn in_child() {
    STALE.compact();
    super::mcs::take_waits_of_others(super::mcs::own_slot(), |word| STALE.add(word));
}

#[cfg(all(test, not(loom)))]
mod tests;
