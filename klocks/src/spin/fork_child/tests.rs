//! A fork child uses a queued spinlock its parent left free with a pending waiter or
//! a queue, or held by the forking thread with waiters; one held by a vanished
//! thread stays held (`testing::fork`), with nothing to call first: the words repair
//! themselves. std's mutex is the control.

use std::sync::atomic::Ordering::SeqCst;

use crate::spin::qspinlock::{PENDING_MASK, TAIL_MASK};
use crate::testing::fork::{every_state, install_park, park_each, ForkOps};
use crate::{PvQSpinLock, QSpinLock};

macro_rules! fork_tests {
    ($name:ident, $lock:ty) => {
        mod $name {
            use super::*;

            static LOCK: $lock = <$lock>::new();
            const OPS: ForkOps = ForkOps {
                lock: || LOCK.lock(),
                unlock: || LOCK.unlock(),
                try_lock: || LOCK.try_lock(),
                word: || LOCK.word.load(SeqCst),
                in_child: || {},
                park: |waiters| {
                    park_each(waiters);
                    let word = LOCK.word.load(SeqCst);
                    assert_ne!(
                        word & (PENDING_MASK | TAIL_MASK),
                        0,
                        "the parked waiters left no trace in the word ({word:#x})"
                    );
                },
            };

            fn run() {
                install_park();
                let failed = every_state(&OPS);
                assert!(
                    failed.is_empty(),
                    "(state, waiters, word at fork, child): {failed:x?}"
                );
            }

            #[test]
            fn a_fork_child_uses_a_lock_its_parent_left_with_waiters() {
                let name = concat!(
                    "spin::fork_child::tests::",
                    stringify!($name),
                    "::a_fork_child_uses_a_lock_its_parent_left_with_waiters"
                );
                if let Some(status) = crate::testing::isolated(name, run) {
                    assert!(status.success(), "{status:?}");
                }
            }
        }
    };
}

fork_tests!(qspinlock, QSpinLock);
fork_tests!(pv_qspinlock, PvQSpinLock);

/// The control: std's mutex, in the same states, is usable in the child.
#[test]
fn control_std_mutex() {
    use std::sync::Mutex;
    static LOCK: Mutex<()> = Mutex::new(());
    // Each thread keeps the guard it took (std's guards are not `Send`), as
    // `ForkOps` locks and unlocks on one thread.
    thread_local! {
        static MINE: std::cell::RefCell<Option<std::sync::MutexGuard<'static, ()>>> =
            const { std::cell::RefCell::new(None) };
    }
    const OPS: ForkOps = ForkOps {
        lock: || MINE.with(|g| *g.borrow_mut() = Some(LOCK.lock().unwrap())),
        unlock: || MINE.with(|g| drop(g.borrow_mut().take())),
        try_lock: || match LOCK.try_lock() {
            Ok(guard) => {
                MINE.with(|g| *g.borrow_mut() = Some(guard));
                true
            }
            Err(_) => false,
        },
        word: || 0,
        in_child: || {},
        park: park_each,
    };
    fn run() {
        install_park();
        let failed = every_state(&OPS);
        assert!(failed.is_empty(), "{failed:x?}");
    }
    let name = "spin::fork_child::tests::control_std_mutex";
    if let Some(status) = crate::testing::isolated(name, run) {
        assert!(status.success(), "{status:?}");
    }
}
