//! The profile's clock: the time-stamp counter where it is invariant (x86-64 with
//! `constant_tsc`/`nonstop_tsc`, CPUID leaf 0x8000_0007: about 8 ns a read in a KVM
//! guest), else `CLOCK_MONOTONIC` through the vDSO (about 18 ns). Ticks become
//! nanoseconds at report time, by the ticks and nanoseconds that passed since the
//! profile started.

use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::time::Duration;

static USE_TSC: AtomicBool = AtomicBool::new(false);
static START_TICKS: AtomicU64 = AtomicU64::new(0);
static START_NS: AtomicU64 = AtomicU64::new(0);

/// The shortest interval ticks are converted over (a shorter one is stretched by a
/// nap at report time).
const CALIBRATION: Duration = Duration::from_millis(20);

/// `CLOCK_MONOTONIC` in nanoseconds.
pub(super) fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec to write; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    use std::arch::x86_64::__cpuid;
    // Leaf 0x8000_0000 gives the highest extended leaf, asked before 0x8000_0007.
    __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc() -> bool {
    false
}

/// Starts the clock (once, before any tick is taken).
pub(super) fn start() {
    // Relaxed: set before the profile is switched on, whose Release publishes them.
    USE_TSC.store(invariant_tsc(), Relaxed);
    restart();
}

/// Makes now the start of the interval (also in a fork child, whose report covers
/// its own life).
pub(super) fn restart() {
    START_TICKS.store(now(), Relaxed);
    // Release: pairs with the Acquire in `ns_per_tick`.
    START_NS.store(monotonic_ns(), Release);
}

/// Now, in ticks.
#[inline(always)]
pub(super) fn now() -> u64 {
    // Relaxed: see `start`.
    if USE_TSC.load(Relaxed) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: RDTSC exists on every x86-64.
        return unsafe { std::arch::x86_64::_rdtsc() };
    }
    monotonic_ns()
}

/// Nanoseconds per tick, and the nanoseconds since the start.
pub(super) fn ns_per_tick() -> (f64, u64) {
    // Acquire: pairs with the Release in `restart`.
    let (start_ns, start_ticks) = (START_NS.load(Acquire), START_TICKS.load(Relaxed));
    let elapsed = monotonic_ns().saturating_sub(start_ns);
    // Relaxed: see `start`.
    if !USE_TSC.load(Relaxed) {
        return (1.0, elapsed);
    }
    let mut interval = elapsed;
    if interval < CALIBRATION.as_nanos() as u64 {
        super::super::nap(CALIBRATION);
        interval = monotonic_ns().saturating_sub(start_ns);
    }
    let ticks = now().saturating_sub(start_ticks).max(1);
    (interval as f64 / ticks as f64, elapsed)
}
