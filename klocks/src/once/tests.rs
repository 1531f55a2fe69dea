use super::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicU32 as Counter;
use std::time::Duration;

#[test]
fn the_closure_runs_once_among_racing_threads() {
    let once = Once::new();
    let runs = Counter::new(0);
    assert_eq!(once.state(), OnceState::New);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                once.call_once(|| {
                    std::thread::sleep(Duration::from_millis(10));
                    runs.fetch_add(1, SeqCst);
                });
                assert_eq!(runs.load(SeqCst), 1, "returns only once the run is done");
            });
        }
    });
    assert_eq!(runs.load(SeqCst), 1);
    assert!(once.state().done());
    once.call_once_force(|_| panic!("done: never runs again"));
}

#[test]
fn a_panic_poisons_and_call_once_force_recovers() {
    let once = Once::new();
    let poisoned = catch_unwind(AssertUnwindSafe(|| {
        once.call_once(|| panic!("in the closure"))
    }));
    assert!(poisoned.is_err());
    assert_eq!(once.state(), OnceState::Poisoned);
    assert!(once.state().poisoned());
    let again = catch_unwind(AssertUnwindSafe(|| once.call_once(|| {})))
        .expect_err("a poisoned Once panics");
    assert_eq!(
        again.downcast_ref::<&str>().copied(),
        Some("Once instance has previously been poisoned")
    );
    let mut seen = None;
    once.call_once_force(|state| seen = Some(state));
    assert_eq!(seen, Some(OnceState::Poisoned));
    assert!(once.state().done());
}

#[test]
fn a_waiter_sees_the_runners_panic() {
    let once = Once::new();
    let (running, started) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let runner = s.spawn(|| {
            catch_unwind(AssertUnwindSafe(|| {
                once.call_once(|| {
                    running.send(()).unwrap();
                    std::thread::sleep(Duration::from_millis(30));
                    panic!("poison");
                })
            }))
        });
        started.recv().unwrap();
        assert_eq!(once.state(), OnceState::InProgress);
        let mut seen = None;
        once.call_once_force(|state| seen = Some(state));
        assert_eq!(seen, Some(OnceState::Poisoned), "ran after the panic");
        assert!(runner.join().unwrap().is_err());
    });
    assert!(once.state().done());
}

#[test]
fn debug_shows_the_state() {
    let once = Once::new();
    assert_eq!(format!("{once:?}"), "Once { state: New }");
    once.call_once(|| {});
    assert_eq!(format!("{once:?}"), "Once { state: Done }");
}
