//! The reader bias ([`bias`](super::bias), [`bravo`](crate::rwlock::bravo)): biased
//! readers against revoking writers, the inhibit, the table's lanes and columns,
//! misuse, signals and fork.

use super::*;
use crate::rwlock::bravo;
use crate::RawRwLockUnbiased;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A fresh lock with the bias on: a reader through the word that looks at the bias
/// turns it on (one of this thread's next `LOOK_EVERY` entries).
fn biased_lock() -> RawRwLock {
    let lock = RawRwLock::new();
    for _ in 0..bias::LOOK_EVERY {
        lock.lock_shared();
        lock.unlock_shared();
        if lock.word.load(Relaxed) & BIAS != 0 {
            return lock;
        }
    }
    panic!(
        "no reader turned the bias on in {} entries",
        bias::LOOK_EVERY
    );
}

/// This thread's revocations.
fn revocations() -> u64 {
    bias::REVOCATIONS.with(Cell::get)
}

/// A biased reader leaves the word as it was; a writer revokes the bias, waits for
/// it, and the bias stays off until a reader finds the inhibit over.
#[test]
fn a_biased_reader_leaves_the_word_alone_and_a_writer_revokes() {
    let lock = biased_lock();
    lock.lock_shared();
    assert_eq!(lock.word.load(Relaxed), BIAS, "no count in the word");
    assert!(lock.is_locked());
    assert!(!lock.is_locked_exclusive());
    assert!(
        !lock.try_lock_exclusive(),
        "a reader holds it through the table"
    );
    assert_eq!(
        lock.word.load(Relaxed),
        BIAS,
        "the failed try put the bias back"
    );
    lock.unlock_shared();
    assert!(!lock.is_locked());
    let before = revocations();
    lock.lock_exclusive();
    assert_eq!(revocations(), before + 1);
    assert_eq!(lock.word.load(Relaxed), WRITER, "the bias revoked");
    lock.downgrade();
    assert_eq!(
        readers(lock.word.load(Relaxed)),
        1,
        "a downgraded writer reads by the word"
    );
    lock.unlock_shared();
}

/// Readers at 8× the CPUs (16 at least) publish while writers revoke: every reader
/// checks that the two fields the writers write together are equal.
#[test]
fn biased_readers_never_see_a_write_half_done() {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let shared = Arc::new((RawRwLock::new(), AtomicU64::new(0), AtomicU64::new(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let torn = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..(8 * cpus).max(16))
        .map(|_| {
            let (shared, stop, torn) = (shared.clone(), stop.clone(), torn.clone());
            std::thread::spawn(move || {
                let mut sections = 0u64;
                while !stop.load(Relaxed) || sections < 1000 {
                    shared.0.lock_shared();
                    // Relaxed: the lock under test orders these with the writes.
                    let first = shared.1.load(Relaxed);
                    std::hint::spin_loop();
                    let second = shared.2.load(Relaxed);
                    shared.0.unlock_shared();
                    if first != second {
                        torn.fetch_add(1, Relaxed);
                    }
                    sections += 1;
                }
            })
        })
        .collect();
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let start = Instant::now();
                let mut writes = 0;
                while start.elapsed() < Duration::from_millis(1000) || writes < 50 {
                    shared.0.lock_exclusive();
                    let next = shared.1.load(Relaxed) + 1;
                    shared.1.store(next, Relaxed);
                    for _ in 0..20 {
                        std::hint::spin_loop();
                    }
                    shared.2.store(next, Relaxed);
                    shared.0.unlock_exclusive();
                    writes += 1;
                    // Readers in between, and time for the inhibit to pass.
                    std::thread::yield_now();
                }
                (writes, revocations())
            })
        })
        .collect();
    let (writes, revoked) = writers
        .into_iter()
        .map(|w| w.join().unwrap())
        .fold((0, 0), |(w, r), (dw, dr)| (w + dw, r + dr));
    stop.store(true, Relaxed);
    readers.into_iter().for_each(|r| r.join().unwrap());
    assert_eq!(torn.load(Relaxed), 0, "a reader saw a write half done");
    assert_eq!(shared.1.load(Relaxed), writes);
    assert!(revoked > 0, "the readers never took the bias");
    assert!(!shared.0.is_locked());
}

/// A write-heavy mix keeps the bias off: after the first revocation every inhibit
/// sees a write, so the readers start it again instead of turning the bias on, and
/// no write revokes it again, however fast or slowly the rounds run (the inhibit's
/// length only decides how often a reader starts it again). Without the written
/// inhibit (the paper's rule) every round that comes after the inhibit's end would
/// revoke: thousands.
#[test]
fn a_write_heavy_mix_keeps_the_bias_off() {
    let lock = RawRwLock::new();
    let before = revocations();
    let rounds = 200_000;
    for _ in 0..rounds {
        lock.lock_exclusive();
        lock.unlock_exclusive();
        lock.lock_shared();
        lock.unlock_shared();
    }
    let revoked = revocations() - before;
    assert_eq!(
        revoked, 1,
        "{revoked} revocations in {rounds} writes (one: the first read turned it on)"
    );
    assert_eq!(lock.word.load(Relaxed) & BIAS, 0, "the bias is off");
}

/// The lock without the bias never turns it on, so its writers never revoke.
#[test]
fn the_unbiased_lock_never_takes_the_bias() {
    let lock = RawRwLockUnbiased::new();
    let before = revocations();
    for _ in 0..1000 {
        lock.lock_shared();
        assert_eq!(readers(lock.word.load(Relaxed)), 1, "a word reader");
        lock.unlock_shared();
        lock.lock_exclusive();
        lock.unlock_exclusive();
    }
    assert_eq!(lock.word.load(Relaxed), 0);
    assert_eq!(revocations(), before);
}

/// A thread's slot is in its lane (its id modulo `LANES`) and its lock's column, and
/// readers of one lock share a slot only when their ids share a lane: threads created
/// together (consecutive kernel ids, unless other tests' threads come between) all
/// read one lock through the table at once, and those that share a lane take the
/// word, exactly one reader in the word per lane shared.
#[test]
fn readers_of_different_lanes_share_no_slot() {
    let lock = Arc::new(biased_lock());
    let threads = 16;
    let barrier = Arc::new(std::sync::Barrier::new(threads));
    let spots: Vec<_> = (0..threads)
        .map(|_| {
            let (lock, barrier) = (lock.clone(), barrier.clone());
            std::thread::spawn(move || {
                let id = crate::owner::current_tid() as usize;
                lock.lock_shared();
                let spot = bravo::lane_and_column(lock.address());
                // Every thread holds its read lock at once.
                barrier.wait();
                let in_word = readers(lock.word.load(Relaxed));
                barrier.wait();
                lock.unlock_shared();
                (id, spot, in_word)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let column = spots[0].1 .1;
    let mut lanes: Vec<usize> = spots.iter().map(|&(_, (lane, _), _)| lane).collect();
    lanes.sort_unstable();
    lanes.dedup();
    for &(id, (lane, col), in_word) in &spots {
        assert_eq!(lane, id % bravo::LANES, "thread {id}'s lane");
        assert_eq!(col, column, "one lock, one column");
        assert_eq!(
            in_word as usize,
            threads - lanes.len(),
            "readers in the word, one per lane shared: {spots:?}"
        );
    }
    assert!(!lock.is_locked());
    assert_eq!(lock.word.load(Relaxed), BIAS);
}

/// A read unlock by a thread that holds no read lock panics, though another thread
/// holds one through the table; the holder's unlock then finds its slot.
#[test]
fn an_unheld_read_unlock_panics_beside_a_biased_reader() {
    let lock = Arc::new(biased_lock());
    let (held, release) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let holder = {
        let (lock, held, release) = (lock.clone(), held.clone(), release.clone());
        std::thread::spawn(move || {
            lock.lock_shared();
            held.store(true, SeqCst);
            while !release.load(SeqCst) {
                std::thread::yield_now();
            }
            lock.unlock_shared();
        })
    };
    while !held.load(SeqCst) {
        std::thread::yield_now();
    }
    assert_eq!(
        lock.word.load(Relaxed),
        BIAS,
        "the holder reads through the table"
    );
    let err = std::panic::catch_unwind(|| lock.unlock_shared()).expect_err("no panic");
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(msg.contains("not read-locked"), "{msg}");
    release.store(true, SeqCst);
    holder.join().unwrap();
    assert!(!lock.is_locked());
    assert_eq!(lock.word.load(Relaxed), BIAS);
}

/// A timed writer that gives up while a reader holds the lock through the table puts
/// the bias back (its reader is still inside) and leaves the lock to it.
#[test]
fn a_timed_writer_that_gives_up_puts_the_bias_back() {
    let lock = Arc::new(biased_lock());
    lock.lock_shared();
    let other = lock.clone();
    let took = std::thread::spawn(move || {
        other.try_lock_exclusive_until(Instant::now() + Duration::from_millis(20))
    })
    .join()
    .unwrap();
    assert!(!took);
    assert_eq!(lock.word.load(Relaxed), BIAS);
    lock.unlock_shared();
    assert!(lock.try_lock_exclusive());
    lock.unlock_exclusive();
}

/// A fork child's `forget_waiters` turns the table's readers of the lock into word
/// readers (the forking thread's own too, which it then releases by the word), and a
/// publication that never finished (a thread gone) into nothing.
#[test]
fn forget_waiters_turns_table_readers_into_word_readers() {
    let lock = Arc::new(biased_lock());
    lock.lock_shared();
    let other = lock.clone();
    std::thread::spawn(move || {
        assert!(bravo::publish_only(other.address()));
    })
    .join()
    .unwrap();
    // SAFETY: no other thread uses the lock.
    unsafe { lock.forget_waiters() };
    assert_eq!(lock.word.load(Relaxed), READER, "one reader, the bias off");
    assert!(!bravo::held_by_any(lock.address()));
    lock.unlock_shared();
    assert_eq!(lock.word.load(Relaxed), 0);
}

/// A thread that has published itself for a biased lock but not yet looked at the
/// bias is interrupted by a signal handler that read-locks the same lock while a
/// writer revokes the bias. The writer withdraws the publication instead of waiting
/// for it, so the handler, which found its thread's slot taken and waits for the
/// writer on the word, gets the lock: it never waits for its own thread.
#[test]
fn a_handler_on_a_publishing_thread_does_not_wait_for_it() {
    static LOCK: std::sync::OnceLock<RawRwLock> = std::sync::OnceLock::new();
    static GOT: AtomicU64 = AtomicU64::new(0);
    extern "C" fn handler(_: libc::c_int) {
        let lock = LOCK.get().unwrap();
        if lock_api::RawRwLockTimed::try_lock_shared_for(lock, Duration::from_secs(5)) {
            lock.unlock_shared();
            GOT.store(1, SeqCst);
        } else {
            GOT.store(2, SeqCst);
        }
    }
    let lock: &'static RawRwLock = LOCK.get_or_init(biased_lock);
    // SAFETY: installs a handler for SIGUSR2 on a zeroed sigaction whose fields are
    // set before the call; the handler only takes and releases the lock.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as extern "C" fn(libc::c_int) as usize;
        assert_eq!(
            libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut()),
            0
        );
    }
    // This thread is "interrupted" between its publication and its look at the bias.
    assert!(bravo::publish_only(lock.address()));
    let writer = std::thread::spawn(move || {
        lock.lock_exclusive();
        std::thread::sleep(Duration::from_millis(20));
        lock.unlock_exclusive();
    });
    // The writer holds WRITER (and, broken, waits for this thread's slot).
    let deadline = Instant::now() + Duration::from_secs(5);
    while lock.word.load(Relaxed) & WRITER == 0 && !writer.is_finished() {
        assert!(Instant::now() < deadline, "the writer never came");
        std::thread::yield_now();
    }
    // SAFETY: raises a signal on this thread, whose handler is installed above.
    assert_eq!(unsafe { libc::raise(libc::SIGUSR2) }, 0);
    let got = GOT.load(SeqCst);
    assert!(
        !bravo::back_out_only(lock.address()),
        "the writer withdrew the publication"
    );
    writer.join().unwrap();
    assert_eq!(
        got, 1,
        "the handler waited for its own thread's publication"
    );
    assert!(!lock.is_locked());
}

/// A writer that waits for a reader who stays inside through the table (300 ms, as a
/// read section doing I/O) naps instead of spinning or yielding all along: it uses
/// far less CPU than the wait lasts, and still gets the lock soon after the unlock.
/// (With the writer yielding throughout, it used most of the 300 ms of CPU.)
#[test]
fn a_writer_waiting_for_a_long_table_reader_naps() {
    let lock = Arc::new(biased_lock());
    let inside = Arc::new(AtomicBool::new(false));
    let reader = {
        let (lock, inside) = (lock.clone(), inside.clone());
        std::thread::spawn(move || {
            lock.lock_shared();
            assert!(lock.has_biased_readers(), "the reader is in the table");
            // Relaxed: a go-ahead for the writer; the lock orders what it guards.
            inside.store(true, Relaxed);
            std::thread::sleep(Duration::from_millis(300));
            lock.unlock_shared();
            Instant::now()
        })
    };
    // Relaxed: as the store above.
    while !inside.load(Relaxed) {
        std::thread::yield_now();
    }
    let cpu_before = thread_cpu_time();
    lock.lock_exclusive();
    let got_it = Instant::now();
    let cpu = thread_cpu_time() - cpu_before;
    lock.unlock_exclusive();
    let released = reader.join().unwrap();
    assert!(
        cpu < Duration::from_millis(60),
        "the writer burned {cpu:?} of CPU waiting 300 ms for one reader"
    );
    let late = got_it.saturating_duration_since(released);
    assert!(
        late < Duration::from_millis(100),
        "the writer got the lock {late:?} after the reader left"
    );
}

/// The calling thread's CPU time.
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the thread's CPU time into `now`; the clock always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Turns the bias of `lock` on (as [`biased_lock`], in place).
fn bias(lock: &RawRwLock) {
    for _ in 0..bias::LOOK_EVERY {
        lock.lock_shared();
        lock.unlock_shared();
        if lock.word.load(Relaxed) & BIAS != 0 {
            return;
        }
    }
    panic!("no reader turned the bias on");
}

/// A read guard leaked with `mem::forget` (safe code), its lock dropped, and a new
/// lock put in the same place: the new lock's writer must not wait for the old
/// lock's slot (std's `RwLock`, the control, has no table and nothing to inherit).
#[test]
fn a_new_lock_in_a_dropped_locks_place_inherits_no_reader() {
    let control = Some(std::sync::RwLock::new(0u32));
    std::mem::forget(control.as_ref().unwrap().read().unwrap());
    let mut place = Some(crate::RwLock::new(0u32));
    let old = {
        let lock = place.as_ref().unwrap();
        // SAFETY: a look at the raw lock, which no guard is using.
        bias(unsafe { lock.raw() });
        std::mem::forget(lock.read());
        std::ptr::from_ref(lock) as usize
    };
    // SAFETY: as above.
    assert!(bravo::held_by_any(
        unsafe { place.as_ref().unwrap().raw() }.address()
    ));
    place = None;
    let lock = place.insert(crate::RwLock::new(1));
    assert_eq!(std::ptr::from_ref(lock) as usize, old, "the same place");
    // SAFETY: as above.
    bias(unsafe { lock.raw() });
    let deadline = Instant::now() + Duration::from_secs(2);
    let written = lock.try_write_until(deadline).map(|mut value| *value = 2);
    assert!(
        written.is_some(),
        "the new lock's writer waited for the dropped lock's forgotten reader"
    );
    assert_eq!(*lock.read(), 2);
}

/// The same with the raw lock: its `Drop` forgets the table's readers of it, and a
/// reader that then releases the forgotten lock... cannot (it is gone); its thread's
/// next read locks of other locks in the same column are unaffected.
#[test]
fn a_dropped_raw_lock_leaves_no_slot_behind() {
    let mut place = Some(RawRwLock::new());
    let old = {
        let lock = place.as_ref().unwrap();
        bias(lock);
        lock.lock_shared();
        lock.address()
    };
    assert!(bravo::held_by_any(old));
    place = None;
    assert!(
        !bravo::held_by_any(old),
        "the dropped lock's slot was cleared"
    );
    let lock = place.insert(RawRwLock::new());
    assert_eq!(lock.address(), old);
    bias(lock);
    lock.lock_shared();
    assert!(bravo::held_by_any(old), "the new lock takes the slot");
    lock.unlock_shared();
    assert!(!lock.is_locked());
    assert!(lock.try_lock_exclusive_until(Instant::now() + Duration::from_secs(2)));
    lock.unlock_exclusive();
}

/// Locks until two of them lie in different columns of the table.
fn two_columns() -> (Box<RawRwLock>, Box<RawRwLock>) {
    let first = Box::new(RawRwLock::new());
    let column = bravo::lane_and_column(first.address()).1;
    // Kept until one is found: a box freed would give its address to the next.
    let mut tried = Vec::new();
    loop {
        let second = Box::new(RawRwLock::new());
        if bravo::lane_and_column(second.address()).1 != column {
            return (first, second);
        }
        tried.push(second);
    }
}

/// A thread given the id of a thread that left a slot held (a thread that exited
/// with a guard forgotten, or a parent thread in a fork child whose tid the kernel
/// gives to a new thread): its read unlock of that lock must release its own share
/// (the word's), not the slot it never published, and its read unlock of another
/// lock it holds by its own slot must not panic.
#[test]
fn a_thread_given_a_departed_readers_id_releases_only_its_own() {
    let (stale, mine) = two_columns();
    let (stale, mine) = (Arc::new(stale), Arc::new(mine));
    bias(&stale);
    bias(&mine);
    let departed = std::thread::spawn({
        let stale = Arc::clone(&stale);
        move || {
            stale.lock_shared();
            bravo::id_for_tests()
        }
    })
    .join()
    .unwrap();
    assert!(
        bravo::held_by_any(stale.address()),
        "the departed reader's slot"
    );
    let heir = std::thread::spawn({
        let (stale, mine) = (Arc::clone(&stale), Arc::clone(&mine));
        move || {
            bravo::force_id_for_tests(departed);
            mine.lock_shared();
            assert!(bravo::held_by_any(mine.address()), "by its slot");
            stale.lock_shared();
            stale.unlock_shared();
            mine.unlock_shared();
        }
    })
    .join();
    assert!(
        heir.is_ok(),
        "the heir of a departed reader's id panicked in a read unlock"
    );
    assert!(
        bravo::held_by_any(stale.address()),
        "the departed reader's slot is still its own"
    );
    assert_eq!(
        readers(stale.word.load(Relaxed)),
        0,
        "the heir's share released"
    );
    assert!(!mine.is_locked());
}

/// A fork child: the forking thread keeps the id its slots name, and releases the
/// read lock it held at the fork; a new thread of the child whose kernel tid is that
/// id (the parent's thread left) gets another id, the forking thread's new tid, so
/// two threads of the child never share one.
#[test]
fn a_fork_child_keeps_the_forking_threads_slots_and_ids_apart() {
    let lock = biased_lock();
    lock.lock_shared();
    assert!(bravo::held_by_any(lock.address()));
    let before = bravo::id_for_tests();
    // SAFETY: the child does atomics, a gettid and _exit; no locks, no allocation.
    let child = unsafe { libc::fork() };
    if child == 0 {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        let kept = bravo::id_for_tests() == before;
        lock.unlock_shared();
        let released = !lock.is_locked();
        let apart =
            bravo::id_of_tid_for_tests(before) == tid && bravo::id_of_tid_for_tests(tid) == before;
        let code = i32::from(!kept) | i32::from(!released) << 1 | i32::from(!apart) << 2;
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    assert!(child > 0, "fork: {}", std::io::Error::last_os_error());
    let mut status = 0;
    // SAFETY: waits for our child.
    assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
    assert!(libc::WIFEXITED(status));
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "1: the id changed, 2: the held slot not released, 4: a new thread could share the forking thread's id"
    );
    lock.unlock_shared();
}

/// The kernel's tid reuse for real: a parent thread holds a biased read slot at the
/// fork and then exits in the parent; the fork child makes the kernel hand out that
/// tid next (`/proc/sys/kernel/ns_last_pid`, which needs CAP_SYS_ADMIN in the pid
/// namespace: skipped without it) to a new thread, which reads a lock of another
/// column by its own slot, then the departed reader's lock by the word, and releases
/// both. Its unlocks must release its own shares, not the departed slot, and not
/// panic.
#[test]
fn a_fork_childs_thread_given_a_departed_parent_readers_tid_releases_only_its_own() {
    const LAST_PID: &str = "/proc/sys/kernel/ns_last_pid";
    if std::fs::OpenOptions::new()
        .write(true)
        .open(LAST_PID)
        .is_err()
    {
        eprintln!("skipping: {LAST_PID} is not writable here");
        return;
    }
    let (stale, mine) = two_columns();
    let (stale, mine) = (Arc::new(stale), Arc::new(mine));
    bias(&stale);
    bias(&mine);
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let departed = std::thread::spawn({
        let stale = Arc::clone(&stale);
        move || {
            stale.lock_shared();
            // SAFETY: gettid has no preconditions.
            tid_tx.send(unsafe { libc::gettid() } as u32).unwrap();
            // Leaves holding the read lock (its slot), as a parent thread absent
            // from the child.
            go_rx.recv().unwrap();
        }
    });
    let tid = tid_rx.recv().unwrap();
    assert!(bravo::held_by_any(stale.address()));
    let mut gone = [0 as libc::c_int; 2];
    // SAFETY: a pipe into a two-element array.
    assert_eq!(unsafe { libc::pipe(gone.as_mut_ptr()) }, 0);
    // SAFETY: the child waits on the pipe, then makes threads and exits with _exit.
    let child = unsafe { libc::fork() };
    if child == 0 {
        let mut byte = 0u8;
        // SAFETY: reads one byte from our pipe into `byte`.
        unsafe { libc::read(gone[0], (&raw mut byte).cast(), 1) };
        let mut code = 3;
        for _ in 0..200 {
            let _ = std::fs::write(LAST_PID, format!("{}", tid - 1));
            let heir = std::thread::spawn({
                let (stale, mine) = (Arc::clone(&stale), Arc::clone(&mine));
                move || {
                    // SAFETY: as above.
                    if unsafe { libc::gettid() } as u32 != tid {
                        return false;
                    }
                    mine.lock_shared();
                    stale.lock_shared();
                    stale.unlock_shared();
                    mine.unlock_shared();
                    true
                }
            })
            .join();
            match heir {
                Ok(false) => std::thread::sleep(Duration::from_millis(5)),
                Ok(true) => {
                    let kept = bravo::held_by_any(stale.address());
                    let freed = readers(stale.word.load(Relaxed)) == 0 && !mine.is_locked();
                    code = if kept && freed { 0 } else { 2 };
                    break;
                }
                Err(_) => {
                    code = 1;
                    break;
                }
            }
        }
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    assert!(child > 0, "fork: {}", std::io::Error::last_os_error());
    go_tx.send(()).unwrap();
    departed.join().unwrap();
    // SAFETY: writes one byte to our pipe, then closes both ends.
    unsafe {
        libc::write(gone[1], [1u8].as_ptr().cast(), 1);
        libc::close(gone[0]);
        libc::close(gone[1]);
    }
    let mut status = 0;
    // SAFETY: waits for our child.
    assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
    assert!(libc::WIFEXITED(status), "the child died: {status:#x}");
    match libc::WEXITSTATUS(status) {
        0 => {}
        3 => eprintln!("skipping: the child never got tid {tid} back"),
        1 => panic!("the child's thread with the departed reader's tid panicked in a read unlock"),
        code => panic!("the child's thread released the wrong share (code {code})"),
    }
}
