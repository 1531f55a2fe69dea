//! The one test client every lock runs under every checker (libvsync's habit):
//! threads take the lock and update data that only the lock protects, then the totals
//! are checked. Unit stress tests, integration tests and the loom models all call
//! [`contend`]; under loom the data is a `loom::cell::UnsafeCell`, so loom also proves
//! that critical sections are ordered by happens-before, not merely disjoint.
//!
//! Not part of klocks' API (hidden from the docs); exported for klocks' own tests.

use crate::sync::{AtomicU32, Ordering::Relaxed};

// The operations the client drives a lock through.
mod ops;
pub use ops::{TestLock, TestRwLock};

// The negative controls: locks broken on purpose, to be caught.
mod busted;
#[cfg(not(loom))]
pub use busted::BustedDelegation;
pub use busted::{BustedLock, BustedRwLock};

// Unit tests in a process of their own, and other threads' scheduler states.
#[cfg(all(test, not(loom)))]
mod process;
#[cfg(all(test, not(loom)))]
pub(crate) use process::{alone, isolated, pin, thread_state, two_cpus};

// Fork children of a lock with waiters parked on it.
#[cfg(all(test, not(loom)))]
pub(crate) mod fork;

/// How hard to contend.
#[derive(Clone, Copy, Debug)]
pub struct Contention {
    /// Threads taking the lock.
    pub threads: usize,
    /// Lock/unlock pairs per thread.
    pub iterations: u64,
}

impl Contention {
    /// `threads` threads, 1000 iterations each until changed.
    pub fn threads(threads: usize) -> Self {
        Self {
            threads,
            iterations: 1000,
        }
    }

    /// Sets the iterations per thread.
    pub fn iterations(self, iterations: u64) -> Self {
        Self { iterations, ..self }
    }
}

/// What a run that broke mutual exclusion looked like.
#[derive(Debug, PartialEq, Eq)]
pub struct Violation {
    /// Increments that should have happened.
    pub expected: u64,
    /// Increments found: fewer means lost updates.
    pub counted: u64,
    /// Times a thread entered the critical section while another was inside.
    pub overlaps: u32,
}

/// Data only the lock protects: two counters that must always move together.
struct Guarded {
    count: crate::sync::UnsafeCell<u64>,
    shadow: crate::sync::UnsafeCell<u64>,
}

// SAFETY: the counters are only touched inside the lock under test (or after all
// threads joined); that the lock really excludes is exactly what the client checks.
unsafe impl Sync for Guarded {}

#[cfg(not(loom))]
type Worker = std::thread::JoinHandle<()>;
#[cfg(loom)]
type Worker = loom::thread::JoinHandle<()>;

impl Guarded {
    /// Joins the client's threads, then checks that both counters reached `expected`
    /// and that no overlap was seen.
    fn verdict(
        &self,
        workers: Vec<Worker>,
        expected: u64,
        overlaps: &AtomicU32,
    ) -> Result<(), Violation> {
        for worker in workers {
            worker.join().expect("a contending thread panicked");
        }
        // SAFETY: every thread that touched the counters has been joined.
        let counted = self.count.with_mut(|c| unsafe { *c });
        let shadow = self.shadow.with_mut(|c| unsafe { *c });
        let overlaps = overlaps.load(Relaxed);
        if counted == expected && shadow == expected && overlaps == 0 {
            Ok(())
        } else {
            Err(Violation {
                expected,
                counted: counted.min(shadow),
                overlaps,
            })
        }
    }
}

/// Runs the client: every thread does `iterations` critical sections, each a
/// read-pause-write of two non-atomic counters, with an occupancy check around it.
pub fn contend<L: TestLock>(how: Contention) -> Result<(), Violation> {
    let lock = crate::sync::Arc::new(L::new_unlocked());
    let guarded = crate::sync::Arc::new(Guarded {
        count: crate::sync::UnsafeCell::new(0),
        shadow: crate::sync::UnsafeCell::new(0),
    });
    let inside = crate::sync::Arc::new(AtomicU32::new(0));
    let overlaps = crate::sync::Arc::new(AtomicU32::new(0));
    let gate = crate::sync::Arc::new(StartGate::default());

    let workers: Vec<_> = (0..how.threads)
        .map(|_| {
            let (lock, guarded) = (lock.clone(), guarded.clone());
            let (inside, overlaps) = (inside.clone(), overlaps.clone());
            let gate = gate.clone();
            crate::sync::spawn(move || {
                gate.arrive_and_wait();
                for _ in 0..how.iterations {
                    lock.acquire();
                    enter(&inside, &overlaps);
                    critical_section(&guarded);
                    leave(&inside);
                    lock.release();
                }
            })
        })
        .collect();
    gate.open_when_all_arrived(how.threads);
    guarded.verdict(workers, how.threads as u64 * how.iterations, &overlaps)
}

/// Releases all contending threads at once, so they really contend: spawned one by
/// one, short runs would otherwise finish before the next thread starts. Waiters spin
/// and yield rather than block, because woken sleepers trickle out tens of µs apart.
/// Under loom there is no gate: loom explores every start order anyway.
#[derive(Default)]
struct StartGate {
    #[cfg(not(loom))]
    arrived: std::sync::atomic::AtomicUsize,
    #[cfg(not(loom))]
    open: std::sync::atomic::AtomicBool,
}

impl StartGate {
    fn arrive_and_wait(&self) {
        #[cfg(not(loom))]
        {
            use std::sync::atomic::Ordering::{Acquire, Release};
            // Release/Acquire: pair with the load and store in `open_when_all_arrived`;
            // nothing is published through the gate, it only times the start.
            self.arrived.fetch_add(1, Release);
            while !self.open.load(Acquire) {
                std::thread::yield_now();
            }
        }
    }

    fn open_when_all_arrived(&self, threads: usize) {
        #[cfg(not(loom))]
        {
            use std::sync::atomic::Ordering::{Acquire, Release};
            while self.arrived.load(Acquire) < threads {
                std::thread::yield_now();
            }
            self.open.store(true, Release);
        }
        #[cfg(loom)]
        let _ = threads;
    }
}

/// Occupancy check for native runs. Under loom it is left out: loom's `UnsafeCell`
/// already fails any execution in which two critical sections are unordered, and
/// every extra atomic multiplies the executions loom must explore.
#[inline]
fn enter(inside: &AtomicU32, overlaps: &AtomicU32) {
    if cfg!(not(loom)) && inside.fetch_add(1, Relaxed) != 0 {
        overlaps.fetch_add(1, Relaxed);
    }
}

#[inline]
fn leave(inside: &AtomicU32) {
    if cfg!(not(loom)) {
        inside.fetch_sub(1, Relaxed);
    }
}

/// A deliberately slow, racy update: another thread inside at the same time loses
/// an increment with high probability.
fn critical_section(guarded: &Guarded) {
    // SAFETY: only called with the lock held (that is the claim under test); loom
    // reports a data race here if the lock fails to order critical sections.
    let before = guarded.count.with_mut(|c| unsafe { *c });
    #[cfg(not(loom))]
    for _ in 0..4 {
        std::hint::spin_loop();
    }
    guarded.count.with_mut(|c| unsafe { *c = before + 1 });
    guarded.shadow.with_mut(|s| unsafe { *s += 1 });
}

/// How hard to contend a reader-writer lock.
#[derive(Clone, Copy, Debug)]
pub struct RwContention {
    /// Threads taking read locks.
    pub readers: usize,
    /// Threads taking the write lock.
    pub writers: usize,
    /// Lock/unlock pairs per thread.
    pub iterations: u64,
}

/// Runs the reader-writer client: writers do the mutex client's racy update, readers
/// check that they never see one half-done (the two counters differ) and, natively,
/// that no writer is inside with them. A torn read or an overlap counts in
/// [`Violation::overlaps`].
pub fn contend_rw<L: TestRwLock>(how: RwContention) -> Result<(), Violation> {
    use crate::sync::Arc;
    let lock = Arc::new(L::new_unlocked());
    let guarded = Arc::new(Guarded {
        count: crate::sync::UnsafeCell::new(0),
        shadow: crate::sync::UnsafeCell::new(0),
    });
    let writing = Arc::new(AtomicU32::new(0));
    let reading = Arc::new(AtomicU32::new(0));
    let overlaps = Arc::new(AtomicU32::new(0));
    let gate = Arc::new(StartGate::default());

    let workers: Vec<_> = (0..how.readers + how.writers)
        .map(|i| {
            let (lock, guarded, gate) = (lock.clone(), guarded.clone(), gate.clone());
            let (writing, reading, overlaps) = (writing.clone(), reading.clone(), overlaps.clone());
            let writer = i >= how.readers;
            crate::sync::spawn(move || {
                gate.arrive_and_wait();
                for _ in 0..how.iterations {
                    if writer {
                        lock.write();
                        enter(&writing, &overlaps);
                        if cfg!(not(loom)) && reading.load(Relaxed) != 0 {
                            overlaps.fetch_add(1, Relaxed);
                        }
                        critical_section(&guarded);
                        leave(&writing);
                        lock.write_done();
                    } else {
                        lock.read();
                        enter_shared(&reading);
                        if !consistent(&guarded) {
                            overlaps.fetch_add(1, Relaxed);
                        }
                        if cfg!(not(loom)) && writing.load(Relaxed) != 0 {
                            overlaps.fetch_add(1, Relaxed);
                        }
                        leave(&reading);
                        lock.read_done();
                    }
                }
            })
        })
        .collect();
    gate.open_when_all_arrived(how.readers + how.writers);
    guarded.verdict(workers, how.writers as u64 * how.iterations, &overlaps)
}

#[inline]
fn enter_shared(inside: &AtomicU32) {
    if cfg!(not(loom)) {
        inside.fetch_add(1, Relaxed);
    }
}

/// A reader's look at the data: both counters, with a pause between, must agree.
fn consistent(guarded: &Guarded) -> bool {
    // SAFETY: only called with a read lock held (the claim under test); loom reports
    // a data race if a writer's section is not ordered with this one.
    let count = guarded
        .count
        .with(|c| unsafe { std::ptr::read_volatile(c) });
    #[cfg(not(loom))]
    for _ in 0..4 {
        std::hint::spin_loop();
    }
    let shadow = guarded
        .shadow
        .with(|s| unsafe { std::ptr::read_volatile(s) });
    count == shadow
}

/// Runs the reader-writer client once per `(readers, writers, iterations)` that
/// `plan` gives for this machine's CPU count, panicking on the first violation.
#[cfg(not(loom))]
pub fn stress_rw<L: TestRwLock>(plan: impl Fn(usize) -> Vec<(usize, usize, u64)>) {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    for (readers, writers, iterations) in plan(cpus) {
        contend_rw::<L>(RwContention {
            readers,
            writers,
            iterations,
        })
        .unwrap();
    }
}

/// Explore every interleaving (as [`explore`]) of `readers` readers and `writers`
/// writers each taking the lock `iterations` times.
#[cfg(all(loom, test))]
pub(crate) fn explore_rw<L: TestRwLock>(readers: usize, writers: usize, iterations: u64) {
    let mut model = loom::model::Builder::new();
    if model.preemption_bound.is_none() {
        model.preemption_bound = Some(if readers + writers > 2 { 1 } else { 2 });
    }
    model.max_branches = model.max_branches.max(100_000);
    model.check(move || {
        contend_rw::<L>(RwContention {
            readers,
            writers,
            iterations,
        })
        .expect("reader-writer exclusion violated");
    });
}

/// Runs the client once per `(threads, iterations)` that `plan` gives for this
/// machine's CPU count, panicking on the first violation.
#[cfg(not(loom))]
pub fn stress<L: TestLock>(plan: impl Fn(usize) -> Vec<(usize, u64)>) {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    for (threads, iterations) in plan(cpus) {
        contend::<L>(Contention::threads(threads).iterations(iterations)).unwrap();
    }
}

/// The plan for locks whose waiters sleep: as many threads as CPUs, then 64x and
/// 256x more, which must still finish in about a second.
#[cfg(not(loom))]
pub fn oversubscribed(cpus: usize) -> Vec<(usize, u64)> {
    vec![(cpus, 100_000), (64 * cpus, 200), (256 * cpus, 20)]
}

/// Runs `model` with one of the default locks' model switches
/// (`raw_mutex::handoff::CLAIMS_IN_MODELS`, `turn::TURNS_OVER_IN_MODELS`) set to `value`,
/// restoring it however it ends.
#[cfg(all(loom, test))]
pub(crate) fn with_switch(
    switch: &'static std::thread::LocalKey<std::cell::Cell<bool>>,
    value: bool,
    model: impl FnOnce(),
) {
    struct Restore(&'static std::thread::LocalKey<std::cell::Cell<bool>>, bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            self.0.with(|switch| switch.set(self.1));
        }
    }
    let _restore = Restore(switch, switch.with(|switch| switch.replace(value)));
    model();
}

/// Explore every interleaving up to the preemption bound (`LOOM_MAX_PREEMPTIONS`;
/// default 3 for two threads; 1 for three, because each spin iteration is a branch
/// and a bound of 2 already takes longer than CI allows), with every reordering the
/// memory model allows, of `threads` threads each taking the lock `iterations` times.
#[cfg(all(loom, test))]
pub(crate) fn explore<L: TestLock>(threads: usize, iterations: u64) {
    let mut model = loom::model::Builder::new();
    if model.preemption_bound.is_none() {
        model.preemption_bound = Some(if threads > 2 { 1 } else { 3 });
    }
    // Every spin iteration is a scheduling branch; waiters spin while preempted owners
    // are descheduled, so executions are longer than loom's default 1000 branches.
    model.max_branches = model.max_branches.max(100_000);
    model.check(move || {
        contend::<L>(Contention::threads(threads).iterations(iterations))
            .expect("mutual exclusion violated");
    });
}

/// The contract every klocks lock shares, as unit tests in the invoking module: its
/// documented size (one 32-bit word unless given), `try_lock` refuses a held lock (no recursion), unlocking an unlocked
/// lock panics with the given message.
#[cfg(all(test, not(loom)))]
macro_rules! lock_basics_tests {
    ($ty:ty, $unlock_panic:literal) => {
        lock_basics_tests!($ty, $unlock_panic, bytes = 4);
    };
    ($ty:ty, $unlock_panic:literal, bytes = $bytes:literal) => {
        #[test]
        fn layout_is_as_documented() {
            assert_eq!(std::mem::size_of::<$ty>(), $bytes);
        }

        #[test]
        fn try_lock_fails_while_held() {
            let lock = <$ty>::new();
            assert!(lock.try_lock());
            assert!(lock.is_locked());
            assert!(!lock.try_lock(), "a non-recursive lock was taken twice");
            lock.unlock();
            assert!(!lock.is_locked());
            assert!(lock.try_lock());
            lock.unlock();
        }

        #[test]
        #[should_panic(expected = $unlock_panic)]
        fn unlock_of_unlocked_panics() {
            <$ty>::new().unlock();
        }
    };
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_rw_client_catches_the_busted_rw_lock() {
        let violation = (0..20).find_map(|_| {
            contend_rw::<BustedRwLock>(RwContention {
                readers: 2,
                writers: 2,
                iterations: 50_000,
            })
            .err()
        });
        let violation = violation.expect("the rw client never caught the busted rw lock");
        assert!(violation.counted < violation.expected || violation.overlaps > 0);
    }

    #[test]
    fn the_stress_client_catches_the_busted_lock() {
        // More threads than CPUs, the same client the real locks pass.
        let violation = (0..20)
            .find_map(|_| contend::<BustedLock>(Contention::threads(4).iterations(50_000)).err());
        let violation = violation.expect("the stress client never caught the busted lock");
        assert!(violation.counted < violation.expected || violation.overlaps > 0);
    }
}
