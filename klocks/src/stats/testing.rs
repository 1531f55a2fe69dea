//! Helpers for the locks' counting tests: a waiter thread whose counts come back,
//! and whether it sleeps in the kernel; expectations on a snapshot.

use super::Event;
pub(crate) use super::{this_thread, Event::*, Lock, Snapshot};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A thread that runs a closure and reports what it counted.
pub(crate) struct Contender<T> {
    tid: u32,
    handle: std::thread::JoinHandle<(T, Snapshot)>,
}

impl<T: Send + 'static> Contender<T> {
    /// Starts `run` on a new thread.
    pub(crate) fn spawn(run: impl FnOnce() -> T + Send + 'static) -> Self {
        // The process's first spin budget is calibrated with futex handoffs: done
        // first, so that no waiter sleeps in it where the test looks for its sleep.
        static CALIBRATED: crate::budget::SpinBudget = crate::budget::SpinBudget::new();
        CALIBRATED.spins();
        let (tid_tx, tid_rx) = mpsc::channel();
        let handle = std::thread::spawn(move || {
            tid_tx.send(crate::owner::current_tid()).unwrap();
            counted(run)
        });
        let tid = tid_rx.recv().unwrap();
        Self { tid, handle }
    }

    /// Whether the thread sleeps in the kernel now (state `S` in `/proc`). A
    /// waiter does nothing else that blocks once it has announced itself.
    pub(crate) fn asleep(&self) -> bool {
        let path = format!("/proc/self/task/{}/stat", self.tid);
        std::fs::read_to_string(path).is_ok_and(|stat| {
            // The state follows the command name, which ends with the last ')'.
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('S'))
        })
    }

    /// Waits for the thread; its result and what it counted.
    pub(crate) fn join(self) -> (T, Snapshot) {
        self.handle.join().unwrap()
    }
}

/// One waiter behind this thread's hold of `lock`: an uncontended pair must count
/// nothing for `who`; then this thread takes the lock, a waiter locks and unlocks
/// it, and once `waiting(&waiter)` says it waits where the test wants it, this
/// thread releases the lock. What the release counted, and what the waiter did.
pub(crate) fn one_waiter<L: lock_api::RawMutex + Sync + 'static>(
    lock: &'static L,
    who: Lock,
    waiting: impl Fn(&Contender<()>) -> bool,
) -> (Snapshot, Snapshot) {
    one_prepared_waiter(lock, who, || (), waiting)
}

/// [`one_waiter`], with `prepare` run on the waiter's thread before it locks.
pub(crate) fn one_prepared_waiter<L: lock_api::RawMutex + Sync + 'static>(
    lock: &'static L,
    who: Lock,
    prepare: fn(),
    waiting: impl Fn(&Contender<()>) -> bool,
) -> (Snapshot, Snapshot) {
    // SAFETY, both unlocks: this thread took the lock just before.
    let ((), fast) = counted(|| {
        lock.lock();
        unsafe { lock.unlock() };
    });
    expect(&fast, who).nothing_else();
    lock.lock();
    let waiter = Contender::spawn(move || {
        prepare();
        lock.lock();
        // SAFETY: the waiter took the lock just before.
        unsafe { lock.unlock() };
    });
    eventually("the waiter in place", || waiting(&waiter));
    // SAFETY: this thread holds the lock.
    let ((), unlock) = counted(|| unsafe { lock.unlock() });
    let ((), waited) = waiter.join();
    (unlock, waited)
}

/// The counts of a waiter behind an owner that is not running, for the futex
/// mutexes with one spinner (`one_waiter`'s two snapshots): it becomes the
/// spinner and gives up, yields, tries again, and sleeps after its last of
/// `yields` yields: one spin per try, one sleep. The owner's unlock wakes it once;
/// the woken thread took the lock with its waiters bit, so its unlock's wake finds
/// nobody.
#[track_caller]
pub(crate) fn expect_spins_yields_then_sleeps_once(
    (unlock, waited): (Snapshot, Snapshot),
    lock: Lock,
    yields: u32,
) {
    let tries = u64::from(yields) + 1;
    expect(&waited, lock)
        .exactly(Event::LockSlowpath, 1)
        .exactly(Event::SpinFailed, tries)
        .maybe(Event::OwnerOffCpu)
        .exactly(Event::Yield, tries - 1)
        .exactly(Event::Sleep, 1)
        .exactly(Event::Wake, 1)
        .exactly(Event::WakeNoSleeper, 1)
        .nothing_else();
    assert!(waited.get(lock, Event::OwnerOffCpu) <= tries);
    expect(&unlock, lock).exactly(Event::Wake, 1).nothing_else();
}

/// What the calling thread counts while it runs `run`.
pub(crate) fn counted<T>(run: impl FnOnce() -> T) -> (T, Snapshot) {
    let before = this_thread();
    let result = run();
    (result, this_thread() - before)
}

/// Waits up to 5 s for `done`, panicking with `what` after that.
pub(crate) fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Checks what `counts` holds for `lock`: `expect(&counts, lock).exactly(..)
/// .at_least_one(..).maybe(..).nothing_else()`.
pub(crate) fn expect(counts: &Snapshot, lock: Lock) -> Expect<'_> {
    Expect {
        counts,
        lock,
        named: Vec::new(),
    }
}

/// Expectations on one lock's counts in a snapshot.
pub(crate) struct Expect<'a> {
    counts: &'a Snapshot,
    lock: Lock,
    named: Vec<Event>,
}

impl Expect<'_> {
    fn name(&mut self, event: Event) -> u64 {
        self.named.push(event);
        self.counts.get(self.lock, event)
    }

    /// `event` was counted exactly `n` times.
    #[track_caller]
    pub(crate) fn exactly(mut self, event: Event, n: u64) -> Self {
        let counted = self.name(event);
        assert_eq!(counted, n, "{}: {:?}", event.name(), self.counts);
        self
    }

    /// `event` was counted at least once.
    #[track_caller]
    pub(crate) fn at_least_one(mut self, event: Event) -> Self {
        let counted = self.name(event);
        assert!(counted >= 1, "{}: {:?}", event.name(), self.counts);
        self
    }

    /// `event` may have been counted (timing decides).
    pub(crate) fn maybe(mut self, event: Event) -> Self {
        self.name(event);
        self
    }

    /// No other event of any lock was counted.
    #[track_caller]
    pub(crate) fn nothing_else(self) {
        for (lock, event, n) in self.counts.iter() {
            assert!(
                lock == self.lock && self.named.contains(&event),
                "unexpected {} {} {n}: {:?}",
                lock.name(),
                event.name(),
                self.counts
            );
        }
    }
}
