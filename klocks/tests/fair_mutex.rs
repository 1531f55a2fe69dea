#![cfg(not(loom))]
//! parking_lot 0.12.5's own `FairMutex` tests (`src/fair_mutex.rs`), ported by
//! renaming `crate::FairMutex` to `klocks::FairMutex` (its serde test is left out:
//! klocks has no serde feature), then tests of what makes the mutex fair.

use klocks::FairMutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::sync::Arc;
use std::thread;

#[derive(Eq, PartialEq, Debug)]
struct NonCopy(i32);

#[test]
fn smoke() {
    let m = FairMutex::new(());
    drop(m.lock());
    drop(m.lock());
}

#[test]
fn lots_and_lots() {
    const J: u32 = 1000;
    const K: u32 = 3;

    let m = Arc::new(FairMutex::new(0));

    fn inc(m: &FairMutex<u32>) {
        for _ in 0..J {
            *m.lock() += 1;
        }
    }

    let (tx, rx) = channel();
    for _ in 0..K {
        let tx2 = tx.clone();
        let m2 = m.clone();
        thread::spawn(move || {
            inc(&m2);
            tx2.send(()).unwrap();
        });
        let tx2 = tx.clone();
        let m2 = m.clone();
        thread::spawn(move || {
            inc(&m2);
            tx2.send(()).unwrap();
        });
    }

    drop(tx);
    for _ in 0..2 * K {
        rx.recv().unwrap();
    }
    assert_eq!(*m.lock(), J * K * 2);
}

#[test]
fn try_lock() {
    let m = FairMutex::new(());
    *m.try_lock().unwrap() = ();
}

#[test]
fn test_into_inner() {
    let m = FairMutex::new(NonCopy(10));
    assert_eq!(m.into_inner(), NonCopy(10));
}

#[test]
fn test_into_inner_drop() {
    struct Foo(Arc<AtomicUsize>);
    impl Drop for Foo {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let num_drops = Arc::new(AtomicUsize::new(0));
    let m = FairMutex::new(Foo(num_drops.clone()));
    assert_eq!(num_drops.load(Ordering::SeqCst), 0);
    {
        let _inner = m.into_inner();
        assert_eq!(num_drops.load(Ordering::SeqCst), 0);
    }
    assert_eq!(num_drops.load(Ordering::SeqCst), 1);
}

#[test]
fn test_get_mut() {
    let mut m = FairMutex::new(NonCopy(10));
    *m.get_mut() = NonCopy(20);
    assert_eq!(m.into_inner(), NonCopy(20));
}

#[test]
fn test_mutex_arc_nested() {
    // Tests nested mutexes and access
    // to underlying data.
    let arc = Arc::new(FairMutex::new(1));
    let arc2 = Arc::new(FairMutex::new(arc));
    let (tx, rx) = channel();
    let _t = thread::spawn(move || {
        let lock = arc2.lock();
        let lock2 = lock.lock();
        assert_eq!(*lock2, 1);
        tx.send(()).unwrap();
    });
    rx.recv().unwrap();
}

#[test]
fn test_mutex_arc_access_in_unwind() {
    let arc = Arc::new(FairMutex::new(1));
    let arc2 = arc.clone();
    let _ = thread::spawn(move || {
        struct Unwinder {
            i: Arc<FairMutex<i32>>,
        }
        impl Drop for Unwinder {
            fn drop(&mut self) {
                *self.i.lock() += 1;
            }
        }
        let _u = Unwinder { i: arc2 };
        panic!();
    })
    .join();
    let lock = arc.lock();
    assert_eq!(*lock, 2);
}

#[test]
fn test_mutex_unsized() {
    let mutex: &FairMutex<[i32]> = &FairMutex::new([1, 2, 3]);
    {
        let b = &mut *mutex.lock();
        b[0] = 4;
        b[2] = 5;
    }
    let comp: &[i32] = &[4, 2, 5];
    assert_eq!(&*mutex.lock(), comp);
}

#[test]
fn test_mutexguard_sync() {
    fn sync<T: Sync>(_: T) {}

    let mutex = FairMutex::new(());
    sync(mutex.lock());
}

#[test]
fn test_mutex_debug() {
    let mutex = FairMutex::new(vec![0u8, 10]);

    assert_eq!(format!("{:?}", mutex), "Mutex { data: [0, 10] }");
    let _lock = mutex.lock();
    assert_eq!(format!("{:?}", mutex), "Mutex { data: <locked> }");
}

// What makes the mutex fair: a thread asleep on it gets it from the next unlock.

use klocks::lock_api::{Mutex as LockApiMutex, MutexGuard, RawMutex as _};
use std::sync::atomic::AtomicU32;
use std::time::{Duration, Instant};

/// Whether thread `tid` of this process is asleep in the kernel (state `S`).
fn asleep(tid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    // The state follows the command name's closing parenthesis.
    stat.rsplit(')')
        .next()
        .map(str::trim_start)
        .is_some_and(|rest| rest.starts_with('S'))
}

/// With `lock` held by the caller (`guard`), starts a thread that locks it and adds
/// one under it, waits until that thread sleeps on it as a plain sleeper (the word
/// shows `WAITERS` and no handoff claim, and the thread is asleep in the kernel),
/// then releases the lock with `release` and tries to barge in at once. Whether the
/// barge took the lock; `None` if the waiter claimed a handoff before we saw it
/// asleep (its liveness tick wakes it after 2 ms, and a woken waiter that waited
/// 1 ms claims), which a plain unlock honours too, so the attempt shows nothing.
fn barge_past_a_sleeper<R>(
    lock: &'static LockApiMutex<R, u32>,
    guard: MutexGuard<'static, R, u32>,
    release: impl FnOnce(MutexGuard<'static, R, u32>),
) -> Option<bool>
where
    R: klocks::lock_api::RawMutex + std::fmt::Debug + Send + Sync + 'static,
{
    let tid = Arc::new(AtomicU32::new(0));
    let waiter = {
        let tid = Arc::clone(&tid);
        thread::spawn(move || {
            tid.store(klocks::owner::current_tid(), Ordering::SeqCst);
            *lock.lock() += 1;
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let plain_sleeper = loop {
        thread::sleep(Duration::from_micros(100));
        // The raw lock's Debug shows its word.
        // SAFETY: only read through Debug, which loads the word.
        let word = format!("{:?}", unsafe { lock.raw() });
        if word.contains("handoff: true") {
            break false;
        }
        let t = tid.load(Ordering::SeqCst);
        if t != 0 && word.contains("waiters: true") && asleep(t) {
            break true;
        }
        assert!(Instant::now() < deadline, "the waiter never slept: {word}");
    };
    let before = *guard;
    release(guard);
    // A barge took the lock before the sleeper had it (the sleeper may also have
    // taken and released it already: no barge).
    let barged = lock.try_lock().is_some_and(|count| *count == before);
    waiter.join().unwrap();
    plain_sleeper.then_some(barged)
}

/// Of `ATTEMPTS` runs of `barge_past_a_sleeper` that met a plain sleeper (up to 100
/// runs), how many barges took the lock.
fn barges_past_sleepers<R>(
    lock: &'static LockApiMutex<R, u32>,
    release: impl Fn(MutexGuard<'static, R, u32>),
) -> usize
where
    R: klocks::lock_api::RawMutex + std::fmt::Debug + Send + Sync + 'static,
{
    let outcomes: Vec<bool> = (0..100)
        .filter_map(|_| barge_past_a_sleeper(lock, lock.lock(), &release))
        .take(ATTEMPTS)
        .collect();
    assert_eq!(
        outcomes.len(),
        ATTEMPTS,
        "the waiter claimed a handoff before it slept too often"
    );
    outcomes.into_iter().filter(|&barged| barged).count()
}

/// Attempts per measurement of `barges_past_sleepers`.
const ATTEMPTS: usize = 20;

/// One fairness test at a time (and none beside `hammering_threads_take_turns`): a
/// waiter seen asleep may be woken by its liveness tick before the unlock that
/// follows, and a machine loaded by the other tests' threads widens that gap.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The fair unlock passes the lock to the sleeper: a `try_lock` right after it fails,
/// the lock being reserved for (or taken by) the thread it woke, and the sleeper gets
/// it. A plain unlock lets the `try_lock` barge in (below). Two barges in twenty
/// are allowed: the sleeper's tick may wake it between our look and our unlock, and
/// then the unlock finds nobody asleep and is a plain one.
#[test]
fn a_fair_unlock_passes_the_lock_to_the_sleeper() {
    static LOCK: FairMutex<u32> = klocks::const_fair_mutex(0);
    let _serial = one_at_a_time();
    let barges = barges_past_sleepers(&LOCK, drop);
    assert!(
        barges <= 2,
        "barged past the sleeper {barges} times in {ATTEMPTS}"
    );
}

/// The control of the test above: `klocks::Mutex`'s plain unlock leaves the lock
/// free for a barger, whom the woken sleeper cannot beat within a few nanoseconds
/// (in most attempts, allowing for preemptions between the unlock and the try); its
/// `unlock_fair` passes it as `FairMutex` does.
#[test]
fn klocks_mutex_barges_and_its_unlock_fair_passes() {
    static LOCK: klocks::Mutex<u32> = klocks::const_mutex(0);
    let _serial = one_at_a_time();
    let barges = barges_past_sleepers(&LOCK, drop);
    assert!(
        barges >= ATTEMPTS / 4,
        "a plain unlock let a barger in only {barges} times in {ATTEMPTS}"
    );
    let barges = barges_past_sleepers(&LOCK, klocks::MutexGuard::unlock_fair);
    assert!(
        barges <= 2,
        "barged past the sleeper {barges} times in {ATTEMPTS}"
    );
}

/// `bump` hands the lock to the sleeper and takes it back after it: the sleeper's
/// section ran in between (in all but two of twenty attempts, as above).
#[test]
fn bump_lets_the_sleeper_in() {
    static LOCK: FairMutex<u32> = klocks::const_fair_mutex(0);
    let _serial = one_at_a_time();
    let mut sleeper_ran = Vec::new();
    for _ in 0..100 {
        if sleeper_ran.len() == ATTEMPTS {
            break;
        }
        let ran = std::cell::Cell::new(false);
        let bump = |mut guard: klocks::FairMutexGuard<'static, u32>| {
            let before = *guard;
            klocks::FairMutexGuard::bump(&mut guard);
            ran.set(*guard == before + 1);
        };
        if barge_past_a_sleeper(&LOCK, LOCK.lock(), bump).is_some() {
            sleeper_ran.push(ran.get());
        }
    }
    assert_eq!(sleeper_ran.len(), ATTEMPTS, "the waiter claimed too often");
    let kept = sleeper_ran.iter().filter(|&&ran| !ran).count();
    assert!(
        kept <= 2,
        "bump took the lock back {kept} times in {ATTEMPTS}"
    );
}

/// With nobody asleep, the fair unlock is a plain one: the lock is free at once.
#[test]
fn a_fair_unlock_without_sleepers_frees_the_lock() {
    let raw = klocks::RawFairMutex::INIT;
    raw.lock();
    raw.unlock();
    assert!(!raw.is_locked());
    assert!(raw.try_lock());
    raw.unlock();
}
