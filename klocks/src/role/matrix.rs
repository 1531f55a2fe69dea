//! The signal-handler matrix: for each lock kind and each waiting role a thread can
//! hold on it, a signal handler on that thread takes the same lock (for reading and
//! for writing, for the reader-writer locks) while the test's main thread holds it.
//! The role is reached deterministically: the lock's word shows it and `/proc` shows
//! the thread running (a spinner) or asleep (a sleeper) before the signal is sent;
//! the handler is seen blocked (or done) before the main thread releases the lock;
//! then the handler must get the lock within a bound, and the interrupted waiter must
//! finish its own acquisition. A role that is not reached in a few tries fails the
//! test, naming it, instead of passing unchecked.
//!
//! Not in the matrix, by design: the FIFO spinlocks (`TicketLock`, `PvTicketLock`,
//! `QSpinLock`), whose waiter holds a place in line that cannot be lent to a handler,
//! so a handler that takes the lock its own thread queues for waits behind itself (as
//! the kernel forbids an interrupt to take a spinlock its CPU waits for); and `RwSem`,
//! seed 001's design, whose queued waiters' wakes are not delegated by role (see
//! `docs/misuse.md`). `PvQSpinLock`'s queue head with `pending` set has its own test
//! (`spin::pv_qspinlock`), as has the default mutex's handoff claimant
//! (`mutex::raw_mutex`).

use crate::testing::thread_state;
use crate::{FutexMutex, RawMutex, RawRwLock, SpinFutexMutex};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the SIGURG handler runs (a leaked closure per case), and whether it finished.
static HANDLER: AtomicPtr<Box<dyn Fn() + Send + Sync>> = AtomicPtr::new(std::ptr::null_mut());
static HANDLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    let body = HANDLER.load(SeqCst);
    if !body.is_null() {
        // SAFETY: `HANDLER` holds a leaked box, set before the signal is sent.
        unsafe { (*body)() };
        HANDLED.store(true, SeqCst);
    }
}

/// Polls `done` for up to `within`, busy (the main thread holds the lock and must look
/// as if it runs, so that spinners keep spinning).
pub(super) fn busy_until(within: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::hint::spin_loop();
    }
    done()
}

/// One row of the matrix.
struct Case {
    /// `lock kind / role / what the handler takes`.
    name: String,
    /// The main thread takes the lock.
    hold: Box<dyn Fn()>,
    /// The main thread releases it.
    release: Box<dyn Fn()>,
    /// The waiter thread's acquisition and release, whose role the signal lands in.
    wait: Arc<dyn Fn() + Send + Sync>,
    /// Whether the role is reached, given the waiter's scheduler state (the closure
    /// reads the lock's word through its `Debug`).
    reached: Box<dyn Fn(char) -> bool>,
    /// What the handler does on the waiter's thread: take the same lock and release.
    handler: Box<dyn Fn() + Send + Sync>,
}

/// How long a handler may take to get the lock once the main thread released it.
const BOUND: Duration = Duration::from_secs(5);

/// Runs one case; `Err` with what went wrong.
fn run(case: Case) -> Result<(), String> {
    use std::os::unix::thread::JoinHandleExt;
    HANDLED.store(false, SeqCst);
    HANDLER.store(Box::into_raw(Box::new(case.handler)), SeqCst);
    for attempt in 0..5 {
        (case.hold)();
        let tid = Arc::new(AtomicU32::new(0));
        let waiter = {
            let (tid, wait) = (Arc::clone(&tid), Arc::clone(&case.wait));
            std::thread::spawn(move || {
                // SAFETY: gettid has no preconditions.
                tid.store(unsafe { libc::gettid() } as u32, SeqCst);
                wait();
            })
        };
        let reached = busy_until(Duration::from_secs(2), || {
            let tid = tid.load(SeqCst);
            tid != 0 && thread_state(tid).is_some_and(&case.reached)
        });
        if !reached {
            (case.release)();
            waiter
                .join()
                .map_err(|_| format!("{}: the waiter panicked", case.name))?;
            eprintln!(
                "{}: role not reached in attempt {attempt} (waiter {:?})",
                case.name,
                thread_state(tid.load(SeqCst))
            );
            continue;
        }
        // SAFETY: the waiter is alive: it waits for the lock the main thread holds.
        unsafe { libc::pthread_kill(waiter.as_pthread_t(), libc::SIGURG) };
        // The handler gets the lock at once, or blocks: seen asleep (or, on a broken
        // lock, spinning for good).
        let tid = tid.load(SeqCst);
        busy_until(Duration::from_millis(50), || {
            HANDLED.load(SeqCst) || thread_state(tid) == Some('S')
        });
        (case.release)();
        let deadline = Instant::now() + BOUND;
        while !HANDLED.load(SeqCst) {
            if Instant::now() > deadline {
                return Err(format!(
                    "{}: the handler did not get the lock within {BOUND:?} of its release",
                    case.name
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        while !waiter.is_finished() {
            if Instant::now() > deadline + BOUND {
                return Err(format!(
                    "{}: the interrupted waiter never finished",
                    case.name
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        waiter
            .join()
            .map_err(|_| format!("{}: the waiter panicked", case.name))?;
        return Ok(());
    }
    Err(format!(
        "{}: the role was not reached in 5 attempts",
        case.name
    ))
}

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// The handler's access to a reader-writer lock.
#[derive(Clone, Copy, Debug)]
enum Access {
    Read,
    Write,
}

/// Makes the calling thread's turn on `RawMutex` over ([`crate::turn`]), so that its
/// next lock of a held `RawMutex` sleeps at once. Otherwise, with the spin budget and
/// owner probe the matrix sets, a waiter that spins its budget out twice claims a
/// handoff on its CPU and sleeps as the claimant (a role with its own test in
/// `mutex::raw_mutex`), never as a plain sleeper. The other mutexes take no turns.
fn end_the_mutex_turn() {
    crate::turn::Turn::Mutex.begin();
    std::thread::sleep(Duration::from_micros(2 * u64::from(crate::turn::TURN_US)));
}

/// A mutex's cases: its spinner (if it has one) and a sleeper.
fn mutex_cases<L: lock_api::RawMutex + std::fmt::Debug + Sync + 'static>(
    kind: &str,
    spinner: bool,
) -> Vec<Case> {
    let mut cases = Vec::new();
    let roles: &[(&str, &str, char)] = if spinner {
        &[
            ("spinner", "spinning: true", 'R'),
            ("sleeper", "waiters: true", 'S'),
        ]
    } else {
        &[("sleeper", "contended: true", 'S')]
    };
    for &(role, shows, state) in roles {
        let lock: &'static L = leak(L::INIT);
        cases.push(Case {
            name: format!("{kind} / {role} / lock"),
            hold: Box::new(move || lock.lock()),
            // SAFETY: the main thread took it in `hold`.
            release: Box::new(move || unsafe { lock.unlock() }),
            wait: Arc::new(move || {
                if state == 'S' {
                    end_the_mutex_turn();
                }
                lock.lock();
                // SAFETY: taken just above.
                unsafe { lock.unlock() };
            }),
            reached: Box::new(move |now| {
                let word = format!("{lock:?}");
                now == state
                    && word.contains(shows)
                    && (state != 'S' || !word.contains("spinning: true"))
            }),
            handler: Box::new(move || {
                lock.lock();
                // SAFETY: taken just above.
                unsafe { lock.unlock() };
            }),
        });
    }
    cases
}

/// The default rwlock's cases: each role, with the handler reading and writing.
fn rwlock_cases() -> Vec<Case> {
    // (role, the main thread reads instead of writing, a second writer sleeps first,
    // the waiter reads, what the word shows, the waiter's state)
    let roles: [(&str, bool, bool, bool, &str, char); 5] = [
        (
            "writer spinner",
            false,
            false,
            false,
            "writer_spinning: true",
            'R',
        ),
        (
            "writer sleeper",
            false,
            false,
            false,
            "writers_waiting: true",
            'S',
        ),
        (
            "reader sleeper",
            false,
            false,
            true,
            "readers_waiting: true",
            'S',
        ),
        (
            "reader behind sleeping writers",
            false,
            true,
            true,
            "readers_waiting: true",
            'S',
        ),
        (
            "draining writer",
            true,
            false,
            false,
            "readers: 1, writer_locked: true",
            '*',
        ),
    ];
    let mut cases = Vec::new();
    for (role, main_reads, writer_first, waiter_reads, shows, state) in roles {
        for access in [Access::Read, Access::Write] {
            let lock: &'static RawRwLock = leak(RawRwLock::new());
            let second: &'static std::sync::Mutex<Option<std::thread::JoinHandle<()>>> =
                leak(std::sync::Mutex::new(None));
            cases.push(Case {
                name: format!("RawRwLock / {role} / {access:?}"),
                hold: Box::new(move || {
                    if main_reads {
                        lock.lock_shared();
                    } else {
                        lock.lock_exclusive();
                    }
                    if writer_first {
                        *second.lock().unwrap() = Some(std::thread::spawn(move || {
                            lock.lock_exclusive();
                            lock.unlock_exclusive();
                        }));
                        // A precondition, not the bound under test: the second writer
                        // spins its budget and yields before it sleeps, which takes
                        // long on a loaded machine.
                        assert!(busy_until(Duration::from_secs(10), || format!("{lock:?}")
                            .contains("writers_waiting: true")));
                    }
                }),
                release: Box::new(move || {
                    if main_reads {
                        lock.unlock_shared();
                    } else {
                        lock.unlock_exclusive();
                    }
                    if let Some(second) = second.lock().unwrap().take() {
                        second.join().unwrap();
                    }
                }),
                wait: Arc::new(move || {
                    if waiter_reads {
                        lock.lock_shared();
                        lock.unlock_shared();
                    } else {
                        lock.lock_exclusive();
                        lock.unlock_exclusive();
                    }
                }),
                reached: Box::new(move |now| {
                    (state == '*' || now == state) && format!("{lock:?}").contains(shows)
                }),
                handler: Box::new(move || match access {
                    Access::Read => {
                        lock.lock_shared();
                        lock.unlock_shared();
                    }
                    Access::Write => {
                        lock.lock_exclusive();
                        lock.unlock_exclusive();
                    }
                }),
            });
        }
    }
    cases
}

/// The unlocking thread owes a sleeping waiter a wake after its release, and a signal
/// lands on it in between (the `AfterRelease` fault point raises it): its handler
/// takes the same lock. `unlocker` runs on its own thread, taking the lock, bringing
/// the waiter to the role that needs the wake, and releasing with the fault point
/// armed; the handler must get the lock within the bound.
fn owed_wake(
    name: &str,
    unlocker: impl FnOnce() + Send + 'static,
    handler: Box<dyn Fn() + Send + Sync>,
) -> Result<(), String> {
    HANDLED.store(false, SeqCst);
    HANDLER.store(Box::into_raw(Box::new(handler)), SeqCst);
    let unlocker = std::thread::spawn(unlocker);
    // The unlocker may take a few attempts to bring the waiter to its role.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !HANDLED.load(SeqCst) {
        if unlocker.is_finished() && !HANDLED.load(SeqCst) {
            return Err(format!("{name}: the unlocker gave up (see its panic)"));
        }
        if Instant::now() > deadline {
            return Err(format!("{name}: the handler did not get the lock"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    unlocker
        .join()
        .map_err(|_| format!("{name}: the unlocker panicked"))
}

/// Unlocks with the `AfterRelease` fault point raising SIGURG on this thread.
fn unlock_and_signal_after_release(unlock: impl FnOnce()) {
    use crate::fault::hook::{self, Point};
    hook::with(
        Point::AfterRelease,
        || {
            // SAFETY: raises SIGURG on this thread; the matrix's handler is installed.
            unsafe { libc::raise(libc::SIGURG) };
        },
        unlock,
    );
}

/// Waits until thread `tid` is asleep.
fn asleep(tid: &AtomicU32) -> bool {
    busy_until(Duration::from_secs(5), || {
        let tid = tid.load(SeqCst);
        tid != 0 && thread_state(tid) == Some('S')
    })
}

/// The default mutex's handoff: the claimant sleeps until the unlock that reserves the
/// lock wakes it, after its release.
fn a_handoff_unlock_owes_the_claimant_its_wake() -> Result<(), String> {
    let lock: &'static RawMutex = leak(RawMutex::new());
    let tid: &'static AtomicU32 = leak(AtomicU32::new(0));
    owed_wake(
        "RawMutex / handoff unlocker / lock",
        move || {
            lock.lock();
            // A woken waiter may barge in while the unlock makes its wake, instead of
            // claiming (no starvation, no claim to test): then a new waiter tries,
            // once this thread's turns have lapsed (it slept on the lock, and a thread
            // in its turn sleeps at once when it finds the lock held).
            let claimant = (0..10)
                .find_map(|attempt| {
                    if attempt > 0 {
                        std::thread::sleep(Duration::from_millis(60));
                    }
                    waiter_that_claims(lock, tid)
                })
                .expect("in ten attempts, no waiter claimed a handoff");
            assert!(asleep(tid), "the claimant never slept");
            unlock_and_signal_after_release(|| lock.unlock());
            claimant.join().unwrap();
        },
        Box::new(move || {
            lock.lock();
            lock.unlock();
        }),
    )
}

/// With `lock` held by the caller, starts a waiter and re-takes the lock at once after
/// each unlock, holding it off CPU for 2 ms, until the waiter (having slept 1 ms)
/// claims a handoff: the waiter, with the lock held and reserved for it; `None`, with
/// the lock held, if the waiter got the lock by barging instead.
fn waiter_that_claims(
    lock: &'static RawMutex,
    tid: &'static AtomicU32,
) -> Option<std::thread::JoinHandle<()>> {
    let waiter = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tid.store(unsafe { libc::gettid() } as u32, SeqCst);
        lock.lock();
        lock.unlock();
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while !format!("{lock:?}").contains("handoff: true") {
        if waiter.is_finished() || Instant::now() > deadline {
            lock.unlock();
            waiter.join().unwrap();
            lock.lock();
            return None;
        }
        lock.unlock();
        lock.lock();
        std::thread::sleep(Duration::from_millis(2));
    }
    Some(waiter)
}

/// The default rwlock's drain: the drainer sleeps until the last read unlock wakes
/// it, after its `fetch_sub`.
fn a_last_read_unlock_owes_the_drainer_its_wake() -> Result<(), String> {
    let lock: &'static RawRwLock = leak(RawRwLock::new());
    let tid: &'static AtomicU32 = leak(AtomicU32::new(0));
    owed_wake(
        "RawRwLock / last reader out / Read",
        move || {
            lock.lock_shared();
            let drainer = std::thread::spawn(move || {
                // SAFETY: gettid has no preconditions.
                tid.store(unsafe { libc::gettid() } as u32, SeqCst);
                lock.lock_exclusive();
                lock.unlock_exclusive();
            });
            assert!(
                busy_until(Duration::from_secs(5), || format!("{lock:?}")
                    .contains("readers: 1, writer_locked: true")),
                "the writer never took WRITER"
            );
            assert!(asleep(tid), "the drainer never slept");
            unlock_and_signal_after_release(|| lock.unlock_shared());
            drainer.join().unwrap();
        },
        Box::new(move || {
            lock.lock_shared();
            lock.unlock_shared();
        }),
    )
}

fn every_role_of_every_lock() {
    // SAFETY: installs a handler for SIGURG (ignored by default, unused by the test
    // harness) that runs the current case's closure; this process runs only this test.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut());
    }
    // Spinners spin for 10 ms whether or not the holder runs (no owner probe: on a
    // loaded machine the main thread is preempted at times, and a spinner that saw
    // that would sleep instead), so that the signal lands in the spin. The probe is
    // chosen at its first use, in this process after this line.
    std::env::set_var("KLOCKS_OWNER_PROBE", "budget");
    RawMutex::set_spin_ns(10_000_000);
    SpinFutexMutex::set_spin_ns(10_000_000);
    RawRwLock::set_spin_ns(10_000_000);
    let cases = mutex_cases::<RawMutex>("RawMutex", true)
        .into_iter()
        .chain(mutex_cases::<SpinFutexMutex>("SpinFutexMutex", true))
        .chain(mutex_cases::<FutexMutex>("FutexMutex", false))
        .chain(rwlock_cases());
    let mut failures = Vec::new();
    for owed in [
        a_handoff_unlock_owes_the_claimant_its_wake,
        a_last_read_unlock_owes_the_drainer_its_wake,
    ] {
        match owed() {
            Ok(()) => eprintln!("owed wake: the handler got the lock"),
            Err(failure) => {
                eprintln!("{failure}");
                failures.push(failure);
            }
        }
    }
    for case in cases {
        let name = case.name.clone();
        match run(case) {
            Ok(()) => eprintln!("{name}: the handler got the lock"),
            Err(failure) => {
                // Its threads stay asleep for good; the other cases use other locks.
                eprintln!("{failure}");
                failures.push(failure);
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Every case, in a process of its own (a signal handler, process-wide spin budgets).
#[test]
fn a_signal_handler_gets_the_lock_its_thread_waits_for_in_every_role() {
    let name = "role::matrix::a_signal_handler_gets_the_lock_its_thread_waits_for_in_every_role";
    if let Some(status) = crate::testing::isolated(name, every_role_of_every_lock) {
        assert!(status.success(), "{status:?}");
    }
}
