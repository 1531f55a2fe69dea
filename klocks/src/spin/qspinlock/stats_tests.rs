use super::*;
use crate::stats::testing::*;
use std::time::{Duration, Instant};

/// Behind a held lock the first waiter waits as the pending owner, the second
/// queues (or, when every queue node is taken, takes the slot-less path); each
/// enters the slow path once, and unlocks count nothing.
fn pending_then_queued<F: Flavor>() {
    let stats = RawQSpinLock::<F>::STATS;
    let lock: &'static RawQSpinLock<F> = Box::leak(Box::new(RawQSpinLock::new()));
    let ((), fast) = counted(|| {
        lock.lock();
        lock.unlock();
    });
    expect(&fast, stats).nothing_else();

    lock.lock();
    let pending = Contender::spawn(move || {
        lock.lock();
        lock.unlock();
    });
    eventually("the pending waiter", || {
        lock.word.load(Relaxed) & PENDING_MASK != 0
    });
    let queued = Contender::spawn(move || {
        lock.lock();
        lock.unlock();
    });
    // A thread without a node spins where no word shows it: give it a moment.
    let deadline = Instant::now() + Duration::from_millis(100);
    while lock.word.load(Relaxed) & TAIL_MASK == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(200));
    }
    let ((), unlock) = counted(|| lock.unlock());
    let ((), pended) = pending.join();
    let ((), queued) = queued.join();

    expect(&pended, stats)
        .exactly(LockSlowpath, 1)
        .exactly(Pending, 1)
        .nothing_else();
    let in_line = queued.get(stats, Queued) + queued.get(stats, NoNode);
    assert_eq!(in_line, 1, "{queued:?}");
    expect(&queued, stats)
        .exactly(LockSlowpath, 1)
        .maybe(Queued)
        .maybe(NoNode)
        .nothing_else();
    expect(&unlock, stats).nothing_else();
}

#[test]
fn stats_pending_then_queued_simple_write() {
    pending_then_queued::<SimpleWrite>();
}

#[test]
fn stats_pending_then_queued_cmpxchg_handoff() {
    pending_then_queued::<CmpxchgHandoff>();
}

#[cfg(all(feature = "x86-byte-store", target_arch = "x86_64"))]
#[test]
fn stats_pending_then_queued_byte_store() {
    pending_then_queued::<X86ByteStore>();
}
