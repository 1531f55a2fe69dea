//! Lock waits, the fairness a thread feels: how long one acquisition took, from just
//! before the lock call to just after it returned. The slowest thread's share of the
//! operations says who was served less over a window; the tail of the waits says how
//! long one operation could be kept waiting, which is what a request behind the lock
//! sees.
//!
//! Each lock thread has its own [`WaitClock`], an HDR histogram (`hdrhistogram`,
//! 1% resolution, 1 ns to an hour) that only it touches, so recording takes no
//! shared cache line; the run's histograms are merged after its window ([`merge`])
//! and reduced to p50, p99, p99.9 and the max ([`quantiles`]).
//!
//! The clock is `Instant::now()`, `clock_gettime(CLOCK_MONOTONIC)` through the vDSO
//! (no system call where the kernel's clocksource is the TSC). Two reads per timed
//! acquisition, the second inside the critical section, would lengthen every short
//! critical section of mutex-load by a fair share, so only one acquisition in
//! `every` is timed (`--wait-every`), the others pay one decrement and branch. The
//! timed ones are spaced at random, uniformly between 1 and 2 × `every` − 1
//! acquisitions apart, so that a lock whose handoffs follow a period (a ticket
//! lock's round) is not sampled at one phase of it. The same code times every lock,
//! and each run measures what timing added for its lock ([`added_ns`]), so the
//! tables can show that it cost every lock alike.

use std::time::Instant;

use hdrhistogram::Histogram;

use crate::cells::Wait;

/// The longest wait a histogram holds; a longer one is recorded as this.
const LONGEST_NS: u64 = 3_600_000_000_000;

/// Significant decimal digits of the histograms: 2 keeps every quantile within 1%
/// and a histogram near 30 KiB, so that a 1024-thread cell's fit in 32 MiB.
const DIGITS: u8 = 2;

/// `--wait-every` when not given: one acquisition in 16 timed.
pub const EVERY: u32 = 16;

/// An empty histogram of waits in ns.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LONGEST_NS, DIGITS)
        .unwrap_or_else(|err| unreachable!("constant bounds are valid: {err}"))
}

/// One thread's clock and histogram of its waits.
pub struct WaitClock {
    every: u32,
    /// Acquisitions until the next timed one.
    countdown: u32,
    /// xorshift64 state for the spacing; never 0.
    rng: u64,
    waits: Histogram<u64>,
}

impl WaitClock {
    /// A clock that times one acquisition in `every` (0: none), spaced by a
    /// generator seeded from `seed` (the thread's id).
    pub fn new(every: u32, seed: u64) -> Self {
        let mut clock = Self {
            every,
            countdown: 0,
            rng: 0x9E37_79B9_7F4A_7C15 ^ (seed + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9),
            waits: histogram(),
        };
        clock.countdown = clock.interval();
        clock
    }

    /// Just before the lock call: the time, if this acquisition is one to time.
    #[inline]
    pub fn start(&mut self) -> Option<Instant> {
        if self.every == 0 {
            return None;
        }
        self.countdown -= 1;
        if self.countdown > 0 {
            return None;
        }
        self.countdown = self.interval();
        Some(Instant::now())
    }

    /// Just after the lock call returned, inside the critical section: the time, if
    /// `started` timed this acquisition. Only the clock is read here; the histogram
    /// is written in [`record`](Self::record), after the unlock.
    #[inline]
    pub fn acquired(started: Option<Instant>) -> Option<Instant> {
        started.map(|_| Instant::now())
    }

    /// After the unlock: records the wait from `started` to `acquired`.
    #[inline]
    pub fn record(&mut self, started: Option<Instant>, acquired: Option<Instant>) {
        if let (Some(started), Some(acquired)) = (started, acquired) {
            let ns = acquired.saturating_duration_since(started).as_nanos();
            let ns = u64::try_from(ns).unwrap_or(LONGEST_NS).clamp(1, LONGEST_NS);
            self.waits.saturating_record(ns);
        }
    }

    /// The waits recorded.
    pub fn into_histogram(self) -> Histogram<u64> {
        self.waits
    }

    /// Acquisitions to the next timed one: `every`, or with `every` above 1 uniform
    /// in 1..=2 × `every` − 1 (mean `every`).
    #[cold]
    fn interval(&mut self) -> u32 {
        if self.every <= 1 {
            return 1;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let span = 2 * u64::from(self.every) - 1;
        // Below 2 × `every`, which is a u32.
        (1 + self.rng % span) as u32
    }
}

/// The histograms merged; `None` when none recorded a wait.
pub fn merge(histograms: impl IntoIterator<Item = Histogram<u64>>) -> Option<Histogram<u64>> {
    let mut merged = histogram();
    for one in histograms {
        // Same bounds and precision on both sides: adding cannot fail.
        merged
            .add(&one)
            .unwrap_or_else(|err| unreachable!("histograms of one shape: {err}"));
    }
    (!merged.is_empty()).then_some(merged)
}

/// p50, p99, p99.9 and the max of `waits`.
pub fn quantiles(waits: &Histogram<u64>) -> Wait {
    Wait {
        samples: waits.len(),
        p50_ns: waits.value_at_quantile(0.5),
        p99_ns: waits.value_at_quantile(0.99),
        p999_ns: waits.value_at_quantile(0.999),
        max_ns: waits.max(),
    }
}

/// What timing an acquisition adds, uncontended, in ns: `pair` runs one lock/unlock
/// pair, timed through the clock it is given or (`None`) untimed. Batches of each
/// alternate, so that a drift of the machine falls on both; the result is the
/// median timed batch's ns per pair minus the median untimed one's.
pub fn added_ns(mut pair: impl FnMut(Option<&mut WaitClock>)) -> f64 {
    const BATCHES: usize = 9;
    const PAIRS: u32 = 2_000;
    let mut clock = WaitClock::new(1, 0);
    let (mut timed, mut untimed) = (Vec::new(), Vec::new());
    for _ in 0..BATCHES {
        let start = Instant::now();
        for _ in 0..PAIRS {
            pair(None);
        }
        untimed.push(start.elapsed().as_nanos() as f64 / f64::from(PAIRS));
        let start = Instant::now();
        for _ in 0..PAIRS {
            pair(Some(&mut clock));
        }
        timed.push(start.elapsed().as_nanos() as f64 / f64::from(PAIRS));
    }
    let median = |mut ns: Vec<f64>| {
        ns.sort_by(f64::total_cmp);
        ns[ns.len() / 2]
    };
    (median(timed) - median(untimed)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_acquisition_is_timed_at_every_one_and_none_at_zero() {
        let mut all = WaitClock::new(1, 3);
        let mut none = WaitClock::new(0, 3);
        for _ in 0..100 {
            let started = all.start();
            assert!(started.is_some());
            all.record(started, WaitClock::acquired(started));
            assert!(none.start().is_none());
        }
        assert_eq!(all.into_histogram().len(), 100);
        assert_eq!(none.into_histogram().len(), 0);
    }

    #[test]
    fn sampled_acquisitions_average_one_in_every() {
        let mut clock = WaitClock::new(16, 7);
        let timed = (0..160_000).filter(|_| clock.start().is_some()).count();
        // Uniform gaps of 1..=31: mean 16, so 10 000 timed, within a few percent.
        assert!((9_500..10_500).contains(&timed), "{timed}");
    }

    #[test]
    fn merged_histograms_give_the_quantiles_of_all_waits() {
        let mut threads = [WaitClock::new(1, 0), WaitClock::new(1, 1)];
        let base = Instant::now();
        // 998 waits of 1 µs on one thread, two of 1 ms on the other: the p99.9 of
        // 1000 waits is the 999th, a long one; the median a short one.
        for _ in 0..998 {
            threads[0].record(Some(base), Some(base + Duration::from_micros(1)));
        }
        for _ in 0..2 {
            threads[1].record(Some(base), Some(base + Duration::from_millis(1)));
        }
        let merged = merge(threads.map(WaitClock::into_histogram)).expect("waits");
        let wait = quantiles(&merged);
        assert_eq!(wait.samples, 1000);
        assert!(wait.p50_ns.abs_diff(1_000) <= 10, "{wait:?}");
        assert!(wait.p99_ns.abs_diff(1_000) <= 10, "{wait:?}");
        assert!(wait.p999_ns.abs_diff(1_000_000) <= 10_000, "{wait:?}");
        assert!(wait.max_ns.abs_diff(1_000_000) <= 10_000, "{wait:?}");
        assert!(merge([histogram()]).is_none(), "nothing recorded");
    }

    #[test]
    fn the_added_cost_is_what_the_timed_pairs_take_beyond_the_untimed() {
        // A pair that spins longer when timed costs more than one that does not.
        let slow = added_ns(|clock| {
            let spins = if clock.is_some() { 200 } else { 0 };
            for _ in 0..spins {
                std::hint::spin_loop();
            }
        });
        assert!(slow > 100.0, "{slow}");
    }
}
