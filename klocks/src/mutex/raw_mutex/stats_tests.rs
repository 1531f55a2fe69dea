//! What `RawMutex` counts (feature `stats`), exactly where the algorithm decides it.

use super::*;
use crate::stats::testing::*;
use crate::turn::TURN_US;
use std::time::{Duration, Instant};

/// Behind an owner that is not running, a waiter spins and sleeps once, and is woken
/// once. It yields only after a spin whose budget ran out while the owner ran (the
/// owner here runs only to check on the waiter), never after one that saw the owner
/// off its CPU, so every failed spin but the last one ended with the budget spent.
/// (Such spins may add up to the running claim's wait on a loaded machine; the
/// waiter makes no running claim here.)
#[test]
fn stats_spins_then_sleeps_once() {
    let lock: &'static RawMutex = Box::leak(Box::new(RawMutex::new()));
    let (unlock, waited) = one_prepared_waiter(lock, STATS, no_running_claims, |waiter| {
        lock.word.load(Relaxed) & WAITERS != 0 && waiter.asleep()
    });
    let spins = waited.get(STATS, SpinFailed);
    assert!(spins >= 1, "{waited:?}");
    assert_eq!(waited.get(STATS, Yield), spins - 1, "{waited:?}");
    assert!(spins - 1 <= u64::from(YIELDS_BEFORE_SLEEP), "{waited:?}");
    assert!(waited.get(STATS, OwnerOffCpu) <= 1, "{waited:?}");
    expect(&waited, STATS)
        .exactly(LockSlowpath, 1)
        .maybe(SpinFailed)
        .maybe(Yield)
        .maybe(OwnerOffCpu)
        .exactly(Sleep, 1)
        .exactly(Wake, 1)
        .exactly(WakeNoSleeper, 1)
        .nothing_else();
    expect(&unlock, STATS).exactly(Wake, 1).nothing_else();
}

/// A thread whose turn is over sleeps at once on a held mutex, without spinning or
/// yielding first; the owner's unlock wakes it.
#[test]
fn stats_a_thread_whose_turn_is_over_sleeps_at_once() {
    let lock: &'static RawMutex = Box::leak(Box::new(RawMutex::new()));
    lock.lock();
    let waiter = Contender::spawn(move || {
        Turn::Mutex.begin();
        std::thread::sleep(Duration::from_micros(2 * u64::from(TURN_US)));
        lock.lock();
        lock.unlock();
    });
    eventually("the waiter asleep", || {
        lock.word.load(Relaxed) & WAITERS != 0 && waiter.asleep()
    });
    lock.unlock();
    let ((), waited) = waiter.join();
    expect(&waited, STATS)
        .exactly(LockSlowpath, 1)
        .exactly(TurnOver, 1)
        .exactly(Sleep, 1)
        .maybe(Wake)
        .maybe(WakeNoSleeper)
        .nothing_else();
}

/// A sleeper starved by an owner that re-takes the lock claims a handoff, and the
/// owner's next unlock hands the lock over: one handoff per claim, at most one (the
/// sleeper may also get the lock by barging, when it runs while the owner, between
/// its unlock and its lock, does not). The waiter makes no running claim: on a
/// loaded machine one pre-empted its sleep (it sleeps as the claimant then, without
/// `WAITERS`), and the test timed out waiting for it asleep.
#[test]
fn stats_a_starving_sleeper_claims_once_and_is_handed_the_lock_once() {
    let lock: &'static RawMutex = Box::leak(Box::new(RawMutex::new()));
    let got: &'static AtomicU32 = Box::leak(Box::new(AtomicU32::new(0)));
    lock.lock();
    let waiter = Contender::spawn(move || {
        no_running_claims();
        lock.lock();
        got.store(1, Relaxed);
        lock.unlock();
    });
    eventually("the waiter asleep", || {
        lock.word.load(Relaxed) & WAITERS != 0 && waiter.asleep()
    });
    let ((), owner) = counted(|| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while got.load(Relaxed) == 0 {
            assert!(Instant::now() < deadline, "the sleeper starved for 5 s");
            // Held, but off CPU: the woken sleeper stops spinning, and claims.
            std::thread::sleep(Duration::from_micros(200));
            lock.unlock();
            lock.lock();
        }
        lock.unlock();
    });
    let ((), waited) = waiter.join();
    let claims = waited.get(STATS, HandoffClaim);
    assert!(claims <= 1, "{waited:?}");
    assert_eq!(owner.get(STATS, Handoff), claims, "{owner:?} {waited:?}");
    expect(&waited, STATS)
        .exactly(LockSlowpath, 1)
        .maybe(HandoffClaim)
        .at_least_one(Sleep)
        .maybe(SpinAcquired)
        .maybe(SpinFailed)
        .maybe(OwnerOffCpu)
        .maybe(Yield)
        .maybe(Wake)
        .maybe(WakeNoSleeper)
        .maybe(WakeSkipped)
        .nothing_else();
}

/// A waiter that the owner keeps outrunning (a tight loop that re-takes the lock at
/// once and never leaves its CPU) claims a handoff while it runs, once it has been
/// outrun for `FAIR_WAIT_US`, and the owner's next unlock hands it the lock. Without
/// the running claim the waiter's only claim is the one after a sleep: this fails.
/// The waiter's acquisitions are bounded too, with the slack a loaded test machine
/// needs: the test asserts that the mechanism fires, not a timing. Owner and waiter
/// run on two different CPUs: unpinned on a loaded machine, the scheduler may keep
/// them on one, where the waiter only runs while the owner does not, sees it off its
/// CPU and sleeps, and never claims (a CI run, with the other tests of this module
/// beside it, went 30 s without a claim). Pinned, the other tests' threads still
/// preempted the owner in another CI run (30 s without a claim again), so
/// `scripts/test` runs these tests one at a time.
#[test]
fn stats_a_waiter_the_owner_outruns_claims_on_its_cpu() {
    let Some([owner_cpu, waiter_cpu]) = crate::testing::two_cpus() else {
        eprintln!("skipping: needs two CPUs");
        return;
    };
    let lock: &'static RawMutex = Box::leak(Box::new(RawMutex::new()));
    let done: &'static AtomicU32 = Box::leak(Box::new(AtomicU32::new(0)));
    let owner = Contender::spawn(move || {
        crate::testing::pin(owner_cpu);
        // Relaxed: a stop flag; the join below orders everything after it.
        while done.load(Relaxed) == 0 {
            lock.lock();
            cpu_relax_times(4);
            lock.unlock();
        }
    });
    crate::testing::pin(waiter_cpu);
    let deadline = Instant::now() + Duration::from_secs(30);
    let (longest, waited) = counted(|| {
        let mut longest = Duration::ZERO;
        let start = crate::stats::this_thread();
        while (&crate::stats::this_thread() - &start).get(STATS, RunningClaim) == 0 {
            assert!(Instant::now() < deadline, "no running claim in 30 s");
            let asked = Instant::now();
            lock.lock();
            longest = longest.max(asked.elapsed());
            lock.unlock();
        }
        longest
    });
    // Relaxed: as the owner's load.
    done.store(1, Relaxed);
    let ((), owned) = owner.join();
    assert!(longest < Duration::from_secs(1), "waited {longest:?}");
    // Either thread may claim while the other holds the lock; every claim is served.
    let claims =
        |c: &crate::stats::Snapshot| c.get(STATS, RunningClaim) + c.get(STATS, HandoffClaim);
    assert_eq!(
        owned.get(STATS, Handoff) + waited.get(STATS, Handoff),
        claims(&owned) + claims(&waited),
        "{owned:?} {waited:?}"
    );
}

/// A timed lock behind a held lock gives up once, at its deadline.
#[test]
fn stats_a_timed_lock_counts_its_timeout() {
    use lock_api::RawMutexTimed;
    let lock: &'static RawMutex = Box::leak(Box::new(RawMutex::new()));
    lock.lock();
    let waiter = Contender::spawn(move || lock.try_lock_for(Duration::from_millis(5)));
    let (took, waited) = waiter.join();
    lock.unlock();
    assert!(!took);
    expect(&waited, STATS)
        .exactly(LockSlowpath, 1)
        .exactly(Timeout, 1)
        .at_least_one(SpinFailed)
        .maybe(OwnerOffCpu)
        .maybe(Yield)
        .maybe(Sleep)
        // The first liveness tick (2 ms) may end a sleep before the 5 ms deadline.
        .maybe(Tick)
        .nothing_else();
}

/// Turns the running claim off on the calling thread (a waiter whose test follows the
/// path to a plain sleep).
fn no_running_claims() {
    super::handoff::RUNNING_CLAIMS_IN_TESTS.with(|on| on.set(false));
}
