use super::*;
use crate::stats::testing::*;

/// Behind an owner that is not running, a waiter spins (the probe sees the owner
/// off its CPU, or the budget runs out), yields and sleeps once, and is woken once
/// (`expect_spins_yields_then_sleeps_once`).
#[test]
fn stats_spins_yields_then_sleeps_once() {
    let lock: &'static SpinFutexMutex = Box::leak(Box::new(SpinFutexMutex::new()));
    let counts = one_waiter(lock, STATS, |waiter| {
        lock.word.load(Relaxed) & WAITERS != 0 && waiter.asleep()
    });
    expect_spins_yields_then_sleeps_once(counts, STATS, YIELDS_BEFORE_SLEEP);
}
