//! Exhaustive checks of the default rwlock's reader bias ([`bravo`](super::bravo),
//! `raw_rwlock/bias.rs`) under the C11 memory model: `RUSTFLAGS="--cfg loom" cargo
//! test -p klocks --release --lib rwlock::loom`. Under loom the table is 2 lanes × 2
//! columns and every lock is in column 0; model threads have ids 1, 2, ..., in the
//! order they first ask, so the first two have lanes of their own. A loom
//! `UnsafeCell` fails any execution in which a write section is not ordered with a
//! read section.

use super::bravo;
use super::raw_rwlock::RawRwLock;
use crate::sync::{spawn, Arc, UnsafeCell};

/// A lock whose reader bias a reader turned on (its entry through the word).
fn biased_lock() -> Arc<RawRwLock> {
    let lock = Arc::new(RawRwLock::new());
    lock.lock_shared();
    lock.unlock_shared();
    assert!(format!("{lock:?}").contains("reader_bias: true"));
    lock
}

fn address(lock: &RawRwLock) -> usize {
    std::ptr::from_ref(lock) as usize
}

/// A thread that read-locks `lock` once and reads `cell` inside.
fn spawn_reader(
    lock: &Arc<RawRwLock>,
    cell: &Arc<UnsafeCell<u32>>,
) -> loom::thread::JoinHandle<()> {
    let (lock, cell) = (lock.clone(), cell.clone());
    spawn(move || {
        lock.lock_shared();
        // SAFETY (here and in the models): loom checks every access to the cell
        // against the others; the lock under test must order them.
        cell.with(|v| unsafe { *v });
        lock.unlock_shared();
    })
}

/// A biased reader publishes itself while a writer revokes the bias: the writer sees
/// it (and waits, or withdraws its publication), or the reader sees the bias off and
/// takes the word; the cell catches a read section that overlaps the write. (Without
/// either SeqCst fence this model fails: the writer's, or the reader's that the loom
/// build adds after its SeqCst publication, `bravo` module doc.)
#[test]
fn biased_reader_against_a_revoking_writer() {
    super::loom_models::builder(2).check(|| {
        let lock = biased_lock();
        let cell = Arc::new(UnsafeCell::new(0u32));
        let reader = spawn_reader(&lock, &cell);
        lock.lock_exclusive();
        // SAFETY: as in `spawn_reader`.
        cell.with_mut(|v| unsafe { *v += 1 });
        lock.unlock_exclusive();
        reader.join().unwrap();
        assert!(!lock.is_locked());
    });
}

/// A writer's data is seen by a reader that enters through the table after it: the
/// reader reads twice (the first entry may turn the bias on again), and each read is
/// ordered after the write or before it, never racing with it.
#[test]
fn a_biased_reader_sees_the_last_write() {
    super::loom_models::builder(1).check(|| {
        let lock = biased_lock();
        let cell = Arc::new(UnsafeCell::new(0u32));
        let writer = {
            let (lock, cell) = (lock.clone(), cell.clone());
            spawn(move || {
                lock.lock_exclusive();
                // SAFETY (here and below): as in `spawn_reader`.
                cell.with_mut(|v| unsafe { *v = 1 });
                lock.unlock_exclusive();
            })
        };
        let mut seen = 0;
        for _ in 0..2 {
            lock.lock_shared();
            let now = cell.with(|v| unsafe { *v });
            lock.unlock_shared();
            assert!(now >= seen);
            seen = now;
        }
        writer.join().unwrap();
        assert!(!lock.is_locked());
    });
}

/// A reader that published itself and stops there (a thread interrupted between its
/// two cmpxchgs by a signal handler that waits for the writer, or gone in a fork
/// child) while a writer revokes the bias: the writer withdraws the publication
/// instead of waiting for it (a wait would never end, which loom reports as a
/// deadlock: the reader goes on only after the writer is done). The reader's
/// back-out then fails exactly when the writer withdrew it, which a writer does only
/// after it revoked the bias; and the slot ends empty either way.
#[test]
fn a_revoking_writer_withdraws_a_publishing_slot() {
    super::loom_models::builder(2).check(|| {
        let lock = biased_lock();
        let writer = {
            let lock = lock.clone();
            spawn(move || {
                lock.lock_exclusive();
                lock.unlock_exclusive();
            })
        };
        assert!(
            bravo::publish_only(address(&lock)),
            "this thread's slot was free"
        );
        writer.join().unwrap();
        let backed_out = bravo::back_out_only(address(&lock));
        let debug = format!("{lock:?}");
        assert!(
            backed_out || debug.contains("reader_bias: false"),
            "{debug}"
        );
        assert!(!bravo::held_by_any(address(&lock)));
        assert!(
            bravo::publish_only(address(&lock)),
            "the slot is empty again"
        );
        assert!(bravo::back_out_only(address(&lock)));
        assert!(!lock.is_locked());
    });
}

/// With the inhibit on (time is not modelled: a switch says it has not passed), a
/// revoked bias stays off: readers after the revocation take the word, and leave it
/// off; the sections are still ordered.
#[test]
fn an_inhibited_bias_stays_off() {
    crate::testing::with_switch(&super::raw_rwlock::bias::INHIBITED_IN_MODELS, true, || {
        super::loom_models::builder(1).check(|| {
            let lock = biased_lock();
            let reader = {
                let lock = lock.clone();
                spawn(move || {
                    for _ in 0..2 {
                        lock.lock_shared();
                        lock.unlock_shared();
                    }
                })
            };
            lock.lock_exclusive();
            lock.unlock_exclusive();
            reader.join().unwrap();
            assert!(format!("{lock:?}").contains("reader_bias: false"));
            assert!(!lock.is_locked());
        });
    });
}

/// A fork child's `forget_waiters`: a thread that held a read lock through the table
/// (and is gone, as in the child) becomes a reader of the word, so that writers wait
/// for it as for any reader left behind, and the forking thread's own read lock
/// through the table becomes a word reader that its unlock releases.
#[test]
fn forget_waiters_turns_table_readers_into_word_readers() {
    super::loom_models::builder(1).check(|| {
        let lock = biased_lock();
        lock.lock_shared();
        let gone = {
            let lock = lock.clone();
            // Takes the lock through its own lane's slot and never releases it.
            spawn(move || lock.lock_shared())
        };
        gone.join().unwrap();
        assert!(bravo::held_by_any(address(&lock)));
        // SAFETY: no other thread uses the lock any more.
        unsafe { lock.forget_waiters() };
        assert!(!bravo::held_by_any(address(&lock)));
        let debug = format!("{lock:?}");
        assert!(debug.contains("readers: 2"), "{debug}");
        assert!(debug.contains("reader_bias: false"), "{debug}");
        lock.unlock_shared();
        assert!(
            !lock.try_lock_exclusive(),
            "the gone thread's read lock stays"
        );
        assert!(format!("{lock:?}").contains("readers: 1"));
    });
}

/// The word's protocol with the bias free to turn on: a reader and a writer, twice
/// each, on a lock made with its bias. The reader's first entry (through the word)
/// may turn the bias on, so its second may go through the table while the writer
/// revokes, drains, sleeps or hands the reader its turn.
#[test]
fn a_reader_and_a_writer_twice_with_the_bias() {
    crate::testing::explore_rw::<RawRwLock>(1, 1, 2);
}

/// An upgradable holder beside a reader in the table: the holder takes `WRITER`
/// from the biased word and leaves the bias on (readers may enter beside it), so
/// its upgrade must revoke the bias and wait for the table's reader before it
/// writes; `try_upgrade` first, which fails rather than wait while a published
/// reader is inside.
#[test]
fn an_upgrade_waits_for_a_table_reader() {
    super::loom_models::builder(1).check(|| {
        let lock = biased_lock();
        let cell = Arc::new(UnsafeCell::new(0u32));
        let reader = spawn_reader(&lock, &cell);
        lock.lock_upgradable();
        // SAFETY (here and below): as in `spawn_reader`.
        let seen = cell.with(|v| unsafe { *v });
        if !lock.try_upgrade() {
            lock.upgrade();
        }
        cell.with_mut(|v| unsafe { *v = seen + 1 });
        lock.unlock_exclusive();
        reader.join().unwrap();
        assert!(!lock.is_locked());
        assert!(!bravo::held_by_any(address(&lock)));
    });
}

/// A writer that revoked the bias downgrades to a read lock while a reader comes:
/// the reader reads beside the downgraded holder (through the word: the bias is
/// off until a reader turns it on again) and never beside the write.
#[test]
fn a_downgrade_after_a_revocation() {
    super::loom_models::builder(1).check(|| {
        let lock = biased_lock();
        let cell = Arc::new(UnsafeCell::new(0u32));
        let reader = spawn_reader(&lock, &cell);
        lock.lock_exclusive();
        // SAFETY (here and below): as in `spawn_reader`.
        cell.with_mut(|v| unsafe { *v = 1 });
        lock.downgrade();
        assert_eq!(cell.with(|v| unsafe { *v }), 1);
        lock.unlock_shared();
        reader.join().unwrap();
        assert!(!lock.is_locked());
        assert!(!bravo::held_by_any(address(&lock)));
    });
}

/// A reader leaks a read lock of `leaked` (its slot held, as after `mem::forget` of
/// a guard), then reads `other` (every lock is in column 0 under loom: the same
/// slot); meanwhile `leaked` is dropped, which empties the slot that names it, and a
/// writer takes `other`. The drop's clear races the reader's publication for
/// `other` and the writer's scan of the column: the reader holds `other` by its slot
/// or by the word and releases exactly that (its read unlock after the clear must
/// not take the cleared slot for its own, nor panic), the writer's section is
/// ordered with the read one, and no slot names the dropped lock afterwards.
#[test]
fn a_dropped_lock_takes_its_leaked_reader_with_it() {
    super::loom_models::builder(2).check(|| {
        let leaked = Box::new(RawRwLock::new());
        leaked.lock_shared();
        leaked.unlock_shared();
        assert!(format!("{leaked:?}").contains("reader_bias: true"));
        let leaked_at = address(&leaked);
        let other = biased_lock();
        let cell = Arc::new(UnsafeCell::new(0u32));
        let entered = Arc::new(crate::sync::AtomicU32::new(0));
        let reader = {
            let (other, cell, entered) = (other.clone(), cell.clone(), entered.clone());
            spawn(move || {
                // SAFETY: the lock is dropped only after the Release store below, the
                // reader's last use of it.
                let leaked = unsafe { &*(leaked_at as *const RawRwLock) };
                leaked.lock_shared();
                // Release: pairs with the Acquire load before the drop.
                entered.store(1, crate::sync::Ordering::Release);
                other.lock_shared();
                // SAFETY: as in `spawn_reader`.
                cell.with(|v| unsafe { *v });
                other.unlock_shared();
            })
        };
        // Acquire: pairs with the reader's Release store after its read lock.
        while entered.load(crate::sync::Ordering::Acquire) == 0 {
            crate::sync::yield_now();
        }
        assert!(bravo::held_by_any(leaked_at) || !format!("{leaked:?}").contains("true"));
        drop(leaked);
        assert!(
            !bravo::held_by_any(leaked_at),
            "the dropped lock's slot is empty"
        );
        other.lock_exclusive();
        // SAFETY: as in `spawn_reader`.
        cell.with_mut(|v| unsafe { *v += 1 });
        other.unlock_exclusive();
        reader.join().unwrap();
        assert!(!other.is_locked());
        assert!(!bravo::held_by_any(leaked_at));
    });
}

/// A thread whose slot a drop emptied (it leaked a read lock of the dropped lock, so
/// it still counts that slot as its own) read-locks another lock of the column while
/// a writer revokes that lock's bias: by the freed slot, or by the word when the
/// writer came first; its unlock releases what it holds (a look at the slot shows
/// whether it is its own), never a slot it did not publish, and the lock ends free.
#[test]
fn a_leave_after_the_clear_releases_only_its_own() {
    super::loom_models::builder(2).check(|| {
        let other = biased_lock();
        {
            let leaked = RawRwLock::new();
            leaked.lock_shared();
            leaked.unlock_shared();
            leaked.lock_shared();
            assert!(bravo::held_by_any(address(&leaked)));
        }
        let writer = {
            let other = other.clone();
            spawn(move || {
                other.lock_exclusive();
                other.unlock_exclusive();
            })
        };
        other.lock_shared();
        other.unlock_shared();
        writer.join().unwrap();
        assert!(!other.is_locked());
    });
}
