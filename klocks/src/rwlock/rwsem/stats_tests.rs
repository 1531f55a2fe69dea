//! What `RwSem` counts under each policy (feature `stats`), exactly where the
//! algorithm decides it.

use super::reader_spin::{Adaptive, Always, Never};
use super::waiter::HANDOFF_AFTER;
use super::*;
use crate::stats::testing::*;

/// A reader behind a writer that is not running: under `Always` and `Adaptive` it
/// spins once in vain, then (every policy) queues and sleeps once. After the waiter
/// has waited longer than `HANDOFF_AFTER`, the write unlock grants it the lock and
/// wakes it once.
fn a_reader_behind_a_writer<P: ReaderSpin>() {
    let stats = RwSem::<P>::STATS;
    let lock: &'static RwSem<P> = Box::leak(Box::new(RwSem::new()));
    let ((), fast) = counted(|| {
        lock.lock_shared();
        lock.unlock_shared();
        lock.lock_exclusive();
        lock.unlock_exclusive();
    });
    expect(&fast, stats).nothing_else();

    lock.lock_exclusive();
    let reader = Contender::spawn(move || {
        lock.lock_shared();
        lock.unlock_shared();
    });
    eventually("the reader asleep", || {
        lock.count.load(Relaxed) & WAITERS != 0 && reader.asleep()
    });
    // Owed the lock: granted rather than woken to retry.
    std::thread::sleep(HANDOFF_AFTER * 2);
    let ((), unlock) = counted(|| lock.unlock_exclusive());
    let ((), read) = reader.join();
    let spins = u64::from(P::POLICY != Policy::Never);
    expect(&read, stats)
        .exactly(ReadSlowpath, 1)
        .exactly(ReaderSpinFailed, spins)
        .maybe(OwnerOffCpu)
        .exactly(Queued, 1)
        .exactly(Sleep, 1)
        .nothing_else();
    assert!(read.get(stats, OwnerOffCpu) <= spins);
    expect(&unlock, stats)
        .exactly(Granted, 1)
        .exactly(Wake, 1)
        .nothing_else();
}

/// A writer behind a reader spins on the reader-owned lock until its time is up and
/// marks it nonspinnable, queues, sleeps (timed, as the front waiter) until it is
/// owed the lock, claims the handoff once and sleeps again. The read unlock tells
/// it to try once, with one wake.
fn a_writer_behind_a_reader<P: ReaderSpin>() {
    let stats = RwSem::<P>::STATS;
    let lock: &'static RwSem<P> = Box::leak(Box::new(RwSem::new()));
    lock.lock_shared();
    let writer = Contender::spawn(move || {
        lock.lock_exclusive();
        lock.unlock_exclusive();
    });
    eventually("the writer asleep, owed the lock", || {
        lock.count.load(Relaxed) & HANDOFF != 0 && writer.asleep()
    });
    let ((), unlock) = counted(|| lock.unlock_shared());
    let ((), wrote) = writer.join();
    expect(&wrote, stats)
        .exactly(LockSlowpath, 1)
        .exactly(SpinFailed, 1)
        .exactly(Nonspinnable, 1)
        .exactly(Queued, 1)
        .exactly(HandoffClaim, 1)
        .at_least_one(Sleep)
        .nothing_else();
    expect(&unlock, stats)
        .exactly(Retry, 1)
        .exactly(Wake, 1)
        .nothing_else();
}

#[test]
fn stats_a_reader_behind_a_writer_always() {
    a_reader_behind_a_writer::<Always>();
}

#[test]
fn stats_a_reader_behind_a_writer_adaptive() {
    a_reader_behind_a_writer::<Adaptive>();
}

#[test]
fn stats_a_reader_behind_a_writer_never() {
    a_reader_behind_a_writer::<Never>();
}

#[test]
fn stats_a_writer_behind_a_reader_always() {
    a_writer_behind_a_reader::<Always>();
}

#[test]
fn stats_a_writer_behind_a_reader_adaptive() {
    a_writer_behind_a_reader::<Adaptive>();
}

#[test]
fn stats_a_writer_behind_a_reader_never() {
    a_writer_behind_a_reader::<Never>();
}
