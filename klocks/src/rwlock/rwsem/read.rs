//! The reader's slow path (the kernel's `rwsem_down_read_slowpath`): refuse a read
//! by the write holder, steal the lock while no writer is queued, spin on a writer
//! owner (`spin`), take the phase-fair trylock after spinning, and otherwise queue
//! and wait to be granted the lock.

use super::*;

impl<P: ReaderSpin> RwSem<P> {
    /// `count`: the count after the fast path added our share (which it still holds).
    #[cold]
    pub(super) fn read_slow(&self, mut count: u64) {
        let me = owner::current_tid();
        self.refuse_read_by_writer(me);
        stats::count(Self::STATS, Event::ReadSlowpath);
        let since = Since::new();
        loop {
            if self.read_slow_once(me, count, &since) {
                return;
            }
            // Woken to retry: start over as the fast path does, with our first queueing
            // time kept for the handoff. Acquire: pairs with the Release in
            // `unlock_exclusive`.
            let before = self.count.fetch_add(READER_BIAS, Acquire);
            if before & READ_FAILED_MASK == 0 {
                self.set_reader_owned(me, 0);
                return;
            }
            count = before.wrapping_add(READER_BIAS);
        }
    }

    /// A writer that read-locks its own lock would wait for itself forever: give the
    /// fast path's share back and panic, leaving the lock as it was.
    pub(super) fn refuse_read_by_writer(&self, me: u32) {
        // Relaxed: our own acquisition's writes, if we hold the lock.
        let (count, owner) = (self.count.load(Relaxed), self.owner.load(Relaxed));
        if count & WRITER_LOCKED != 0 && owner & (TID_MASK | READER_OWNED) == me {
            // Relaxed: the share carried nothing, and we hold the write lock, so no
            // unlock can be deciding from it.
            self.count.fetch_sub(READER_BIAS, Relaxed);
            panic!(
                "klocks: RwSem::lock_shared by thread {me}, which holds the write lock (deadlock)"
            );
        }
    }

    /// One pass of the reader's slow path, holding the fast path's share: steal or
    /// spin by policy, then queue. Returns whether we hold the read lock; `false`: a
    /// wake-up told us to retry, and we hold no share.
    pub(super) fn read_slow_once(&self, me: u32, count: u64, since: &Since) -> bool {
        // Relaxed: a hint, as every owner read.
        let owner = self.owner.load(Relaxed);
        let last_rowner = if owner & READER_OWNED != 0 {
            owner
        } else {
            owner & RD_NONSPINNABLE
        };
        let mut holds_share = true;
        match P::POLICY {
            Policy::Never if self.reader_steal(me, count, owner) => return true,
            Policy::Always | Policy::Adaptive
                if self.readers_may_spin(owner) && reader_streak_allows::<P>() =>
            {
                // Give our share back and spin. Relaxed: the share carried nothing;
                // queueing below re-reads the count for a lock this may have freed.
                self.count.fetch_sub(READER_BIAS, Relaxed);
                holds_share = false;
                if self.optimistic_spin(me, Kind::Read) {
                    READER_SPINS.bypassed();
                    self.wake_readers_behind();
                    return true;
                }
                if P::POLICY == Policy::Adaptive && self.reader_phase_trylock(me, last_rowner) {
                    stats::count(Self::STATS, Event::PhaseJoin);
                    return true;
                }
            }
            _ => {}
        }
        self.read_wait(me, last_rowner, holds_share, since)
    }

    /// The 5.11 reader's one steal: keep the fast path's share if no writer holds the
    /// lock and no handoff is pending, unless other readers own it (a constant stream
    /// of readers must not starve a sleeper).
    pub(super) fn reader_steal(&self, me: u32, count: u64, owner: u32) -> bool {
        let others_read = owner & READER_OWNED != 0 && readers(count) > 1;
        if others_read || count & (WRITER_LOCKED | HANDOFF) != 0 {
            return false;
        }
        stats::count(Self::STATS, Event::ReaderSteal);
        self.set_reader_owned(me, 0);
        if readers(count) == 1 && count & WAITERS != 0 {
            self.wake(Wake::ReadOwned);
        }
        true
    }

    /// Seed 001's phase-fair rule: a reader that stopped spinning takes the lock if it
    /// is reader-owned by a reader that came after it.
    pub(super) fn reader_phase_trylock(&self, me: u32, last_rowner: u32) -> bool {
        // Relaxed: a hint; the try below decides.
        let owner = self.owner.load(Relaxed);
        owner & READER_OWNED != 0
            && (owner ^ last_rowner) & TID_MASK != 0
            && self.try_read_unqueued(me)
    }

    /// We hold a read lock taken by spinning: let the queued readers join.
    pub(super) fn wake_readers_behind(&self) {
        // Relaxed: a hint; the queue lock orders the rest.
        if self.count.load(Relaxed) & WAITERS != 0 {
            self.wake(Wake::ReadOwned);
        }
    }

    /// Queue and wait until a wake-up grants us a read lock (`true`) or tells us to
    /// retry (`false`). `holds_share`: the fast path's share is still in the count.
    pub(super) fn read_wait(
        &self,
        me: u32,
        last_rowner: u32,
        holds_share: bool,
        since: &Since,
    ) -> bool {
        since.queued();
        READER_SPINS.queued();
        let node = Node::new(WAITING, Wait::new(Kind::Read, me, last_rowner, since));
        let mut wakes = Deliveries::none();
        {
            let mut queue = self.queue.lock();
            let mut adjustment = if holds_share {
                READER_BIAS.wrapping_neg()
            } else {
                0
            };
            let first = queue.is_empty();
            if first {
                // Nobody sleeps: if no writer holds the lock, our share stands.
                // Acquire: pairs with the Release of the writer that held it.
                if holds_share && self.count.load(Acquire) & (WRITER_LOCKED | HANDOFF) == 0 {
                    drop(queue);
                    self.set_reader_owned(me, 0);
                    return true;
                }
                adjustment = adjustment.wrapping_add(WAITERS);
            }
            stats::count(Self::STATS, Event::Queued);
            queue.push(&node);
            // Relaxed: this RMW takes nothing; the queue lock orders the waiters.
            let count = if adjustment != 0 {
                self.count
                    .fetch_add(adjustment, Relaxed)
                    .wrapping_add(adjustment)
            } else {
                self.count.load(Relaxed)
            };
            let free = count & LOCK_MASK == 0;
            if free {
                self.clear_wr_nonspinnable();
            }
            // Free: wake the front (maybe us). Readers own it and we are first: join.
            if free || (first && count & WRITER_LOCKED == 0) {
                wakes = self.mark_wake(&mut queue, Wake::Any);
            }
        }
        wakes.deliver(Self::STATS);
        since.retried();
        wait_on_node(&node, None, Self::STATS) == GRANTED
    }
}
