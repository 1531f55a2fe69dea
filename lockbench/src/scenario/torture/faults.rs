//! The faults injected around the lock under torture (the module doc of `torture`
//! lists them): long holds and preemption inside the critical section, stutter and
//! CPU shuffling outside it, and the generator that spreads them.

use std::sync::atomic::{AtomicBool, Ordering::*};
use std::time::{Duration, Instant};

/// What the faults need at run time.
pub(super) struct Faults {
    pub(super) long_holds: bool,
    pub(super) preemption: bool,
    pub(super) stutter: AtomicBool,
    pub(super) shuffle: bool,
    pub(super) churn: bool,
    pub(super) cpus: Vec<usize>,
}

impl Faults {
    /// Inside the critical section.
    pub(super) fn inside(&self, i: u64) {
        if self.long_holds && i % 2_000 == 1_999 {
            std::thread::sleep(Duration::from_millis(2));
        } else if self.preemption && i % 1_000 == 999 {
            std::thread::sleep(Duration::from_micros(50));
        } else if self.preemption && i % 100 == 99 {
            std::thread::yield_now();
        }
    }

    /// Outside the critical section: stutter and shuffle.
    pub(super) fn outside(&self, rng: &mut u64, last_shuffle: &mut Instant) {
        // Relaxed: a pause request, not a synchronisation.
        while self.stutter.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
        }
        if self.shuffle && last_shuffle.elapsed() > Duration::from_millis(100) {
            *last_shuffle = Instant::now();
            let cpu = self.cpus[next(rng) as usize % self.cpus.len()];
            // SAFETY: a zeroed cpu_set_t with one bit set, for the calling thread; a
            // refusal (a CPU gone offline) only leaves the affinity as it was.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
        }
    }
}

pub(super) fn next(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// The CPUs this process may run on.
pub(super) fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed set filled by the kernel for this thread.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        set
    };
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `set` is a valid cpu_set_t.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}
