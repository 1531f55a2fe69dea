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

    /// The storm for lock kind `L`.
    pub(super) fn storm<L: RawMutex + Sync + 'static>() {
        const THREADS: usize = 6;
        const ITERATIONS: u64 = 100_000;
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
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                let done = Arc::clone(&done);
                thread::spawn(move || {
                    for i in 0..ITERATIONS {
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
        while done.load(SeqCst) < THREADS as u32 {
            assert!(
                Instant::now() < deadline,
                "a storm run did not finish in 60 s"
            );
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let target = targets[seed as usize % THREADS];
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
        assert_eq!(count_a, THREADS as u64 * ITERATIONS, "lock A lost updates");
        let handled = u64::from(HANDLED.load(SeqCst));
        assert_eq!(count_b, handled, "lock B lost updates");
        assert!(
            handled > 0 && sent > 0,
            "no signal was handled ({sent} sent)"
        );
    }
}

macro_rules! signal_storms {
    ($($name:ident => $lock:ty;)*) => {$(
        #[test]
        fn $name() {
            survives(stringify!($name), signals::storm::<$lock>);
        }
    )*};
}

signal_storms! {
    signals_raw_mutex => crate::RawMutex;
    signals_spin_futex_mutex => SpinFutexMutex;
    signals_futex_mutex => FutexMutex;
    signals_pv_qspinlock => PvQSpinLock;
    signals_pv_ticket_lock => PvTicketLock;
}
