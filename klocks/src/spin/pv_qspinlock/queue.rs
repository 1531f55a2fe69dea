//! The queue behind [`PvQSpinLock`]'s head: a contender links its MCS node in behind
//! the tail, spins on its node and then sleeps on it (early when its predecessor
//! sleeps) until its predecessor makes it head; once it has the lock, it makes its
//! successor head and wakes it if it sleeps. The head's own wait and the barrier
//! pairing against lost wake-ups are drawn in `pv_qspinlock.rs`.

use super::{PvQSpinLock, BUDGET, PREV_CHECK_MASK, STATS, STEALS};
use crate::spin::mcs::{decode_tail, McsNode, HALTED, RUNNING};
use crate::spin::qspinlock::queue::wait_for_next;
use crate::spin::qspinlock::{Flavor, SimpleWrite, TAIL_MASK, TAIL_OFFSET};
use crate::stats::{self, Event};
use crate::sync::{cpu_relax, Ordering::*};
use crate::{barrier, park};

impl PvQSpinLock {
    pub(super) fn queue_on(&self, tail: u32, node: &'static McsNode) {
        stats::count(STATS, Event::Queued);
        let old = SimpleWrite::xchg_tail(&self.word, tail);
        if old & TAIL_MASK != 0 {
            let prev = decode_tail(old >> TAIL_OFFSET);
            // Release: pairs with the Acquire in `wait_for_next` (in `qspinlock/queue.rs`).
            prev.next
                .store(node as *const McsNode as *mut McsNode, Release);
            wait_in_queue(node, prev);
        }
        if self.wait_as_head(tail) {
            kick_successor(node);
        }
        STEALS.queued();
    }
}

/// A queued, not-yet-head waiter: spin on our node, then sleep on it until the
/// predecessor makes us head. Park early when the predecessor itself sleeps.
fn wait_in_queue(node: &McsNode, prev: &McsNode) {
    loop {
        for spin in 0..=BUDGET.spins() {
            // Acquire: pairs with the Release in `kick_successor`.
            if node.locked.load(Acquire) != 0 {
                return;
            }
            // From the first spin, not after 256 as in the kernel: a halted predecessor
            // means at least one wake-up latency (~33 µs here) before our turn.
            // Relaxed: a hint only; any value is safe to act on.
            if spin & PREV_CHECK_MASK == 0 && prev.state.load(Relaxed) == HALTED {
                stats::count(STATS, Event::WaitEarly);
                break;
            }
            cpu_relax();
        }
        // Announce, then check (`pv_qspinlock.rs`'s module doc, "No lost wake-ups").
        node.state.store(HALTED, Relaxed);
        let pairing = barrier::heavy();
        // Acquire: pairs with the Release in `kick_successor`.
        if node.locked.load(Acquire) == 0 {
            stats::count(STATS, Event::Sleep);
            park::wait_paired(&node.locked, 0, pairing);
        }
        // Relaxed: a predecessor that still reads HALTED only wakes us needlessly.
        node.state.store(RUNNING, Relaxed);
    }
}

/// Make our successor the queue head, and wake it if it sleeps.
fn kick_successor(node: &McsNode) {
    let next = wait_for_next(node);
    // Release: pairs with the Acquire loads of `locked` in `wait_in_queue`.
    next.locked.store(1, Release);
    // Pairs with the waiter's heavy barrier in `wait_in_queue` (`pv_qspinlock.rs`'s
    // module doc).
    barrier::light();
    if next.state.load(Relaxed) == HALTED {
        stats::woke(STATS, park::wake_one(&next.locked));
    }
}
