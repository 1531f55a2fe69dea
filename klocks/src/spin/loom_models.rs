//! Exhaustive checks of the spinlocks' lock, unlock and handoff paths under the C11
//! memory model: `RUSTFLAGS="--cfg loom" cargo test -p klocks --release loom`.
//!
//! Each model runs the shared test client ([`crate::testing::contend`]), whose guarded
//! data is a loom `UnsafeCell`: loom fails a model if two critical sections are not
//! ordered by happens-before, or if any execution deadlocks. Under loom there are two
//! queue slots (`mcs::MAX_SLOTS`), so three queueing threads also cover the slot-less
//! path.

use super::mcs::{with_default_slots, with_slot_limit};
use super::pv_qspinlock::PvQSpinLock;
use super::pv_ticket::PvTicketLock;
use super::qspinlock::{QueueOnly, RawQSpinLock};
use super::shared_futex_spin::SharedFutexSpinLock;
use super::ticket::TicketLock;
use crate::testing::{explore, BustedLock, TestLock};

/// [`explore`] alongside other models, with the default two queue slots.
fn check<L: TestLock>(threads: usize, iterations: u64) {
    with_default_slots(|| explore::<L>(threads, iterations));
}

/// [`explore`] with at most `slots` queue slots, alone.
fn check_with_slots<L: TestLock>(slots: usize, threads: usize, iterations: u64) {
    with_slot_limit(slots, || explore::<L>(threads, iterations));
}

type SimpleWrite = super::qspinlock::QSpinLock;
type Cmpxchg = super::qspinlock::QSpinLockCmpxchgHandoff;

#[test]
fn ticket_two_threads_twice() {
    check::<TicketLock>(2, 2);
}

#[test]
fn ticket_three_threads() {
    check::<TicketLock>(3, 1);
}

/// Under loom a pv waiter does not spin: it announces itself and sleeps, so these
/// models cover the lost wake-up race of the park/kick protocol: loom fails any
/// execution in which a sleeper is never woken (deadlock). Waiters sleep in two
/// buckets chosen by ticket alone, so a kick also wakes a hash neighbour, which must
/// sleep again.
#[test]
fn pv_ticket_sleep_and_kick() {
    check::<PvTicketLock>(2, 2);
}

#[test]
fn pv_ticket_three_threads() {
    check::<PvTicketLock>(3, 1);
}

/// pv qspinlock: steal at entry, the head's SLOW mark and sleep on the word, the
/// unlock that wakes it, and (second iteration) a queued waiter halted on its node.
#[test]
fn pv_qspinlock_sleep_and_kick() {
    check::<PvQSpinLock>(2, 2);
}

/// Head, queued waiter and a stealer at once.
#[test]
fn pv_qspinlock_three_threads() {
    check::<PvQSpinLock>(3, 1);
}

/// One slot: the slot-less waiter steals beside a sleeping queue head.
#[test]
fn pv_qspinlock_slotless_beside_queue_head() {
    check_with_slots::<PvQSpinLock>(1, 2, 2);
}

/// Fast path and the pending-bit acquire: (0,0,1) -> (0,1,1) -> (0,0,1).
#[test]
fn qspinlock_pending_handover() {
    check::<SimpleWrite>(2, 2);
}

/// Pending owner plus a queued head: the head waits for (pending, locked) to clear,
/// and newcomers' transient pending bits race with the last head's cmpxchg.
#[test]
fn qspinlock_pending_and_queue() {
    check::<SimpleWrite>(3, 1);
}

#[test]
fn qspinlock_cmpxchg_handoff_pending_and_queue() {
    check::<Cmpxchg>(3, 1);
}

/// Without the pending bit, two threads queue: the head passes headship to a
/// successor (simple-write `set_locked`) or leaves as the last waiter (cmpxchg).
#[test]
fn qspinlock_queue_head_with_and_without_successor() {
    check::<RawQSpinLock<QueueOnly<true>>>(2, 2);
}

#[test]
fn qspinlock_cmpxchg_queue_head_with_and_without_successor() {
    check::<RawQSpinLock<QueueOnly<false>>>(2, 2);
}

/// Two queueing threads, one slot: the slot-less waiter races the queue head at the
/// full preemption bound, and must never take the lock from under it.
#[test]
fn qspinlock_slotless_beside_queue_head() {
    check_with_slots::<RawQSpinLock<QueueOnly<true>>>(1, 2, 2);
}

#[test]
fn qspinlock_cmpxchg_slotless_beside_queue_head() {
    check_with_slots::<RawQSpinLock<QueueOnly<false>>>(1, 2, 2);
}

/// Three queueing threads, two slots: one waiter runs the slot-less path beside a
/// queue, and must never take the lock from under a queue head.
#[test]
fn qspinlock_slot_exhaustion() {
    check::<RawQSpinLock<QueueOnly<true>>>(3, 1);
}

#[test]
fn qspinlock_cmpxchg_slot_exhaustion() {
    check::<RawQSpinLock<QueueOnly<false>>>(3, 1);
}

/// The negative control: loom must find the race in the busted lock.
#[test]
#[should_panic]
fn busted_lock_is_caught() {
    check::<BustedLock>(2, 1);
}

/// The process-shared spinlock: under loom it spins no budget, so a contender marks
/// the word and sleeps at once; the unlock that finds the mark wakes it (loom fails
/// any execution with a lost wake-up), and the woken thread's own unlock makes
/// Drepper's needless wake.
#[test]
fn shared_futex_spin_sleep_and_wake() {
    check::<SharedFutexSpinLock>(2, 2);
}

/// Two sleepers: each unlock of a marked word wakes one, and a woken thread re-marks
/// the word so that the other is woken in turn.
#[test]
fn shared_futex_spin_three_threads() {
    check::<SharedFutexSpinLock>(3, 1);
}

/// A fork child's repair of a stale word (`fork_child`): two threads reach the slow
/// path of a word the stale list names; exactly one repairs it, and neither goes on
/// before the repair, nor sees the word's old waiter bits after it (the entry's
/// Release store of 0 and the Acquire load that reads it). A fork repair itself
/// runs in a fork child's handler on one thread (building the list) and needs no
/// model; this election is the only concurrent part.
#[test]
fn a_stale_word_is_repaired_once_before_anyone_goes_on() {
    use super::fork_child::{repair, StaleList};
    use super::qspinlock::LOCKED_MASK;
    use crate::sync::{Arc, AtomicU32, Ordering::Relaxed};
    use loom::sync::atomic::AtomicUsize;
    const AT: usize = 0x1000;
    loom::model(|| {
        let list = Arc::new(StaleList::<2>::new());
        // Free, with a phantom pending waiter and queue tail.
        let word = Arc::new(AtomicU32::new(0x1_0100));
        let repairs = Arc::new(AtomicUsize::new(0));
        list.add(AT);
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (list, word, repairs) = (list.clone(), word.clone(), repairs.clone());
                loom::thread::spawn(move || {
                    list.settle(AT, || {
                        repairs.fetch_add(1, Relaxed);
                        repair(&word);
                    });
                    // Relaxed: only the entry's Acquire/Release orders this read
                    // after the repair.
                    assert_eq!(word.load(Relaxed) & !LOCKED_MASK, 0, "went on unrepaired");
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(repairs.load(Relaxed), 1);
        assert!(!list.any());
    });
}
