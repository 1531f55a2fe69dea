use super::super::tests::perf_fds;
use super::*;
use std::sync::{Arc, Barrier};
use std::thread;

/// Threads registering at once: far beyond the budget.
const THREADS: usize = 1000;
/// Fds that the test harness may open or close meanwhile.
const SLACK: usize = 16;

/// The fds this process holds.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Bytes of perf rings mapped into this process (the pages the budget locks).
fn perf_ring_bytes() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|line| line.contains("perf_event"))
        .filter_map(|line| {
            let (start, end) = line.split_whitespace().next()?.split_once('-')?;
            let start = usize::from_str_radix(start, 16).ok()?;
            Some(usize::from_str_radix(end, 16).ok()? - start)
        })
        .sum()
}

/// Registrations counted in the budget.
fn reserved() -> usize {
    // Relaxed: a census taken while the threads it counts are quiescent.
    REGISTERED.load(Relaxed)
}

/// Slots whose key names the calling thread.
fn slots_of_this_thread() -> usize {
    let tid = current_tid();
    REGISTRY
        .keys
        .iter()
        // Relaxed: this thread's own keys, written by this thread.
        .filter(|key| tid_of(key.load(Relaxed)) == tid)
        .count()
}

/// A signal handler that interrupts its thread's registration and meets
/// contention (simulated by the hook, which runs inside the registration) does
/// not register the thread a second time: one slot, retired at exit.
#[test]
fn a_registration_interrupted_on_its_thread_takes_one_slot() {
    if let Err(err) = check() {
        eprintln!("perf refused ({err}): no registration to interrupt");
        return;
    }
    let (nested, slots) = thread::spawn(|| {
        let nested = std::rc::Rc::new(Cell::new(None));
        let seen = nested.clone();
        crate::fault::hook::with(
            crate::fault::hook::Point::DuringRegistration,
            move || {
                watch_current();
                seen.set(Some(current_is_watched()));
            },
            watch_current,
        );
        (nested.get(), slots_of_this_thread())
    })
    .join()
    .unwrap();
    assert_eq!(
        nested,
        Some(false),
        "the interrupting call registered the thread"
    );
    assert!(slots <= 1, "{slots} slots for one thread");
}

#[test]
fn the_budget_bounds_fds_and_rings() {
    // Alone in a child process: see `crate::testing::alone`.
    if !crate::testing::alone("owner::perf::tests::the_budget_bounds_fds_and_rings") {
        return;
    }
    // Where perf is refused nobody registers, and the bounds hold trivially.
    let perf = check();
    if let Err(err) = &perf {
        eprintln!("perf refused ({err}): checking the bounds without registrations");
    }
    let ring = layout().map_or(0, |layout| layout.map_len());
    let before = (open_fds(), perf_fds(), registered_slots(), reserved());
    let rings_before = perf_ring_bytes();
    let registered = Arc::new(Barrier::new(THREADS + 1));
    let exit = Arc::new(Barrier::new(THREADS + 1));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (registered, exit) = (registered.clone(), exit.clone());
            thread::Builder::new()
                .stack_size(64 << 10)
                .spawn(move || {
                    watch_current();
                    let watched = current_is_watched();
                    registered.wait();
                    exit.wait();
                    watched
                })
                .unwrap()
        })
        .collect();
    registered.wait();
    // Every thread is alive and has tried.
    let during = (open_fds(), perf_fds(), registered_slots(), reserved());
    let rings_during = perf_ring_bytes();
    exit.wait();
    // Joined one by one: a thread's destructors (which retire its ring) have run
    // when its join returns.
    let watched = threads
        .into_iter()
        .map(|thread| thread.join().unwrap())
        .filter(|&watched| watched)
        .count();
    let after = (open_fds(), perf_fds(), registered_slots(), reserved());
    let rings_after = perf_ring_bytes();
    let report = format!(
        "(fds, perf fds, slots, reserved) before {before:?}, during {during:?}, after \
         {after:?}; ring bytes {rings_before}, {rings_during}, {rings_after}"
    );
    assert!(watched <= MAX_WATCHED, "{watched} watched; {report}");
    assert!(during.2 <= MAX_WATCHED, "{report}");
    assert!(during.0 <= before.0 + MAX_WATCHED + SLACK, "{report}");
    assert_eq!(during.1, before.1 + watched, "{report}");
    assert_eq!(during.2, before.2 + watched, "{report}");
    assert_eq!(during.3, before.3 + watched, "{report}");
    assert!(after.0 <= before.0 + SLACK, "{report}");
    // The locked memory: exactly one ring per registration, within the budget.
    assert_eq!(rings_during, rings_before + watched * ring, "{report}");
    assert!(
        rings_during - rings_before <= MAX_WATCHED * ring,
        "{report}"
    );
    assert_eq!(rings_after, rings_before, "{report}");
    assert_eq!(
        (after.1, after.2, after.3),
        (before.1, before.2, before.3),
        "{report}"
    );
    if perf.is_ok() {
        assert!(watched > 0, "perf works, yet nobody registered; {report}");
        // The places came back: a new thread registers.
        assert!(thread::spawn(|| {
            watch_current();
            current_is_watched()
        })
        .join()
        .unwrap());
    }
}

/// Threads that meet contention together while the process probes perf for the
/// first time are all registered: one that asks while another probes is told "not
/// yet" and registers at its next call, instead of never. Run alone in a child
/// process, so that the probe has not run yet.
#[test]
fn threads_that_ask_while_perf_is_probed_register_later() {
    if !crate::testing::alone(
        "owner::perf::tests::threads_that_ask_while_perf_is_probed_register_later",
    ) {
        return;
    }
    const RACERS: usize = 8;
    let start = Arc::new(Barrier::new(RACERS));
    let racers: Vec<_> = (0..RACERS)
        .map(|_| {
            let start = start.clone();
            thread::spawn(move || {
                start.wait();
                let mut calls = 1;
                while !watch_current() {
                    calls += 1;
                    thread::yield_now();
                }
                (current_is_watched(), calls)
            })
        })
        .collect();
    let seen: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    if let Err(err) = check() {
        eprintln!("perf refused ({err}): nobody registers");
        return;
    }
    assert!(
        seen.iter().all(|&(watched, _)| watched),
        "(registered, calls) per thread: {seen:?}"
    );
}
