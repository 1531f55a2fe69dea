//! Exhaustive checks of the rwsem's paths under the C11 memory model, for each
//! reader-spin policy: `RUSTFLAGS="--cfg loom" cargo test -p klocks --release loom`.
//!
//! The futex is loom's model of it ([`park`](crate::park)), so a sleeper that is
//! never woken is a deadlock loom reports. Under loom the spin budget is one try (a
//! writer on a reader-owned lock times out at once and sets the nonspinnable bits), a
//! waiter has "waited long" after one failed try (so handoffs happen), and the owner
//! probe answers what its model says. The contended models run the shared reader-writer
//! client (`testing::contend_rw`): loom's `UnsafeCell` fails any execution in which a
//! writer's section is not ordered with every other section. The staged models hold
//! the lock while waiters arrive, so that their slow paths (spin, steal, queue, sleep)
//! run against a held lock, then release it: every waiter must be woken.

use super::raw_rwlock::RawRwLock;
use super::rwsem::{reader_spin, ReaderSpin, RwSem};
use crate::sync::{spawn, yield_now, Arc};
use crate::testing::{explore_rw, BustedRwLock};

/// The shared reader-writer client's view of each lock: its own lock and unlock
/// methods.
macro_rules! test_rwlock {
    ($([$($generics:tt)*] $lock:ty),*) => {$(
        impl<$($generics)*> crate::testing::TestRwLock for $lock {
            fn new_unlocked() -> Self {
                Self::new()
            }
            fn read(&self) {
                self.lock_shared();
            }
            fn read_done(&self) {
                self.unlock_shared();
            }
            fn write(&self) {
                self.lock_exclusive();
            }
            fn write_done(&self) {
                self.unlock_exclusive();
            }
        }
    )*};
}

test_rwlock!([] RawRwLock, [] crate::RawRwLockUnbiased, [P: ReaderSpin] RwSem<P>);

pub(super) fn builder(preemptions: usize) -> loom::model::Builder {
    let mut model = loom::model::Builder::new();
    if model.preemption_bound.is_none() {
        model.preemption_bound = Some(preemptions);
    }
    model.max_branches = model.max_branches.max(100_000);
    model
}

/// The lock is held (for writing, or for reading) while a reader and a writer arrive;
/// then it is released. Liveness: both must get it.
fn held_then_reader_and_writer<P: ReaderSpin>(held_for_write: bool) {
    builder(1).check(move || {
        let sem = Arc::new(RwSem::<P>::new());
        if held_for_write {
            sem.lock_exclusive();
        } else {
            sem.lock_shared();
        }
        let reader = {
            let sem = sem.clone();
            spawn(move || {
                sem.lock_shared();
                sem.unlock_shared();
            })
        };
        let writer = {
            let sem = sem.clone();
            spawn(move || {
                sem.lock_exclusive();
                sem.unlock_exclusive();
            })
        };
        yield_now();
        yield_now();
        if held_for_write {
            sem.unlock_exclusive();
        } else {
            sem.unlock_shared();
        }
        reader.join().unwrap();
        writer.join().unwrap();
        assert!(!sem.is_locked());
    });
}

/// A writer downgrades while a reader and a writer wait: the reader may join it, the
/// writer must wait for both, everyone finishes.
fn downgrade_with_waiters<P: ReaderSpin>() {
    builder(1).check(|| {
        let sem = Arc::new(RwSem::<P>::new());
        sem.lock_exclusive();
        let waiters: Vec<_> = [false, true]
            .into_iter()
            .map(|write| {
                let sem = sem.clone();
                spawn(move || {
                    if write {
                        sem.lock_exclusive();
                        sem.unlock_exclusive();
                    } else {
                        sem.lock_shared();
                        sem.unlock_shared();
                    }
                })
            })
            .collect();
        yield_now();
        sem.downgrade();
        assert!(!sem.is_locked_exclusive());
        sem.unlock_shared();
        waiters.into_iter().for_each(|w| w.join().unwrap());
        assert!(!sem.is_locked());
    });
}

macro_rules! policy_models {
    ($($module:ident: $policy:ty,)*) => {$(
        mod $module {
            use super::*;
            type Sem = RwSem<$policy>;

            /// A reader and a writer, twice each: fast paths, spinning, sleeping,
            /// grants and wakes between the two kinds.
            #[test]
            fn reader_and_writer_twice() {
                explore_rw::<Sem>(1, 1, 2);
            }

            /// Two writers, twice each: writer spinning, queueing and handoff.
            #[test]
            fn two_writers_twice() {
                explore_rw::<Sem>(0, 2, 2);
            }

            /// Two readers and a writer: reader groups, the last reader's wake.
            #[test]
            fn two_readers_one_writer() {
                explore_rw::<Sem>(2, 1, 1);
            }

            #[test]
            fn write_held_then_reader_and_writer() {
                held_then_reader_and_writer::<$policy>(true);
            }

            #[test]
            fn read_held_then_reader_and_writer() {
                held_then_reader_and_writer::<$policy>(false);
            }

            #[test]
            fn downgrade_with_a_reader_and_a_writer_waiting() {
                downgrade_with_waiters::<$policy>();
            }
        }
    )*};
}

policy_models! {
    adaptive: reader_spin::Adaptive,
    always: reader_spin::Always,
    never: reader_spin::Never,
}

/// The negative control: loom must find the race in the busted reader-writer lock.
#[test]
#[should_panic]
fn busted_rw_lock_is_caught() {
    explore_rw::<BustedRwLock>(1, 1, 1);
}

/// The default rwlock's word: a reader and a writer twice each (entry, the writer's
/// take with readers inside and its drain, the reader's sleep and the turn), two
/// writers (the spinner, the sleep and the wake of one writer), and two readers with
/// a writer (the turn with readers that come one by one, the last reader's wake of a
/// draining writer).
///
/// These models run the lock without its reader bias: with it, each model's first
/// reader turns the bias on, so every later step also goes through the table of
/// visible readers and the suite's interleavings grow past its time budget. The
/// bias's own paths, and where they meet the word's (a revocation before the drain,
/// an upgrade and a downgrade beside table readers), are `loom_bias_models.rs`'s.
mod default_rwlock {
    use crate::sync::{spawn, yield_now, Arc};
    use crate::testing::explore_rw;
    use crate::RawRwLockUnbiased as RawRwLock;

    #[test]
    fn reader_and_writer_twice() {
        explore_rw::<RawRwLock>(1, 1, 2);
    }

    /// The lock released as pthread's unlock route releases it: `try_unlock_either`,
    /// which must never release the wrong kind (loom's `UnsafeCell` in the client
    /// catches a write section left open to readers, and a read unlock taken for a
    /// write one leaves `WRITER` set for good, a deadlock). A reader whose look
    /// cannot tell (a writer draining it) releases as the general path does.
    struct UnlockEither(RawRwLock);

    impl crate::testing::TestRwLock for UnlockEither {
        fn new_unlocked() -> Self {
            Self(RawRwLock::new())
        }
        fn read(&self) {
            self.0.lock_shared();
        }
        fn read_done(&self) {
            if !self.0.try_unlock_either() {
                self.0.unlock_shared();
            }
        }
        fn write(&self) {
            self.0.lock_exclusive();
        }
        fn write_done(&self) {
            // A writer in its section has no reader inside and its own id set.
            assert!(self.0.try_unlock_either(), "a write hold left unreleased");
        }
    }

    #[test]
    fn reader_and_writer_twice_unlocking_either() {
        explore_rw::<UnlockEither>(1, 1, 2);
    }

    #[test]
    fn two_readers_one_writer_unlocking_either() {
        explore_rw::<UnlockEither>(2, 1, 1);
    }

    #[test]
    fn two_writers_twice() {
        explore_rw::<RawRwLock>(0, 2, 2);
    }

    #[test]
    fn two_readers_one_writer() {
        explore_rw::<RawRwLock>(2, 1, 1);
    }

    #[test]
    fn one_reader_two_writers() {
        explore_rw::<RawRwLock>(1, 2, 1);
    }

    /// An upgradable holder reads, upgrades and writes beside a reader and a writer
    /// (a loom `UnsafeCell` catches any section that overlaps a write): the reader
    /// may enter beside the upgradable lock, the writer never, and the upgrade waits
    /// for the reader inside.
    #[test]
    fn upgrade_beside_a_reader_and_a_writer() {
        use crate::sync::UnsafeCell;
        super::builder(1).check(|| {
            let shared = Arc::new((RawRwLock::new(), UnsafeCell::new(0u32)));
            let reader = {
                let shared = shared.clone();
                spawn(move || {
                    shared.0.lock_shared();
                    // SAFETY (here and below): loom checks every access to the cell
                    // against the others; the lock under test must order them.
                    shared.1.with(|v| unsafe { *v });
                    shared.0.unlock_shared();
                })
            };
            let writer = {
                let shared = shared.clone();
                spawn(move || {
                    shared.0.lock_exclusive();
                    shared.1.with_mut(|v| unsafe { *v += 1 });
                    shared.0.unlock_exclusive();
                })
            };
            shared.0.lock_upgradable();
            let seen = shared.1.with(|v| unsafe { *v });
            shared.0.upgrade();
            shared.1.with_mut(|v| unsafe { *v = seen + 1 });
            shared.0.unlock_exclusive();
            reader.join().unwrap();
            writer.join().unwrap();
            assert_eq!(shared.1.with(|v| unsafe { *v }), 2);
            assert!(!shared.0.is_locked());
        });
    }

    /// The lock is write-held while two writers arrive and sleep, then released: the
    /// unlock wakes one before its release and keeps `WRITERS_WAITING` for it, and
    /// wakes once more after it, for a woken writer that slept again on the held word
    /// in between. Both must get the lock.
    #[test]
    fn write_held_then_two_writers() {
        super::builder(1).check(|| {
            let lock = Arc::new(RawRwLock::new());
            lock.lock_exclusive();
            let writers: Vec<_> = (0..2)
                .map(|_| {
                    let lock = lock.clone();
                    spawn(move || {
                        lock.lock_exclusive();
                        lock.unlock_exclusive();
                    })
                })
                .collect();
            yield_now();
            yield_now();
            lock.unlock_exclusive();
            for writer in writers {
                writer.join().unwrap();
            }
            assert!(!lock.is_locked());
        });
    }

    /// The lock is write-held while two writers arrive, with every turn over: the
    /// second finds the first asleep and sleeps behind it at once, before it spins or
    /// tries (a panic placed in that sleep fails this model). Both must get the lock
    /// after the release.
    #[test]
    fn write_held_then_two_writers_whose_turns_are_over() {
        crate::testing::with_switch(
            &crate::turn::TURNS_OVER_IN_MODELS,
            true,
            write_held_then_two_writers,
        );
    }

    /// The lock is write-held while a writer and then a reader arrive, then released:
    /// the writer sleeps and is woken, takes the lock with `WRITERS_WAITING` kept,
    /// and the reader sleeps behind it, passed over by the unlock for the writers'
    /// sake. No writer sleeps any more: the reader must be woken all the same.
    #[test]
    fn write_held_then_writer_and_reader() {
        super::builder(1).check(|| {
            let lock = Arc::new(RawRwLock::new());
            lock.lock_exclusive();
            let writer = {
                let lock = lock.clone();
                spawn(move || {
                    lock.lock_exclusive();
                    lock.unlock_exclusive();
                })
            };
            yield_now();
            let reader = {
                let lock = lock.clone();
                spawn(move || {
                    lock.lock_shared();
                    lock.unlock_shared();
                })
            };
            yield_now();
            lock.unlock_exclusive();
            writer.join().unwrap();
            reader.join().unwrap();
            assert!(!lock.is_locked());
        });
    }
}

/// A writer delegate that never comes (the writer spinner, or a writer woken before
/// the release, its thread stopped): an unlock left `WRITERS_WAITING` and the
/// spinner's flag on the free word for it. `waiter` runs on a thread of its own,
/// with ticks on (`crate::wait`, the liveness tick), while the lock is released.
fn after_a_frozen_writer_delegate(waiter: fn(&RawRwLock)) {
    crate::testing::with_switch(&crate::wait::TICKS_IN_MODELS, true, || {
        builder(1).check(move || {
            let lock = Arc::new(RawRwLock::new());
            lock.lock_exclusive();
            lock.leave_for_a_frozen_writer();
            let thread = {
                let lock = lock.clone();
                spawn(move || waiter(&lock))
            };
            lock.unlock_exclusive();
            thread.join().unwrap();
            // Free and clean: a writer gets it at once.
            assert!(lock.try_lock_exclusive());
            lock.unlock_exclusive();
        });
    });
}

/// A reader whose sleep ticks enters past the delegate's `WRITERS_WAITING`.
#[test]
fn frozen_writer_delegate_lets_a_ticked_reader_in() {
    after_a_frozen_writer_delegate(|lock| {
        lock.lock_shared();
        lock.unlock_shared();
    });
}

/// A writer whose sleep ticks takes `WRITER` and drops the stale spinner's flag.
#[test]
fn frozen_writer_delegate_is_passed_by_a_ticked_writer() {
    after_a_frozen_writer_delegate(|lock| {
        lock.lock_exclusive();
        lock.unlock_exclusive();
    });
}

/// Two writers arrive at a write-held lock and sleep, and a writer that has slept
/// claims the next write lock at once (`raw_rwlock/claim.rs`): the unlock that finds
/// the claim wakes the claimant alone, the other writer sleeps on the claimed free
/// word, and the claimant's unlock wakes it. Both must get the lock, and the claim must
/// be over.
#[test]
fn write_held_then_two_writers_one_claiming() {
    crate::testing::with_switch(
        &crate::rwlock::raw_rwlock::claim::WRITER_CLAIMS_IN_MODELS,
        true,
        || {
            builder(1).check(|| {
                let lock = Arc::new(RawRwLock::new());
                lock.lock_exclusive();
                let writers: Vec<_> = (0..2)
                    .map(|_| {
                        let lock = lock.clone();
                        spawn(move || {
                            lock.lock_exclusive();
                            lock.unlock_exclusive();
                        })
                    })
                    .collect();
                yield_now();
                lock.unlock_exclusive();
                for writer in writers {
                    writer.join().unwrap();
                }
                assert!(!lock.is_locked());
                assert!(!lock.has_claim());
            });
        },
    );
}

/// A writer and a reader arrive at a write-held lock, the writer claims after its
/// sleep; the reader enters the free lock beside the claim (or after the claimant's
/// section). Both must get the lock.
#[test]
fn write_held_then_claiming_writer_and_reader() {
    crate::testing::with_switch(
        &crate::rwlock::raw_rwlock::claim::WRITER_CLAIMS_IN_MODELS,
        true,
        || {
            builder(1).check(|| {
                let lock = Arc::new(RawRwLock::new());
                lock.lock_exclusive();
                let writer = {
                    let lock = lock.clone();
                    spawn(move || {
                        lock.lock_exclusive();
                        lock.unlock_exclusive();
                    })
                };
                yield_now();
                let reader = {
                    let lock = lock.clone();
                    spawn(move || {
                        lock.lock_shared();
                        lock.unlock_shared();
                    })
                };
                lock.unlock_exclusive();
                writer.join().unwrap();
                reader.join().unwrap();
                assert!(!lock.is_locked());
            });
        },
    );
}

/// A claimant that never comes (its thread stopped): a claim and `WRITERS_WAITING`
/// stand on the lock. `waiter` runs on a thread of its own, with ticks on, while the
/// lock is released; `after` checks the lock once it is done.
fn after_a_frozen_claimant(waiter: fn(&RawRwLock), after: fn(&RawRwLock)) {
    crate::testing::with_switch(&crate::wait::TICKS_IN_MODELS, true, || {
        builder(1).check(move || {
            let lock = Arc::new(RawRwLock::new());
            lock.lock_exclusive();
            lock.leave_for_a_frozen_claimant();
            let thread = {
                let lock = lock.clone();
                spawn(move || waiter(&lock))
            };
            lock.unlock_exclusive();
            thread.join().unwrap();
            after(&lock);
        });
    });
}

/// A writer whose sleep ticks takes `WRITER` past the frozen claim and ends it.
#[test]
fn frozen_claimant_is_passed_by_a_ticked_writer() {
    after_a_frozen_claimant(
        |lock| {
            lock.lock_exclusive();
            lock.unlock_exclusive();
        },
        |lock| {
            assert!(!lock.has_claim());
            assert!(lock.try_lock_exclusive());
            lock.unlock_exclusive();
        },
    );
}

/// A reader enters the free lock beside the frozen claim.
#[test]
fn frozen_claimant_lets_a_reader_in() {
    after_a_frozen_claimant(
        |lock| {
            lock.lock_shared();
            lock.unlock_shared();
        },
        |lock| assert!(!lock.is_locked()),
    );
}
