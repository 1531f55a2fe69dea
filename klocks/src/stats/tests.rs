use super::events::EVENTS;
use super::*;
use crate::catalog::RwLockKind;

#[test]
fn stats_names_are_unique_and_every_slot_is_its_own() {
    let mut names: Vec<_> = Event::ALL.iter().map(|e| e.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), EVENTS);
    let mut slots: Vec<_> = Lock::all()
        .flat_map(|lock| Event::ALL.iter().map(move |&event| lock.slot(event)))
        .collect();
    slots.sort_unstable();
    assert_eq!(slots, (0..SLOTS).collect::<Vec<_>>());
    for lock in Lock::all() {
        assert_eq!(Lock::from_name(lock.name()), Some(lock));
    }
    assert_eq!(Event::from_name("steal"), Some(Event::Steal));
}

/// A thread's counts reach the global sum while it runs and after it exits (its
/// destructor folds them into the retired sums), and subtraction isolates them.
#[test]
fn stats_of_exited_threads_are_kept_and_deltas_subtract() {
    // An event no lock counts, so that other tests running meanwhile add nothing.
    let lock = Lock::RwLock(RwLockKind::RwSemNever);
    let event = Event::Pending;
    let before = snapshot();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (exit_tx, exit_rx) = std::sync::mpsc::channel::<()>();
    let counter = std::thread::spawn(move || {
        for _ in 0..3 {
            count(lock, event);
        }
        assert_eq!(this_thread().get(lock, event), 3);
        ready_tx.send(()).unwrap();
        exit_rx.recv().unwrap();
    });
    ready_rx.recv().unwrap();
    assert_eq!((snapshot() - before.clone()).get(lock, event), 3, "live");
    exit_tx.send(()).unwrap();
    counter.join().unwrap();
    let delta = snapshot() - before;
    assert_eq!(delta.get(lock, event), 3, "retired");
    // Other tests' rwsem-never events may be in the global delta too.
    let shown = format!("{delta}");
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("rwsem-never: ") && l.contains("pending 3")),
        "{shown}"
    );
    assert_eq!(this_thread().get(lock, event), 0, "another thread's counts");
}
