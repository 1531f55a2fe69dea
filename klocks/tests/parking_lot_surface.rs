#![cfg(not(loom))]
//! The parts of parking_lot's `RwLock` surface that need more than `RawRwLock`:
//! recursive reads past waiting writers, timed upgradable reads and upgrades.

use std::time::{Duration, Instant};

const SHORT: Duration = Duration::from_millis(5);

/// Runs `body` while another thread waits in `write()` (given time to queue).
fn with_a_waiting_writer(lock: &klocks::RwLock<u32>, body: impl FnOnce()) {
    std::thread::scope(|s| {
        let writer = s.spawn(|| *lock.write() += 1);
        std::thread::sleep(Duration::from_millis(50));
        body();
        writer.join().unwrap();
    });
}

#[test]
fn a_recursive_read_enters_past_a_waiting_writer() {
    let lock = klocks::RwLock::new(0);
    let outer = lock.read();
    with_a_waiting_writer(&lock, || {
        let inner = lock.read_recursive();
        assert_eq!(*inner, 0);
        assert!(lock.try_read_recursive().is_some());
        drop(inner);
        drop(outer);
    });
    assert_eq!(*lock.read(), 1);
}

#[test]
fn a_recursive_read_enters_past_a_writer_that_drains() {
    let lock = klocks::RwLock::new(0);
    // Ten outer reads: the writer holds WRITER while it waits for them to leave.
    let outer: Vec<_> = (0..10).map(|_| lock.read()).collect();
    with_a_waiting_writer(&lock, || {
        assert!(
            lock.try_read().is_none(),
            "a plain read waits behind the writer"
        );
        assert!(lock.try_read_recursive().is_some());
        drop(outer);
    });
}

#[test]
fn a_timed_upgradable_read_waits_for_the_writer() {
    let lock = klocks::RwLock::new(0);
    std::thread::scope(|s| {
        let held = lock.write();
        s.spawn(|| assert!(lock.try_upgradable_read_for(SHORT).is_none()))
            .join()
            .unwrap();
        drop(held);
    });
    let guard = lock.try_upgradable_read_for(SHORT).expect("free");
    assert!(lock.try_read().is_some(), "readers enter beside it");
    drop(guard);
    assert!(lock
        .try_upgradable_read_until(Instant::now() + SHORT)
        .is_some());
}

#[test]
fn a_timed_upgrade_keeps_the_upgradable_lock_when_readers_stay() {
    use klocks::RwLockUpgradableReadGuard as Upgradable;
    let lock = klocks::RwLock::new(0);
    let guard = lock.upgradable_read();
    let reader = lock.read();
    let start = Instant::now();
    let guard = Upgradable::try_upgrade_for(guard, SHORT).expect_err("a reader is inside");
    assert!(start.elapsed() >= SHORT);
    assert!(lock.try_read().is_some(), "still upgradable: readers enter");
    let guard = Upgradable::try_upgrade_until(guard, Instant::now() + SHORT)
        .expect_err("a reader is inside");
    drop(reader);
    let mut write = Upgradable::try_upgrade_for(guard, SHORT).expect("the reader left");
    *write += 1;
    assert!(lock.try_read().is_none(), "a write lock now");
    drop(write);
    assert_eq!(*lock.read(), 1);
}
