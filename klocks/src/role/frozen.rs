//! A delegate whose thread never acts, through the Rust API: the spinner of a
//! `klocks::Mutex` (and of a `SpinFutexMutex`, and the writer spinner of a
//! `klocks::RwLock`) takes a signal whose handler blocks in `read(2)` on a pipe that a
//! *sleeping* waiter of the same lock writes once it has had the lock. The lock is
//! released: the sleeper must get it, though the word shows the spinner's flag and the
//! unlock left the wake to it; then the handler returns and the spinner finishes.
//! (`klocks-ffi/tests/frozen.rs` runs the same cases, and `siglongjmp` and nested
//! handlers, through the preload.)

use super::matrix::busy_until;
use crate::testing::thread_state;
use crate::{RawMutex, RawRwLock, SpinFutexMutex};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering::SeqCst};
use std::time::{Duration, Instant};

/// The pipe the blocked handler reads and the sleeper writes.
static PIPE: [AtomicI32; 2] = [const { AtomicI32::new(-1) }; 2];
static HANDLED: AtomicBool = AtomicBool::new(false);

extern "C" fn blocks_on_the_pipe(_: libc::c_int) {
    HANDLED.store(true, SeqCst);
    let mut byte = 0u8;
    // SAFETY: reads one byte into a local; read is async-signal-safe.
    unsafe {
        libc::read(
            PIPE[0].load(SeqCst),
            std::ptr::from_mut(&mut byte).cast(),
            1,
        )
    };
}

/// One case: `hold`/`release` by the main thread, `take` (lock and unlock) by the
/// spinner and the sleeper; `spinning` reads the word's spinner flag.
fn frozen_spinner(
    name: &str,
    hold: &dyn Fn(),
    release: &dyn Fn(),
    take: &'static (dyn Fn() + Sync),
    spinning: &dyn Fn() -> bool,
) -> Result<(), String> {
    use std::os::unix::thread::JoinHandleExt;
    HANDLED.store(false, SeqCst);
    hold();
    let tid: &'static AtomicU32 = Box::leak(Box::new(AtomicU32::new(0)));
    let spinner = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tid.store(unsafe { libc::gettid() } as u32, SeqCst);
        take();
    });
    let reached = busy_until(Duration::from_secs(2), || {
        let t = tid.load(SeqCst);
        t != 0 && thread_state(t) == Some('R') && spinning()
    });
    if !reached {
        release();
        spinner.join().unwrap();
        return Err(format!("{name}: the spinner role was not reached"));
    }
    // SAFETY: the spinner is alive: it waits for the lock the main thread holds.
    unsafe { libc::pthread_kill(spinner.as_pthread_t(), libc::SIGURG) };
    busy_until(Duration::from_millis(50), || HANDLED.load(SeqCst));
    let sleeper_tid: &'static AtomicU32 = Box::leak(Box::new(AtomicU32::new(0)));
    let done: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let sleeper = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        sleeper_tid.store(unsafe { libc::gettid() } as u32, SeqCst);
        take();
        done.store(true, SeqCst);
        // SAFETY: writes one byte from a static to the pipe: the handler returns.
        unsafe { libc::write(PIPE[1].load(SeqCst), [1u8].as_ptr().cast(), 1) };
    });
    busy_until(Duration::from_secs(2), || {
        let t = sleeper_tid.load(SeqCst);
        t != 0 && thread_state(t) == Some('S')
    });
    release();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done.load(SeqCst) {
        if Instant::now() > deadline {
            return Err(format!(
                "{name}: the sleeper did not get the lock within 5 s of its release \
                 (its spinner blocked in a signal handler)"
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    sleeper.join().unwrap();
    spinner.join().unwrap();
    Ok(())
}

fn every_case() {
    let mut fds = [0; 2];
    // SAFETY: a pipe that lives as long as the process.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    PIPE[0].store(fds[0], SeqCst);
    PIPE[1].store(fds[1], SeqCst);
    // SAFETY: installs a handler for SIGURG (unused by the harness); this process
    // runs only this test.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = blocks_on_the_pipe as extern "C" fn(libc::c_int) as usize;
        libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut());
    }
    // Spinners spin 10 ms whether or not the holder runs, so the signal lands in the
    // spin (the probe is chosen at its first use, after this line).
    std::env::set_var("KLOCKS_OWNER_PROBE", "budget");
    RawMutex::set_spin_ns(10_000_000);
    SpinFutexMutex::set_spin_ns(10_000_000);
    RawRwLock::set_spin_ns(10_000_000);
    let mutex: &'static RawMutex = Box::leak(Box::new(RawMutex::new()));
    let spin_futex: &'static SpinFutexMutex = Box::leak(Box::new(SpinFutexMutex::new()));
    let rwlock: &'static RawRwLock = Box::leak(Box::new(RawRwLock::new()));
    let mut failures = Vec::new();
    let mut check = |result: Result<(), String>| {
        if let Err(failure) = result {
            eprintln!("{failure}");
            failures.push(failure);
        }
    };
    check(frozen_spinner(
        "RawMutex",
        &|| mutex.lock(),
        &|| mutex.unlock(),
        Box::leak(Box::new(|| {
            mutex.lock();
            mutex.unlock();
        })),
        &|| format!("{mutex:?}").contains("spinning: true"),
    ));
    check(frozen_spinner(
        "SpinFutexMutex",
        &|| lock_api::RawMutex::lock(spin_futex),
        // SAFETY: the main thread took it in `hold`.
        &|| unsafe { lock_api::RawMutex::unlock(spin_futex) },
        Box::leak(Box::new(|| {
            lock_api::RawMutex::lock(spin_futex);
            // SAFETY: taken just above.
            unsafe { lock_api::RawMutex::unlock(spin_futex) };
        })),
        &|| format!("{spin_futex:?}").contains("spinning: true"),
    ));
    check(frozen_spinner(
        "RawRwLock",
        &|| rwlock.lock_exclusive(),
        &|| rwlock.unlock_exclusive(),
        Box::leak(Box::new(|| {
            rwlock.lock_exclusive();
            rwlock.unlock_exclusive();
        })),
        &|| format!("{rwlock:?}").contains("writer_spinning: true"),
    ));
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Every case, in a process of its own (a signal handler, process-wide spin budgets).
#[test]
fn a_sleeper_gets_the_lock_while_its_spinner_is_blocked_in_a_signal_handler() {
    let name =
        "role::frozen::a_sleeper_gets_the_lock_while_its_spinner_is_blocked_in_a_signal_handler";
    if let Some(status) = crate::testing::isolated(name, every_case) {
        assert!(status.success(), "{status:?}");
    }
}
