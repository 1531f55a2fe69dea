//! The validator on klocks' own locks: each order below is taken by threads that run
//! one after another, so nothing deadlocks, and the validator must still find the
//! cycle the orders make; the clean orders must find nothing. One test, since the
//! validator's graph is the process's: the cases use locks of their own, each its
//! own class (or named), and are told apart by the classes their reports name.
#![cfg(not(loom))]

use klocks::lockdep::{self, Report, ReportKind, Validated};
use klocks::{Mutex, RwLock};

/// The reports made since `before` (the count `lockdep::reports` had then).
fn since(before: usize) -> Vec<Report> {
    lockdep::reports().0.into_iter().skip(before).collect()
}

fn count() -> usize {
    lockdep::reports().0.len()
}

/// Runs `body` on a thread of its own, to its end.
fn on_a_thread(body: impl FnOnce() + Send) {
    std::thread::scope(|s| {
        s.spawn(body);
    });
}

/// The classes of `report`'s chain, as the raw lock addresses of the Rust host's
/// per-lock classes.
fn chain_sites(report: &Report) -> Vec<usize> {
    report
        .classes()
        .map(|class| lockdep::class_info(class).1)
        .collect()
}

#[test]
fn cycles_on_klocks_locks_are_found_and_clean_orders_are_not() {
    assert!(lockdep::enable());

    // AB-BA, a few ms apart, on two threads that run one after the other.
    let (a, b) = (Mutex::new(0), Mutex::new(0));
    let before = count();
    on_a_thread(|| {
        let _a = a.lock();
        let _b = b.lock();
    });
    std::thread::sleep(std::time::Duration::from_millis(5));
    on_a_thread(|| {
        let _b = b.lock();
        let _a = a.lock();
    });
    let found = since(before);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].kind, ReportKind::CircularDependency);
    let mut sites = chain_sites(&found[0]);
    sites.sort_unstable();
    let mut expected = vec![a.raw_address(), b.raw_address()];
    expected.sort_unstable();
    assert_eq!(sites, expected);

    // The same orders again: one report per new cycle, not per run.
    let before = count();
    on_a_thread(|| {
        let _b = b.lock();
        let _a = a.lock();
    });
    assert!(since(before).is_empty());

    // Three locks: x→y, y→z, then z→x closes the cycle.
    let (x, y, z) = (Mutex::new(()), Mutex::new(()), Mutex::new(()));
    let before = count();
    on_a_thread(|| {
        let _x = x.lock();
        let _y = y.lock();
    });
    on_a_thread(|| {
        let _y = y.lock();
        let _z = z.lock();
    });
    assert!(since(before).is_empty(), "no cycle yet");
    on_a_thread(|| {
        let _z = z.lock();
        let _x = x.lock();
    });
    let found = since(before);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].kind, ReportKind::CircularDependency);
    assert_eq!(found[0].len, 3);

    // A write lock and a mutex, through an rwlock: write(rw)→m, then m→read(rw) (a
    // read waits for the writer that holds it: a cycle).
    let (rw, m) = (RwLock::new(()), Mutex::new(()));
    let before = count();
    on_a_thread(|| {
        let _w = rw.write();
        let _m = m.lock();
    });
    on_a_thread(|| {
        let _m = m.lock();
        let _r = rw.read();
    });
    let found = since(before);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].kind, ReportKind::CircularDependency);

    // Two objects of one (named) class nested: recursive locking.
    let (first, second) = (Mutex::new(()), Mutex::new(()));
    lockdep::name(&first, "test::node");
    lockdep::name(&second, "test::node");
    let before = count();
    on_a_thread(|| {
        let _first = first.lock();
        let _second = second.lock();
    });
    let found = since(before);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].kind, ReportKind::RecursiveLocking);

    // Clean: a consistent order under contention, and a reversed try with back-off.
    let (p, q) = (Mutex::new(0u64), Mutex::new(0u64));
    let before = count();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..10_000 {
                    let _p = p.lock();
                    *q.lock() += 1;
                }
            });
        }
        s.spawn(|| {
            for _ in 0..10_000 {
                let _q = q.lock();
                if let Some(mut p) = p.try_lock() {
                    *p += 1;
                }
            }
        });
    });
    assert!(since(before).is_empty(), "{:?}", since(before));

    // Clean: read-read reversed on recursive reads of two rwlocks (readers never
    // wait for each other).
    let (r1, r2) = (RwLock::new(()), RwLock::new(()));
    let before = count();
    on_a_thread(|| {
        let _r1 = r1.read_recursive();
        let _r2 = r2.read_recursive();
    });
    on_a_thread(|| {
        let _r2 = r2.read_recursive();
        let _r1 = r1.read_recursive();
    });
    assert!(since(before).is_empty(), "{:?}", since(before));

    // A lock held when its thread exits (joined, not scoped: a scope ends when the
    // thread's closure does, before the thread's exit runs its key destructors).
    static LEAKED: Mutex<()> = Mutex::new(());
    let before = count();
    std::thread::spawn(|| std::mem::forget(LEAKED.lock()))
        .join()
        .unwrap();
    let found = since(before);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].kind, ReportKind::HeldAtThreadExit);
}
