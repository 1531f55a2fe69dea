use super::*;
use crate::testing::{oversubscribed, stress};

lock_basics_tests!(
    PvQSpinLock,
    "klocks: unlock of a PvQSpinLock that is not locked"
);

/// A signal handler that takes the lock its own thread is queued on, while that
/// thread, as queue head, has set `pending` and spins: the handler has no queue
/// node (its thread's is in use), and must still get the lock once it is free.
#[test]
fn a_signal_handler_takes_the_lock_its_queued_thread_claims() {
    let name =
        "spin::pv_qspinlock::tests::a_signal_handler_takes_the_lock_its_queued_thread_claims";
    if let Some(status) = crate::testing::isolated(name, handler_takes_the_lock) {
        assert!(status.success(), "{status:?}");
    }
}

fn handler_takes_the_lock() {
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};
    static LOCK: PvQSpinLock = PvQSpinLock::new();
    static HANDLED: AtomicBool = AtomicBool::new(false);
    extern "C" fn handler(_: libc::c_int) {
        LOCK.lock();
        LOCK.unlock();
        HANDLED.store(true, SeqCst);
    }
    // A long budget: the head is patient for 10 ms, then spins with `pending` set
    // for 10 ms; the signal lands in that spin.
    PvQSpinLock::set_spin_ns(crate::budget::MAX_SPIN_NS);
    // SAFETY: installs a handler for SIGURG (ignored by default, unused by the test
    // harness) that only touches statics.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as extern "C" fn(libc::c_int) as usize;
        libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut());
    }
    LOCK.lock();
    let waiter = std::thread::spawn(|| {
        LOCK.lock();
        LOCK.unlock();
    });
    let deadline = Instant::now() + Duration::from_secs(2);
    while LOCK.word.load(Relaxed) & PENDING_VAL == 0 && Instant::now() < deadline {
        std::thread::yield_now();
    }
    let pending = LOCK.word.load(Relaxed) & PENDING_VAL != 0;
    // SAFETY: the waiter thread is alive (it waits for the lock we hold).
    unsafe { libc::pthread_kill(waiter_thread(&waiter), libc::SIGURG) };
    std::thread::sleep(Duration::from_millis(2));
    LOCK.unlock();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !HANDLED.load(SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the handler never got the free lock (pending was {})",
            if pending { "set" } else { "clear" }
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    waiter.join().unwrap();
    assert!(!LOCK.is_locked());
}

/// The pthread handle of a spawned thread.
fn waiter_thread<T>(handle: &std::thread::JoinHandle<T>) -> libc::pthread_t {
    use std::os::unix::thread::JoinHandleExt;
    handle.as_pthread_t()
}

/// With the unit-test build's 4 queue slots, the oversubscribed runs also drive
/// hundreds of slot-less waiters beside the queue.
#[test]
fn stress_oversubscribed() {
    stress::<PvQSpinLock>(oversubscribed);
}
