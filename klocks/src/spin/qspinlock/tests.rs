use super::*;
use crate::testing;

lock_basics_tests!(
    QSpinLock,
    "klocks: unlock of a QSpinLock that is not locked"
);

#[test]
fn word_layout_matches_the_kernel() {
    assert_eq!(LOCKED_PENDING_MASK | TAIL_MASK, u32::MAX);
    assert_eq!(TAIL_MASK >> TAIL_OFFSET, 0xffff);
}

#[test]
fn unlock_misuse_does_not_corrupt_the_word() {
    let lock = QSpinLock::new();
    let caught = std::panic::catch_unwind(|| lock.unlock());
    assert!(caught.is_err());
    assert_eq!(lock.word.load(Relaxed), 0);
    lock.lock();
    lock.unlock();
}

/// As many threads as this machine's CPUs, so that the spinlock really contends
/// without collapsing; then more threads than CPUs and than the unit-test build's
/// 4 queue slots (see `mcs::MAX_SLOTS`), so some waiters run the slot-less path
/// beside queued ones. Oversubscribed FIFO spinlocks crawl (every handoff to a
/// preempted waiter waits for a time slice), hence the small iteration count.
fn stress<F: Flavor>() {
    testing::stress::<RawQSpinLock<F>>(|cpus| vec![(cpus, 100_000), (6.max(cpus + 1), 300)]);
}

#[test]
fn stress_simple_write() {
    stress::<SimpleWrite>();
}

#[test]
fn stress_cmpxchg_handoff() {
    stress::<CmpxchgHandoff>();
}

#[cfg(all(feature = "x86-byte-store", target_arch = "x86_64"))]
#[test]
fn stress_byte_store() {
    stress::<X86ByteStore>();
}
