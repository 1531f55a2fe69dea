//! A fork child uses a queued spinlock its parent left free with a pending waiter or
//! a queue, or held by the forking thread with waiters; one held by a vanished
//! thread stays held. The parent's waiters are parked in a signal handler that
//! blocks on a pipe, so the word keeps their bits at the fork.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use crate::spin::qspinlock::{LOCKED_MASK, PENDING_MASK, TAIL_MASK};
use crate::{PvQSpinLock, QSpinLock};

/// The parked threads' pipe: `[read, write]`.
static PARK: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];
static PARKED: AtomicUsize = AtomicUsize::new(0);

extern "C" fn park(_: libc::c_int) {
    PARKED.fetch_add(1, SeqCst);
    let mut byte = 0u8;
    // SAFETY: reads one byte into a local from the pipe the test made; `read` is
    // async-signal-safe.
    unsafe {
        libc::read(
            PARK[0].load(SeqCst) as i32,
            (&mut byte as *mut u8).cast(),
            1,
        )
    };
}

fn install_park() {
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

/// What the test forks in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum AtFork {
    /// The lock is free, its waiters parked.
    Free,
    /// The forking thread holds it, its waiters parked.
    HeldByForker,
    /// Another thread holds it, the waiters parked.
    HeldByOther,
}

/// The operations of the lock under test, on a static.
struct Ops {
    lock: fn(),
    unlock: fn(),
    try_lock: fn() -> bool,
    word: fn() -> u32,
}

/// Parks `waiters` threads on the lock (pending or queued), makes the state `at`,
/// forks, and checks the child: a free lock is taken by `lock` (1000 times) and by
/// `try_lock`; the forker's is unlocked, then as free; another thread's fails
/// `try_lock`. The child runs under `alarm`: a hang is a failure with the word.
fn fork_with_parked_waiters(ops: &Ops, waiters: usize, at: AtFork) {
    PARKED.store(0, SeqCst);
    let holder = (at == AtFork::HeldByOther).then(|| {
        let (held, wait) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let lock = ops.lock;
        let unlock = ops.unlock;
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
            std::thread::spawn(move || {
                lock();
                unlock();
            })
        })
        .collect();
    use std::os::unix::thread::JoinHandleExt;
    for (n, thread) in threads.iter().enumerate() {
        // Let the waiter reach its wait (pending, queued, or asleep).
        std::thread::sleep(Duration::from_millis(30));
        // SAFETY: the thread is alive: it waits for the lock.
        unsafe { libc::pthread_kill(thread.as_pthread_t(), libc::SIGURG) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while PARKED.load(SeqCst) <= n {
            assert!(Instant::now() < deadline, "waiter {n} never parked");
            std::thread::yield_now();
        }
    }
    if at == AtFork::Free {
        (ops.unlock)();
    }
    let word = (ops.word)();
    assert_ne!(
        word & (PENDING_MASK | TAIL_MASK),
        0,
        "the parked waiters left no trace in the word ({word:#x}): the test is void"
    );
    // SAFETY: the child only runs the lock's operations on a static, `alarm`, and
    // `_exit`; its other threads are gone.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: alarm and _exit are async-signal-safe.
        unsafe { libc::alarm(5) };
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
            AtFork::HeldByOther => !(ops.try_lock)() && (ops.word)() & LOCKED_MASK != 0,
        };
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    assert!(pid > 0, "fork failed");
    let mut status = 0;
    // SAFETY: our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    // Release the parked waiters and the holder before judging, so a failure does not
    // leave threads behind.
    if at == AtFork::HeldByForker {
        (ops.unlock)();
    }
    for _ in 0..waiters {
        // SAFETY: one byte from a local into the test's pipe.
        unsafe { libc::write(PARK[1].load(SeqCst) as i32, b"x".as_ptr().cast(), 1) };
    }
    if let Some((thread, release)) = holder {
        release.send(()).unwrap();
        thread.join().unwrap();
    }
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{at:?} with {waiters} parked waiters (word {word:#x} at the fork): the child {}",
        if libc::WIFSIGNALED(status) {
            "hung (killed by its alarm)".to_owned()
        } else {
            format!("failed, status {status:#x}")
        }
    );
}

macro_rules! fork_tests {
    ($name:ident, $lock:ty) => {
        mod $name {
            use super::*;

            static LOCK: $lock = <$lock>::new();
            const OPS: Ops = Ops {
                lock: || LOCK.lock(),
                unlock: || LOCK.unlock(),
                try_lock: || LOCK.try_lock(),
                word: || LOCK.word.load(SeqCst),
            };

            fn every_state() {
                install_park();
                for (waiters, at) in [
                    (1, AtFork::Free),
                    (2, AtFork::Free),
                    (2, AtFork::HeldByForker),
                    (2, AtFork::HeldByOther),
                ] {
                    fork_with_parked_waiters(&OPS, waiters, at);
                }
            }

            #[test]
            fn a_fork_child_uses_a_lock_its_parent_left_with_waiters() {
                let name = concat!(
                    "spin::fork_child::tests::",
                    stringify!($name),
                    "::a_fork_child_uses_a_lock_its_parent_left_with_waiters"
                );
                if let Some(status) = crate::testing::isolated(name, every_state) {
                    assert!(status.success(), "{status:?}");
                }
            }
        }
    };
}

fork_tests!(qspinlock, QSpinLock);
fork_tests!(pv_qspinlock, PvQSpinLock);

/// The control: std's mutex, in the same states, is usable in the child.
#[test]
fn control_std_mutex() {
    fn run() {
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        install_park();
        PARKED.store(0, SeqCst);
        let guard = LOCK.lock().unwrap();
        let waiter = std::thread::spawn(|| drop(LOCK.lock().unwrap()));
        std::thread::sleep(Duration::from_millis(30));
        use std::os::unix::thread::JoinHandleExt;
        // SAFETY: the waiter is alive, waiting for the lock.
        unsafe { libc::pthread_kill(waiter.as_pthread_t(), libc::SIGURG) };
        while PARKED.load(SeqCst) == 0 {
            std::thread::yield_now();
        }
        drop(guard);
        // SAFETY: as in `fork_with_parked_waiters`.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: as there.
            unsafe { libc::alarm(5) };
            for _ in 0..1000 {
                drop(LOCK.lock().unwrap());
            }
            // SAFETY: as there.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        // SAFETY: as in `fork_with_parked_waiters`.
        unsafe { libc::write(PARK[1].load(SeqCst) as i32, b"x".as_ptr().cast(), 1) };
        waiter.join().unwrap();
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "{status:#x}"
        );
    }
    let name = "spin::fork_child::tests::control_std_mutex";
    if let Some(status) = crate::testing::isolated(name, run) {
        assert!(status.success(), "{status:?}");
    }
}
