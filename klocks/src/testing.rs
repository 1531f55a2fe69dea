//! The one test client every lock runs under every checker (libvsync's habit):
//! threads take the lock and update data that only the lock protects, then the totals
//! are checked. Unit stress tests, integration tests and the loom models all call
//! [`contend`]; under loom the data is a `loom::cell::UnsafeCell`, so loom also proves
//! that critical sections are ordered by happens-before, not merely disjoint.
//!
//! Not part of klocks' API (hidden from the docs); exported for klocks' own tests.

use crate::sync::{AtomicU32, Ordering::Relaxed};

/// The operations the client needs. Every `lock_api::RawMutex` has them; under loom,
/// where locks cannot be `const`-constructed, the locks implement it directly.
pub trait TestLock: Send + Sync + 'static {
    /// An unlocked lock.
    fn new_unlocked() -> Self;
    /// Acquire.
    fn acquire(&self);
    /// Release; the caller holds the lock.
    fn release(&self);
}

#[cfg(not(loom))]
impl<L: lock_api::RawMutex + Send + Sync + 'static> TestLock for L {
    fn new_unlocked() -> Self {
        L::INIT
    }
    fn acquire(&self) {
        self.lock();
    }
    fn release(&self) {
        // SAFETY: the client releases only what it acquired on the same thread.
        unsafe { self.unlock() }
    }
}

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

/// The negative control (the kernel's `lock_busted`): a test-and-set lock whose
/// test and set are two separate steps, so two threads can both see it free.
/// Every stress test and loom model must be able to catch it.
#[derive(Debug)]
pub struct BustedLock(AtomicU32);

impl BustedLock {
    /// An unlocked busted lock.
    pub fn new() -> Self {
        Self(AtomicU32::new(0))
    }
}

#[cfg(not(loom))]
// SAFETY: none; this lock is broken on purpose and exists only to be caught.
unsafe impl lock_api::RawMutex for BustedLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self(AtomicU32::new(0));
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        while self.0.load(crate::sync::Ordering::Acquire) != 0 {
            crate::sync::cpu_relax();
        }
        widen_the_race();
        self.0.store(1, Relaxed);
    }

    fn try_lock(&self) -> bool {
        false
    }

    unsafe fn unlock(&self) {
        self.0.store(0, crate::sync::Ordering::Release);
    }
}

/// The negative control of handlers that take the lock their own thread waits for:
/// a futex mutex whose one spinner is relied on to pass the sleepers' wake on (its
/// unlock wakes nobody while `SPINNING` is set), as the default mutex's spinner is,
/// but which does not record the role. A signal handler that interrupts the spinner
/// and locks the same mutex sleeps behind its own thread, and so does every later
/// sleeper while the flag stands: `lockbench torture --signals same` must catch it.
/// It excludes correctly otherwise.
#[cfg(not(loom))]
pub struct BustedDelegation(AtomicU32);

#[cfg(not(loom))]
impl BustedDelegation {
    const LOCKED: u32 = 1;
    const SPINNING: u32 = 2;
    const WAITERS: u32 = 4;

    /// An unlocked lock.
    pub const fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    fn lock_slow(&self) {
        let mut slept = false;
        loop {
            // Relaxed: picks the transition; the cmpxchg below is the Acquire.
            let val = self.0.load(Relaxed);
            if val & Self::LOCKED == 0 {
                let waiters = if slept { Self::WAITERS } else { 0 };
                // Acquire: pairs with the Release in `unlock`.
                if self
                    .0
                    .compare_exchange(
                        val,
                        val | Self::LOCKED | waiters,
                        crate::sync::Ordering::Acquire,
                        Relaxed,
                    )
                    .is_ok()
                {
                    return;
                }
                continue;
            }
            // Become the spinner (Relaxed: the flag protects no data) and spin for
            // ~50 µs; the take inside clears the flag.
            if val & Self::SPINNING == 0
                && self
                    .0
                    .compare_exchange(val, val | Self::SPINNING, Relaxed, Relaxed)
                    .is_ok()
            {
                for _ in 0..2_000 {
                    let now = self.0.load(Relaxed);
                    let waiters = if slept { Self::WAITERS } else { 0 };
                    let new = ((now | waiters) & !Self::SPINNING) | Self::LOCKED;
                    // Acquire: as above.
                    if now & Self::LOCKED == 0
                        && self
                            .0
                            .compare_exchange(now, new, crate::sync::Ordering::Acquire, Relaxed)
                            .is_ok()
                    {
                        return;
                    }
                    std::hint::spin_loop();
                }
                // Relaxed: as above.
                self.0.fetch_and(!Self::SPINNING, Relaxed);
                continue;
            }
            // Sleep on a held lock (Relaxed: the unlock reads WAITERS by its RMW).
            if val & Self::WAITERS == 0
                && self
                    .0
                    .compare_exchange(val, val | Self::WAITERS, Relaxed, Relaxed)
                    .is_err()
            {
                continue;
            }
            crate::park::wait(&self.0, val | Self::WAITERS);
            slept = true;
        }
    }
}

#[cfg(not(loom))]
impl Default for BustedDelegation {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(not(loom))]
// SAFETY: it excludes (one cmpxchg sets LOCKED on a word without it, and only the
// holder clears it); what is broken is a wake left to a spinner that cannot run.
unsafe impl lock_api::RawMutex for BustedDelegation {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        // Acquire: pairs with the Release in `unlock`.
        if self
            .0
            .compare_exchange(0, Self::LOCKED, crate::sync::Ordering::Acquire, Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
    }

    fn try_lock(&self) -> bool {
        // Acquire: as in `lock`.
        self.0
            .fetch_update(crate::sync::Ordering::Acquire, Relaxed, |val| {
                (val & Self::LOCKED == 0).then_some(val | Self::LOCKED)
            })
            .is_ok()
    }

    unsafe fn unlock(&self) {
        // Release: pairs with the Acquire of the next acquisition. While a spinner
        // spins, the sleepers' wake is left to it: the delegation under test.
        let before = self
            .0
            .fetch_update(crate::sync::Ordering::Release, Relaxed, |val| {
                Some(match val & (Self::SPINNING | Self::WAITERS) {
                    Self::WAITERS => 0,
                    flags => flags,
                })
            })
            .unwrap_or_else(|val| val);
        if before & (Self::SPINNING | Self::WAITERS) == Self::WAITERS {
            crate::park::wake_one_at(&self.0);
        }
    }
}

/// The busted lock's window between "saw it free" and "took it": wide enough (~1.5 µs)
/// that a preemption tick lands in it even when the scheduler packs every contending
/// thread onto one CPU (then only a preemption there lets two threads in).
#[cfg(not(loom))]
fn widen_the_race() {
    for _ in 0..64 {
        std::hint::spin_loop();
    }
}

#[cfg(loom)]
impl TestLock for BustedLock {
    fn new_unlocked() -> Self {
        Self::new()
    }
    fn acquire(&self) {
        while self.0.load(crate::sync::Ordering::Acquire) != 0 {
            crate::sync::cpu_relax();
        }
        self.0.store(1, Relaxed);
    }
    fn release(&self) {
        self.0.store(0, crate::sync::Ordering::Release);
    }
}

impl Default for BustedLock {
    fn default() -> Self {
        Self::new()
    }
}

/// The reader-writer client's operations; every `lock_api::RawRwLock` has them.
pub trait TestRwLock: Send + Sync + 'static {
    /// An unlocked lock.
    fn new_unlocked() -> Self;
    /// Take a read lock.
    fn read(&self);
    /// Release a read lock this thread holds.
    fn read_done(&self);
    /// Take the write lock.
    fn write(&self);
    /// Release the write lock this thread holds.
    fn write_done(&self);
}

#[cfg(not(loom))]
impl<L: lock_api::RawRwLock + Send + Sync + 'static> TestRwLock for L {
    fn new_unlocked() -> Self {
        L::INIT
    }
    fn read(&self) {
        self.lock_shared();
    }
    fn read_done(&self) {
        // SAFETY: the client releases only what it acquired on the same thread.
        unsafe { self.unlock_shared() }
    }
    fn write(&self) {
        self.lock_exclusive();
    }
    fn write_done(&self) {
        // SAFETY: as above.
        unsafe { self.unlock_exclusive() }
    }
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

/// The reader-writer negative control: writers take a [`BustedLock`], readers take
/// nothing at all.
#[derive(Debug, Default)]
pub struct BustedRwLock(BustedLock);

#[cfg(not(loom))]
// SAFETY: none; broken on purpose, to be caught.
unsafe impl lock_api::RawRwLock for BustedRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self(<BustedLock as lock_api::RawMutex>::INIT);
    type GuardMarker = lock_api::GuardSend;

    fn lock_shared(&self) {}
    fn try_lock_shared(&self) -> bool {
        true
    }
    unsafe fn unlock_shared(&self) {}
    fn lock_exclusive(&self) {
        lock_api::RawMutex::lock(&self.0);
    }
    fn try_lock_exclusive(&self) -> bool {
        false
    }
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: passes the caller's promise on.
        unsafe { lock_api::RawMutex::unlock(&self.0) }
    }
}

#[cfg(loom)]
impl TestRwLock for BustedRwLock {
    fn new_unlocked() -> Self {
        Self(BustedLock::new())
    }
    fn read(&self) {}
    fn read_done(&self) {}
    fn write(&self) {
        self.0.acquire();
    }
    fn write_done(&self) {
        self.0.release();
    }
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

/// Explore every interleaving up to the preemption bound (`LOOM_MAX_PREEMPTIONS`;
/// default 3 for two threads; 1 for three, because each spin iteration is a branch
/// and a bound of 2 already takes longer than CI allows), with every reordering the
/// memory model allows, of `threads` threads each taking the lock `iterations` times.
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

/// Set in a child process of [`isolated`]: run the scenario instead of spawning it.
#[cfg(all(test, not(loom)))]
const ISOLATED_CHILD: &str = "KLOCKS_ISOLATED_TEST_CHILD";

/// Runs `scenario` in a child process that runs only the unit test `test` (its path in
/// the crate, e.g. `fault::tests::name`), for tests that change process-wide state
/// (spin budgets, signal handlers, leaked slots, the perf budget) or that may crash;
/// returns the child's exit status (`None` in the child itself, after running the
/// scenario). A child that exits 0 must have run exactly that one test.
#[cfg(all(test, not(loom)))]
pub(crate) fn isolated(test: &str, scenario: impl FnOnce()) -> Option<std::process::ExitStatus> {
    if std::env::var_os(ISOLATED_CHILD).is_some() {
        scenario();
        return None;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ISOLATED_CHILD, "1")
        .output()
        .expect("the child test process starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        assert!(
            stdout.contains("1 passed"),
            "the child ran no test {test}: {stdout}"
        );
    }
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    Some(out.status)
}

/// [`isolated`], requiring the child to pass: `true` in the child (run the test's
/// body), `false` in the parent once the child passed (`if !alone(..) { return; }`).
#[cfg(all(test, not(loom)))]
pub(crate) fn alone(test: &str) -> bool {
    match isolated(test, || {}) {
        None => true,
        Some(status) => {
            assert!(status.success(), "{test} in its own process: {status:?}");
            false
        }
    }
}

/// The scheduler state of thread `tid` of this process (`R`, `S`, ...), from
/// `/proc/self/task/<tid>/stat`; `None` once the thread is gone.
#[cfg(all(test, not(loom)))]
pub(crate) fn thread_state(tid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // "tid (comm) S ...": the state follows the last ')'.
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
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
