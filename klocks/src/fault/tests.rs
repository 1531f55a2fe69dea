//! "Destroy right after the last unlock", for every lock kind.
//!
//! POSIX lets the thread that takes a mutex next unlock, destroy and free it at once,
//! while the thread that released it to it may still be inside `unlock` (glibc bug
//! 13690's class); so an unlock must not touch the lock after its releasing operation
//! (a futex wake, which only hashes the address, excepted). Each test puts the lock
//! alone in an `mmap`ed page; an owner holds it while waiters queue, spin or sleep;
//! the owner's unlock is stalled at every [`after_release`](super::after_release)
//! point; whenever the waiters all finish while it is stalled there, the page is made
//! inaccessible before the owner goes on. A late access then faults.
//!
//! A fault kills the process, so each test runs its scenario in a child process (this
//! test binary, re-run for that one test) and checks how the child ended. The
//! negative control, a lock that reads its word after releasing it, must die of
//! `SIGSEGV`.

use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::*};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use lock_api::{RawMutex, RawRwLock};

use super::hook;
use crate::reader_spin::{Adaptive, Always, Never};
use crate::{
    FutexMutex, PvQSpinLock, PvTicketLock, QSpinLock, QSpinLockCmpxchgHandoff, RwSem,
    SpinFutexMutex, TicketLock,
};

/// Runs `scenario` in a child process running only this module's test `name`.
fn isolated(name: &str, scenario: impl FnOnce()) -> Option<std::process::ExitStatus> {
    crate::testing::isolated(&format!("fault::tests::{name}"), scenario)
}

/// Runs the scenario isolated and requires the child to pass.
fn survives(name: &str, scenario: impl FnOnce()) {
    if let Some(status) = isolated(name, scenario) {
        assert!(
            status.success(),
            "{name}: the child ended with {status:?}{}",
            match status.signal() {
                Some(libc::SIGSEGV) => " (SIGSEGV: an unlock touched the lock after releasing it)",
                _ => "",
            }
        );
    }
}

/// A page of its own for one lock.
struct Page(*mut u8);

impl Page {
    const SIZE: usize = 4096;

    fn new() -> Self {
        // SAFETY: a fresh private anonymous mapping; it aliases nothing.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(at, libc::MAP_FAILED, "mmap");
        Page(at.cast())
    }

    /// Moves `lock` to the start of the page. The reference lives as long as the
    /// test keeps the page mapped (every thread using it is joined before that).
    fn place<L>(&self, lock: L) -> &'static L {
        // SAFETY: the page is writable, page-aligned and larger than any lock.
        unsafe {
            self.0.cast::<L>().write(lock);
            &*self.0.cast::<L>()
        }
    }

    /// From here any access to the page faults.
    fn protect(&self) {
        // SAFETY: our own mapping.
        let rc = unsafe { libc::mprotect(self.0.cast(), Self::SIZE, libc::PROT_NONE) };
        assert_eq!(rc, 0, "mprotect");
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: our own mapping; nothing uses it any more.
        unsafe { libc::munmap(self.0.cast(), Self::SIZE) };
    }
}

// SAFETY: the page is only a place; the lock in it synchronises its users.
unsafe impl Sync for Page {}

/// How the owner holds the lock while the waiters arrive.
#[derive(Clone, Copy, Debug)]
enum Hold {
    /// Busy on its CPU: spinners keep spinning on it.
    Running,
    /// Asleep: spinners give up and sleep.
    Sleeping,
}

/// One waiter's part: take the lock (the way the scenario says) and release it.
type Waiter<L> = fn(&L);

/// The owner takes the lock with `take`, `waiters` threads arrive and wait in their
/// `enter`, the owner releases with `release`, stalled at every release point; the
/// page is protected as soon as the waiters are all done while the owner is stalled.
/// Returns whether that happened (the scenario exercised a late-access window).
fn unlock_then_protect<L: Sync + 'static>(
    lock: L,
    take: fn(&L),
    release: fn(&L),
    waiters: &[Waiter<L>],
    hold: Hold,
) -> bool {
    let page = Page::new();
    let lock = page.place(lock);

    let (held_tx, held_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (fired_tx, fired_rx) = mpsc::channel::<()>();
    let (resume_tx, resume_rx) = mpsc::channel::<()>();
    let owner_done = Arc::new(AtomicBool::new(false));
    // The owner takes and releases on a thread of its own (some kinds name their
    // holder), so the test can watch it stall.
    let owner = {
        let owner_done = Arc::clone(&owner_done);
        thread::spawn(move || {
            take(lock);
            held_tx.send(()).expect("the test waits");
            go_rx.recv().expect("the test goes on");
            // Let the waiters reach their slow paths: spinning on a running owner, or
            // asleep.
            let settle = Instant::now() + Duration::from_millis(30);
            while Instant::now() < settle {
                match hold {
                    Hold::Running => std::hint::spin_loop(),
                    Hold::Sleeping => thread::sleep(Duration::from_millis(5)),
                }
            }
            hook::with(
                hook::Point::AfterRelease,
                move || {
                    let _ = fired_tx.send(());
                    let _ = resume_rx.recv();
                },
                || release(lock),
            );
            owner_done.store(true, SeqCst);
        })
    };
    held_rx.recv().expect("the owner takes the lock");

    let done = Arc::new(AtomicU32::new(0));
    let arrived = Arc::new(Barrier::new(waiters.len() + 1));
    let workers: Vec<_> = waiters
        .iter()
        .map(|&enter| {
            let (done, arrived) = (Arc::clone(&done), Arc::clone(&arrived));
            thread::spawn(move || {
                arrived.wait();
                enter(lock);
                done.fetch_add(1, SeqCst);
            })
        })
        .collect();
    arrived.wait();
    go_tx.send(()).expect("the owner waits");

    let all = waiters.len() as u32;
    let mut protected = false;
    loop {
        match fired_rx.recv_timeout(Duration::from_millis(10)) {
            Ok(()) => {
                if !protected {
                    let deadline = Instant::now() + Duration::from_millis(300);
                    while done.load(SeqCst) < all && Instant::now() < deadline {
                        thread::sleep(Duration::from_millis(1));
                    }
                    if done.load(SeqCst) == all {
                        page.protect();
                        protected = true;
                    }
                }
                resume_tx.send(()).expect("the owner waits at its hook");
            }
            Err(_) if owner_done.load(SeqCst) => break,
            Err(_) => {}
        }
    }
    owner.join().expect("the owner's unlock");
    for worker in workers {
        worker.join().expect("a waiter");
    }
    // The page stays mapped until every thread is joined, protected or not.
    drop(page);
    protected
}

/// Every variant of the scenario for a mutex: 1-3 waiters, the owner running or
/// asleep. Requires that at least one variant protected the page mid-unlock.
fn mutex_scenarios<L: RawMutex + Sync + 'static>() {
    fn take<L: RawMutex>(lock: &L) {
        lock.lock();
    }
    fn release<L: RawMutex>(lock: &L) {
        // SAFETY: the scenario releases what `take` took.
        unsafe { lock.unlock() };
    }
    fn enter<L: RawMutex>(lock: &L) {
        lock.lock();
        // SAFETY: taken just above.
        unsafe { lock.unlock() };
    }
    /// A newcomer that takes the lock the moment it is free, needing no wake-up.
    fn barge<L: RawMutex>(lock: &L) {
        while !lock.try_lock() {
            std::hint::spin_loop();
        }
        // SAFETY: taken just above.
        unsafe { lock.unlock() };
    }
    let (queued, barging) = (enter::<L> as Waiter<L>, barge::<L> as Waiter<L>);
    let mut exercised = 0;
    for hold in [Hold::Running, Hold::Sleeping] {
        for waiters in [
            vec![barging],
            vec![queued],
            vec![queued, barging],
            vec![queued, queued],
            vec![queued, queued, barging],
        ] {
            for _round in 0..2 {
                if unlock_then_protect(L::INIT, take::<L>, release::<L>, &waiters, hold) {
                    exercised += 1;
                }
            }
        }
    }
    assert!(
        exercised > 0,
        "no variant let the waiters finish mid-unlock"
    );
}

/// Every variant for an rwsem: the owner write-holds with readers and a writer
/// waiting, or read-holds with a writer and a reader waiting.
fn rwsem_scenarios<L: RawRwLock + Sync + 'static>() {
    fn write<L: RawRwLock>(lock: &L) {
        lock.lock_exclusive();
    }
    fn write_release<L: RawRwLock>(lock: &L) {
        // SAFETY: the scenario releases what `write` took.
        unsafe { lock.unlock_exclusive() };
    }
    fn read<L: RawRwLock>(lock: &L) {
        lock.lock_shared();
    }
    fn read_release<L: RawRwLock>(lock: &L) {
        // SAFETY: the scenario releases what `read` took.
        unsafe { lock.unlock_shared() };
    }
    fn enter_write<L: RawRwLock>(lock: &L) {
        write(lock);
        write_release(lock);
    }
    fn enter_read<L: RawRwLock>(lock: &L) {
        read(lock);
        read_release(lock);
    }
    fn barge_write<L: RawRwLock>(lock: &L) {
        while !lock.try_lock_exclusive() {
            std::hint::spin_loop();
        }
        write_release(lock);
    }
    fn barge_read<L: RawRwLock>(lock: &L) {
        while !lock.try_lock_shared() {
            std::hint::spin_loop();
        }
        read_release(lock);
    }
    let writer = enter_write::<L> as Waiter<L>;
    let reader = enter_read::<L> as Waiter<L>;
    let (barging_writer, barging_reader) =
        (barge_write::<L> as Waiter<L>, barge_read::<L> as Waiter<L>);
    let mut exercised = 0;
    for hold in [Hold::Running, Hold::Sleeping] {
        for waiters in [
            vec![barging_writer],
            vec![barging_reader],
            vec![reader],
            vec![writer],
            vec![reader, reader, writer],
            vec![writer, reader, barging_writer],
        ] {
            for _round in 0..2 {
                for (take, release) in [
                    (write::<L> as fn(&L), write_release::<L> as fn(&L)),
                    (read::<L>, read_release::<L>),
                ] {
                    if unlock_then_protect(L::INIT, take, release, &waiters, hold) {
                        exercised += 1;
                    }
                }
            }
        }
    }
    assert!(
        exercised > 0,
        "no variant let the waiters finish mid-unlock"
    );
}

/// Waiters that spin: a long spin budget, so that they still spin when the owner
/// releases (each test runs in its own process).
fn spin_long() {
    SpinFutexMutex::set_spin_ns(crate::budget::MAX_SPIN_NS);
    PvQSpinLock::set_spin_ns(crate::budget::MAX_SPIN_NS);
    PvTicketLock::set_spin_ns(crate::budget::MAX_SPIN_NS);
    RwSem::<Adaptive>::set_spin_ns(crate::budget::MAX_SPIN_NS);
}

/// Declares one isolated test per lock type.
macro_rules! untouched_after_release {
    ($($name:ident => $scenario:expr;)*) => {$(
        #[test]
        fn $name() {
            survives(stringify!($name), || {
                $scenario;
                spin_long();
                $scenario;
            });
        }
    )*};
}

untouched_after_release! {
    raw_mutex => mutex_scenarios::<crate::RawMutex>();
    spin_futex_mutex => mutex_scenarios::<SpinFutexMutex>();
    futex_mutex => mutex_scenarios::<FutexMutex>();
    pv_qspinlock => mutex_scenarios::<PvQSpinLock>();
    pv_ticket_lock => mutex_scenarios::<PvTicketLock>();
    qspinlock => mutex_scenarios::<QSpinLock>();
    qspinlock_cmpxchg_handoff => mutex_scenarios::<QSpinLockCmpxchgHandoff>();
    ticket_lock => mutex_scenarios::<TicketLock>();
    raw_rwlock => rwsem_scenarios::<crate::RawRwLock>();
    rwsem_adaptive => rwsem_scenarios::<RwSem<Adaptive>>();
    rwsem_always => rwsem_scenarios::<RwSem<Always>>();
    rwsem_never => rwsem_scenarios::<RwSem<Never>>();
}

/// The negative control: a lock whose unlock reads its word after releasing it.
struct TouchesAfterRelease(AtomicU32);

// SAFETY: a test spinlock: 0 -> 1 by cmpxchg, back to 0 by its holder.
unsafe impl RawMutex for TouchesAfterRelease {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self(AtomicU32::new(0));
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        while !self.try_lock() {
            std::hint::spin_loop();
        }
    }

    fn try_lock(&self) -> bool {
        self.0.compare_exchange(0, 1, Acquire, Relaxed).is_ok()
    }

    unsafe fn unlock(&self) {
        self.0.store(0, Release);
        super::after_release();
        // The bug: a look at the word after the release.
        std::hint::black_box(self.0.load(Relaxed));
    }
}

#[test]
fn a_late_access_is_caught() {
    if let Some(status) = isolated(
        "a_late_access_is_caught",
        mutex_scenarios::<TouchesAfterRelease>,
    ) {
        assert_eq!(
            status.signal(),
            Some(libc::SIGSEGV),
            "the busted lock's late read went unnoticed: {status:?}"
        );
    }
}

/// Signals, for every kind: threads contend on lock A while signals land on them at
/// random moments (queued, spinning, sleeping, holding A); the handler takes lock B,
/// another lock of the same kind, and updates data only B protects. Both locks' data
/// must come out exact, and every thread must finish (no livelock or deadlock from a
/// handler nested in a lock operation).
mod signals {
    use super::*;
    use std::sync::atomic::AtomicPtr;

    /// Lock B and its data, for the handler (a leaked box per run).
    struct Shared<L> {
        lock: L,
        count: std::cell::UnsafeCell<u64>,
    }

    // SAFETY: the count is only touched under the lock beside it.
    unsafe impl<L: Sync> Sync for Shared<L> {}

    static SHARED: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
    static BODY: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
    static HANDLED: AtomicU32 = AtomicU32::new(0);

    fn take_b<L: RawMutex>() {
        // SAFETY: the run installs `SHARED` (a leaked `Shared<L>`) before any signal.
        let shared = unsafe { &*SHARED.load(SeqCst).cast::<Shared<L>>() };
        shared.lock.lock();
        // SAFETY: B excludes every other access to its count.
        unsafe { *shared.count.get() += 1 };
        // SAFETY: taken just above.
        unsafe { shared.lock.unlock() };
        HANDLED.fetch_add(1, SeqCst);
    }

    extern "C" fn handler(_: libc::c_int) {
        let body = BODY.load(SeqCst);
        if !body.is_null() {
            // SAFETY: `BODY` holds a `fn()` stored by `storm`.
            let body: fn() = unsafe { std::mem::transmute(body) };
            body();
        }
    }

    /// The storm for lock kind `L`: `threads` threads take lock A `iterations` times
    /// each.
    pub(super) fn storm<L: RawMutex + Sync + 'static>(threads: usize, iterations: u64) {
        HANDLED.store(0, SeqCst);
        let b: &'static Shared<L> = Box::leak(Box::new(Shared {
            lock: L::INIT,
            count: std::cell::UnsafeCell::new(0),
        }));
        SHARED.store(std::ptr::from_ref(b).cast_mut().cast(), SeqCst);
        BODY.store(take_b::<L> as fn() as *mut (), SeqCst);
        // SAFETY: a handler for SIGURG (ignored by default, unused by the test harness)
        // that only touches statics and lock B.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut());
        }
        let a: &'static Shared<L> = Box::leak(Box::new(Shared {
            lock: L::INIT,
            count: std::cell::UnsafeCell::new(0),
        }));
        let done = Arc::new(AtomicU32::new(0));
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let done = Arc::clone(&done);
                thread::spawn(move || {
                    for i in 0..iterations {
                        a.lock.lock();
                        // SAFETY: A excludes every other access to its count.
                        unsafe { *a.count.get() += 1 };
                        if i % 64 == 0 {
                            thread::yield_now();
                        }
                        // SAFETY: taken just above.
                        unsafe { a.lock.unlock() };
                    }
                    done.fetch_add(1, SeqCst);
                })
            })
            .collect();
        use std::os::unix::thread::JoinHandleExt;
        let targets: Vec<_> = workers.iter().map(|w| w.as_pthread_t()).collect();
        let mut sent = 0u32;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seed = 0x9E37_79B9_u32;
        while done.load(SeqCst) < threads as u32 {
            assert!(
                Instant::now() < deadline,
                "a storm run did not finish in 60 s"
            );
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let target = targets[seed as usize % threads];
            // SAFETY: the thread is alive until `done` counts it; a signal to one that
            // just finished its loop is harmless (it is still joinable).
            unsafe { libc::pthread_kill(target, libc::SIGURG) };
            sent += 1;
            thread::sleep(Duration::from_micros(200));
        }
        workers.into_iter().for_each(|w| w.join().unwrap());
        BODY.store(std::ptr::null_mut(), SeqCst);
        // SAFETY: every thread that touched the counts has been joined.
        let (count_a, count_b) = unsafe { (*a.count.get(), *b.count.get()) };
        assert_eq!(count_a, threads as u64 * iterations, "lock A lost updates");
        let handled = u64::from(HANDLED.load(SeqCst));
        assert_eq!(count_b, handled, "lock B lost updates");
        assert!(
            handled > 0 && sent > 0,
            "no signal was handled ({sent} sent)"
        );
    }
}

/// One isolated storm test per lock type: `threads` threads × `iterations` each.
macro_rules! signal_storms {
    ($($name:ident => $lock:ty, $threads:expr, $iterations:expr;)*) => {$(
        #[test]
        fn $name() {
            survives(stringify!($name), || signals::storm::<$lock>($threads, $iterations));
        }
    )*};
}

// The locks that sleep or yield: 6 threads on any number of CPUs.
signal_storms! {
    signals_raw_mutex => crate::RawMutex, 6, 100_000;
    signals_spin_futex_mutex => SpinFutexMutex, 6, 100_000;
    signals_futex_mutex => FutexMutex, 6, 100_000;
    signals_pv_qspinlock => PvQSpinLock, 6, 100_000;
    signals_pv_ticket_lock => PvTicketLock, 6, 100_000;
}

// The pure spinlocks: 2 threads (more would wait on preempted queue heads, the
// documented collapse, not a signal problem). A handler that interrupts a thread
// queued on A finds its queue node busy and takes B by the slot-less path.
signal_storms! {
    signals_qspinlock => QSpinLock, 2, 50_000;
    signals_qspinlock_cmpxchg_handoff => QSpinLockCmpxchgHandoff, 2, 50_000;
    signals_ticket_lock => TicketLock, 2, 50_000;
}

/// The storm's negative control: a "lock" that excludes nobody loses updates to A.
#[test]
fn signals_catch_a_lock_that_excludes_nobody() {
    let status = isolated("signals_catch_a_lock_that_excludes_nobody", || {
        // Several storms: whether two threads overlap is up to the scheduler.
        for _ in 0..5 {
            signals::storm::<crate::testing::BustedLock>(6, 100_000);
        }
    });
    if let Some(status) = status {
        assert!(
            !status.success(),
            "the storm passed a lock that excludes nobody"
        );
    }
}

/// Misuse in the middle of a protocol, for every kind: while an owner holds the lock
/// and waiters are queued, spinning or asleep behind it, each misuse the kind detects
/// (an unlock by a thread that does not hold it, a relock by the owner, an unlock of
/// a lock nobody holds) must panic *before* changing any word: the owner still holds
/// the lock, and after its unlock every waiter gets the lock in turn, none hangs and
/// none enters early. Kinds that do not record their owner cannot tell a foreign
/// unlock from the owner's; for them only the unlock of a free lock is checked.
mod misuse {
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// A lock's operations, for mutexes and for an rwlock's write side.
    pub(super) struct Ops<L> {
        pub take: fn(&L),
        pub try_take: fn(&L) -> bool,
        pub release: fn(&L),
    }

    /// What the kind detects: misuses run by a thread that does not hold the lock
    /// while it is held, and by the owner.
    pub(super) struct Detects<L> {
        pub foreign: Vec<fn(&L)>,
        pub owner: Vec<fn(&L)>,
    }

    fn panics(misuse: impl FnOnce()) -> bool {
        catch_unwind(AssertUnwindSafe(misuse)).is_err()
    }

    /// The scenario: 3 waiters behind an owner, then every detected misuse.
    pub(super) fn mid_protocol<L: Sync>(lock: &L, ops: &Ops<L>, detects: &Detects<L>) {
        const WAITERS: u32 = 3;
        assert!(
            panics(|| (ops.release)(lock)),
            "an unlock of a free lock did not panic"
        );
        let entered = AtomicU32::new(0);
        thread::scope(|s| {
            (ops.take)(lock);
            for _ in 0..WAITERS {
                s.spawn(|| {
                    (ops.take)(lock);
                    entered.fetch_add(1, SeqCst);
                    (ops.release)(lock);
                });
            }
            // Long enough for the waiters to queue, spin out their budget and sleep.
            thread::sleep(Duration::from_millis(30));
            for misuse in &detects.foreign {
                let caught = s.spawn(|| panics(|| misuse(lock))).join().unwrap();
                assert!(caught, "a misuse by another thread did not panic");
            }
            for misuse in &detects.owner {
                assert!(
                    panics(|| misuse(lock)),
                    "a misuse by the owner did not panic"
                );
            }
            assert_eq!(entered.load(SeqCst), 0, "a waiter entered a held lock");
            (ops.release)(lock);
        });
        assert_eq!(entered.load(SeqCst), WAITERS, "a waiter never entered");
        assert!((ops.try_take)(lock), "the lock stayed taken");
        (ops.release)(lock);
        assert!(
            panics(|| (ops.release)(lock)),
            "an unlock of a free lock did not panic"
        );
    }

    pub(super) fn mutex_ops<L: RawMutex>() -> Ops<L> {
        Ops {
            take: |l| l.lock(),
            try_take: |l| l.try_lock(),
            // SAFETY: a test of misuse: a lock that is not held must panic, untouched.
            release: |l| unsafe { l.unlock() },
        }
    }

    pub(super) fn write_ops<L: RawRwLock>() -> Ops<L> {
        Ops {
            take: |l| l.lock_exclusive(),
            try_take: |l| l.try_lock_exclusive(),
            // SAFETY: as in `mutex_ops`.
            release: |l| unsafe { l.unlock_exclusive() },
        }
    }

    /// Owner-recording mutexes: a foreign unlock and a relock by the owner.
    pub(super) fn owned_mutex<L: RawMutex>() -> Detects<L> {
        Detects {
            // SAFETY: as in `mutex_ops`.
            foreign: vec![|l| unsafe { l.unlock() }],
            owner: vec![|l| l.lock()],
        }
    }

    /// Owner-recording rwlocks: a foreign write unlock, a foreign read unlock of the
    /// write-held lock, a write relock and a read lock by the writer.
    pub(super) fn owned_rwlock<L: RawRwLock>() -> Detects<L> {
        Detects {
            // SAFETY: as in `mutex_ops`.
            foreign: vec![|l| unsafe { l.unlock_exclusive() }, |l| unsafe {
                l.unlock_shared()
            }],
            owner: vec![|l| l.lock_exclusive(), |l| l.lock_shared()],
        }
    }

    /// Kinds that do not record their owner.
    pub(super) fn anonymous<L>() -> Detects<L> {
        Detects {
            foreign: Vec::new(),
            owner: Vec::new(),
        }
    }
}

/// Declares one mid-protocol misuse test per lock type.
macro_rules! misuse_mid_protocol {
    ($($name:ident => $lock:ty, $ops:ident, $detects:ident;)*) => {$(
        #[test]
        fn $name() {
            let lock = <$lock>::INIT;
            misuse::mid_protocol(&lock, &misuse::$ops(), &misuse::$detects());
        }
    )*};
}

misuse_mid_protocol! {
    misuse_raw_mutex => crate::RawMutex, mutex_ops, owned_mutex;
    misuse_spin_futex_mutex => SpinFutexMutex, mutex_ops, owned_mutex;
    misuse_futex_mutex => FutexMutex, mutex_ops, anonymous;
    misuse_pv_qspinlock => PvQSpinLock, mutex_ops, anonymous;
    misuse_pv_ticket_lock => PvTicketLock, mutex_ops, anonymous;
    misuse_qspinlock => QSpinLock, mutex_ops, anonymous;
    misuse_ticket_lock => TicketLock, mutex_ops, anonymous;
    misuse_raw_rwlock => crate::RawRwLock, write_ops, owned_rwlock;
    misuse_rwsem_adaptive => RwSem<Adaptive>, write_ops, owned_rwlock;
    misuse_rwsem_never => RwSem<Never>, write_ops, owned_rwlock;
}

/// Whether the calling thread was observable to the owner probe at its unlock's
/// release point and right after the unlock: the owner takes `lock`, a waiter arrives
/// and spins, then sleeps, on it, and the owner, a thread that never unlocked with
/// waiters before, unlocks.
fn registered_at_release_and_after<L: Send + Sync + 'static>(
    lock: L,
    take: fn(&L),
    release: fn(&L),
) -> (bool, bool) {
    let lock = Arc::new(lock);
    thread::spawn(move || {
        take(&lock);
        let waiter_tid = Arc::new(AtomicU32::new(0));
        let waiter = thread::spawn({
            let (lock, waiter_tid) = (Arc::clone(&lock), Arc::clone(&waiter_tid));
            move || {
                waiter_tid.store(crate::owner::current_tid(), SeqCst);
                take(&lock);
                release(&lock);
            }
        });
        // The waiter is waiting: asleep on the lock (a loaded machine may start it
        // late, or keep it from running until its spin is over). The owner sleeps, so
        // the waiter's probe sees it off its CPU and the waiter does not spin long.
        let asleep = || {
            let tid = waiter_tid.load(SeqCst);
            tid != 0 && crate::testing::thread_state(tid) == Some('S')
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !asleep() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(1));
        }
        let at_release = Arc::new(AtomicBool::new(true));
        let seen = Arc::clone(&at_release);
        hook::with(
            hook::Point::AfterRelease,
            move || seen.store(crate::owner::current_is_watched(), SeqCst),
            || release(&lock),
        );
        let after = crate::owner::current_is_watched();
        waiter.join().expect("the waiter");
        (at_release.load(SeqCst), after)
    })
    .join()
    .expect("the owner")
}

/// An owner whose unlock finds waiters makes itself observable to their owner probe
/// (with the perf probe, a `perf_event_open` the first time, which can sleep for
/// milliseconds) only after its release, never while they wait for it. (`RwSem`
/// registers only when its unlock finds a spinner, which a sleeping waiter is not;
/// it registers after its release too.)
#[test]
fn an_owner_registers_with_the_probe_after_its_release() {
    if crate::owner::probe_kind() != crate::owner::ProbeKind::PerfSwitch {
        eprintln!("skipping: the owner probe is not perf here");
        return;
    }
    // A child of its own: the registrations of the other tests' threads must not take
    // the probe's places (`MAX_WATCHED_THREADS`).
    survives(
        "an_owner_registers_with_the_probe_after_its_release",
        || {
            // The waiter must be waiting when the owner unlocks, which a loaded
            // machine can deny one attempt; never registered at the release, in any.
            const ATTEMPTS: usize = 5;
            let check = |name: &str, attempt: &dyn Fn() -> (bool, bool)| {
                let seen: Vec<(bool, bool)> = (0..ATTEMPTS).map(|_| attempt()).collect();
                assert!(
                    seen.iter().all(|&(at_release, _)| !at_release),
                    "{name}: observable at the release: {seen:?}"
                );
                assert!(
                    seen.iter().any(|&(_, after)| after),
                    "{name}: never observable after the unlock: {seen:?}"
                );
            };
            check("RawMutex", &|| {
                registered_at_release_and_after(
                    crate::RawMutex::new(),
                    |l| l.lock(),
                    |l| l.unlock(),
                )
            });
            check("SpinFutexMutex", &|| {
                registered_at_release_and_after(SpinFutexMutex::new(), |l| l.lock(), |l| l.unlock())
            });
            check("RawRwLock", &|| {
                registered_at_release_and_after(
                    crate::RawRwLock::new(),
                    |l| l.lock_exclusive(),
                    |l| l.unlock_exclusive(),
                )
            });
        },
    );
}
