//! Tests of `RwSem`: exclusion, the policies, handoff, misuse and stress.

use super::reader_spin::{Adaptive, Always, Never};
use super::*;
use crate::testing::stress_rw;
use std::sync::atomic::{AtomicBool, AtomicU64 as StdAtomicU64, Ordering::SeqCst};
use std::sync::Arc;

/// As many threads as CPUs, then 64x and 256x more, half readers, half writers.
fn oversubscribed_rw(cpus: usize) -> Vec<(usize, usize, u64)> {
    vec![
        (cpus, cpus, 50_000),
        (32 * cpus, 32 * cpus, 200),
        (128 * cpus, 128 * cpus, 20),
    ]
}

/// The tests every policy passes, as a module per policy.
macro_rules! policy_tests {
        ($($module:ident: $policy:ty,)*) => {$(
            mod $module {
                use super::*;
                type Sem = RwSem<$policy>;

                #[test]
                fn readers_share_and_writers_exclude() {
                    let sem = Sem::new();
                    assert!(sem.try_lock_shared());
                    assert!(sem.try_lock_shared());
                    assert!(sem.is_locked() && !sem.is_locked_exclusive());
                    assert!(!sem.try_lock_exclusive());
                    sem.unlock_shared();
                    sem.unlock_shared();
                    assert!(!sem.is_locked());
                    assert!(sem.try_lock_exclusive());
                    assert!(sem.is_locked_exclusive());
                    assert!(!sem.try_lock_shared());
                    assert!(!sem.try_lock_exclusive());
                    sem.unlock_exclusive();
                    assert!(!sem.is_locked());
                }

                #[test]
                fn exclusive_owner_names_the_writer_only() {
                    let sem = Sem::new();
                    assert_eq!(sem.exclusive_owner(), None);
                    sem.lock_shared();
                    assert_eq!(sem.exclusive_owner(), None, "a reader is not a writer");
                    sem.unlock_shared();
                    sem.lock_exclusive();
                    assert_eq!(sem.exclusive_owner(), Some(owner::current_tid()));
                    std::thread::scope(|s| {
                        s.spawn(|| assert_ne!(sem.exclusive_owner(), Some(owner::current_tid())));
                    });
                    sem.downgrade();
                    assert_eq!(sem.exclusive_owner(), None, "downgraded to a reader");
                    sem.unlock_shared();
                }

                #[test]
                fn forget_waiters_keeps_the_holders() {
                    let sem = Sem::new();
                    sem.lock_shared();
                    sem.count.fetch_or(WAITERS | HANDOFF, Relaxed);
                    // SAFETY: no other thread uses `sem`.
                    unsafe { sem.forget_waiters() };
                    assert_eq!(sem.count.load(Relaxed), READER_BIAS);
                    assert!(!sem.try_lock_exclusive());
                    sem.unlock_shared();
                    assert!(sem.try_lock_exclusive());
                    sem.unlock_exclusive();
                }

                #[test]
                fn torture_with_more_threads_than_cpus() {
                    stress_rw::<Sem>(oversubscribed_rw);
                }

                #[test]
                fn readers_only_and_writers_only() {
                    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
                    stress_rw::<Sem>(|_| vec![(4 * cpus, 0, 20_000), (0, 4 * cpus, 20_000)]);
                }

                /// Two readers that always overlap (the lock is never free): a queued
                /// writer must not sleep until they stop, but demand the handoff.
                #[test]
                fn a_writer_gets_through_overlapping_readers() {
                    let sem = Arc::new(Sem::new());
                    let stop = Arc::new(AtomicBool::new(false));
                    sem.lock_shared();
                    let readers: Vec<_> = (0..2)
                        .map(|i| {
                            let (sem, stop) = (Arc::clone(&sem), Arc::clone(&stop));
                            std::thread::spawn(move || {
                                if i == 1 {
                                    std::thread::sleep(std::time::Duration::from_millis(1));
                                }
                                while !stop.load(SeqCst) {
                                    sem.lock_shared();
                                    std::thread::sleep(std::time::Duration::from_millis(2));
                                    sem.unlock_shared();
                                }
                            })
                        })
                        .collect();
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    sem.unlock_shared();
                    let start = std::time::Instant::now();
                    let writer = {
                        let sem = Arc::clone(&sem);
                        std::thread::spawn(move || {
                            sem.lock_exclusive();
                            sem.unlock_exclusive();
                        })
                    };
                    while !writer.is_finished() && start.elapsed() < std::time::Duration::from_secs(2) {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    let waited = start.elapsed();
                    stop.store(true, SeqCst);
                    writer.join().unwrap();
                    readers.into_iter().for_each(|r| r.join().unwrap());
                    assert!(
                        waited < std::time::Duration::from_secs(1),
                        "the writer waited {waited:?} behind overlapping readers"
                    );
                }

                #[test]
                fn a_writer_gets_through_a_flood_of_readers() {
                    gets_through_a_flood::<$policy>(false);
                }

                #[test]
                fn readers_get_through_a_flood_of_writers() {
                    gets_through_a_flood::<$policy>(true);
                }

                #[test]
                fn downgrade_lets_readers_in_and_keeps_writers_out() {
                    downgrade::<$policy>();
                }
            }
        )*};
    }

policy_tests! {
    adaptive: Adaptive,
    always: Always,
    never: Never,
}

/// Takes and releases the lock once, for reading or for writing.
fn take<P: ReaderSpin>(sem: &RwSem<P>, write: bool, hold: u32) {
    if write {
        sem.lock_exclusive();
    } else {
        sem.lock_shared();
    }
    for _ in 0..hold {
        std::hint::spin_loop();
    }
    if write {
        sem.unlock_exclusive();
    } else {
        sem.unlock_shared();
    }
}

/// Six threads re-take the lock back to back (for writing if `flood_writes`, else
/// for reading), more threads than CPUs; this thread must still finish 200
/// acquisitions of the other kind (the handoff bit guarantees it). Hangs, and so
/// fails, if that kind can starve.
fn gets_through_a_flood<P: ReaderSpin>(flood_writes: bool) {
    let sem = Arc::new(RwSem::<P>::new());
    let stop = Arc::new(AtomicBool::new(false));
    let flood: Vec<_> = (0..6)
        .map(|_| {
            let (sem, stop) = (sem.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(SeqCst) {
                    take(&sem, flood_writes, 50);
                }
            })
        })
        .collect();
    for _ in 0..200 {
        take(&sem, !flood_writes, 0);
    }
    stop.store(true, SeqCst);
    flood.into_iter().for_each(|t| t.join().unwrap());
}

fn downgrade<P: ReaderSpin>() {
    let sem = Arc::new(RwSem::<P>::new());
    let data = Arc::new(StdAtomicU64::new(0));
    sem.lock_exclusive();
    // A reader and a writer queue behind us.
    let reader = {
        let (sem, data) = (sem.clone(), data.clone());
        std::thread::spawn(move || {
            sem.lock_shared();
            let seen = data.load(SeqCst);
            sem.unlock_shared();
            seen
        })
    };
    let writer = {
        let (sem, data) = (sem.clone(), data.clone());
        std::thread::spawn(move || {
            sem.lock_exclusive();
            data.store(2, SeqCst);
            sem.unlock_exclusive();
        })
    };
    data.store(1, SeqCst);
    std::thread::sleep(std::time::Duration::from_millis(20));
    sem.downgrade();
    assert!(sem.is_locked() && !sem.is_locked_exclusive());
    // We still read-hold: the writer cannot have written.
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(
        data.load(SeqCst),
        1,
        "a writer got in while the downgraded lock was held"
    );
    sem.unlock_shared();
    writer.join().unwrap();
    let seen = reader.join().unwrap();
    assert!(seen == 1 || seen == 2);
    assert!(!sem.is_locked());
}

#[test]
fn layout() {
    assert_eq!(std::mem::size_of::<RwSem>(), 48);
}

#[test]
#[should_panic(expected = "RwSem::unlock_exclusive by thread")]
fn unlocking_an_unheld_write_lock_panics() {
    RwSem::<Adaptive>::new().unlock_exclusive();
}

#[test]
fn unlocking_another_threads_write_lock_panics_and_leaves_it_held() {
    let sem = Arc::new(RwSem::<Adaptive>::new());
    sem.lock_exclusive();
    let other = sem.clone();
    let err = std::thread::spawn(move || other.unlock_exclusive())
        .join()
        .expect_err("a non-owner unlocked the write lock");
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(msg.contains("which does not hold the write lock"), "{msg}");
    assert!(sem.is_locked_exclusive());
    sem.unlock_exclusive();
}

#[test]
#[should_panic(expected = "RwSem::unlock_shared")]
fn a_writer_unlocking_as_a_reader_panics() {
    let sem = RwSem::<Always>::new();
    sem.lock_exclusive();
    sem.unlock_shared();
}

#[test]
#[should_panic(expected = "holds the write lock already (deadlock)")]
fn write_relock_panics_instead_of_deadlocking() {
    let sem = RwSem::<Never>::new();
    sem.lock_exclusive();
    sem.lock_exclusive();
}

#[test]
fn unlocking_an_unheld_read_lock_panics_and_leaves_the_count() {
    let sem = RwSem::<Adaptive>::new();
    let err =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sem.unlock_shared())).unwrap_err();
    assert!(err
        .downcast_ref::<&str>()
        .is_some_and(|m| m.contains("unlock_shared")));
    assert!(!sem.is_locked());
    assert!(sem.try_lock_exclusive());
    sem.unlock_exclusive();
}

/// Debug builds track read locks per thread (`scripts/test` runs these in a debug
/// build).
#[cfg(debug_assertions)]
mod debug_tracking {
    use super::*;

    #[test]
    #[should_panic(expected = "holds no read lock on it")]
    fn unlocking_a_read_lock_held_only_by_another_thread_panics() {
        let sem = Arc::new(RwSem::<Adaptive>::new());
        let other = sem.clone();
        std::thread::spawn(move || other.lock_shared())
            .join()
            .unwrap();
        sem.unlock_shared();
    }

    #[test]
    #[should_panic(expected = "holds a read lock on it (deadlock)")]
    fn write_locking_a_read_held_lock_panics() {
        let sem = RwSem::<Never>::new();
        sem.lock_shared();
        sem.lock_exclusive();
    }
}

#[test]
fn typed_rwlock_and_policies_through_lock_api() {
    let lock: crate::RwSemLock<Vec<i32>> = crate::RwSemLock::new(vec![1]);
    lock.write().push(2);
    assert_eq!(*lock.read(), [1, 2]);
    let writer = lock.write();
    let reader = lock_api::RwLockWriteGuard::downgrade(writer);
    assert_eq!(reader.len(), 2);
    assert!(lock.try_write().is_none());
    drop(reader);
    let never: crate::RwSemLock<u8, Never> = crate::RwSemLock::new(7);
    assert_eq!(*never.read(), 7);
}
