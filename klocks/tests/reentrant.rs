#![cfg(not(loom))]
//! `klocks::ReentrantMutex`: the owner re-enters, other threads wait.

#[test]
fn the_owner_reenters_and_others_wait() {
    let lock = klocks::ReentrantMutex::new(std::cell::Cell::new(0));
    let outer = lock.lock();
    let inner = lock.lock();
    inner.set(inner.get() + 1);
    assert!(lock.is_owned_by_current_thread());
    std::thread::scope(|s| {
        s.spawn(|| assert!(lock.try_lock().is_none(), "held by the other thread"));
    });
    drop(inner);
    drop(outer);
    std::thread::scope(|s| {
        s.spawn(|| assert_eq!(lock.lock().get(), 1));
    });
    static GLOBAL: klocks::ReentrantMutex<u32> = klocks::const_reentrant_mutex(7);
    assert_eq!(*GLOBAL.lock(), 7);
}
