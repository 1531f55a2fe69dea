use super::*;
use crate::testing::{oversubscribed, stress};
use std::sync::Arc;

lock_basics_tests!(
    SpinFutexMutex,
    "klocks: unlock of a SpinFutexMutex that is not locked",
    bytes = 8
);

#[test]
fn the_word_names_the_owner() {
    let lock = SpinFutexMutex::new();
    lock.lock();
    assert_eq!(owner_of(lock.word.load(Relaxed)), owner::current_tid());
    lock.unlock();
    assert_eq!(lock.word.load(Relaxed), 0);
}

#[test]
fn unlock_from_another_thread_panics_and_keeps_the_lock() {
    let lock = Arc::new(SpinFutexMutex::new());
    lock.lock();
    let other = Arc::clone(&lock);
    let err = std::thread::spawn(move || other.unlock())
        .join()
        .expect_err("a non-owner's unlock succeeded");
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(msg.contains("which does not hold it"), "{msg}");
    assert!(lock.is_locked());
    lock.unlock();
}

#[test]
#[should_panic(expected = "locked a SpinFutexMutex it already holds")]
fn relock_by_the_owner_panics() {
    let lock = SpinFutexMutex::new();
    lock.lock();
    assert!(!lock.try_lock());
    lock.lock();
}

#[test]
fn a_sleeper_is_woken_by_the_unlock() {
    // The waiter spins out its budget on a running owner, then must sleep.
    let lock = Arc::new(SpinFutexMutex::new());
    lock.lock();
    let waiter = {
        let lock = Arc::clone(&lock);
        std::thread::spawn(move || {
            lock.lock();
            lock.unlock();
        })
    };
    while lock.word.load(Relaxed) & WAITERS == 0 {
        std::thread::yield_now();
    }
    lock.unlock();
    waiter.join().unwrap();
    assert!(!lock.is_locked());
}

#[test]
fn stress_oversubscribed() {
    stress::<SpinFutexMutex>(oversubscribed);
}
