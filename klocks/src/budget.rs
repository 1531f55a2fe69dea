//! How long a pv waiter spins before it sleeps.
//!
//! Spinning pays off while the lock is likely to come free sooner than a sleep and a
//! wake-up would take; past that, it only burns a CPU that a preempted owner or the
//! next waiter may need. So the budget is a *time*, and its natural size is the cost
//! of one futex sleep-to-wake handoff on this machine: tens of µs in a VM (an idle
//! vCPU halts, so a wake pays a VM exit), a few µs on bare metal
//! (`docs/decisions/waiting.md`: budget-is-a-handoff).
//!
//! Resolution order, per lock type ([`SpinBudget`] is one static per type):
//! 1. the type's own override ([`SpinBudget::set_ns`], e.g. `PvTicketLock::set_spin_ns`);
//! 2. `KLOCKS_SPIN_NS` (whole nanoseconds, `0..=`[`MAX_SPIN_NS`]); a malformed or
//!    out-of-range value is reported once on stderr, naming the variable, and the
//!    calibrated budget is used (never a panic inside a lock: [`crate::config`]);
//! 3. calibration: the measured one-way futex handoff, clamped to
//!    [`MIN_CALIBRATED_NS`]`..=`[`MAX_CALIBRATED_NS`] (the kernel spins 10 µs on a
//!    reader-owned rwsem, more per reader, up to 25 µs, for the same reason). The floor
//!    matters: a handoff measured while the other CPUs are busy is the cheap one (no
//!    idle CPU to wake), a fraction of the cost a sleeping waiter really pays.
//!
//! Waiters count spins, not clock reads: the nanoseconds are turned into `pause`
//! iterations with the measured cost of one `pause` (from about a nanosecond to tens,
//! by CPU: spins-not-clock-reads), so the hot loop reads no clock.
//!
//! Calibration runs once per process, on the first slow path that asks, and takes well
//! under a millisecond of wall time (16 handoffs between two threads); `KLOCKS_SPIN_NS`
//! skips it. Slow paths that ask while it runs spin a provisional [`MIN_CALIBRATED_NS`]
//! rather than wait for it ([`crate::config`]'s `Resolved`). Under loom the budget is
//! zero spins, so models go straight to the sleeping path.

#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[cfg(not(loom))]
use crate::config::resolved::Resolved;

pub use crate::config::settings::MAX_SPIN_NS;

/// Floor of a calibrated budget: the kernel's base reader-owned rwsem spin. The
/// measured handoff depends on what the machine does at that moment (a halted vCPU's
/// wake-up pays a VM exit), and a lower floor let one calibration end shorter than
/// the critical sections it was meant to outlast (`docs/results/tuning.md`).
pub const MIN_CALIBRATED_NS: u64 = 10_000;
/// Ceiling of a calibrated budget.
pub const MAX_CALIBRATED_NS: u64 = 50_000;

/// One lock type's spin budget (see the module doc for how it is resolved).
#[derive(Debug)]
pub struct SpinBudget {
    #[cfg(not(loom))]
    override_ns: AtomicU64,
    /// `spins()`, computed once (`u32::MAX`: not yet): it is asked on every slow path.
    #[cfg(not(loom))]
    spins: std::sync::atomic::AtomicU32,
}

#[cfg(not(loom))]
const NO_OVERRIDE: u64 = u64::MAX;

impl SpinBudget {
    /// A budget with no override.
    pub const fn new() -> Self {
        Self {
            #[cfg(not(loom))]
            override_ns: AtomicU64::new(NO_OVERRIDE),
            #[cfg(not(loom))]
            spins: std::sync::atomic::AtomicU32::new(u32::MAX),
        }
    }

    /// Sets this lock type's budget, overriding `KLOCKS_SPIN_NS` and calibration.
    ///
    /// # Panics
    /// If `ns` exceeds [`MAX_SPIN_NS`].
    pub fn set_ns(&self, ns: u64) {
        assert!(
            ns <= MAX_SPIN_NS,
            "klocks: spin budget {ns} ns is above the maximum of {MAX_SPIN_NS} ns"
        );
        // Relaxed: a setting, not a synchronisation; waiters pick it up when they next
        // read it.
        #[cfg(not(loom))]
        {
            self.override_ns.store(ns, Relaxed);
            self.spins.store(u32::MAX, Relaxed);
        }
    }

    /// The budget in nanoseconds.
    #[cfg(not(loom))]
    pub fn ns(&self) -> u64 {
        self.ns_resolved().0
    }

    /// The budget, and whether it is final (not a provisional value while the
    /// process's calibration runs on another thread).
    #[cfg(not(loom))]
    fn ns_resolved(&self) -> (u64, bool) {
        match self.override_ns.load(Relaxed) {
            NO_OVERRIDE => process_spin_ns(),
            ns => (ns, true),
        }
    }

    /// The budget in `cpu_relax` iterations.
    #[inline]
    pub(crate) fn spins(&self) -> u32 {
        #[cfg(not(loom))]
        {
            // Relaxed: a cache of a pure function of the settings above.
            match self.spins.load(Relaxed) {
                u32::MAX => {
                    let (ns, final_ns) = self.ns_resolved();
                    let (spins, final_pause) = spins_for_ns_resolved(ns);
                    let spins = spins.min(u32::MAX - 1);
                    // Only a final value is cached; a provisional one is asked again.
                    if final_ns && final_pause {
                        self.spins.store(spins, Relaxed);
                    }
                    spins
                }
                spins => spins,
            }
        }
        // Zero: each spin would be a loom yield straight back to the lock holder, so
        // reaching the sleep path would cost the model its preemption budget.
        #[cfg(loom)]
        0
    }
}

/// `ns` nanoseconds of spinning in `cpu_relax` iterations, from the pause measured at
/// start-up (0 under loom, as [`SpinBudget::spins`]).
#[inline]
pub(crate) fn spins_for_ns(ns: u64) -> u32 {
    #[cfg(not(loom))]
    return spins_for_ns_resolved(ns).0;
    #[cfg(loom)]
    {
        let _ = ns;
        0
    }
}

/// [`spins_for_ns`], and whether the pause cost it used is final.
#[cfg(not(loom))]
fn spins_for_ns_resolved(ns: u64) -> (u32, bool) {
    let (pause_ns, done) = process_pause_ns();
    let spins = (ns as f64 / pause_ns.max(0.1)).min(u32::MAX as f64) as u32;
    (spins, done)
}

impl Default for SpinBudget {
    fn default() -> Self {
        Self::new()
    }
}

/// The cost of one `cpu_relax` assumed while the measurement runs on another thread.
#[cfg(not(loom))]
const PROVISIONAL_PAUSE_NS: f64 = 10.0;

/// The process's measured cost of one `cpu_relax` (final or provisional).
#[cfg(not(loom))]
fn process_pause_ns() -> (f64, bool) {
    static PAUSE: Resolved = Resolved::new();
    let (bits, done) = PAUSE.get(
        || measure_pause_ns().to_bits(),
        PROVISIONAL_PAUSE_NS.to_bits(),
    );
    (f64::from_bits(bits), done)
}

/// The process's budget: `KLOCKS_SPIN_NS`, or calibrated (final or provisional).
#[cfg(not(loom))]
fn process_spin_ns() -> (u64, bool) {
    static SPIN_NS: Resolved = Resolved::new();
    SPIN_NS.get(
        || {
            let calibrated = || measure_handoff_ns().clamp(MIN_CALIBRATED_NS, MAX_CALIBRATED_NS);
            match crate::config::settings::spin_ns() {
                Ok(Some(ns)) => ns,
                Ok(None) => calibrated(),
                Err(problem) => {
                    crate::config::settings::report(&problem, "using the calibrated spin budget");
                    calibrated()
                }
            }
        },
        MIN_CALIBRATED_NS,
    )
}

/// The cost of one `cpu_relax`, in ns.
#[cfg(not(loom))]
fn measure_pause_ns() -> f64 {
    const PAUSES: u32 = 2_000;
    let best = (0..3)
        .map(|_| {
            let start = std::time::Instant::now();
            for _ in 0..PAUSES {
                std::hint::spin_loop();
            }
            start.elapsed()
        })
        .min()
        .unwrap_or_default();
    best.as_nanos() as f64 / f64::from(PAUSES)
}

/// The median one-way futex handoff between two threads: one sleeps on a word, the
/// other changes it and wakes it; repeated as a ping-pong.
#[cfg(not(loom))]
fn measure_handoff_ns() -> u64 {
    use crate::sync::{AtomicU32, Ordering::SeqCst};
    const ROUNDS: u32 = 16;
    let turn = std::sync::Arc::new(AtomicU32::new(0));
    let pass = |turn: &AtomicU32, mine: u32| {
        // Sleep until it is our turn (even: calibrator, odd: partner), then hand over.
        loop {
            let now = turn.load(SeqCst);
            if now % 2 == mine {
                turn.store(now + 1, SeqCst);
                crate::park::wake_one(turn);
                return;
            }
            crate::park::wait(turn, now);
        }
    };
    let partner = {
        let turn = std::sync::Arc::clone(&turn);
        std::thread::Builder::new()
            .name("klocks-calibrate".into())
            .spawn(move || (0..ROUNDS).for_each(|_| pass(&turn, 1)))
    };
    let Ok(partner) = partner else {
        return MAX_CALIBRATED_NS;
    };
    let mut trips = Vec::with_capacity(ROUNDS as usize);
    for _ in 0..ROUNDS {
        let start = std::time::Instant::now();
        pass(&turn, 0);
        // Wait for the partner's answer: a full round trip is two handoffs.
        while turn.load(SeqCst) % 2 == 1 {
            crate::park::wait(&turn, turn.load(SeqCst) | 1);
        }
        trips.push(start.elapsed().as_nanos() as u64 / 2);
    }
    let _ = partner.join();
    trips.sort_unstable();
    trips[trips.len() / 2]
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "above the maximum")]
    fn override_above_maximum_panics() {
        SpinBudget::new().set_ns(MAX_SPIN_NS + 1);
    }

    #[test]
    fn override_wins_and_converts_to_spins() {
        let budget = SpinBudget::new();
        budget.set_ns(0);
        assert_eq!(budget.spins(), 0);
        budget.set_ns(1_000_000);
        assert_eq!(budget.ns(), 1_000_000);
        assert!(budget.spins() > 0);
    }

    #[test]
    fn calibration_measures_a_real_handoff() {
        let ns = measure_handoff_ns();
        // A futex handoff crosses the scheduler: more than a cache-line transfer,
        // far less than a second.
        assert!((100..1_000_000_000).contains(&ns), "{ns} ns");
    }
}
