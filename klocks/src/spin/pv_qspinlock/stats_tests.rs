use super::*;
use crate::stats::testing::*;

/// Behind a held lock a waiter queues, becomes head, sets `pending` when its
/// patience runs out, and sleeps on the word once; the unlock that finds `SLOW`
/// kicks it exactly once, and the head sets `pending` again before it claims.
/// In its own process: the queue node must not be taken by other tests' threads.
#[test]
fn stats_the_head_sleeps_once_and_is_kicked_once() {
    if !crate::testing::alone(
        "spin::pv_qspinlock::stats_tests::stats_the_head_sleeps_once_and_is_kicked_once",
    ) {
        return;
    }
    let lock: &'static PvQSpinLock = Box::leak(Box::new(PvQSpinLock::new()));
    // The head asleep.
    let (unlock, waited) = one_waiter(lock, STATS, |waiter| {
        lock.word.load(Relaxed) & LOCKED_MASK == SLOW_VAL && waiter.asleep()
    });
    expect(&waited, STATS)
        .exactly(LockSlowpath, 1)
        .exactly(Queued, 1)
        .exactly(HeadPending, 2)
        .exactly(Sleep, 1)
        .exactly(HeadSleep, 1)
        .nothing_else();
    expect(&unlock, STATS).exactly(Wake, 1).nothing_else();
}

/// A newcomer that finds the lock free while others are queued steals it.
#[test]
fn stats_a_newcomer_steals_a_free_lock_ahead_of_the_queue() {
    let lock = PvQSpinLock::new();
    // A queue (a tail code) and a free lock: what a sleeping head leaves.
    lock.word.store(1 << TAIL_OFFSET, Relaxed);
    let ((), stole) = counted(|| lock.lock());
    lock.unlock();
    lock.word.store(0, Relaxed);
    expect(&stole, STATS)
        .exactly(LockSlowpath, 1)
        .exactly(Steal, 1)
        .nothing_else();
}
