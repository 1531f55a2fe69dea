use super::read::TooManyReaders;
use super::*;
use crate::fault::hook::{self, Point};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Waits up to 5 s for `done`; whether it came.
fn eventually(done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    true
}

#[test]
fn layout_is_as_documented() {
    assert_eq!(std::mem::size_of::<RawRwLock>(), 16);
}

#[test]
fn readers_share_and_writers_exclude() {
    let lock = RawRwLock::new();
    lock.lock_shared();
    assert!(lock.try_lock_shared());
    assert!(!lock.try_lock_exclusive());
    lock.unlock_shared();
    lock.unlock_shared();
    assert!(lock.try_lock_exclusive());
    assert!(!lock.try_lock_shared());
    assert!(lock.is_locked_exclusive());
    lock.unlock_exclusive();
    assert!(!lock.is_locked());
}

#[test]
#[should_panic(expected = "read unlock of a klocks::RwLock that is not read-locked")]
fn unlock_of_an_unheld_read_lock_panics() {
    RawRwLock::new().unlock_shared();
}

#[test]
fn an_unheld_read_unlock_leaves_the_word_as_it_was() {
    let lock = RawRwLock::new();
    lock.lock_exclusive();
    let before = lock.word.load(Relaxed);
    let err = std::panic::catch_unwind(|| lock.unlock_shared()).expect_err("no panic");
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(msg.contains("not read-locked"), "{msg}");
    assert_eq!(lock.word.load(Relaxed), before);
    lock.unlock_exclusive();
    assert_eq!(lock.word.load(Relaxed), 0);
}

/// `MAX_READERS` readers inside are that many: one more panics at once.
#[test]
#[should_panic(expected = "readers in one klocks::RwLock")]
fn a_reader_past_max_readers_panics() {
    let lock = RawRwLock::new();
    lock.word.store(MAX_READERS * READER, Relaxed);
    lock.lock_shared();
}

/// The `_within_max` entries refuse the reader at `MAX_READERS` instead, leaving the
/// word as it was, and enter below it.
#[test]
fn the_within_max_entries_refuse_a_reader_past_max_readers() {
    let lock = RawRwLock::new();
    let full = MAX_READERS * READER;
    lock.word.store(full, Relaxed);
    assert_eq!(lock.try_lock_shared_within_max(), Err(TooManyReaders));
    assert_eq!(lock.lock_shared_within_max(), Err(TooManyReaders));
    let deadline = Instant::now() + Duration::from_secs(1);
    assert_eq!(
        lock.try_lock_shared_within_max_until(deadline),
        Err(TooManyReaders)
    );
    assert_eq!(lock.word.load(Relaxed), full);
    lock.unlock_shared();
    assert_eq!(lock.try_lock_shared_within_max(), Ok(true));
    lock.unlock_shared();
    assert_eq!(lock.lock_shared_within_max(), Ok(()));
    assert_eq!(lock.word.load(Relaxed), full);
    lock.word.store(WRITER, Relaxed);
    assert_eq!(
        lock.try_lock_shared_within_max(),
        Ok(false),
        "a writer holds it"
    );
}

/// A reader that waited for a writer and finds `MAX_READERS` readers inside when the
/// write unlock lets it in is refused there too (the slow path's entry), not
/// panicking.
#[test]
fn a_waiting_reader_past_max_readers_is_refused() {
    let lock = Arc::new(RawRwLock::new());
    lock.lock_exclusive();
    let reader = {
        let lock = Arc::clone(&lock);
        std::thread::spawn(move || lock.lock_shared_within_max())
    };
    assert!(
        eventually(|| lock.word.load(Relaxed) & READERS_WAITING != 0),
        "the reader never slept"
    );
    // The readers that would come in at the unlock, ahead of the sleeper.
    lock.word.fetch_add(MAX_READERS * READER, Relaxed);
    lock.unlock_exclusive();
    assert_eq!(
        reader.join().expect("the reader panicked"),
        Err(TooManyReaders)
    );
    assert_eq!(lock.word.load(Relaxed), MAX_READERS * READER);
}

/// A read unlock that finds no reader wraps the count above `MAX_READERS` and undoes
/// it before its panic. However long the misusing thread is stalled between the two
/// (here 300 ms, longer than any spin or pause budget), readers that arrive meanwhile
/// wait for the undo and enter, and none of them panics: the misuse panics in the
/// misusing thread alone.
#[test]
fn readers_wait_out_a_stalled_unheld_read_unlock() {
    let lock = Arc::new(RawRwLock::new());
    let wrapped = Arc::new(AtomicBool::new(false));
    let misuser = {
        let (lock, wrapped) = (Arc::clone(&lock), Arc::clone(&wrapped));
        std::thread::spawn(move || {
            let stall = move || {
                wrapped.store(true, Relaxed);
                std::thread::sleep(Duration::from_millis(300));
            };
            hook::with(Point::UnheldReadUnlockWrapped, stall, || {
                std::panic::catch_unwind(|| lock.unlock_shared()).is_err()
            })
        })
    };
    assert!(
        eventually(|| wrapped.load(Relaxed)),
        "the misuse never wrapped"
    );
    assert!(readers(lock.word.load(Relaxed)) > MAX_READERS);
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let lock = Arc::clone(&lock);
            std::thread::spawn(move || {
                lock.lock_shared();
                lock.unlock_shared();
            })
        })
        .collect();
    for reader in readers {
        reader.join().expect("a reader panicked behind the misuse");
    }
    assert!(misuser.join().unwrap(), "the misusing unlock did not panic");
    assert_eq!(
        lock.word.load(Relaxed) & !BIAS,
        0,
        "free (readers may have turned the bias on)"
    );
}

/// A writer that slept while it drained the readers clears `DRAIN_SLEEPS` itself
/// once the last one left (the read unlock only wakes it): it holds a clean word,
/// and its unlock leaves a free one.
#[test]
fn a_drainer_that_slept_holds_a_clean_word() {
    let lock = Arc::new(RawRwLock::new());
    lock.lock_shared();
    let writer = {
        let lock = Arc::clone(&lock);
        std::thread::spawn(move || {
            lock.lock_exclusive();
            let held = lock.word.load(Relaxed);
            lock.unlock_exclusive();
            held
        })
    };
    assert!(
        eventually(|| lock.word.load(Relaxed) & DRAIN_SLEEPS != 0),
        "the writer never slept in its drain"
    );
    lock.unlock_shared();
    assert_eq!(writer.join().unwrap(), WRITER);
    assert_eq!(lock.word.load(Relaxed), 0);
}

/// Read unlocks of an unheld lock, racing with writers (which keep the count at 0):
/// every one panics, no writer section overlaps another, and the lock ends free with
/// an exact count.
#[test]
fn unheld_read_unlocks_racing_with_writers_panic_and_leave_the_lock_exact() {
    let lock = Arc::new(RawRwLock::new());
    let pair = Arc::new((AtomicU32::new(0), AtomicU32::new(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|_| {
            let (lock, pair, stop) = (Arc::clone(&lock), Arc::clone(&pair), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut sections = 0u32;
                while !stop.load(Relaxed) {
                    // Timed, so that a lock left broken fails the test instead of
                    // hanging it.
                    let deadline = Instant::now() + Duration::from_secs(5);
                    assert!(
                        lock.try_lock_exclusive_until(deadline),
                        "a writer waited 5 s"
                    );
                    // Relaxed: the lock orders these; a torn pair is an overlap.
                    assert_eq!(pair.0.load(Relaxed), pair.1.load(Relaxed));
                    pair.0.fetch_add(1, Relaxed);
                    std::hint::spin_loop();
                    pair.1.fetch_add(1, Relaxed);
                    lock.unlock_exclusive();
                    sections += 1;
                }
                sections
            })
        })
        .collect();
    // Until both sides have had a good share (a writer that fails ends the loop).
    let mut panics = 0;
    while (panics < 200 || pair.0.load(Relaxed) < 1000) && !writers.iter().any(|w| w.is_finished())
    {
        let err = std::panic::catch_unwind(|| lock.unlock_shared()).expect_err("no panic");
        assert!(err
            .downcast_ref::<String>()
            .unwrap()
            .contains("not read-locked"));
        panics += 1;
    }
    stop.store(true, Relaxed);
    let sections: u32 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(sections > 0, "no writer section");
    assert_eq!(pair.0.load(Relaxed), sections);
    assert_eq!(
        lock.word.load(Relaxed) & !(WRITERS_WAITING | READERS_WAITING),
        0
    );
    assert!(lock.try_lock_exclusive());
    lock.unlock_exclusive();
}

#[test]
#[should_panic(expected = "write unlock of a klocks::RwLock that is not write-locked")]
fn unlock_of_an_unheld_write_lock_panics() {
    RawRwLock::new().unlock_exclusive();
}

#[test]
fn a_write_unlock_from_another_thread_panics_and_keeps_the_lock() {
    let lock = Arc::new(RawRwLock::new());
    lock.lock_exclusive();
    let other = Arc::clone(&lock);
    let err = std::thread::spawn(move || other.unlock_exclusive())
        .join()
        .expect_err("a non-owner's unlock succeeded");
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(msg.contains("which does not hold it"), "{msg}");
    assert!(lock.is_locked_exclusive());
    lock.unlock_exclusive();
}

#[test]
#[should_panic(expected = "write-locked a klocks::RwLock it already holds")]
fn a_write_relock_panics_instead_of_deadlocking() {
    let lock = RawRwLock::new();
    lock.lock_exclusive();
    lock.lock_exclusive();
}

#[test]
fn a_downgrade_lets_waiting_readers_in() {
    let lock = Arc::new(RawRwLock::new());
    lock.lock_exclusive();
    let reader = {
        let lock = Arc::clone(&lock);
        std::thread::spawn(move || {
            lock.lock_shared();
            lock.unlock_shared();
        })
    };
    assert!(eventually(|| lock.word.load(Relaxed) & READERS_WAITING != 0));
    lock.downgrade();
    reader.join().unwrap();
    assert!(!lock.try_lock_exclusive());
    lock.unlock_shared();
    assert!(!lock.is_locked());
}

/// A stream of readers that always overlap would starve a writer on a lock that
/// prefers readers; here the writer's `WRITER_WAITING` holds new readers back.
#[test]
fn a_writer_gets_through_overlapping_readers() {
    let lock = Arc::new(RawRwLock::new());
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (lock, stop) = (Arc::clone(&lock), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    lock.lock_shared();
                    std::thread::sleep(Duration::from_micros(200));
                    lock.unlock_shared();
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(10));
    let start = Instant::now();
    for _ in 0..20 {
        lock.lock_exclusive();
        lock.unlock_exclusive();
    }
    let took = start.elapsed();
    stop.store(true, Relaxed);
    readers.into_iter().for_each(|r| r.join().unwrap());
    assert!(took < Duration::from_secs(2), "20 writes took {took:?}");
}

/// Writers that always overlap would starve readers on a lock that prefers writers;
/// here each write unlock that finds readers asleep gives them a turn.
#[test]
fn readers_get_through_overlapping_writers() {
    let lock = Arc::new(RawRwLock::new());
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|_| {
            let (lock, stop) = (Arc::clone(&lock), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    lock.lock_exclusive();
                    std::thread::sleep(Duration::from_micros(200));
                    lock.unlock_exclusive();
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(10));
    let start = Instant::now();
    for _ in 0..20 {
        lock.lock_shared();
        lock.unlock_shared();
    }
    let took = start.elapsed();
    stop.store(true, Relaxed);
    writers.into_iter().for_each(|w| w.join().unwrap());
    assert!(took < Duration::from_secs(2), "20 reads took {took:?}");
}

#[test]
fn timed_locks_give_up_and_leave_the_lock_usable() {
    use lock_api::RawRwLockTimed;
    let lock = Arc::new(RawRwLock::new());
    lock.lock_exclusive();
    let other = Arc::clone(&lock);
    let (read, write) = std::thread::spawn(move || {
        (
            other.try_lock_shared_for(Duration::from_millis(10)),
            other.try_lock_exclusive_for(Duration::from_millis(10)),
        )
    })
    .join()
    .unwrap();
    assert!(!read && !write);
    lock.unlock_exclusive();
    lock.lock_shared();
    let other = Arc::clone(&lock);
    assert!(
        !std::thread::spawn(move || other.try_lock_exclusive_for(Duration::from_millis(10)))
            .join()
            .unwrap()
    );
    // The timed writer stepped down: readers are not held back by it.
    assert!(lock.try_lock_shared());
    lock.unlock_shared();
    lock.unlock_shared();
    assert_eq!(
        lock.word.load(Relaxed) & !BIAS,
        0,
        "free (readers may have turned the bias on)"
    );
}

#[test]
fn stress_oversubscribed() {
    use crate::testing::{contend_rw, RwContention};
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    for (readers, writers, iterations) in [(cpus, cpus, 20_000), (32 * cpus, 32 * cpus, 200)] {
        contend_rw::<RawRwLock>(RwContention {
            readers,
            writers,
            iterations,
        })
        .unwrap();
    }
}

#[test]
fn a_fork_child_forgets_a_draining_writer_but_keeps_a_holder() {
    let lock = RawRwLock::new();
    // Read-held, a writer draining (WRITER, no id yet), readers and writers asleep
    // (three writers counted).
    lock.word.store(
        (2 * READER) | WRITER | READERS_WAITING | WRITERS_WAITING | DRAIN_SLEEPS,
        Relaxed,
    );
    lock.writers_asleep.store(3, Relaxed);
    // SAFETY: no other thread uses `lock`.
    unsafe { lock.forget_waiters() };
    assert_eq!(lock.word.load(Relaxed), 2 * READER);
    assert_eq!(lock.writers_asleep.load(Relaxed), 0);
    // Write-held by a writer whose id is recorded: still held.
    lock.word.store(WRITER | READERS_WAITING, Relaxed);
    lock.writer.store(7, Relaxed);
    // SAFETY: as above.
    unsafe { lock.forget_waiters() };
    assert_eq!(lock.word.load(Relaxed), WRITER);
    assert_eq!(lock.exclusive_owner(), Some(7));
}

/// A writer whose unlock finds a waiting writer makes itself observable to the
/// waiters' owner probe, as the default mutex's owner does: otherwise, with the perf
/// probe, spinners could never see it preempted and spun out their whole budget.
#[test]
fn a_writer_that_finds_a_waiter_becomes_observable() {
    if owner::probe_kind() != owner::ProbeKind::PerfSwitch {
        eprintln!("skipping: the owner probe is not perf here");
        return;
    }
    let lock = Arc::new(RawRwLock::new());
    let writer = std::thread::spawn({
        let lock = Arc::clone(&lock);
        move || {
            lock.lock_exclusive();
            let waiter = std::thread::spawn({
                let lock = Arc::clone(&lock);
                move || {
                    lock.lock_exclusive();
                    lock.unlock_exclusive();
                }
            });
            // Relaxed: a test's look at the flags the waiter sets.
            let waits = || lock.word.load(Relaxed) & (WRITER_SPINNING | WRITERS_WAITING) != 0;
            assert!(eventually(waits), "the waiter never waited");
            let before = owner::current_is_watched();
            lock.unlock_exclusive();
            let after = owner::current_is_watched();
            waiter.join().unwrap();
            (before, after)
        }
    });
    assert_eq!(writer.join().unwrap(), (false, true));
}

/// Two timed writers sleep behind the write lock. The write unlock wakes a writer
/// before its release (with two asleep) and keeps `WRITERS_WAITING` for it; were that
/// a timed writer, which gives up while the unlocker still holds the lock (stalled at
/// `after_early_wake`), the flag would stay on the freed word with no writer to come,
/// and a reader that arrived meanwhile (not yet due for a turn) would sleep for good.
/// The early wake takes only writers without a deadline, so the reader gets in.
#[test]
fn a_timed_writer_giving_up_during_a_write_unlock_strands_no_reader() {
    use crate::fault::hook::{self, Point};
    use lock_api::RawRwLockTimed;
    use std::sync::atomic::AtomicUsize;
    let lock = Arc::new(RawRwLock::new());
    lock.lock_exclusive();
    let gave_up = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let (lock, gave_up) = (Arc::clone(&lock), Arc::clone(&gave_up));
            std::thread::spawn(move || {
                // Long enough for both to be asleep together on a loaded machine
                // (with 20 ms, one gave up before the other slept, under CI load).
                let took = lock.try_lock_exclusive_for(Duration::from_millis(300));
                gave_up.fetch_add(1, Relaxed);
                took
            })
        })
        .collect();
    assert!(eventually(|| lock.writers_asleep.load(Relaxed) == 2));
    let reader_in = Arc::new(AtomicBool::new(false));
    let reader = Arc::new(std::sync::Mutex::new(None));
    let stall = {
        let (lock, reader_in, reader) = (
            Arc::clone(&lock),
            Arc::clone(&reader_in),
            Arc::clone(&reader),
        );
        move || {
            assert!(
                eventually(|| gave_up.load(Relaxed) == 2),
                "the timed writers never gave up"
            );
            let (lock2, reader_in) = (Arc::clone(&lock), Arc::clone(&reader_in));
            *reader.lock().unwrap() = Some(std::thread::spawn(move || {
                lock2.lock_shared();
                reader_in.store(true, Relaxed);
                lock2.unlock_shared();
            }));
            assert!(eventually(|| lock.word.load(Relaxed) & READERS_WAITING != 0));
        }
    };
    hook::with(Point::AfterEarlyWake, stall, || lock.unlock_exclusive());
    for writer in writers {
        assert!(!writer.join().unwrap());
    }
    assert!(
        eventually(|| reader_in.load(Relaxed)),
        "the reader was stranded: {lock:?}"
    );
    let reader = reader
        .lock()
        .unwrap()
        .take()
        .expect("the unlock never reached its early wake");
    reader.join().unwrap();
}

/// A signal handler takes the lock, for reading and for writing, while its thread
/// sleeps on that lock as a reader or as a writer (its futex wait interrupted, its
/// flags and the count of sleeping writers still naming it): every handler gets the
/// lock once the holder leaves, and every interrupted thread gets it afterwards.
#[test]
fn a_signal_handler_takes_the_lock_its_thread_sleeps_on() {
    let name = "rwlock::raw_rwlock::tests::a_signal_handler_takes_the_lock_its_thread_sleeps_on";
    if let Some(status) = crate::testing::isolated(name, handlers_take_the_lock) {
        assert!(status.success(), "{status:?}");
    }
}

fn handlers_take_the_lock() {
    use std::os::unix::thread::JoinHandleExt;
    static LOCK: RawRwLock = RawRwLock::new();
    static HANDLER_WRITES: AtomicBool = AtomicBool::new(false);
    static HANDLED: AtomicU32 = AtomicU32::new(0);
    extern "C" fn handler(_: libc::c_int) {
        if HANDLER_WRITES.load(Relaxed) {
            LOCK.lock_exclusive();
            LOCK.unlock_exclusive();
        } else {
            LOCK.lock_shared();
            LOCK.unlock_shared();
        }
        HANDLED.fetch_add(1, Relaxed);
    }
    // SAFETY: installs a handler for SIGURG (ignored by default, unused by the test
    // harness) that only touches statics.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as extern "C" fn(libc::c_int) as usize;
        libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut());
    }
    for (handled, (sleeper_writes, handler_writes)) in
        [(false, false), (false, true), (true, false), (true, true)]
            .into_iter()
            .enumerate()
    {
        HANDLER_WRITES.store(handler_writes, Relaxed);
        LOCK.lock_exclusive();
        let sleeper = std::thread::spawn(move || {
            if sleeper_writes {
                LOCK.lock_exclusive();
                LOCK.unlock_exclusive();
            } else {
                LOCK.lock_shared();
                LOCK.unlock_shared();
            }
        });
        let asleep = if sleeper_writes {
            WRITERS_WAITING
        } else {
            READERS_WAITING
        };
        assert!(
            eventually(|| LOCK.word.load(Relaxed) & asleep != 0),
            "the thread never slept on the lock"
        );
        // Past its flag, into its futex wait.
        std::thread::sleep(Duration::from_millis(5));
        // SAFETY: the sleeper is alive (it waits for the lock we hold).
        unsafe { libc::pthread_kill(sleeper.as_pthread_t(), libc::SIGURG) };
        std::thread::sleep(Duration::from_millis(5));
        LOCK.unlock_exclusive();
        assert!(
            eventually(|| HANDLED.load(Relaxed) as usize == handled + 1),
            "the handler never got the lock (sleeper writes: {sleeper_writes}, handler writes: {handler_writes})"
        );
        assert!(
            eventually(|| sleeper.is_finished()),
            "the interrupted thread never got the lock (sleeper writes: {sleeper_writes}, handler writes: {handler_writes})"
        );
        sleeper.join().unwrap();
        assert!(!LOCK.is_locked());
    }
}

/// The upgradable lock admits readers beside it and keeps writers and other
/// upgradable holders out; `try_upgrade` succeeds once no reader is inside, and
/// the downgrades let readers in.
#[test]
fn the_upgradable_lock_admits_readers_only() {
    let lock = RawRwLock::new();
    lock.lock_upgradable();
    assert!(
        lock.try_lock_shared(),
        "a reader beside the upgradable lock"
    );
    assert!(!lock.try_lock_exclusive());
    assert!(!lock.try_lock_upgradable());
    assert!(!lock.is_locked_exclusive());
    assert_eq!(lock.exclusive_owner(), None);
    assert!(!lock.try_upgrade(), "a reader is inside");
    lock.unlock_shared();
    assert!(lock.try_upgrade());
    assert!(lock.is_locked_exclusive());
    assert!(!lock.try_lock_shared());
    lock.downgrade_to_upgradable();
    assert!(lock.try_lock_shared());
    lock.unlock_shared();
    lock.downgrade_upgradable();
    assert!(lock.try_lock_shared(), "readers share the downgraded lock");
    assert!(!lock.try_lock_exclusive());
    lock.unlock_shared();
    lock.unlock_shared();
    assert_eq!(
        lock.word.load(Relaxed) & !BIAS,
        0,
        "free (readers may have turned the bias on)"
    );
}

/// `upgrade` waits for the readers inside, and no reader enters meanwhile.
#[test]
fn an_upgrade_waits_for_the_readers_inside() {
    let lock = Arc::new(RawRwLock::new());
    lock.lock_shared();
    lock.lock_upgradable();
    let upgraded = Arc::new(AtomicBool::new(false));
    // A writer never gets in between, before or during the upgrade.
    let prober = {
        let (lock, upgraded) = (Arc::clone(&lock), Arc::clone(&upgraded));
        std::thread::spawn(move || {
            while !upgraded.load(Relaxed) {
                assert!(!lock.try_lock_exclusive());
                std::thread::yield_now();
            }
        })
    };
    let reader = {
        let lock = Arc::clone(&lock);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            // A read lock records no owner: the main thread's can be released here.
            lock.unlock_shared();
        })
    };
    lock.upgrade();
    upgraded.store(true, Relaxed);
    assert!(lock.is_locked_exclusive());
    assert_eq!(readers(lock.word.load(Relaxed)), 0);
    reader.join().unwrap();
    prober.join().unwrap();
    lock.unlock_exclusive();
    assert_eq!(lock.word.load(Relaxed), 0);
}

#[test]
#[should_panic(expected = "does not hold upgradable")]
fn an_upgrade_without_the_upgradable_lock_panics() {
    let lock = RawRwLock::new();
    lock.lock_shared();
    lock.upgrade();
}

/// Read-modify-writes through the upgradable lock, beside writers and readers that
/// check the data, with more threads than CPUs: no update is lost and no reader sees
/// a half-written pair.
#[test]
fn upgradable_read_modify_writes_lose_nothing() {
    let lock = Arc::new(lock_api::RwLock::<RawRwLock, (u64, u64)>::new((0, 0)));
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let lock = Arc::clone(&lock);
            std::thread::spawn(move || {
                for n in 0..2_000u64 {
                    match (i + n) % 3 {
                        0 => {
                            let seen = lock.upgradable_read();
                            let next = seen.0 + 1;
                            let mut pair = lock_api::RwLockUpgradableReadGuard::upgrade(seen);
                            *pair = (next, next);
                        }
                        1 => {
                            let mut pair = lock.write();
                            pair.0 += 1;
                            pair.1 += 1;
                        }
                        _ => {
                            let pair = lock.read();
                            assert_eq!(pair.0, pair.1, "a reader saw a half-written pair");
                        }
                    }
                }
            })
        })
        .collect();
    let mut writes = 0;
    for (i, thread) in threads.into_iter().enumerate() {
        thread.join().unwrap();
        writes += (0..2_000u64).filter(|n| (i as u64 + n) % 3 != 2).count() as u64;
    }
    assert_eq!(*lock.read(), (writes, writes));
}
