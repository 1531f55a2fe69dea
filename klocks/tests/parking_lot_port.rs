#![cfg(not(loom))]
//! A parking_lot program ported by renaming the crate: every item of parking_lot
//! 0.12's root that klocks has (all but the `deadlock` module), used by its klocks
//! name, with the methods parking_lot's own tests call on them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use klocks::lock_api::RawMutex as _;
use klocks::{
    const_fair_mutex, const_mutex, const_reentrant_mutex, const_rwlock, ArcMutexGuard,
    ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard,
    Condvar, FairMutex, FairMutexGuard, MappedFairMutexGuard, MappedMutexGuard,
    MappedReentrantMutexGuard, MappedRwLockReadGuard, MappedRwLockWriteGuard, Mutex, MutexGuard,
    Once, OnceState, RawFairMutex, RawMutex, RawRwLock, RawThreadId, ReentrantMutex,
    ReentrantMutexGuard, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard,
    WaitTimeoutResult,
};

static COUNT: Mutex<u32> = const_mutex(0);
static TABLE: RwLock<Vec<u32>> = const_rwlock(Vec::new());
static NESTED: ReentrantMutex<()> = const_reentrant_mutex(());
static INIT: Once = Once::new();

const SHORT: Duration = Duration::from_millis(1);

#[test]
fn mutex() {
    let mut guard: MutexGuard<'_, u32> = COUNT.lock();
    *guard += 1;
    let mapped: MappedMutexGuard<'_, u32> = MutexGuard::map(guard, |n| n);
    drop(mapped);
    assert!(COUNT.try_lock_for(SHORT).is_some());
    assert!(COUNT.try_lock_until(Instant::now() + SHORT).is_some());
    let shared = Arc::new(Mutex::new(1));
    let arc: ArcMutexGuard<RawMutex, i32> = shared.lock_arc();
    assert!(shared.is_locked());
    drop(arc);
    let raw = RawMutex::INIT;
    raw.lock();
    // SAFETY: this thread took the raw lock just above.
    unsafe { klocks::lock_api::RawMutex::unlock(&raw) };
    assert_eq!(Mutex::new(5).into_inner(), 5);
}

static FAIR: FairMutex<u32> = const_fair_mutex(0);

#[test]
fn fair_mutex() {
    let mut guard: FairMutexGuard<'_, u32> = FAIR.lock();
    *guard += 1;
    FairMutexGuard::bump(&mut guard);
    let mapped: MappedFairMutexGuard<'_, u32> = FairMutexGuard::map(guard, |n| n);
    drop(mapped);
    FairMutexGuard::unlock_fair(FAIR.lock());
    assert!(FAIR.try_lock_for(SHORT).is_some());
    let raw = RawFairMutex::INIT;
    raw.lock();
    // SAFETY: this thread took the raw lock just above.
    unsafe { klocks::lock_api::RawMutexFair::unlock_fair(&raw) };
    let mut guard = COUNT.lock();
    MutexGuard::bump(&mut guard);
    MutexGuard::unlock_fair(guard);
}

#[test]
fn rwlock() {
    TABLE.write().push(1);
    let read: RwLockReadGuard<'_, Vec<u32>> = TABLE.read();
    let recursive = TABLE.read_recursive();
    let mapped: MappedRwLockReadGuard<'_, u32> = RwLockReadGuard::map(read, |v| &v[0]);
    assert_eq!(*mapped + recursive[0], 2);
    drop((mapped, recursive));
    let upgradable: RwLockUpgradableReadGuard<'_, Vec<u32>> = TABLE.upgradable_read();
    let write: RwLockWriteGuard<'_, Vec<u32>> = RwLockUpgradableReadGuard::upgrade(upgradable);
    let mut mapped: MappedRwLockWriteGuard<'_, u32> = RwLockWriteGuard::map(write, |v| &mut v[0]);
    *mapped += 1;
    drop(mapped);
    let write = TABLE.try_write_for(SHORT).unwrap();
    let read = RwLockWriteGuard::downgrade(write);
    drop(read);
    let upgradable = TABLE.try_upgradable_read_for(SHORT).unwrap();
    let upgradable = RwLockUpgradableReadGuard::try_upgrade_for(upgradable, SHORT).unwrap();
    drop(upgradable);
    let shared = Arc::new(RwLock::new(0));
    let r: ArcRwLockReadGuard<RawRwLock, i32> = shared.read_arc();
    drop(r);
    let u: ArcRwLockUpgradableReadGuard<RawRwLock, i32> = shared.upgradable_read_arc();
    drop(u);
    let w: ArcRwLockWriteGuard<RawRwLock, i32> = shared.write_arc();
    drop(w);
    assert!(shared.try_read_recursive_for(SHORT).is_some());
}

#[test]
fn condvar() {
    let pair = (Mutex::new(false), Condvar::new());
    let mut guard = pair.0.lock();
    let result: WaitTimeoutResult = pair.1.wait_for(&mut guard, SHORT);
    assert!(result.timed_out());
    let result = pair.1.wait_while_for(&mut guard, |ready| !*ready, SHORT);
    assert!(result.timed_out());
    let result = pair
        .1
        .wait_while_until(&mut guard, |ready| !*ready, Instant::now() + SHORT);
    assert!(result.timed_out());
    assert!(!pair.1.notify_one());
    assert_eq!(pair.1.notify_all(), 0);
    assert_eq!(format!("{:?}", pair.1), "Condvar { .. }");
}

#[test]
fn reentrant_mutex() {
    let outer: ReentrantMutexGuard<'_, ()> = NESTED.lock();
    let inner = NESTED.lock();
    let mapped: MappedReentrantMutexGuard<'_, ()> = ReentrantMutexGuard::map(inner, |u| u);
    drop((mapped, outer));
    let shared = Arc::new(ReentrantMutex::new(1));
    let arc: ArcReentrantMutexGuard<RawMutex, RawThreadId, i32> = shared.lock_arc();
    assert_eq!(*arc, 1);
}

#[test]
fn once() {
    INIT.call_once(|| {});
    INIT.call_once_force(|_| unreachable!());
    let state: OnceState = INIT.state();
    assert!(state.done() && !state.poisoned());
}
