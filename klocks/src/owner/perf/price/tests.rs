use super::super::{check, current_is_watched, find, is_clock, tid_of, PerfWatch, FREE};
use super::*;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

/// Registers the calling thread; `false` (with a note) where perf or the budget
/// refuses it.
fn register() -> bool {
    // Another test's thread may be probing the layout: ask until it is settled.
    while !super::super::watch_current() {
        thread::yield_now();
    }
    if !current_is_watched() {
        eprintln!(
            "perf refused ({:?}) or its budget spent: nothing to review",
            check()
        );
    }
    current_is_watched()
}

/// The calling thread's slot, registered or moved.
fn own_slot() -> Option<usize> {
    match OWN.with(Cell::get) {
        Own::Slot(slot) | Own::Clock(slot) => Some(slot),
        _ => None,
    }
}

/// `calls` reviews' worth of `watch_current`s, each after `work` and one switch
/// (a 1 µs sleep blocks: a switch out and back in).
fn switch_and_review(calls: u32, mut work: impl FnMut()) {
    for _ in 0..calls {
        work();
        thread::sleep(Duration::from_micros(1));
        review_now_and_then();
    }
}

/// A thread that switches every few µs of CPU moves to its clock: its ring is
/// unmapped and its fd closed, its key says so, a waiter that was watching its ring
/// follows it to the clock (and sees it run), and its exit frees the slot.
#[test]
fn a_thread_that_switches_often_moves_to_its_cpu_clock() {
    let (to_waiter, from_owner) = mpsc::channel();
    let (to_owner, from_waiter) = mpsc::channel::<()>();
    let stop = Arc::new(AtomicBool::new(false));
    let owner = {
        let stop = stop.clone();
        thread::spawn(move || {
            if !register() {
                to_waiter.send(None).unwrap();
                return None;
            }
            to_waiter.send(Some(current_tid())).unwrap();
            from_waiter.recv().unwrap();
            switch_and_review(4 * REVIEW_EVERY, || {});
            let slot = own_slot().unwrap();
            let entry = &REGISTRY.slots[slot];
            // Relaxed: this thread's own slot.
            let unmapped = entry.fd.load(Relaxed) == -1 && entry.ring.load(Relaxed).is_null();
            to_waiter
                .send(Some((!current_is_watched() && unmapped) as u32))
                .unwrap();
            // Run on a CPU until told to stop.
            while !stop.load(Relaxed) {
                std::hint::spin_loop();
            }
            Some(slot)
        })
    };
    let Some(tid) = from_owner.recv().unwrap() else {
        owner.join().unwrap();
        return;
    };
    // A waiter watching the ring before the move.
    let mut watch = PerfWatch::new(tid);
    assert!(watch.owner_running().is_some(), "the ring did not answer");
    to_owner.send(()).unwrap();
    assert_eq!(
        from_owner.recv().unwrap(),
        Some(1),
        "the thread kept its ring after switching every few µs"
    );
    let found = find(tid).expect("the moved thread has no key");
    assert!(
        is_clock(found.key),
        "the moved thread's key is not a clock key"
    );
    // The same watch now reads the clock: the owner spins, so it is seen running
    // (within a second: on a loaded machine it may be preempted at first).
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut seen = watch.owner_running();
    while seen != Some(true) && Instant::now() < deadline {
        thread::sleep(Duration::from_micros(20));
        seen = watch.owner_running();
    }
    stop.store(true, Relaxed);
    let slot = owner.join().unwrap().unwrap();
    assert_eq!(
        seen,
        Some(true),
        "the watch did not follow the thread to its clock"
    );
    // Relaxed: the thread has exited; its destructor ran before the join returned.
    let key = REGISTRY.keys[slot].load(Relaxed);
    assert!(
        tid_of(key) != (tid | CLOCK),
        "the exited thread still holds its clock slot"
    );
    assert!(tid_of(key) == FREE || generation_of_key_changed(key, found.key));
}

/// Whether `key` belongs to a later claim of the slot than `old`.
fn generation_of_key_changed(key: u64, old: u64) -> bool {
    key >> 32 != old >> 32
}

/// A thread that runs long between its switches stays registered through many
/// reviews.
#[test]
fn a_thread_that_runs_between_switches_keeps_its_ring() {
    let kept = thread::spawn(|| {
        if !register() {
            return true;
        }
        // 4 × CPU_PER_SWITCH of CPU before every switch (a preemption in between
        // halves it at worst).
        let run = || {
            let until = own_cpu_ns().unwrap() + 4 * CPU_PER_SWITCH_NS;
            while own_cpu_ns().unwrap() < until {
                std::hint::spin_loop();
            }
        };
        switch_and_review(3 * REVIEW_EVERY, run);
        current_is_watched()
    })
    .join()
    .unwrap();
    assert!(
        kept,
        "a thread running 200 µs between switches lost its ring"
    );
}
