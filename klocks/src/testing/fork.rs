//! Fork with a lock in a given state while other threads wait on it, and check what
//! the child can do with it (unit tests in a process of their own: the waiters are
//! parked in a `SIGURG` handler that blocks on a pipe, so the word keeps their
//! traces, pending bits, queue tails, sleepers, reservations, while they cannot act).
//!
//! The child runs under `alarm`: a lock that hangs kills it, reported as
//! [`Child::Hung`].

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

/// The parked threads' pipe: `[read, write]`.
static PARK: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];
static PARKED: AtomicUsize = AtomicUsize::new(0);
/// Waiters take the lock again and again until this is set.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn park(_: libc::c_int) {
    PARKED.fetch_add(1, SeqCst);
    let mut byte = 0u8;
    // SAFETY: reads one byte into a local from the pipe `install_park` made; `read`
    // is async-signal-safe.
    unsafe {
        libc::read(
            PARK[0].load(SeqCst) as i32,
            (&mut byte as *mut u8).cast(),
            1,
        )
    };
}

/// Installs the parking handler (once per test process).
pub(crate) fn install_park() {
    let mut fds = [0; 2];
    // SAFETY: a fresh pipe; the handler touches only statics and `read`.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        PARK[0].store(fds[0] as u32, SeqCst);
        PARK[1].store(fds[1] as u32, SeqCst);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = park as extern "C" fn(libc::c_int) as usize;
        libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut());
    }
}

/// Parks `thread`, a waiter of the lock, and waits until it is in the handler.
pub(crate) fn park_waiter(thread: libc::pthread_t) {
    let before = PARKED.load(SeqCst);
    // SAFETY: the thread is alive: it waits for the lock until `STOP`.
    unsafe { libc::pthread_kill(thread, libc::SIGURG) };
    let deadline = Instant::now() + Duration::from_secs(5);
    while PARKED.load(SeqCst) == before {
        assert!(Instant::now() < deadline, "a waiter never parked");
        std::thread::yield_now();
    }
}

/// What the test forks in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum AtFork {
    /// The lock is free, its waiters parked.
    Free,
    /// The forking thread holds it, its waiters parked.
    HeldByForker,
    /// Another thread holds it, the waiters parked.
    HeldByOther,
}

/// What the child did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Child {
    /// What the state allows: a free lock taken by `lock` (1000 times) and
    /// `try_lock`; the forker's unlocked, then as free; another thread's refused by
    /// `try_lock`.
    Ok,
    /// Killed by its alarm.
    Hung,
    /// A check failed.
    Failed,
}

/// The lock under test, a static, through its operations.
pub(crate) struct ForkOps {
    pub(crate) lock: fn(),
    pub(crate) unlock: fn(),
    pub(crate) try_lock: fn() -> bool,
    /// The raw lock word, for the report.
    pub(crate) word: fn() -> u32,
    /// Runs first in the child: the lock's documented repair, or nothing.
    pub(crate) in_child: fn(),
    /// With the lock held by the caller and `waiters` waiting on it: brings the lock
    /// into the state the test wants, then parks the waiters (`park_waiter`).
    pub(crate) park: fn(&[libc::pthread_t]),
}

/// The default [`ForkOps::park`]: a moment for each waiter to reach its wait
/// (pending, queued, asleep), then park it.
pub(crate) fn park_each(waiters: &[libc::pthread_t]) {
    for &waiter in waiters {
        std::thread::sleep(Duration::from_millis(30));
        park_waiter(waiter);
    }
}

/// Parks `waiters` threads on the lock, makes the state `at`, forks, and returns
/// what the child did and the word at the fork.
pub(crate) fn fork_with_parked_waiters(ops: &ForkOps, waiters: usize, at: AtFork) -> (Child, u32) {
    use std::os::unix::thread::JoinHandleExt;
    PARKED.store(0, SeqCst);
    STOP.store(false, SeqCst);
    let holder = (at == AtFork::HeldByOther).then(|| {
        let (held, wait) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (lock, unlock) = (ops.lock, ops.unlock);
        let thread = std::thread::spawn(move || {
            lock();
            held.send(()).unwrap();
            released.recv().unwrap();
            unlock();
        });
        wait.recv().unwrap();
        (thread, release)
    });
    if holder.is_none() {
        (ops.lock)();
    }
    let threads: Vec<_> = (0..waiters)
        .map(|_| {
            let (lock, unlock) = (ops.lock, ops.unlock);
            std::thread::spawn(move || loop {
                lock();
                unlock();
                if STOP.load(SeqCst) {
                    break;
                }
            })
        })
        .collect();
    let handles: Vec<_> = threads.iter().map(|t| t.as_pthread_t()).collect();
    (ops.park)(&handles);
    if at == AtFork::Free {
        (ops.unlock)();
    }
    std::thread::sleep(Duration::from_millis(5));
    let word = (ops.word)();
    // SAFETY: the child only runs the lock's operations on a static, `alarm`, and
    // `_exit`; its other threads are gone.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: alarm and _exit are async-signal-safe.
        unsafe { libc::alarm(5) };
        (ops.in_child)();
        let ok = match at {
            AtFork::Free | AtFork::HeldByForker => {
                if at == AtFork::HeldByForker {
                    (ops.unlock)();
                }
                for _ in 0..1000 {
                    (ops.lock)();
                    (ops.unlock)();
                }
                let took = (ops.try_lock)();
                if took {
                    (ops.unlock)();
                }
                took
            }
            AtFork::HeldByOther => !(ops.try_lock)(),
        };
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    assert!(pid > 0, "fork failed");
    let mut status = 0;
    // SAFETY: our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    // Release everyone before judging, so a failure leaves no thread behind.
    STOP.store(true, SeqCst);
    if at == AtFork::HeldByForker {
        (ops.unlock)();
    }
    for _ in 0..waiters {
        // SAFETY: one byte from a static into the test's pipe.
        unsafe { libc::write(PARK[1].load(SeqCst) as i32, b"x".as_ptr().cast(), 1) };
    }
    if let Some((thread, release)) = holder {
        release.send(()).unwrap();
        thread.join().unwrap();
    }
    threads.into_iter().for_each(|t| t.join().unwrap());
    let child = if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Child::Ok
    } else if libc::WIFSIGNALED(status) {
        Child::Hung
    } else {
        Child::Failed
    };
    (child, word)
}

/// Every state, with one and with two parked waiters: the states whose child did
/// not do what the state allows, with the word at the fork.
pub(crate) fn every_state(ops: &ForkOps) -> Vec<(AtFork, usize, u32, Child)> {
    [
        (AtFork::Free, 1),
        (AtFork::Free, 2),
        (AtFork::HeldByForker, 2),
        (AtFork::HeldByOther, 2),
    ]
    .into_iter()
    .filter_map(|(at, waiters)| {
        let (child, word) = fork_with_parked_waiters(ops, waiters, at);
        (child != Child::Ok).then_some((at, waiters, word, child))
    })
    .collect()
}
