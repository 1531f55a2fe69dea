#![cfg(not(loom))]
//! A timed try by the thread that holds the lock fails, as `try_lock` does: it can
//! never deadlock, so it returns `None` (parking_lot's answer) instead of the panic an
//! untimed relock gets.

use std::time::{Duration, Instant};

const SHORT: Duration = Duration::from_millis(5);

#[test]
fn a_timed_mutex_relock_by_the_holder_returns_none() {
    let lock = klocks::Mutex::new(0);
    let guard = lock.lock();
    assert!(lock.try_lock_for(SHORT).is_none());
    assert!(lock.try_lock_until(Instant::now() + SHORT).is_none());
    drop(guard);
    assert!(lock.try_lock_for(SHORT).is_some(), "free again");
}

#[test]
fn a_timed_write_by_the_writer_returns_none() {
    let lock = klocks::RwLock::new(0);
    let guard = lock.write();
    assert!(lock.try_write_for(SHORT).is_none());
    assert!(lock.try_write_until(Instant::now() + SHORT).is_none());
    drop(guard);
    assert!(lock.try_write_for(SHORT).is_some(), "free again");
}

#[test]
fn a_timed_read_by_the_writer_returns_none() {
    let lock = klocks::RwLock::new(0);
    let guard = lock.write();
    assert!(lock.try_read_for(SHORT).is_none());
    assert!(lock.try_read_until(Instant::now() + SHORT).is_none());
    drop(guard);
    assert!(lock.try_read_for(SHORT).is_some(), "free again");
}

#[test]
fn a_timed_write_by_the_upgradable_holder_returns_none() {
    let lock = klocks::RwLock::new(0);
    let guard = lock.upgradable_read();
    assert!(lock.try_write_for(SHORT).is_none());
    drop(guard);
}

#[test]
fn a_timed_upgradable_read_by_the_writer_returns_none() {
    let lock = klocks::RwLock::new(0);
    let guard = lock.write();
    assert!(lock.try_upgradable_read_for(SHORT).is_none());
    assert!(lock
        .try_upgradable_read_until(Instant::now() + SHORT)
        .is_none());
    drop(guard);
    assert!(lock.try_upgradable_read_for(SHORT).is_some(), "free again");
}
