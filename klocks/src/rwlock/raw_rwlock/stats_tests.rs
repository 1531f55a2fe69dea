//! What `RawRwLock` counts (feature `stats`), exactly where the algorithm decides it.
//! The locks here are made without the reader bias (`bias.rs`, whose counts its own
//! tests check): these count the word's transitions, which a reader that turned the
//! bias on would take through the table instead.

use super::*;
use crate::stats::testing::*;
use crate::turn::TURN_US;

/// A reader behind a writer that is not running spins once in vain and sleeps once;
/// the write unlock wakes the readers once (no writer sleeps: no reader turn).
#[test]
fn stats_a_reader_behind_a_writer_sleeps_once_and_is_woken_once() {
    let lock: &'static RawRwLock = Box::leak(Box::new(RawRwLock::with_bias(false)));
    let ((), fast) = counted(|| {
        lock.lock_shared();
        lock.unlock_shared();
        lock.lock_exclusive();
        lock.unlock_exclusive();
    });
    expect(&fast, STATS).nothing_else();

    lock.lock_exclusive();
    let reader = Contender::spawn(move || {
        lock.lock_shared();
        lock.unlock_shared();
    });
    eventually("the reader asleep", || {
        lock.word.load(Relaxed) & READERS_WAITING != 0 && reader.asleep()
    });
    let ((), unlock) = counted(|| lock.unlock_exclusive());
    let ((), read) = reader.join();
    expect(&read, STATS)
        .exactly(ReadSlowpath, 1)
        .exactly(ReaderSpinFailed, 1)
        .maybe(OwnerOffCpu)
        .exactly(Sleep, 1)
        .nothing_else();
    assert!(read.get(STATS, OwnerOffCpu) <= 1);
    expect(&unlock, STATS).exactly(Wake, 1).nothing_else();
}

/// A writer behind a reader takes the write bit, waits for the reader to leave
/// (one drain, one sleep), and the last read unlock wakes it once.
#[test]
fn stats_a_writer_drains_a_reader_and_is_woken_once() {
    let lock: &'static RawRwLock = Box::leak(Box::new(RawRwLock::with_bias(false)));
    lock.lock_shared();
    let writer = Contender::spawn(move || {
        lock.lock_exclusive();
        lock.unlock_exclusive();
    });
    eventually("the writer asleep", || {
        lock.word.load(Relaxed) & DRAIN_SLEEPS != 0 && writer.asleep()
    });
    let ((), unlock) = counted(|| lock.unlock_shared());
    let ((), wrote) = writer.join();
    expect(&wrote, STATS)
        .exactly(LockSlowpath, 1)
        .exactly(Drain, 1)
        .exactly(Sleep, 1)
        .nothing_else();
    expect(&unlock, STATS).exactly(Wake, 1).nothing_else();
}

/// A writer whose turn is over (it woke from a sleep as a writer more than
/// [`TURN_US`] ago) finds the lock write-held while another writer sleeps: it sleeps
/// at once behind the sleeper, without a yield. A writer that never slept has no turn
/// to be over: see the next test.
#[test]
fn stats_a_writer_whose_turn_is_over_sleeps_behind_the_sleepers() {
    let lock: &'static RawRwLock = Box::leak(Box::new(RawRwLock::with_bias(false)));
    lock.lock_exclusive();
    let first = Contender::spawn(move || {
        lock.lock_exclusive();
        lock.unlock_exclusive();
    });
    eventually("the first writer asleep", || {
        lock.word.load(Relaxed) & WRITERS_WAITING != 0 && first.asleep()
    });
    let second = Contender::spawn(move || {
        Turn::RwLockWriter.begin();
        std::thread::sleep(std::time::Duration::from_micros(2 * u64::from(TURN_US)));
        lock.lock_exclusive();
        lock.unlock_exclusive();
    });
    // Asleep on the lock, not in its own `sleep` above.
    eventually("the second writer asleep", || {
        lock.writers_asleep.load(Relaxed) == 2 && second.asleep()
    });
    lock.unlock_exclusive();
    // The first writer may take a turn too: on a loaded machine it can run 1 ms
    // after its wake and find the second holding the lock.
    first.join();
    let ((), second) = second.join();
    assert_eq!(second.get(STATS, LockSlowpath), 1);
    assert_eq!(second.get(STATS, TurnOver), 1);
    assert!(second.get(STATS, Sleep) >= 1);
    assert_eq!(second.get(STATS, Yield), 0);
}

/// A writer that never slept finds the lock write-held while another writer sleeps:
/// it has no turn to be over ([`crate::turn`]), so it spins and yields before it
/// sleeps, as any writer's first wait.
#[test]
fn stats_a_writer_that_never_slept_takes_no_turn() {
    let lock: &'static RawRwLock = Box::leak(Box::new(RawRwLock::with_bias(false)));
    lock.lock_exclusive();
    let first = Contender::spawn(move || {
        lock.lock_exclusive();
        lock.unlock_exclusive();
    });
    eventually("the first writer asleep", || {
        lock.word.load(Relaxed) & WRITERS_WAITING != 0 && first.asleep()
    });
    let second = Contender::spawn(move || {
        lock.lock_exclusive();
        lock.unlock_exclusive();
    });
    eventually("the second writer asleep", || second.asleep());
    lock.unlock_exclusive();
    first.join();
    let ((), second) = second.join();
    assert_eq!(second.get(STATS, TurnOver), 0);
    assert!(second.get(STATS, Yield) >= 1);
}
