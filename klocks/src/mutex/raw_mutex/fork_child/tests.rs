//! A `static` [`Mutex`](crate::Mutex) that the parent's threads waited on at the
//! fork, asleep or as a claimant the lock is reserved for (word `0xa0000000`), is
//! usable in the child after [`RawMutex::forget_waiters`]; without it, the child of
//! a reserved lock sleeps forever (the negative control, which shows the test sees
//! the hang). std's mutex, in the same states, is the control in
//! `spin::fork_child::tests`.

use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use super::super::HANDOFF;
use crate::testing::fork::{
    every_state, fork_with_parked_waiters, install_park, park_each, park_waiter, AtFork, Child,
    ForkOps,
};

static MUTEX: crate::Mutex<()> = crate::Mutex::new(());

fn raw() -> &'static super::RawMutex {
    // SAFETY: only reads the word, or repairs it under `forget_waiters`' contract.
    unsafe { MUTEX.raw() }
}

fn lock() {
    std::mem::forget(MUTEX.lock());
}

fn unlock() {
    // SAFETY: called by the thread that holds the mutex (its guard forgotten).
    unsafe { MUTEX.force_unlock() };
}

fn try_lock() -> bool {
    MUTEX.try_lock().map(std::mem::forget).is_some()
}

fn word() -> u32 {
    raw().word.load(SeqCst)
}

/// The caller holds the mutex and a waiter waits: hold it a few ms at a time (the
/// waiter falls asleep), release it and take it back at once (barging ahead of the
/// woken sleeper), until a sleeper woken to a held lock claims the handoff; then
/// park the waiters. The next unlock leaves the mutex free but reserved.
fn reserve(waiters: &[libc::pthread_t]) {
    for _ in 0..500 {
        std::thread::sleep(Duration::from_millis(3));
        if word() & HANDOFF != 0 {
            break;
        }
        unlock();
        lock();
    }
    assert_ne!(
        word() & HANDOFF,
        0,
        "no waiter claimed a handoff ({:#x})",
        word()
    );
    std::thread::sleep(Duration::from_millis(5));
    waiters.iter().for_each(|&w| park_waiter(w));
}

const REPAIRED: ForkOps = ForkOps {
    lock,
    unlock,
    try_lock,
    word,
    // SAFETY: in the child, on the forking thread's continuation, before anything
    // else uses the mutex.
    in_child: || unsafe { raw().forget_waiters() },
    park: park_each,
};

fn every_state_with_forget_waiters() {
    install_park();
    let mut failed = every_state(&REPAIRED);
    let reserved = ForkOps {
        park: reserve,
        ..REPAIRED
    };
    for at in [AtFork::Free, AtFork::HeldByForker] {
        let (child, word) = fork_with_parked_waiters(&reserved, 1, at);
        if child != Child::Ok {
            failed.push((at, 1, word, child));
        }
    }
    assert!(
        failed.is_empty(),
        "(state, waiters, word at fork, child): {failed:x?}"
    );
}

/// Without the repair, a lock reserved for a claimant the child does not have is
/// taken all the same once the reservation expires (the liveness tick,
/// `crate::wait`): the child waits a few ticks, not for good.
fn a_reserved_lock_expires_without_forget_waiters() {
    install_park();
    let unrepaired = ForkOps {
        in_child: || {},
        park: reserve,
        ..REPAIRED
    };
    let (child, word) = fork_with_parked_waiters(&unrepaired, 1, AtFork::Free);
    // Reserved, with or without the sleepers' bit (a loaded machine may park the
    // waiter before it slept).
    assert_ne!(word & HANDOFF, 0, "{word:#x}");
    assert_eq!(child, Child::Ok, "word {word:#x} at the fork");
}

#[test]
fn a_fork_child_uses_a_static_mutex_after_forget_waiters() {
    let name = "mutex::raw_mutex::fork_child::tests::a_fork_child_uses_a_static_mutex_after_forget_waiters";
    if let Some(status) = crate::testing::isolated(name, every_state_with_forget_waiters) {
        assert!(status.success(), "{status:?}");
    }
}

#[test]
fn without_forget_waiters_a_reserved_mutex_expires_in_the_child() {
    let name = "mutex::raw_mutex::fork_child::tests::without_forget_waiters_a_reserved_mutex_expires_in_the_child";
    if let Some(status) =
        crate::testing::isolated(name, a_reserved_lock_expires_without_forget_waiters)
    {
        assert!(status.success(), "{status:?}");
    }
}

#[test]
fn forget_waiters_frees_a_reserved_lock_and_keeps_a_vanished_holder() {
    use super::super::{SPINNING, WAITERS};
    let lock = super::RawMutex::new();
    // Free, reserved for a claimant, with sleepers and a spinner.
    lock.word.store(WAITERS | SPINNING | HANDOFF, SeqCst);
    // SAFETY: no other thread uses `lock`.
    unsafe { lock.forget_waiters() };
    assert_eq!(lock.word.load(SeqCst), 0);
    assert!(lock.try_lock());
    // Held by a tid no thread of this process has (this is no fork child).
    lock.word.store(WAITERS | HANDOFF | 0x3f_fffe, SeqCst);
    // SAFETY: as above.
    unsafe { lock.forget_waiters() };
    assert_eq!(lock.word.load(SeqCst), 0x3f_fffe);
    assert!(!lock.try_lock());
}
