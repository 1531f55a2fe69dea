//! The writer's slow path (the kernel's `rwsem_down_write_slowpath`): spin on the
//! owner (`spin`), then queue; the front writer tries the lock each time it is woken
//! and sets the handoff bit once it has waited long enough.

use super::*;

impl<P: ReaderSpin> RwSem<P> {
    #[cold]
    pub(super) fn write_slow(&self, me: u32) {
        // Relaxed: our own acquisition's writes, if we hold the lock.
        if self.owner.load(Relaxed) & (TID_MASK | READER_OWNED) == me
            && self.count.load(Relaxed) & WRITER_LOCKED != 0
        {
            panic!("klocks: RwSem::lock_exclusive by thread {me}, which holds the write lock already (deadlock)");
        }
        stats::count(Self::STATS, Event::LockSlowpath);
        // Relaxed: hints.
        if self.owner.load(Relaxed) & WR_NONSPINNABLE == 0 && self.optimistic_spin(me, Kind::Write)
        {
            return;
        }
        let disable_reader_spin =
            P::POLICY == Policy::Adaptive && self.owner.load(Relaxed) & NONSPINNABLE != 0;
        self.write_wait(me);
        if disable_reader_spin {
            // Relaxed: a hint, set while we hold the lock.
            self.owner.fetch_or(RD_NONSPINNABLE, Relaxed);
            self.reader_nonspin_set();
        }
    }

    /// Queue and sleep until we take the write lock.
    pub(super) fn write_wait(&self, me: u32) {
        let since = Since::new();
        since.queued();
        let node = Node::new(WAITING, Wait::new(Kind::Write, me, 0, &since));
        stats::count(Self::STATS, Event::Queued);
        let mut queue = self.queue.lock();
        if queue.is_empty() {
            queue.push(&node);
            // Relaxed: a flag for unlockers; the queue lock orders the waiters.
            self.count.fetch_or(WAITERS, Relaxed);
        } else {
            queue.push(&node);
            // Relaxed: picks the wake-up; the queue lock orders the waiters.
            let count = self.count.load(Relaxed);
            if count & WRITER_LOCKED == 0 {
                // Free or reader-owned with waiters ahead of us: let them in.
                let kind = if readers(count) != 0 {
                    Wake::Readers
                } else {
                    Wake::Any
                };
                let wakes = self.mark_wake(&mut queue, kind);
                if !wakes.is_empty() {
                    drop(queue);
                    wakes.deliver(Self::STATS);
                    queue = self.queue.lock();
                }
            }
        }
        let mut handoff = false;
        while !self.try_write_lock(&queue, &node, handoff, me) {
            // Relaxed: written under the queue lock, as every waker's store is.
            node.state.store(WAITING, Relaxed);
            // The front writer that is not yet owed the lock sleeps at most until it
            // is: readers that keep overlapping never leave the lock free, so no
            // unlock would wake it to demand the handoff.
            let patience = (queue.is_front(&node) && !handoff).then(|| since.left_until_owed());
            drop(queue);
            wait_on_node(&node, patience, Self::STATS);
            queue = self.queue.lock();
            since.retried();
            handoff = handoff || (queue.is_front(&node) && since.waited_long());
        }
        queue.remove(&node);
    }

    /// Under the queue lock: take the write lock if it is free and not owed to another
    /// waiter, or, with `handoff`, demand it. Returns whether we took it.
    pub(super) fn try_write_lock(
        &self,
        queue: &Queue<Wait>,
        node: &Node,
        handoff: bool,
        me: u32,
    ) -> bool {
        let first = queue.is_front(node);
        // Relaxed: the expected value; the cmpxchg decides.
        let mut count = self.count.load(Relaxed);
        loop {
            let owed_to_front = count & HANDOFF != 0;
            if owed_to_front && !first {
                return false;
            }
            let take = count & LOCK_MASK == 0;
            let mut new = if !take {
                if handoff && !owed_to_front {
                    count | HANDOFF
                } else {
                    count
                }
            } else if queue.is_only(node) {
                (count | WRITER_LOCKED) & !(HANDOFF | WAITERS)
            } else {
                (count | WRITER_LOCKED) & !HANDOFF
            };
            if first {
                // Our wake-up is spent: from here an unlock must wake us again.
                new &= !WRITER_WOKEN;
            }
            if new == count {
                // Held, and nothing to change: the holder's unlock will wake us.
                return false;
            }
            // Acquire: pairs with the Release of the unlocks.
            match self.count.compare_exchange(count, new, Acquire, Relaxed) {
                Ok(_) if take => {
                    self.set_owner(me);
                    return true;
                }
                Ok(_) => {
                    if new & !count & HANDOFF != 0 {
                        stats::count(Self::STATS, Event::HandoffClaim);
                    }
                    return false;
                }
                Err(now) => count = now,
            }
        }
    }
}
