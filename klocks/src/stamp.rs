//! Generation stamps: repair a shared object once, on its first use in a newer
//! generation.
//!
//! The pthread interposer (`klocks-ffi`) keeps a lock inside each `pthread_mutex_t`
//! and `pthread_rwlock_t`, with a 32-bit stamp: the fork generation the object was
//! last used in. A fork child inherits objects whose words may name threads it does
//! not have; the first use in the child must repair the object while the child's
//! other threads keep off it. [`make_current`] is that election:
//!
//! - A thread that loads the current generation (`Acquire`) uses the object at once.
//! - Otherwise, the thread whose CAS turns the stale stamp into [`REPAIRING`] owns
//!   the object: no other thread touches it until the owner stores a stamp again.
//! - The owner either repairs it and stores the current generation (`Release`), or
//!   finds that it must not be the one (the object is held by a thread that must
//!   re-take it itself) and stores the stale stamp back (`Release`), untouched.
//! - Everyone else waits and tries again.
//!
//! Orderings: the owner's repair writes happen-before its `Release` store of the new
//! generation, which every later `Acquire` load or CAS reads from, directly or
//! through the stores that follow it in the stamp's modification order (only CASes
//! from a stale value and those two stores ever write it). The loom models check it,
//! with a negative control that publishes with `Relaxed`.

use crate::sync::{AtomicU32, Ordering};

/// The stamp of an object being repaired: a magic value, never a generation (the
/// interposer keeps rwlock stamps in padding that a stack initialiser may leave as
/// garbage, so small numbers and all-ones are avoided).
pub const REPAIRING: u32 = 0x4B4C_4B52;

/// What the owner of a stale object did with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repair {
    /// Repaired: the object is current.
    Done,
    /// Not this thread's to repair: handed back untouched, for another thread.
    NotMine,
}

/// Returns `true` once `stamp` holds `now`, after running `repair(stale)` on the one
/// thread that wins a stale stamp (again after a [`Repair::NotMine`]). `pause(round)`
/// runs between tries and says whether to keep trying: `false` returns `false` at
/// once, the object still stale (a try-lock that must not wait for another thread's
/// repair). `repair` has the object to itself while it runs.
pub fn make_current(
    stamp: &AtomicU32,
    now: u32,
    repair: impl FnMut(u32) -> Repair,
    pause: impl FnMut(u32) -> bool,
) -> bool {
    make_current_publishing(stamp, now, repair, pause, Ordering::Release)
}

/// [`make_current`] with the ordering of the stores that end a repair (the negative
/// control weakens it).
fn make_current_publishing(
    stamp: &AtomicU32,
    now: u32,
    mut repair: impl FnMut(u32) -> Repair,
    mut pause: impl FnMut(u32) -> bool,
    publish: Ordering,
) -> bool {
    let mut round = 0;
    loop {
        // Acquire: pairs with the `publish` (Release) stores below, of this call or
        // another thread's, which end every repair.
        let seen = stamp.load(Ordering::Acquire);
        if seen == now {
            return true;
        }
        // Acquire on success: as above. The CAS from a stale value is what makes
        // this thread the only one touching the object until it stores again.
        let won = seen != REPAIRING
            && stamp
                .compare_exchange(seen, REPAIRING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok();
        if won {
            match repair(seen) {
                Repair::Done => {
                    stamp.store(now, publish);
                    return true;
                }
                Repair::NotMine => stamp.store(seen, publish),
            }
        }
        if !pause(round) {
            return false;
        }
        round = round.saturating_add(1);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sync::Ordering::SeqCst;

    #[test]
    fn a_current_stamp_skips_the_repair() {
        let stamp = AtomicU32::new(3);
        assert!(make_current(
            &stamp,
            3,
            |_| panic!("repaired a current object"),
            |_| true
        ));
    }

    #[test]
    fn a_stale_stamp_is_repaired_once_and_made_current() {
        let stamp = AtomicU32::new(1);
        let mut repairs = Vec::new();
        make_current(
            &stamp,
            2,
            |stale| {
                repairs.push(stale);
                Repair::Done
            },
            |_| true,
        );
        assert_eq!(repairs, [1]);
        assert_eq!(stamp.load(SeqCst), 2);
    }

    #[test]
    fn not_mine_hands_the_object_back_until_its_owner_comes() {
        let stamp = AtomicU32::new(0);
        std::thread::scope(|s| {
            // Refuses until the other thread has repaired; pauses count the waits.
            let waiter = s.spawn(|| {
                let mut pauses = 0;
                make_current(
                    &stamp,
                    1,
                    |_| Repair::NotMine,
                    |_| {
                        pauses += 1;
                        std::thread::yield_now();
                        true
                    },
                );
                pauses
            });
            std::thread::sleep(std::time::Duration::from_millis(5));
            make_current(
                &stamp,
                1,
                |_| Repair::Done,
                |_| {
                    std::thread::yield_now();
                    true
                },
            );
            assert!(waiter.join().unwrap() > 0);
        });
        assert_eq!(stamp.load(SeqCst), 1);
    }

    #[test]
    fn a_try_gives_up_on_an_object_only_another_thread_may_repair() {
        let stamp = AtomicU32::new(0);
        let current = make_current(&stamp, 1, |_| Repair::NotMine, |_| false);
        assert!(!current);
        assert_eq!(stamp.load(SeqCst), 0, "handed back stale and untouched");
    }
}

/// Exhaustive checks of the election under the C11 memory model: the object's body
/// is a loom `UnsafeCell`, so any use not ordered after the repair's writes fails.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::sync::{spawn, yield_now, Arc, UnsafeCell};
    use loom::sync::atomic::{AtomicBool, AtomicUsize};

    /// A stale object (stamp 0, body 0), a count of repairs, and whether an owner
    /// refused once already.
    struct Object {
        stamp: AtomicU32,
        body: UnsafeCell<u32>,
        repairs: AtomicUsize,
        refused: AtomicBool,
    }

    /// Makes the object current in generation 1 (the first owner hands it back if
    /// `refuse_once`, so that the hand-back is explored too), then reads the
    /// repaired body.
    fn use_object(object: &Object, refuse_once: bool, publish: Ordering) {
        make_current_publishing(
            &object.stamp,
            1,
            |stale| {
                assert_eq!(stale, 0);
                // Relaxed: owners are ordered by the election itself.
                if refuse_once && !object.refused.swap(true, Ordering::Relaxed) {
                    return Repair::NotMine;
                }
                // SAFETY: the election gives this thread the object to itself.
                object.body.with_mut(|body| unsafe { *body = 42 });
                object.repairs.fetch_add(1, Ordering::Relaxed);
                Repair::Done
            },
            |_| {
                yield_now();
                true
            },
            publish,
        );
        // SAFETY: loom checks that this read is ordered after the repair's write.
        object.body.with(|body| assert_eq!(unsafe { *body }, 42));
    }

    /// Two threads use one stale object.
    fn model(refuse_once: bool, publish: Ordering) {
        // The waiter spins (with `yield_now`): bound the preemptions, as the rwsem's
        // models do, so that loom's search ends.
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(2);
        }
        builder.max_branches = builder.max_branches.max(100_000);
        builder.check(move || {
            let object = Arc::new(Object {
                stamp: AtomicU32::new(0),
                body: UnsafeCell::new(0),
                repairs: AtomicUsize::new(0),
                refused: AtomicBool::new(false),
            });
            let other = {
                let object = object.clone();
                spawn(move || use_object(&object, refuse_once, publish))
            };
            use_object(&object, refuse_once, publish);
            other.join().unwrap();
            assert_eq!(object.repairs.load(Ordering::Relaxed), 1);
        });
    }

    #[test]
    fn one_repair_and_the_other_thread_sees_it() {
        model(false, Ordering::Release);
    }

    #[test]
    fn a_handed_back_object_is_repaired_by_the_next_owner() {
        model(true, Ordering::Release);
    }

    /// The negative control: a repair published with `Relaxed` races with the other
    /// threads' reads.
    #[test]
    #[should_panic]
    fn a_relaxed_publication_is_caught() {
        model(false, Ordering::Relaxed);
    }
}
