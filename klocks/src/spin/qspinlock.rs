//! The queued spinlock (`kernel/locking/qspinlock.c`), in userspace.
//!
//! # The algorithm
//!
//! A 4-byte lock that behaves like an MCS lock under contention. The first contender
//! does not queue at all: it sets the *pending* bit and spins on the lock word, so the
//! common "one owner, one waiter" case never touches a queue node. From the second
//! contender on, waiters queue on MCS nodes (one per thread, see [`mcs`](super::mcs))
//! and each spins on its *own* node; only the queue head spins on the lock word. When
//! the owner and the pending waiter are both gone, the head takes the lock and passes
//! headship to its successor with one store into the successor's node.
//!
//! # The word
//!
//! ```text
//!  31              16 15       8 7        0
//! +------------------+----------+----------+
//! |  tail (slot + 1) | pending  |  locked  |
//! +------------------+----------+----------+
//! ```
//!
//! States are written `(tail, pending, locked)` as in the kernel; `n` is "our" tail,
//! `*` any value. The paths:
//!
//! ```text
//! fast path:          (0,0,0) -> (0,0,1)                         cmpxchg
//! pending waiter:     (0,0,1) -> (0,1,1) -> wait -> (*,1,0) -> (*,0,1)
//! queue:              (p,*,*) -> (n,*,*)                         xchg_tail
//! queue head waits:   (n,x,y) -> wait -> (n,0,0)
//! head, last:         (n,0,0) -> (0,0,1)                         cmpxchg (clears tail)
//! head, not last:     (*,0,0) -> (*,0,1)                         set_locked
//! unlock:             (*,*,1) -> (*,*,0)
//! ```
//!
//! # Seed 000: the head takes the lock with a simple write
//!
//! Before the seed, the queue head always claimed the lock with a cmpxchg loop. The
//! seed observed that when others are queued behind the head, the head is the only
//! thread *eligible* to set the locked byte: the owner is gone, the pending path is
//! closed (a contender that sees a tail backs out of pending, see `lock_slow`), and the
//! fast path needs a zero word. So `set_locked` needs no compare, only a store. Only
//! the last queued waiter still needs cmpxchg, because it must clear the tail it owns
//! atomically against a newcomer swapping in behind it. [`QSpinLock`] is the seed's
//! "after"; [`QSpinLockCmpxchgHandoff`] keeps the "before" so lockbench can re-run it.
//!
//! # Why the default build uses only 32-bit atomics
//!
//! The kernel overlaps byte stores (`locked`), halfword stores (`locked_pending`) and
//! a 16-bit `xchg` (`tail`) with 32-bit RMWs on the same word. Racing mixed-size atomic
//! writes are undefined behaviour in Rust's memory model (and beyond what loom, Miri or
//! GenMC can check). The default flavour therefore is the kernel's `_Q_PENDING_BITS !=
//! 8` variant: `xchg_tail` is a cmpxchg loop, `clear_pending_set_locked` a `fetch_add`,
//! and the seed's simple write `set_locked` becomes a `fetch_or`, a locked RMW where
//! the kernel has a plain `mov`. Unlock is a `fetch_sub` of the locked byte where the
//! kernel stores a zero byte.
//!
//! With the cargo feature `x86-byte-store`, [`QSpinLockByteStore`] does what the
//! kernel does on x86-64, in inline assembly: byte store for `set_locked` and unlock,
//! halfword store for `clear_pending_set_locked`, `xchg` of the tail halfword. x86 makes
//! this well defined in hardware (locked RMWs are atomic against any aligned store;
//! TSO keeps stores in order), but it is outside the language's model, so it is
//! opt-in and loom checks only the 32-bit flavours. lockbench measures both.
//!
//! # Ordering
//!
//! A lock's critical sections must be ordered by happens-before. Every acquisition
//! ends in an Acquire read that observes the locked byte cleared by the previous
//! owner's Release in [`RawQSpinLock::unlock`] (or a later RMW in that release
//! sequence: every write to the word after `unlock` is an RMW, except the byte
//! stores of the x86 flavour, which x86 orders anyway). The Relaxed RMWs that then
//! set the locked byte need no ordering of their own. The MCS queue has its own
//! pairs, named at each site: node initialisation is published by the Release in
//! `xchg_tail` and read through its Acquire, `prev.next` is a Release/Acquire pair,
//! and so is the headship handoff through `node.locked`.
//!
//! # Where klocks departs from the kernel
//!
//! A newcomer that sets pending and then sees a tail backs out: it clears pending and
//! queues. In the kernel, a last-in-queue head whose cmpxchg fails because of such a
//! transient pending bit calls `set_locked` and waits for that newcomer to link in
//! behind it. A klocks newcomer may have no queue node (see [`mcs`](super::mcs)) and
//! then never links in, so the head would wait for `next` forever. Instead the last
//! head waits for the transient bit to clear and retries its cmpxchg. It must not
//! swallow the bit in its cmpxchg: the newcomer still clears "its" bit afterwards,
//! and by then the bit may belong to a legitimate pending owner that arrived once the
//! head had cleared the tail, which would let a second thread become pending owner.
//!
//! Lock and unlock are acquire/release, like `std::sync::Mutex`, not the RCsc
//! ordering the kernel's qspinlock documents.
//!
//! # When to use it, when not
//!
//! Use it for short critical sections with no more runnable threads than CPUs: it is
//! fair (FIFO after the pending waiter), spins locally, and costs one cmpxchg and one
//! RMW when uncontended. **Do not use it when threads can outnumber CPUs** (thread
//! pools larger than the CPU quota, containers, VMs): a spinlock never sleeps, and a
//! FIFO spinlock hands the lock to the next waiter in line even when that waiter is
//! not running, so every preempted waiter stalls everyone behind it. On this project's
//! 2-CPU machine that is a slowdown of thousands of times at 3 threads. Sleeping locks
//! (`std::sync::Mutex`, parking_lot) are the choice there.
//!
//! Relocking from the owning thread deadlocks (as in the kernel, the lock records no
//! owner); unlocking a lock that is not locked panics.

use std::marker::PhantomData;

use crate::catalog::MutexKind;
use crate::stats::{self, Event, Lock};
use crate::sync::{cpu_relax, AtomicU32, Ordering::*};

pub(crate) const LOCKED_VAL: u32 = 1;
pub(crate) const LOCKED_MASK: u32 = 0xff;
pub(crate) const PENDING_VAL: u32 = 1 << 8;
pub(crate) const PENDING_MASK: u32 = 0xff << 8;
pub(crate) const LOCKED_PENDING_MASK: u32 = LOCKED_MASK | PENDING_MASK;
pub(crate) const TAIL_OFFSET: u32 = 16;
pub(crate) const TAIL_MASK: u32 = 0xffff << TAIL_OFFSET;

/// How long a newcomer waits for an in-flight pending-to-locked handover,
/// `(0,1,0) -> (0,0,1)`, before it queues (the kernel's `_Q_PENDING_LOOPS`). x86 sets
/// 512: the handover is a few cycles away, and waiting for it lets the newcomer
/// become the next pending waiter instead of paying for the MCS queue. That is the
/// two-thread ping-pong case. Loom models use 1: each iteration is a model branch.
const PENDING_LOOPS: u32 = if cfg!(loom) { 1 } else { 512 };

/// How a [`RawQSpinLock`] writes its word. Sealed: the flavours are the lock's
/// published variants.
pub trait Flavor: sealed::Sealed + Send + Sync + 'static {
    /// Seed 000: the queue head takes the lock with `set_locked` when others are
    /// queued behind it (`true`), or always with cmpxchg (`false`, the "before").
    const SIMPLE_WRITE: bool;
    /// The first contender waits as the pending owner instead of queueing. Only
    /// loom models turn this off, to reach the queue paths with fewer threads.
    const USE_PENDING: bool = true;
    /// The lock's catalog entry, whose counters the `stats` feature bumps.
    #[doc(hidden)]
    const KIND: MutexKind;

    /// `(*,*,0) -> (*,0,1)`; the caller is the only thread eligible to set it.
    #[inline(always)]
    fn set_locked(word: &AtomicU32) {
        // Relaxed: the head already synchronised with the last unlock through the
        // Acquire load that saw (pending, locked) == (0,0).
        word.fetch_or(LOCKED_VAL, Relaxed);
    }

    /// `(*,1,0) -> (*,0,1)`, by the pending owner.
    #[inline(always)]
    fn clear_pending_set_locked(word: &AtomicU32) {
        // Relaxed: the pending owner synchronised with the unlock through its Acquire
        // wait for the locked byte to clear.
        word.fetch_add(LOCKED_VAL.wrapping_sub(PENDING_VAL), Relaxed);
    }

    /// `(p,*,*) -> (n,*,*)`: publish our node as the tail; returns the old word (only
    /// its tail bits are meaningful).
    #[inline(always)]
    fn xchg_tail(word: &AtomicU32, tail: u32) -> u32 {
        let mut old = word.load(Relaxed);
        loop {
            let new = (old & LOCKED_PENDING_MASK) | tail;
            // Release: publishes our node's initialisation (`next = null`) to the
            // successor that will decode this tail. Acquire: pairs with the Release of
            // the predecessor's own xchg_tail, so its node is initialised before we
            // link into it (our store to `prev.next` must come after its null store).
            match word.compare_exchange_weak(old, new, AcqRel, Relaxed) {
                Ok(_) => return old,
                Err(now) => old = now,
            }
        }
    }

    /// `(*,*,1) -> (*,*,0)`. Returns the word before the unlock when it can read it,
    /// for the misuse check.
    #[inline(always)]
    fn unlock(word: &AtomicU32) -> u32 {
        // Release: pairs with the Acquire of whichever acquisition comes next (the
        // fast-path cmpxchg, the pending waiter's wait, or the queue head's wait).
        word.fetch_sub(LOCKED_VAL, Release)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// The seed-000 "after": 32-bit atomics only, simple-write handoff to the queue head.
#[derive(Debug)]
pub enum SimpleWrite {}
impl sealed::Sealed for SimpleWrite {}
impl Flavor for SimpleWrite {
    const SIMPLE_WRITE: bool = true;
    const KIND: MutexKind = MutexKind::QSpinLock;
}

/// The seed-000 "before": the queue head always claims the lock with cmpxchg.
#[derive(Debug)]
pub enum CmpxchgHandoff {}
impl sealed::Sealed for CmpxchgHandoff {}
impl Flavor for CmpxchgHandoff {
    const SIMPLE_WRITE: bool = false;
    const KIND: MutexKind = MutexKind::QSpinLockCmpxchg;
}

/// Loom-only flavours that skip the pending bit, so that two model threads already
/// form a queue (head plus successor) and three exhaust the two loom queue slots.
#[cfg(all(loom, test))]
pub(crate) enum QueueOnly<const SIMPLE_WRITE: bool> {}
#[cfg(all(loom, test))]
impl<const S: bool> sealed::Sealed for QueueOnly<S> {}
#[cfg(all(loom, test))]
impl<const S: bool> Flavor for QueueOnly<S> {
    const SIMPLE_WRITE: bool = S;
    const USE_PENDING: bool = false;
    const KIND: MutexKind = MutexKind::QSpinLock;
}

/// The kernel's x86-64 word accesses: byte and halfword stores, 16-bit `xchg`.
#[cfg(all(feature = "x86-byte-store", target_arch = "x86_64", not(loom)))]
#[derive(Debug)]
pub enum X86ByteStore {}

#[cfg(all(feature = "x86-byte-store", target_arch = "x86_64", not(loom)))]
impl sealed::Sealed for X86ByteStore {}

#[cfg(all(feature = "x86-byte-store", target_arch = "x86_64", not(loom)))]
impl Flavor for X86ByteStore {
    const SIMPLE_WRITE: bool = true;
    const KIND: MutexKind = MutexKind::QSpinLockByteStore;

    #[inline(always)]
    fn set_locked(word: &AtomicU32) {
        // SAFETY: the word is a live, aligned AtomicU32; its low byte is `locked`
        // (little-endian). x86 makes an aligned byte store atomic against the 32-bit
        // locked RMWs other threads run on the word. No `nomem`: the asm is a compiler
        // barrier, and TSO keeps it after the head's Acquire load.
        unsafe {
            std::arch::asm!("mov byte ptr [{w}], 1", w = in(reg) word.as_ptr(),
                options(nostack, preserves_flags));
        }
    }

    #[inline(always)]
    fn clear_pending_set_locked(word: &AtomicU32) {
        // SAFETY: as in `set_locked`; the low halfword is `locked_pending`, and only the
        // pending owner writes it in state (*,1,0).
        unsafe {
            std::arch::asm!("mov word ptr [{w}], 1", w = in(reg) word.as_ptr(),
                options(nostack, preserves_flags));
        }
    }

    #[inline(always)]
    fn xchg_tail(word: &AtomicU32, tail: u32) -> u32 {
        let mut code = (tail >> TAIL_OFFSET) as u16;
        // SAFETY: the high halfword of the aligned word is `tail`. `xchg` with memory is
        // implicitly locked: a full barrier, so it both publishes our node and orders
        // the read of the predecessor's node after the predecessor's own xchg.
        unsafe {
            std::arch::asm!("xchg word ptr [{w} + 2], {c:x}", w = in(reg) word.as_ptr(),
                c = inout(reg) code, options(nostack, preserves_flags));
        }
        u32::from(code) << TAIL_OFFSET
    }

    #[inline(always)]
    fn unlock(word: &AtomicU32) -> u32 {
        let before = word.load(Relaxed);
        // SAFETY: as in `set_locked`. A store is a release on x86 (`smp_store_release`).
        unsafe {
            std::arch::asm!("mov byte ptr [{w}], 0", w = in(reg) word.as_ptr(),
                options(nostack, preserves_flags));
        }
        before
    }
}

/// A queued spinlock, generic over how it writes its word. Use the aliases.
pub struct RawQSpinLock<F: Flavor> {
    pub(crate) word: AtomicU32,
    flavor: PhantomData<F>,
}

/// The queued spinlock, seed 000's "after", sound 32-bit atomics. See the module doc.
pub type QSpinLock = RawQSpinLock<SimpleWrite>;
/// The queued spinlock before seed 000: the queue head always uses cmpxchg.
pub type QSpinLockCmpxchgHandoff = RawQSpinLock<CmpxchgHandoff>;
/// The queued spinlock with the kernel's x86-64 byte stores (feature `x86-byte-store`).
#[cfg(all(feature = "x86-byte-store", target_arch = "x86_64", not(loom)))]
pub type QSpinLockByteStore = RawQSpinLock<X86ByteStore>;

impl<F: Flavor> RawQSpinLock<F> {
    /// Whose counters the `stats` feature bumps.
    const STATS: Lock = Lock::Mutex(F::KIND);

    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
            flavor: PhantomData,
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            word: AtomicU32::new(0),
            flavor: PhantomData,
        }
    }

    /// Acquires the lock, spinning until it is free.
    #[inline]
    pub fn lock(&self) {
        if !fast_lock(&self.word) {
            self.lock_slow();
        }
    }

    /// Takes the lock if the word is entirely clear (no owner, no waiter; in a fork
    /// child, after the repair of waiters the child does not have, see
    /// `klocks/src/spin/fork_child.rs`).
    #[inline]
    pub fn try_lock(&self) -> bool {
        trylock(&self.word) || trylock_after_fork(&self.word)
    }

    /// The uncontended fast path alone, `(0,0,0) -> (0,0,1)`: one cmpxchg, with no
    /// load before it; otherwise the word it found. For a caller that keeps another
    /// lock in the same 4 bytes and tells the two apart by the word, as the
    /// interposer does with [`SharedFutexSpinLock`](crate::SharedFutexSpinLock).
    #[inline]
    pub fn try_lock_fast(&self) -> Result<(), u32> {
        // Acquire: pairs with the Release of the lock's unlock.
        self.word
            .compare_exchange(0, LOCKED_VAL, Acquire, Relaxed)
            .map(drop)
    }

    /// Releases the lock.
    ///
    /// # Panics
    /// If the lock is not locked. A lock held by another thread cannot be told apart
    /// from one held by this thread: releasing it is a bug the lock cannot see.
    #[inline]
    pub fn unlock(&self) {
        // Check before the write so that a misuse in one thread never corrupts the
        // pending or tail bits; the result of the unlock catches a racing misuse.
        if self.word.load(Relaxed) & LOCKED_MASK == 0 {
            unlock_of_unlocked();
        }
        let before = F::unlock(&self.word);
        crate::fault::after_release();
        if before & LOCKED_MASK == 0 {
            unlock_of_unlocked();
        }
    }

    /// Whether some thread holds the lock.
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.word.load(Relaxed) & LOCKED_MASK != 0
    }

    /// The slow path, recorded for a fork child (see
    /// [`fork_child`](super::fork_child)) after the repair of a word a fork left
    /// with waiters this process does not have.
    #[cold]
    fn lock_slow(&self) {
        super::fork_child::slow_path(&self.word, || self.lock_contended());
    }

    fn lock_contended(&self) {
        stats::count(Self::STATS, Event::LockSlowpath);
        let mut val = self.word.load(Relaxed);

        // An in-flight handover (0,1,0) -> (0,0,1): give it a moment, it is about to
        // become an ordinary locked word we can be pending on.
        if val == PENDING_VAL {
            for _ in 0..PENDING_LOOPS {
                cpu_relax();
                val = self.word.load(Relaxed);
                if val != PENDING_VAL {
                    break;
                }
            }
        }

        // Anyone pending or queued: get in line.
        if !F::USE_PENDING || val & !LOCKED_MASK != 0 {
            return self.queue();
        }

        // (0,0,*) -> (0,1,*). Acquire: if the locked byte was already clear, this is the
        // read that synchronises with the last unlock's Release.
        val = self.word.fetch_or(PENDING_VAL, Acquire);
        if val & !LOCKED_MASK != 0 {
            // Someone else got pending or queued first. Undo our pending bit, unless it
            // was already set (then it is not ours): (*,1,*) -> (*,0,*).
            if val & PENDING_MASK == 0 {
                self.word.fetch_and(!PENDING_VAL, Relaxed);
            }
            return self.queue();
        }

        stats::count(Self::STATS, Event::Pending);
        // We are the pending owner: (0,1,1) -> wait -> (*,1,0). Acquire: pairs with the
        // Release in `unlock`.
        if val & LOCKED_MASK != 0 {
            while self.word.load(Acquire) & LOCKED_MASK != 0 {
                cpu_relax();
            }
        }
        // (*,1,0) -> (*,0,1)
        F::clear_pending_set_locked(&self.word);
    }
}

/// The uncontended fast path of every queued lock: `(0,0,0) -> (0,0,1)`.
#[inline(always)]
pub(crate) fn fast_lock(word: &AtomicU32) -> bool {
    // Acquire: pairs with the Release of the lock's unlock.
    word.compare_exchange(0, LOCKED_VAL, Acquire, Relaxed)
        .is_ok()
}

/// Takes the lock only if the word is entirely clear (no owner, no waiter); reads
/// first so a contended word is not pulled in exclusive for nothing.
#[inline(always)]
pub(crate) fn trylock(word: &AtomicU32) -> bool {
    word.load(Relaxed) == 0 && fast_lock(word)
}

/// A `try_lock` that found the word busy, in a process whose fork left words to
/// repair: the repair, then one more try.
#[cold]
pub(crate) fn trylock_after_fork(word: &AtomicU32) -> bool {
    if !super::fork_child::any_stale() {
        return false;
    }
    super::fork_child::settle(word);
    trylock(word)
}

#[cold]
#[inline(never)]
fn unlock_of_unlocked() -> ! {
    panic!("klocks: unlock of a QSpinLock that is not locked");
}

impl<F: Flavor> std::fmt::Debug for RawQSpinLock<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let val = self.word.load(Relaxed);
        f.debug_struct("RawQSpinLock")
            .field("tail", &(val >> TAIL_OFFSET))
            .field("pending", &((val & PENDING_MASK) != 0))
            .field("locked", &((val & LOCKED_MASK) != 0))
            .finish()
    }
}

// SAFETY: `lock`/`try_lock` return only once the locked byte is ours: the fast path and
// the last head's cmpxchg from a word with locked clear; the pending owner and the
// non-last head set it while being the only eligible thread (see the module doc).
raw_mutex!(<F: Flavor> for RawQSpinLock<F>);

// The slow path's MCS queue: waiting in line on our node, then as queue head on the
// word, and passing headship on.
pub(crate) mod queue;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, feature = "stats", not(loom)))]
mod stats_tests;
