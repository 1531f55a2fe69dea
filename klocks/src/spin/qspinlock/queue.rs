//! The queue part of [`RawQSpinLock`]'s slow path: a contender that found someone
//! pending or queued waits in line on its own MCS node (see [`mcs`](super::super::mcs)),
//! then as queue head on the lock word, takes the lock and passes headship to its
//! successor. The word's states and transitions are drawn in `qspinlock.rs`.

use super::super::mcs::{decode_tail, with_queue_node, McsNode};
use super::{
    Flavor, RawQSpinLock, LOCKED_PENDING_MASK, LOCKED_VAL, PENDING_MASK, TAIL_MASK, TAIL_OFFSET,
};
use crate::stats::{self, Event};
use crate::sync::{cpu_relax, Ordering::*};

impl<F: Flavor> RawQSpinLock<F> {
    pub(super) fn queue(&self) {
        with_queue_node(|node| match node {
            Some((code, node)) => self.queue_on(code << TAIL_OFFSET, node),
            None => self.lock_without_node(),
        });
    }

    /// The MCS part: wait in line on our own node, then as queue head on the word.
    fn queue_on(&self, tail: u32, node: &'static McsNode) {
        // Touching our node may have cost a cache miss; the owner may be gone by now.
        if self.try_lock() {
            return;
        }
        stats::count(Self::STATS, Event::Queued);

        let old = F::xchg_tail(&self.word, tail);
        if old & TAIL_MASK != 0 {
            let prev = decode_tail(old >> TAIL_OFFSET);
            // Release: pairs with the Acquire in `pass_headship`'s wait for `next`; the
            // predecessor then writes our `locked`, which we reset before publishing.
            prev.next
                .store(node as *const McsNode as *mut McsNode, Release);
            // Acquire: pairs with the Release in `pass_headship`.
            while node.locked.load(Acquire) == 0 {
                cpu_relax();
            }
        }

        // Queue head: wait for the owner and the pending waiter to leave.
        // (n,x,y) -> (n,0,0). Acquire: pairs with the Release in `unlock` (in
        // `qspinlock.rs`), and is the only acquire on this path, because `set_locked`
        // below is not one.
        let mut val = loop {
            let val = self.word.load(Acquire);
            if val & LOCKED_PENDING_MASK == 0 {
                break val;
            }
            cpu_relax();
        };

        loop {
            if val & TAIL_MASK == tail {
                if val & PENDING_MASK != 0 {
                    // A newcomer set pending, saw our tail and is about to clear it
                    // again. Wait for that: swallowing the bit in our cmpxchg would let
                    // its late clear erase a legitimate pending owner's bit (the module doc
                    // of `qspinlock.rs`).
                    cpu_relax();
                    val = self.word.load(Relaxed);
                    continue;
                }
                // Last in the queue: (n,0,0) -> (0,0,1), clearing our tail atomically
                // against a newcomer's xchg_tail. Relaxed: the wait above acquired.
                match self
                    .word
                    .compare_exchange(val, LOCKED_VAL, Relaxed, Relaxed)
                {
                    Ok(_) => return,
                    Err(now) => val = now,
                }
            } else if F::SIMPLE_WRITE {
                // Seed 000: others are queued behind us, so nobody else may set the
                // locked byte: (*,0,0) -> (*,0,1) needs no compare.
                F::set_locked(&self.word);
                break;
            } else {
                // Before seed 000: (*,0,0) -> (*,0,1) by cmpxchg.
                match self
                    .word
                    .compare_exchange(val, val | LOCKED_VAL, Relaxed, Relaxed)
                {
                    Ok(_) => break,
                    Err(now) => val = now,
                }
            }
        }

        pass_headship(node);
    }

    /// No queue node (see `mcs`): spin on a whole-word trylock, as the kernel does
    /// when its per-CPU nodes run out. A zero word means no owner, no pending waiter
    /// and no queue head, so this never takes the lock from under a queue head.
    fn lock_without_node(&self) {
        stats::count(Self::STATS, Event::NoNode);
        while !self.try_lock() {
            cpu_relax();
        }
    }
}

/// Wait for our successor to link in, then make it the queue head.
fn pass_headship(node: &McsNode) {
    // Release: pairs with the Acquire wait on `node.locked` in `queue_on`.
    wait_for_next(node).locked.store(1, Release);
}

/// Our successor, once it has linked itself in behind us.
pub(crate) fn wait_for_next(node: &McsNode) -> &'static McsNode {
    loop {
        // Acquire: pairs with the Release store of `prev.next` in `queue_on`.
        let next = node.next.load(Acquire);
        if !next.is_null() {
            // SAFETY: `next` is a node in the static slot table (type-stable, never
            // freed), and its owner is spinning or sleeping on its `locked` until we
            // write it.
            return unsafe { &*next };
        }
        cpu_relax();
    }
}
