//! A test-only handicap for klocks' `default` lock, to check that `compare` catches a
//! real slowdown: with `LOCKBENCH_HANDICAP_DEFAULT=N` in the environment, every
//! acquisition of the `default` row first spins N iterations of a `black_box` loop in
//! a function of its own, so the row measures a genuinely slower lock under its own
//! name. A count, not a time: the CPU runs a few iterations in the shadow of the
//! lock's own atomic instructions (out of order), so the cost is not linear in N and
//! is measured, not assumed. Child processes (overcommit's cells)
//! inherit the variable; the rows run under the preload (`preload`, `app`) do not
//! take it: their lock lives in klocks-ffi. Off, the `default` row runs the plain
//! `Klocks<klocks::RawMutex>` and nothing of this module is on its path.
//!
//! Measured on the development VM (docs/testing.md): N = 10 makes single-thread cells
//! about 20% slower.

use std::hint::black_box;
use std::sync::LazyLock;

use lock_api::RawMutex;

use crate::bench_lock::BenchLock;

/// The environment variable.
pub const VAR: &str = "LOCKBENCH_HANDICAP_DEFAULT";

/// The handicap as asked: busy-loop iterations per acquisition, or why the value is
/// not one.
fn asked() -> Option<Result<u64, String>> {
    std::env::var(VAR).ok().map(|text| parse(&text))
}

/// A count of iterations from 0 to 1000000.
fn parse(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(spins) if spins <= 1_000_000 => Ok(spins),
        _ => Err(format!(
            "{VAR}={text}: not a count of busy-loop iterations from 0 to 1000000"
        )),
    }
}

/// Iterations of the busy loop per acquisition: 0 when off.
static SPINS: LazyLock<u64> = LazyLock::new(|| match asked() {
    Some(Ok(spins)) => spins,
    _ => 0,
});

#[inline(never)]
fn spin(iterations: u64) {
    for i in 0..iterations {
        black_box(i);
    }
}

/// Whether the handicap is on.
pub fn on() -> bool {
    *SPINS > 0
}

/// Checks the variable and says what it does, before anything is measured; `Err`
/// for a value that is not a handicap (a usage error).
pub fn announce() -> Result<(), String> {
    match asked() {
        None => Ok(()),
        Some(Err(err)) => Err(err),
        Some(Ok(spins)) => {
            eprintln!(
                "lockbench: {VAR}={spins}: the default row spins {spins} busy-loop iterations \
                 per acquisition: a test-only handicap, its results are not klocks::Mutex's"
            );
            Ok(())
        }
    }
}

/// A lock that spins the handicap before every acquisition.
pub struct Handicapped<L>(L);

impl<L: BenchLock> BenchLock for Handicapped<L> {
    const NAME: &'static str = L::NAME;

    fn new() -> Self {
        Handicapped(L::new())
    }

    #[inline]
    fn with<R>(&self, critical: impl FnOnce() -> R) -> R {
        spin(*SPINS);
        self.0.with(critical)
    }
}

// SAFETY: every method forwards to the wrapped raw mutex, which upholds the
// contract; the spin before `lock` touches no lock state.
unsafe impl<L: RawMutex> RawMutex for Handicapped<L> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Handicapped(L::INIT);
    type GuardMarker = L::GuardMarker;

    #[inline]
    fn lock(&self) {
        spin(*SPINS);
        self.0.lock()
    }

    #[inline]
    fn try_lock(&self) -> bool {
        spin(*SPINS);
        self.0.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: the caller holds the lock, as `RawMutex::unlock` requires of it.
        unsafe { self.0.unlock() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_is_not_a_count_is_refused() {
        assert_eq!(parse("10"), Ok(10));
        assert!(parse("1.5").unwrap_err().contains("not a count"));
        assert!(parse("2000000").is_err());
    }
}
