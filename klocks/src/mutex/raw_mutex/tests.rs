use super::*;
use crate::testing::{oversubscribed, stress};
use crate::turn::TURNS_LAPSE_US;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

lock_basics_tests!(
    RawMutex,
    "klocks: unlock of a klocks::Mutex that is not locked",
    bytes = 8
);

/// Waits up to 5 s for `done`; whether it came.
fn eventually(done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    true
}

/// Whether the word shows a waiter that sleeps or is about to: `WAITERS`, or the
/// `HANDOFF` of a waiter that claimed on its CPU (the owner, polling here, may look
/// running to it on a loaded machine), which shows `WAITERS` only if it slept before.
fn shows_a_waiter(lock: &RawMutex) -> bool {
    lock.word.load(Relaxed) & (WAITERS | HANDOFF) != 0
}

#[test]
fn the_word_names_the_owner() {
    let lock = RawMutex::new();
    lock.lock();
    assert_eq!(owner_of(lock.word.load(Relaxed)), owner::current_tid());
    lock.unlock();
    assert_eq!(lock.word.load(Relaxed), 0);
}

#[test]
fn unlock_from_another_thread_panics_and_keeps_the_lock() {
    let lock = Arc::new(RawMutex::new());
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
#[should_panic(expected = "locked a klocks::Mutex it already holds")]
fn relock_by_the_owner_panics() {
    let lock = RawMutex::new();
    lock.lock();
    assert!(!lock.try_lock());
    lock.lock();
}

#[test]
fn a_sleeper_is_woken_by_the_unlock() {
    let lock = Arc::new(RawMutex::new());
    lock.lock();
    let waiter = {
        let lock = Arc::clone(&lock);
        std::thread::spawn(move || {
            lock.lock();
            lock.unlock();
        })
    };
    assert!(eventually(|| shows_a_waiter(&lock)));
    lock.unlock();
    waiter.join().unwrap();
    assert!(!lock.is_locked());
}

/// An owner that re-takes the lock at once after each unlock would starve a woken
/// sleeper for good on a barging lock; here the sleeper claims a handoff after
/// `FAIR_WAIT_US` and gets the lock from the owner's next unlock. The woken sleeper
/// may also barge in while the owner returns from its wake call (about one attempt
/// in ten on a 2-CPU VM), which is no starvation but shows no handoff either: the
/// scenario runs again, up to ten times, until one shows the handoff.
///
/// In a process of its own: with the whole suite in one process, other tests' threads
/// can take the owner probe's registrations, and a sleeper that cannot see the owner
/// off its CPU spins instead of claiming.
#[test]
fn a_starving_sleeper_claims_a_handoff() {
    if !crate::testing::alone("mutex::raw_mutex::tests::a_starving_sleeper_claims_a_handoff") {
        return;
    }
    for attempt in 0..10 {
        if attempt > 0 {
            let_turns_lapse();
        }
        if a_starving_sleeper_gets_the_lock() == Taken::ByHandoff {
            return;
        }
    }
    panic!("in ten attempts, the waiter never got the lock by a handoff");
}

/// Waits until this thread takes no turns: an owner that slept on the mutex in one
/// attempt of a scenario would otherwise sleep at once in the next whenever it found
/// the mutex held (its turn over), and the attempts would not be independent.
fn let_turns_lapse() {
    std::thread::sleep(Duration::from_micros(u64::from(TURNS_LAPSE_US) + 10_000));
}

#[derive(PartialEq)]
enum Taken {
    ByHandoff,
    ByBarging,
}

/// One attempt of `a_starving_sleeper_claims_a_handoff`: how the sleeper got the lock
/// (it must get it within 5 s).
fn a_starving_sleeper_gets_the_lock() -> Taken {
    let lock = Arc::new(RawMutex::new());
    let got = Arc::new(AtomicBool::new(false));
    lock.lock();
    let waiter = {
        let (lock, got) = (Arc::clone(&lock), Arc::clone(&got));
        std::thread::spawn(move || {
            lock.lock();
            got.store(true, Relaxed);
            lock.unlock();
        })
    };
    assert!(eventually(|| shows_a_waiter(&lock)));
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut saw_handoff = false;
    while !got.load(Relaxed) {
        assert!(Instant::now() < deadline, "the sleeper starved for 5 s");
        // Held, but off CPU: the woken sleeper stops spinning, and claims. Long
        // enough for it to run meanwhile on a loaded machine (the whole suite beside
        // it), not only in the gap between our unlock and our next lock.
        std::thread::sleep(Duration::from_millis(2));
        saw_handoff |= lock.word.load(Relaxed) & HANDOFF != 0;
        lock.unlock();
        lock.lock();
    }
    lock.unlock();
    waiter.join().unwrap();
    if saw_handoff {
        Taken::ByHandoff
    } else {
        Taken::ByBarging
    }
}

#[test]
fn a_timed_lock_gives_up_at_its_deadline_and_takes_a_free_lock() {
    use lock_api::RawMutexTimed;
    let lock = Arc::new(RawMutex::new());
    lock.lock();
    let other = Arc::clone(&lock);
    let start = Instant::now();
    let took = std::thread::spawn(move || other.try_lock_for(Duration::from_millis(30)))
        .join()
        .unwrap();
    assert!(!took);
    assert!(start.elapsed() >= Duration::from_millis(30));
    lock.unlock();
    let other = Arc::clone(&lock);
    assert!(std::thread::spawn(move || {
        let took = other.try_lock_for(Duration::from_millis(30));
        other.unlock();
        took
    })
    .join()
    .unwrap());
}

/// A timed waiter may eat the wake meant for another sleeper and then give up: the
/// sleeper behind it must still be woken.
#[test]
fn a_timed_waiter_that_gives_up_passes_the_wake_on() {
    use lock_api::RawMutexTimed;
    for _ in 0..20 {
        let lock = Arc::new(RawMutex::new());
        lock.lock();
        let sleeper = {
            let lock = Arc::clone(&lock);
            std::thread::spawn(move || {
                lock.lock();
                lock.unlock();
            })
        };
        assert!(eventually(|| shows_a_waiter(&lock)));
        let timed = {
            let lock = Arc::clone(&lock);
            std::thread::spawn(move || {
                if lock.try_lock_for(Duration::from_millis(2)) {
                    lock.unlock();
                }
            })
        };
        std::thread::sleep(Duration::from_millis(2));
        lock.unlock();
        timed.join().unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let watcher = {
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                sleeper.join().unwrap();
                done.store(true, Relaxed);
            })
        };
        assert!(
            eventually(|| done.load(Relaxed)),
            "a sleeper was never woken"
        );
        watcher.join().unwrap();
    }
}

#[test]
fn a_signal_handler_takes_the_lock_its_thread_claims() {
    let name = "mutex::raw_mutex::tests::a_signal_handler_takes_the_lock_its_thread_claims";
    if let Some(status) = crate::testing::isolated(name, handler_takes_the_claimed_lock) {
        assert!(status.success(), "{status:?}");
    }
}

fn handler_takes_the_claimed_lock() {
    use std::os::unix::thread::JoinHandleExt;
    static LOCK: RawMutex = RawMutex::new();
    static HANDLED: AtomicBool = AtomicBool::new(false);
    extern "C" fn handler(_: libc::c_int) {
        LOCK.lock();
        LOCK.unlock();
        HANDLED.store(true, Relaxed);
    }
    // SAFETY: installs a handler for SIGURG (ignored by default, unused by the test
    // harness) that only touches statics.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as extern "C" fn(libc::c_int) as usize;
        libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut());
    }
    // The woken waiter may barge in while we return from an unlock's wake call
    // instead of claiming (no starvation, but no claim to test either): then a new
    // waiter tries, up to ten.
    let claimant = (0..10)
        .find_map(|attempt| {
            if attempt > 0 {
                let_turns_lapse();
            }
            waiter_that_claims(&LOCK)
        })
        .expect("in ten attempts, no waiter claimed a handoff");
    // SAFETY: the waiter thread is alive (it waits for the lock we hold).
    unsafe { libc::pthread_kill(claimant.as_pthread_t(), libc::SIGURG) };
    std::thread::sleep(Duration::from_millis(5));
    LOCK.unlock();
    assert!(
        eventually(|| HANDLED.load(Relaxed)),
        "the handler never got the lock reserved for its thread"
    );
    claimant.join().unwrap();
    assert!(!LOCK.is_locked());
}

/// With `lock` free, takes it and starts a waiter, then re-takes the lock at once
/// after each unlock until the woken waiter claims a handoff: returns the waiter,
/// with the lock held and reserved for it; or `None`, with the lock free, if the
/// waiter got the lock by barging instead.
fn waiter_that_claims(lock: &'static RawMutex) -> Option<std::thread::JoinHandle<()>> {
    lock.lock();
    let waiter = std::thread::spawn(|| {
        lock.lock();
        lock.unlock();
    });
    assert!(eventually(|| shows_a_waiter(lock)));
    let deadline = Instant::now() + Duration::from_secs(5);
    while lock.word.load(Relaxed) & HANDOFF == 0 {
        assert!(
            Instant::now() < deadline,
            "the waiter neither claimed a handoff nor got the lock"
        );
        if waiter.is_finished() {
            lock.unlock();
            waiter.join().unwrap();
            return None;
        }
        lock.unlock();
        lock.lock();
        // Held, off CPU, long enough for the woken waiter to run meanwhile on a
        // loaded machine (as in `a_starving_sleeper_gets_the_lock`).
        std::thread::sleep(Duration::from_millis(2));
    }
    Some(waiter)
}

#[test]
fn stress_oversubscribed() {
    stress::<RawMutex>(oversubscribed);
}

#[test]
fn held_by_current_thread_reads_the_word() {
    let lock: &'static RawMutex = Box::leak(Box::new(RawMutex::new()));
    assert!(!lock.held_by_current_thread());
    lock.lock();
    assert!(lock.held_by_current_thread());
    assert!(!std::thread::spawn(|| lock.held_by_current_thread())
        .join()
        .unwrap());
    lock.unlock();
    assert!(!lock.held_by_current_thread());
}

#[test]
fn unlock_for_owner_of_an_unlocked_mutex_is_refused() {
    let lock = RawMutex::new();
    // SAFETY: nobody holds the lock, so no hold is released twice.
    assert!(!unsafe { lock.unlock_for_owner() });
    assert_eq!(lock.word.load(Relaxed), 0);
}

/// Releases `lock`, held by this thread, from another thread.
fn unlock_from_another_thread(lock: &'static RawMutex) {
    // SAFETY: the calling thread holds the lock and gives this one release away.
    let released = std::thread::spawn(move || unsafe { lock.unlock_for_owner() });
    assert!(released.join().unwrap());
}

#[test]
fn unlock_for_owner_releases_another_threads_hold_and_wakes_its_sleeper() {
    let lock: &'static RawMutex = Box::leak(Box::new(RawMutex::new()));
    lock.lock();
    let sleeper = std::thread::spawn(|| {
        lock.lock();
        lock.unlock();
    });
    assert!(eventually(|| shows_a_waiter(lock)));
    unlock_from_another_thread(lock);
    sleeper.join().unwrap();
    assert_eq!(
        lock.word.load(Relaxed) & (OWNER_MASK | WAITERS | HANDOFF),
        0
    );
}

/// A lock reserved for a claimant, released by a thread other than its holder: the
/// release keeps the reservation and wakes the claimant (a release that dropped
/// `HANDOFF` or woke only a sleeper would leave it asleep, and the join would hang).
/// The waiter may barge in instead of claiming (see `a_starving_sleeper_claims_a_handoff`):
/// the scenario runs again, up to ten times, until the lock is reserved. In a process
/// of its own, for the reason `a_starving_sleeper_claims_a_handoff` gives.
#[test]
fn unlock_for_owner_of_a_reserved_lock_wakes_the_claimant() {
    if !crate::testing::alone(
        "mutex::raw_mutex::tests::unlock_for_owner_of_a_reserved_lock_wakes_the_claimant",
    ) {
        return;
    }
    let lock: &'static RawMutex = Box::leak(Box::new(RawMutex::new()));
    for _ in 0..10 {
        if let Some(claimant) = waiter_that_claims(lock) {
            unlock_from_another_thread(lock);
            claimant.join().unwrap();
            assert!(!lock.is_locked());
            return;
        }
    }
    panic!("in ten attempts, the waiter never claimed a handoff");
}
