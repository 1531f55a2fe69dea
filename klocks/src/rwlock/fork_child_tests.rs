//! A `static` [`RwLock`](crate::RwLock) that writers waited on at the fork (asleep,
//! `WRITERS_WAITING` in the word) is write-lockable in the child after
//! [`RawRwLock::forget_waiters`](super::raw_rwlock::RawRwLock::forget_waiters), and
//! one another thread write-held stays held. (A free lock with sleeping writers is
//! usable in the child even without it; the rule is to call it all the same, for
//! the states that name a vanished drainer or reader-bias slots. One the forking
//! thread write-held is the continuation's: it unlocks it, under its new tid.)

use crate::testing::fork::{
    fork_with_parked_waiters, install_park, park_each, AtFork, Child, ForkOps,
};

static LOCK: crate::RwLock<()> = crate::RwLock::new(());

const OPS: ForkOps = ForkOps {
    lock: || std::mem::forget(LOCK.write()),
    // SAFETY: called by the thread that holds the write lock (its guard forgotten).
    unlock: || unsafe { LOCK.force_unlock_write() },
    try_lock: || LOCK.try_write().map(std::mem::forget).is_some(),
    word: || 0,
    // SAFETY: in the child, before anything else uses the lock.
    in_child: || unsafe { LOCK.raw().forget_waiters() },
    park: |waiters| {
        park_each(waiters);
        // SAFETY: a snapshot of the word, for the check.
        let seen = format!("{:?}", unsafe { LOCK.raw() });
        // A waiter's trace: one asleep, or (a loaded machine parked both before
        // either slept) the spinner's flag.
        assert!(
            seen.contains("writers_waiting: true") || seen.contains("writer_spinning: true"),
            "{seen}"
        );
    },
};

fn run() {
    install_park();
    let mut failed = Vec::new();
    for (at, waiters) in [
        (AtFork::Free, 1),
        (AtFork::Free, 2),
        (AtFork::HeldByOther, 2),
        (AtFork::HeldByForker, 2),
    ] {
        let (child, _) = fork_with_parked_waiters(&OPS, waiters, at);
        if child != Child::Ok {
            failed.push((at, waiters, child));
        }
    }
    assert!(failed.is_empty(), "{failed:?}");
}

#[test]
fn a_fork_child_write_locks_a_static_rwlock_after_forget_waiters() {
    let name =
        "rwlock::fork_child_tests::a_fork_child_write_locks_a_static_rwlock_after_forget_waiters";
    if let Some(status) = crate::testing::isolated(name, run) {
        assert!(status.success(), "{status:?}");
    }
}
