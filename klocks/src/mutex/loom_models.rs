//! Exhaustive checks of the futex mutexes' lock, sleep, spin, wake and handoff paths under the
//! C11 memory model: `RUSTFLAGS="--cfg loom" cargo test -p klocks --release loom`.
//!
//! The futex is loom's model of it ([`park`](crate::park)): a sleeper is released only
//! by a wake on its word, so an execution in which a sleeper is never woken is a
//! deadlock, which loom reports. Under loom the spin budget is one iteration and the
//! owner probe answers whatever its model says ([`owner`](crate::owner)), so the
//! spinner's take, its early stop and the unlock that skips its wake for the spinner
//! are all explored next to the sleep path.

use super::fair_mutex::RawFairMutex;
use super::futex_mutex::FutexMutex;
use super::raw_mutex::RawMutex;
use super::spin_futex_mutex::SpinFutexMutex;
use crate::testing::explore;

#[test]
fn futex_mutex_two_threads_twice() {
    explore::<FutexMutex>(2, 2);
}

#[test]
fn futex_mutex_three_threads() {
    explore::<FutexMutex>(3, 1);
}

/// Barging, the spinner's claim and take, sleep and wake, and a woken thread that
/// spins again.
#[test]
fn spin_futex_mutex_two_threads_twice() {
    explore::<SpinFutexMutex>(2, 2);
}

/// A spinner and a sleeper at once: the unlock that skips its wake for the spinner,
/// and the spinner that stops and must then serve the sleeper.
#[test]
fn spin_futex_mutex_three_threads() {
    explore::<SpinFutexMutex>(3, 1);
}

/// The default mutex: barging, the spinner, sleep and wake, and (a waiter that slept
/// claims at once under loom) the handoff claim, the reserved unlock and the
/// claimant's take.
#[test]
fn raw_mutex_two_threads_twice() {
    explore::<RawMutex>(2, 2);
}

/// As above, with every thread's turn over: a contended lock that finds the mutex
/// held sleeps before it tries anything else.
#[test]
fn raw_mutex_two_threads_twice_whose_turns_are_over() {
    crate::testing::with_switch(&crate::turn::TURNS_OVER_IN_MODELS, true, || {
        explore::<RawMutex>(2, 2);
    });
}

/// As above, with the claim of a waiter on its CPU on: a spinner that the owner
/// outran claims at once, before it ever sleeps, so it may take the reserved lock
/// without `WAITERS` while the other thread sleeps or spins.
#[test]
fn raw_mutex_two_threads_twice_claiming_on_their_cpus() {
    crate::testing::with_switch(
        &super::raw_mutex::handoff::RUNNING_CLAIMS_IN_MODELS,
        true,
        || explore::<RawMutex>(2, 2),
    );
}

/// A spinner or claimant and a sleeper at once: the unlock that skips its wake for
/// the spinner, the handoff unlock that wakes the claimant alone, and the sleeper
/// that must still be woken after it.
#[test]
fn raw_mutex_three_threads() {
    explore::<RawMutex>(3, 1);
}

/// The owner holds the lock while two waiters arrive; it yields so that they can
/// reach any point of their slow paths (a spin iteration yields too), then unlocks.
/// Liveness only (the contended models check exclusion): every execution in which a
/// waiter is never woken is a deadlock. This reaches the unlock that finds both a
/// spinner and a sleeper within one preemption.
fn owner_then_two_waiters<L: crate::testing::TestLock>() {
    bounded(1).check(|| {
        let lock = crate::sync::Arc::new(L::new_unlocked());
        lock.acquire();
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let lock = crate::sync::Arc::clone(&lock);
                crate::sync::spawn(move || {
                    lock.acquire();
                    lock.release();
                })
            })
            .collect();
        crate::sync::yield_now();
        crate::sync::yield_now();
        lock.release();
        for waiter in waiters {
            waiter.join().unwrap();
        }
    });
}

#[test]
fn futex_mutex_owner_then_two_waiters() {
    owner_then_two_waiters::<FutexMutex>();
}

#[test]
fn spin_futex_mutex_owner_then_spinner_and_sleeper() {
    owner_then_two_waiters::<SpinFutexMutex>();
}

#[test]
fn raw_mutex_owner_then_two_waiters() {
    owner_then_two_waiters::<RawMutex>();
}

/// As above, with the handoff claim off: a woken waiter that finds the lock taken
/// sleeps again as a plain sleeper, and the unlock that frees the lock must still
/// wake it. With claims at once, as in the other models, no woken waiter ever sleeps
/// as a plain sleeper again: an unlock that woke a sleeper before its release and
/// then kept `WAITERS` without waking after it (a lost wake-up) passed them all, and
/// this model finds it.
#[test]
fn raw_mutex_owner_then_two_waiters_without_claims() {
    crate::testing::with_switch(
        &super::raw_mutex::handoff::CLAIMS_IN_MODELS,
        false,
        owner_then_two_waiters::<RawMutex>,
    );
}

/// As above, with the claim of a waiter on its CPU on: the claimant that never slept
/// takes the reserved lock with the sleeper's `WAITERS` kept, and the sleeper must
/// still be woken.
#[test]
fn raw_mutex_owner_then_two_waiters_claiming_on_their_cpus() {
    crate::testing::with_switch(
        &super::raw_mutex::handoff::RUNNING_CLAIMS_IN_MODELS,
        true,
        owner_then_two_waiters::<RawMutex>,
    );
}

/// As above, with every thread's turn over: each contended lock that finds the mutex
/// held sleeps at once, before any spin, so sleepers queue up behind an owner and
/// each other, and the unlocks must wake every one of them.
#[test]
fn raw_mutex_owner_then_two_waiters_whose_turns_are_over() {
    crate::testing::with_switch(
        &crate::turn::TURNS_OVER_IN_MODELS,
        true,
        owner_then_two_waiters::<RawMutex>,
    );
}

/// An owner re-takes the lock at once after waking the sleeper, which then finds it
/// taken, claims a handoff (at once under loom) and sleeps as the claimant: the
/// owner's next unlock must reserve the lock for it and wake it, and nobody else may
/// take it meanwhile.
#[test]
fn raw_mutex_handoff_to_a_starving_sleeper() {
    bounded(2).check(|| {
        let lock = crate::sync::Arc::new(RawMutex::new());
        let data = crate::sync::Arc::new(crate::sync::UnsafeCell::new(0u32));
        lock.lock();
        let waiter = {
            let (lock, data) = (lock.clone(), data.clone());
            crate::sync::spawn(move || {
                lock.lock();
                // SAFETY: under the lock (loom checks that it excludes).
                data.with_mut(|d| unsafe { *d += 1 });
                lock.unlock();
            })
        };
        crate::sync::yield_now();
        lock.unlock();
        lock.lock();
        // SAFETY: under the lock (loom checks that it excludes).
        data.with_mut(|d| unsafe { *d += 1 });
        crate::sync::yield_now();
        crate::sync::yield_now();
        lock.unlock();
        waiter.join().unwrap();
        // SAFETY: both threads are done with the data.
        assert_eq!(data.with(|d| unsafe { *d }), 2);
    });
}

/// A signal handler that lands on a thread between its claim record and its claiming
/// cmpxchg takes the reservation of any claim it then finds (`raw_mutex` module doc,
/// "Signals"): here a thread records a claim and locks, as such a handler does, while
/// a waiter on its CPU claims at once and sleeps as the claimant. Once the "handler"
/// takes the reserved lock, the claimant is a plain sleeper that a sleepers' wake may
/// reach: it must take the lock with `WAITERS` then, or the owner, asleep behind it
/// in its second lock (which finds the lock's owner off its CPU), is never woken. (A
/// claimant that forgot its sleep in `await_handoff` passed every other model.)
#[test]
fn raw_mutex_claim_taken_by_a_handler_on_another_thread() {
    use crate::role::Role;
    crate::testing::with_switch(
        &super::raw_mutex::handoff::RUNNING_CLAIMS_IN_MODELS,
        true,
        || {
            bounded(2).check(|| {
                let lock = crate::sync::Arc::new(RawMutex::new());
                lock.lock();
                let claimant = {
                    let lock = lock.clone();
                    crate::sync::spawn(move || {
                        lock.lock();
                        lock.unlock();
                    })
                };
                let handler = {
                    let lock = lock.clone();
                    crate::sync::spawn(move || {
                        let outer = Role::Claimant.enter(lock.address());
                        lock.lock();
                        lock.unlock();
                        Role::Claimant.restore(outer);
                    })
                };
                crate::sync::yield_now();
                lock.unlock();
                crate::sync::yield_now();
                // The owner's next lock finds its owner off its CPU: it sleeps as a
                // plain sleeper instead of claiming on its CPU.
                crate::owner::set_model_answer(Some(false));
                lock.lock();
                lock.unlock();
                claimant.join().unwrap();
                handler.join().unwrap();
            });
        },
    );
}

/// A mutex used as a binary semaphore: the main thread takes it, and a second thread
/// releases it for the main thread (`unlock_for_owner`) after yielding, so that the
/// release may meet the first thread as spinner, sleeper or claimant; then both
/// threads lock it to count. Every execution in which a waiter is never woken is a
/// deadlock, and the count checks that the released lock still excludes.
fn released_by_another_thread<L: crate::testing::TestLock>(unlock_for_owner: fn(&L) -> bool) {
    bounded(1).check(move || {
        let lock = crate::sync::Arc::new(L::new_unlocked());
        let data = crate::sync::Arc::new(crate::sync::UnsafeCell::new(0u32));
        lock.acquire();
        let count = |lock: &L, data: &crate::sync::UnsafeCell<u32>| {
            lock.acquire();
            // SAFETY: under the lock (loom checks that it excludes).
            data.with_mut(|d| unsafe { *d += 1 });
            lock.release();
        };
        let waiter = {
            let (lock, data) = (lock.clone(), data.clone());
            crate::sync::spawn(move || count(&lock, &data))
        };
        let releaser = {
            let (lock, data) = (lock.clone(), data.clone());
            crate::sync::spawn(move || {
                crate::sync::yield_now();
                crate::sync::yield_now();
                assert!(unlock_for_owner(&lock));
                count(&lock, &data);
            })
        };
        waiter.join().unwrap();
        releaser.join().unwrap();
        // SAFETY: both threads are done with the data.
        assert_eq!(data.with(|d| unsafe { *d }), 2);
    });
}

#[test]
fn spin_futex_mutex_released_by_another_thread() {
    // SAFETY: the main thread holds the lock and never releases that hold itself.
    released_by_another_thread::<SpinFutexMutex>(|lock| unsafe { lock.unlock_for_owner() });
}

#[test]
fn raw_mutex_released_by_another_thread() {
    // SAFETY: as above.
    released_by_another_thread::<RawMutex>(|lock| unsafe { lock.unlock_for_owner() });
}

/// As above, with the handoff claim off: the woken waiter that finds the lock taken
/// sleeps again as a plain sleeper, and a later release must still wake it.
#[test]
fn raw_mutex_released_by_another_thread_without_claims() {
    crate::testing::with_switch(&super::raw_mutex::handoff::CLAIMS_IN_MODELS, false, || {
        // SAFETY: as above.
        released_by_another_thread::<RawMutex>(|lock| unsafe { lock.unlock_for_owner() });
    });
}

/// As above, with the claim of a waiter on its CPU on: the release for the owner may
/// meet a claimant that never slept.
#[test]
fn raw_mutex_released_by_another_thread_claiming_on_its_cpu() {
    crate::testing::with_switch(
        &super::raw_mutex::handoff::RUNNING_CLAIMS_IN_MODELS,
        true,
        || {
            // SAFETY: as above.
            released_by_another_thread::<RawMutex>(|lock| unsafe { lock.unlock_for_owner() });
        },
    );
}

/// A model of up to `preemptions` preemptions (unless `LOOM_MAX_PREEMPTIONS` says
/// otherwise), with room for the branches of waiters that retry (a yield, a spin
/// iteration) while the thread they wait for is descheduled.
fn bounded(preemptions: usize) -> loom::model::Builder {
    let mut model = loom::model::Builder::new();
    if model.preemption_bound.is_none() {
        model.preemption_bound = Some(preemptions);
    }
    model.max_branches = model.max_branches.max(100_000);
    model
}

/// A claimant that never takes its reservation (its thread stopped in a handler, or
/// gone by a `siglongjmp`): the waiter whose sleep ticks breaks the reservation and
/// takes the lock (`crate::wait`, the liveness tick), in every interleaving with the
/// unlock that reserved it.
#[test]
fn raw_mutex_frozen_claimant_is_passed_after_a_tick() {
    use super::raw_mutex::handoff::Claim;
    use crate::role::Role;
    crate::testing::with_switch(&crate::wait::TICKS_IN_MODELS, true, || {
        bounded(2).check(|| {
            let lock = crate::sync::Arc::new(RawMutex::new());
            lock.lock();
            // The claim, made as a waiter that slept makes it; then its thread
            // stops for good (the model thread returns without awaiting it).
            let frozen = {
                let lock = lock.clone();
                crate::sync::spawn(move || {
                    let outer = Role::Claimant.mark();
                    assert!(lock.claim(Claim::Slept { since: 0 }, outer));
                })
            };
            frozen.join().unwrap();
            let waiter = {
                let lock = lock.clone();
                crate::sync::spawn(move || {
                    lock.lock();
                    lock.unlock();
                })
            };
            lock.unlock();
            waiter.join().unwrap();
            assert!(!lock.is_locked());
            assert!(lock.try_lock());
        });
    });
}

/// A spinner that never spins again (its flag set, its thread stopped): the waiter
/// whose sleep ticks takes the free lock and drops the stale flag, so the word is
/// clean after its unlock.
#[test]
fn spin_futex_mutex_frozen_spinner_is_passed_after_a_tick() {
    crate::testing::with_switch(&crate::wait::TICKS_IN_MODELS, true, || {
        bounded(2).check(|| {
            let lock = crate::sync::Arc::new(SpinFutexMutex::new());
            lock.lock();
            let frozen = {
                let lock = lock.clone();
                crate::sync::spawn(move || lock.freeze_as_spinner())
            };
            let waiter = {
                let lock = lock.clone();
                crate::sync::spawn(move || {
                    lock.lock();
                    lock.unlock();
                })
            };
            frozen.join().unwrap();
            lock.unlock();
            waiter.join().unwrap();
            assert!(!lock.is_locked());
        });
    });
}

/// `FairMutex`'s raw lock, every unlock fair: the mark, the wake while held, the
/// reserved release, the sleeper's take, and the plain unlock when the wake found
/// nobody, between two threads that each take the lock twice.
#[test]
fn raw_fair_mutex_two_threads_twice() {
    explore::<RawFairMutex>(2, 2);
}

/// As above with three threads: a sleeper, a spinner or claimant and a barger at one
/// fair unlock.
#[test]
fn raw_fair_mutex_three_threads() {
    explore::<RawFairMutex>(3, 1);
}

/// As above with the handoff claim off: a woken waiter that finds the lock taken
/// sleeps again as a plain sleeper, so a fair unlock meets a sleeper that went back
/// to sleep on its marked word, whose wake it owes after the release.
#[test]
fn raw_fair_mutex_owner_then_two_waiters_without_claims() {
    crate::testing::with_switch(
        &super::raw_mutex::handoff::CLAIMS_IN_MODELS,
        false,
        owner_then_two_waiters::<RawFairMutex>,
    );
}

/// The fair unlock with a racing barger: the owner unlocks fairly while a waiter
/// sleeps (or is on its way to sleep) and a second thread barges with `try_lock`
/// and then `lock`. Exclusion holds (the count), nobody is left asleep (loom's
/// deadlock check), and the lock ends free, not reserved for a sleeper that is gone.
#[test]
fn raw_mutex_unlock_fair_with_a_racing_barger() {
    crate::testing::with_switch(&super::raw_mutex::handoff::CLAIMS_IN_MODELS, false, || {
        bounded(2).check(|| {
            let lock = crate::sync::Arc::new(RawMutex::new());
            let data = crate::sync::Arc::new(crate::sync::UnsafeCell::new(0u32));
            lock.lock();
            let count = |lock: &RawMutex, data: &crate::sync::UnsafeCell<u32>| {
                // SAFETY: under the lock (loom checks that it excludes).
                data.with_mut(|d| unsafe { *d += 1 });
                lock.unlock_fair();
            };
            let sleeper = {
                let (lock, data) = (lock.clone(), data.clone());
                crate::sync::spawn(move || {
                    lock.lock();
                    count(&lock, &data);
                })
            };
            crate::sync::yield_now();
            let barger = {
                let (lock, data) = (lock.clone(), data.clone());
                crate::sync::spawn(move || {
                    if !lock.try_lock() {
                        lock.lock();
                    }
                    count(&lock, &data);
                })
            };
            lock.unlock_fair();
            sleeper.join().unwrap();
            barger.join().unwrap();
            // SAFETY: both threads are done with the data.
            assert_eq!(data.with(|d| unsafe { *d }), 2);
            assert!(lock.try_lock(), "a fair unlock left the lock reserved");
            lock.unlock();
        });
    });
}

/// The fair unlock with nobody asleep, or a waiter arriving while it runs: the wake
/// finds nobody (or the arriving sleeper), and the lock must end free, never reserved
/// for nobody.
#[test]
fn raw_mutex_unlock_fair_with_no_sleeper() {
    bounded(2).check(|| {
        let lock = crate::sync::Arc::new(RawMutex::new());
        lock.lock();
        let arriving = {
            let lock = lock.clone();
            crate::sync::spawn(move || {
                lock.lock();
                lock.unlock_fair();
            })
        };
        lock.unlock_fair();
        arriving.join().unwrap();
        assert!(!lock.is_locked());
        assert!(
            lock.try_lock(),
            "a fair unlock left the lock reserved for nobody"
        );
        lock.unlock();
    });
}

/// A sleeper whose sleeps end without a wake (each returns as if its liveness tick
/// passed, as a timed-out sleep does): the fair unlock's wake may find it awake, or
/// asleep and then racing its own tick; either way the lock passes or is freed, and
/// both threads finish.
#[test]
fn raw_mutex_unlock_fair_with_a_sleeper_that_times_out() {
    crate::testing::with_switch(&crate::wait::TICKS_IN_MODELS, true, || {
        bounded(2).check(|| {
            let lock = crate::sync::Arc::new(RawMutex::new());
            lock.lock();
            let sleeper = {
                let lock = lock.clone();
                crate::sync::spawn(move || {
                    lock.lock();
                    lock.unlock_fair();
                })
            };
            crate::sync::yield_now();
            lock.unlock_fair();
            sleeper.join().unwrap();
            assert!(lock.try_lock(), "the lock stayed reserved");
            lock.unlock();
        });
    });
}

/// A claimant that never takes its reservation, released by a fair unlock: the fair
/// unlock is the handoff unlock then, and the waiter whose sleep ticks breaks the
/// reservation and takes the lock, as after a plain unlock.
#[test]
fn raw_mutex_frozen_claimant_is_passed_after_a_fair_unlock() {
    use super::raw_mutex::handoff::Claim;
    use crate::role::Role;
    crate::testing::with_switch(&crate::wait::TICKS_IN_MODELS, true, || {
        bounded(2).check(|| {
            let lock = crate::sync::Arc::new(RawMutex::new());
            lock.lock();
            let frozen = {
                let lock = lock.clone();
                crate::sync::spawn(move || {
                    let outer = Role::Claimant.mark();
                    assert!(lock.claim(Claim::Slept { since: 0 }, outer));
                })
            };
            frozen.join().unwrap();
            let waiter = {
                let lock = lock.clone();
                crate::sync::spawn(move || {
                    lock.lock();
                    lock.unlock_fair();
                })
            };
            lock.unlock_fair();
            waiter.join().unwrap();
            assert!(!lock.is_locked());
            assert!(lock.try_lock());
        });
    });
}
