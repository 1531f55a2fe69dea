//! Waking the queue after an unlock (the kernel's `rwsem_wake` and
//! `rwsem_mark_wake`): under the queue lock, wake the front writer or grant the lock
//! to the readers at the front; the wake-ups are delivered after the queue lock is
//! released ([`Deliveries`]).

use super::*;

impl<P: ReaderSpin> RwSem<P> {
    /// Wakes the queue after an unlock (the kernel's `rwsem_wake`).
    #[cold]
    pub(super) fn wake(&self, kind: Wake) {
        let wakes = {
            let mut queue = self.queue.lock();
            self.mark_wake(&mut queue, kind)
        };
        wakes.deliver(Self::STATS);
    }

    /// An unlock that may leave the lock free with sleepers: takes the queue lock
    /// *before* it releases `share` (`WRITER_LOCKED` or one `READER_BIAS`), so that no
    /// other waker can serve the waiters, and they free the rwsem, while this unlock
    /// still uses it. The queue lock's release is then its last access.
    #[cold]
    pub(super) fn unlock_queued(&self, share: u64) {
        let wakes = {
            let mut queue = self.queue.lock();
            // Release: pairs with the Acquire of the next acquisition. WAITERS and
            // WRITER_WOKEN only change under the queue lock (or by the front writer's
            // try, which holds it too), so they are exact here.
            let after = self.count.fetch_sub(share, Release).wrapping_sub(share);
            let free_enough = share == WRITER_LOCKED || after & LOCK_MASK == 0;
            if free_enough && after & (WAITERS | WRITER_WOKEN) == WAITERS {
                self.mark_wake(&mut queue, Wake::Any)
            } else {
                Deliveries::none()
            }
        };
        wakes.deliver(Self::STATS);
    }

    /// Under the queue lock: wake the front writer, or grant the lock to the readers at
    /// the front (the kernel's `rwsem_mark_wake`).
    ///
    /// Returns the wake-ups to make once the queue lock is dropped ([`Deliveries`]).
    pub(super) fn mark_wake(&self, queue: &mut Queue<Wait>, kind: Wake) -> Deliveries {
        let mut wakes = Deliveries::none();
        let Some(front) = queue.front() else {
            return wakes;
        };
        if front.data.kind == Kind::Write {
            // Relaxed: the writer re-reads everything under the queue lock. Only a
            // sleeper needs the syscall: a spinning writer sees the store, and one
            // woken already but not yet back (a wake-up takes ~33 µs here) needs no
            // second one.
            // Relaxed: WRITER_WOKEN only changes under the queue lock or by the front
            // writer's RMW; this decides a wake-up, it orders no data.
            if kind == Wake::Any && self.count.load(Relaxed) & WRITER_WOKEN == 0 {
                // Relaxed: a flag for unlockers, which act on their own RMW's result.
                self.count.fetch_or(WRITER_WOKEN, Relaxed);
                stats::count(Self::STATS, Event::Retry);
                wakes.writer = front;
            }
            return wakes;
        }
        let mut adjustment: u64 = 0;
        if kind != Wake::ReadOwned {
            // Reserve one share first, so that no writer takes the lock while we grant.
            // Acquire: pairs with the Release of the unlock that freed the lock; the
            // readers we grant inherit it through their `state` (Release below).
            let before = self.count.fetch_add(READER_BIAS, Acquire);
            if before & WRITER_LOCKED != 0 {
                // A writer took the lock first. Give the share back, and demand the
                // lock for the front reader if it has waited too long.
                front.data.since().retried();
                let mut undo = READER_BIAS.wrapping_neg();
                if before & HANDOFF == 0 && front.data.since().waited_long() {
                    stats::count(Self::STATS, Event::HandoffClaim);
                    undo = undo.wrapping_add(HANDOFF);
                }
                // Relaxed: returns a share that carried nothing.
                self.count.fetch_add(undo, Relaxed);
                return wakes;
            }
            let sticky = match P::POLICY {
                Policy::Adaptive => front.data.last_rowner & RD_NONSPINNABLE,
                _ => 0,
            };
            self.set_reader_owned(front.data.tid, sticky);
            adjustment = READER_BIAS.wrapping_neg();
        }
        // Every queued reader, not only those before the first queued writer: one read
        // phase takes them all (the kernel's wake-up since 5.11, "an adaptation of the
        // phase-fair R/W locks"; 5.3 took only the front run of readers).
        let readers = queue.detach_where(MAX_READERS_WAKEUP, |w| w.data.kind == Kind::Read);
        // Grant the lock to the readers that run (spinning on their node) and to those
        // owed it; wake the other sleepers to retry, so that the lock is never held by
        // threads that will only run after a wake-up (~33 µs here, far more when
        // threads outnumber CPUs): seed 003's lesson, applied to the rwsem's queue.
        // Decided once per reader: the count must match the grants made below.
        let mut grant = [0u64; MAX_READERS_WAKEUP / 64];
        readers.each(|i, node| {
            // Relaxed: a hint; a sleeper woken to retry tries again.
            if node.state.load(Relaxed) == WAITING || node.data.since().waited_long() {
                grant[i / 64] |= 1 << (i % 64);
                stats::count(Self::STATS, Event::Granted);
            } else {
                stats::count(Self::STATS, Event::Retry);
            }
        });
        let granted: u32 = grant.iter().map(|g| g.count_ones()).sum();
        // With no grant, this returns the share reserved above.
        adjustment = adjustment.wrapping_add(granted as u64 * READER_BIAS);
        if queue.is_empty() {
            adjustment = adjustment.wrapping_sub(WAITERS);
        }
        // Relaxed: HANDOFF only changes under the queue lock, which we hold.
        if granted != 0 && self.count.load(Relaxed) & HANDOFF != 0 {
            // Readers got the lock: no one is owed it any more.
            adjustment = adjustment.wrapping_sub(HANDOFF);
        }
        if adjustment != 0 {
            // Relaxed: the granted readers are released by `Deliveries::deliver`'s stores.
            self.count.fetch_add(adjustment, Relaxed);
        }
        // Released after the queue lock (`Deliveries`); the granted shares are counted
        // already, so no writer can take the lock meanwhile.
        wakes.readers = Some((readers, grant));
        wakes
    }
}
