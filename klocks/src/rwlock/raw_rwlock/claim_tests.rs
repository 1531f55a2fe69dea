//! The writer's timed claim (`raw_rwlock/claim.rs`) fires and is honoured: a writer
//! that has waited past [`WRITER_FAIR_WAIT_US`] claims, a barging writer waits behind
//! the claim, and a fork child forgets it. Each asserts the mechanism (who
//! got the lock first), with slack for a loaded machine, never a duration.

use super::*;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Waits up to 10 s for `done`; whether it came.
fn eventually(done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    true
}

/// A writer that records its turn in `order`.
fn writer(
    lock: &Arc<RawRwLock>,
    order: &Arc<Mutex<Vec<u8>>>,
    id: u8,
) -> std::thread::JoinHandle<()> {
    let (lock, order) = (lock.clone(), order.clone());
    std::thread::spawn(move || {
        lock.lock_exclusive();
        order.lock().unwrap().push(id);
        lock.unlock_exclusive();
    })
}

#[test]
fn a_writer_past_the_fair_wait_claims_and_goes_before_a_barging_writer() {
    let lock = Arc::new(RawRwLock::new());
    let order = Arc::new(Mutex::new(Vec::new()));
    lock.lock_exclusive();
    let first = writer(&lock, &order, 1);
    // It sleeps, its liveness tick wakes it after more than the fair wait, and it
    // finds the lock still held: it claims.
    assert!(
        eventually(|| lock.claimed()),
        "the waiting writer never claimed"
    );
    let second = writer(&lock, &order, 2);
    assert!(
        eventually(|| lock.writers_asleep_count() == 2),
        "the second writer did not sleep behind the claim"
    );
    // Let the second writer's liveness ticks grow long, so that it cannot take the
    // lock past the claim before the claimant, woken by the unlock, runs.
    std::thread::sleep(Duration::from_millis(300));
    lock.unlock_exclusive();
    first.join().unwrap();
    second.join().unwrap();
    assert_eq!(
        *order.lock().unwrap(),
        [1, 2],
        "the claimant did not go first"
    );
    assert!(!lock.claimed(), "the claim outlived its claimant's take");
    assert!(!lock.is_locked());
}

#[test]
fn a_claim_refuses_a_trying_writer() {
    let lock = Arc::new(RawRwLock::new());
    let order = Arc::new(Mutex::new(Vec::new()));
    lock.lock_exclusive();
    let claimant = writer(&lock, &order, 1);
    assert!(
        eventually(|| lock.claimed()),
        "the waiting writer never claimed"
    );
    assert!(!lock.try_lock_exclusive(), "held and claimed, yet taken");
    lock.unlock_exclusive();
    // The claimant takes the lock next: a try that succeeds comes after its section.
    loop {
        if lock.try_lock_exclusive() {
            let claimant_went_first = order.lock().unwrap().as_slice() == [1];
            lock.unlock_exclusive();
            assert!(claimant_went_first, "a try took the lock past a claim");
            break;
        }
        std::hint::spin_loop();
    }
    claimant.join().unwrap();
    assert_eq!(*order.lock().unwrap(), [1]);
    assert!(!lock.is_locked());
}

#[test]
fn a_fork_child_forgets_a_claim() {
    let lock = RawRwLock::new();
    lock.lock_exclusive();
    assert!(lock.claim());
    // SAFETY: no other thread uses the lock.
    unsafe { lock.forget_waiters() };
    assert!(!lock.claimed());
}
