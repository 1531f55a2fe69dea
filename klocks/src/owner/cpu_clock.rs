//! The `CpuClock` probe: did the owner's thread CPU clock advance?
//!
//! Every thread has a CPU-time clock, and a thread of the same process can read any
//! other's with `clock_gettime` once it knows its clock id. The id of thread `tid` is
//! the kernel's `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)` (include/linux/posix-timers
//! `_types.h`): `(~tid << 3) | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED`, the same id
//! glibc's `pthread_getcpuclockid` builds from a `pthread_t` (a test checks that).
//! The kernel's `pid_for_clock` answers EINVAL for a tid that names no thread or a
//! thread of another process.
//!
//! Reading the clock of a thread that is on a CPU makes the kernel take that thread's
//! runqueue lock and bring its runtime up to date (`task_sched_runtime` calls
//! `update_curr`), so two reads a few hundred ns apart differ exactly when the thread
//! ran in between; a thread that is off the CPU returns the same sum lock-free. That
//! is also why a waiter samples it at most every [`SAMPLE_EVERY`] and answers from
//! its last two samples in between: every sample costs the owner's CPU a lock round
//! trip. Worse, with another task runnable on the owner's CPU the update often ends
//! in a reschedule IPI to that CPU (measured in the parent module's doc): this probe
//! is the fallback for when perf is refused.
//!
//! The answer covers the last sampling period, so it lags a switch by up to 2 µs.

use std::io;
use std::time::{Duration, Instant};

/// How often a waiter reads the owner's clock.
pub(super) const SAMPLE_EVERY: Duration = Duration::from_micros(2);

// include/linux/posix-timers_types.h
const CPUCLOCK_SCHED: libc::clockid_t = 2;
const CPUCLOCK_PERTHREAD_MASK: libc::clockid_t = 4;

/// The CPU-time clock of thread `tid` (`MAKE_THREAD_CPUCLOCK`).
pub(super) fn clock_of(tid: u32) -> libc::clockid_t {
    // Tids are below 2^22, so `!tid << 3` keeps its sign and its bits.
    ((!(tid as libc::clockid_t)) << 3) | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED
}

/// The CPU time thread clock `clock` has accumulated, in ns.
pub(super) fn cpu_ns(clock: libc::clockid_t) -> io::Result<u64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; an invalid clock id is an error
    // return, not undefined behaviour.
    if unsafe { libc::clock_gettime(clock, &mut now) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64)
}

/// Whether thread CPU clocks work here: reads the calling thread's own.
pub(super) fn check() -> io::Result<()> {
    cpu_ns(clock_of(super::current_tid())).map(drop)
}

/// A waiter's view of one thread's CPU clock.
#[derive(Debug)]
pub(super) struct ClockWatch {
    clock: libc::clockid_t,
    /// When the last sample was taken, and what it read.
    last: Option<(Instant, u64)>,
    /// The answer from the last two samples.
    answer: Option<bool>,
    /// The clock said the thread does not exist (in this process): it exited.
    gone: bool,
}

impl ClockWatch {
    pub(super) fn new(tid: u32) -> Self {
        Self {
            clock: clock_of(tid),
            last: None,
            answer: None,
            gone: false,
        }
    }

    pub(super) fn owner_running(&mut self) -> Option<bool> {
        if self.gone {
            return Some(false);
        }
        let now = Instant::now();
        if let Some((at, _)) = self.last {
            if now.duration_since(at) < SAMPLE_EVERY {
                return self.answer;
            }
        }
        match self.sample(now) {
            Ok(answer) => Some(answer),
            Err(err) if err.raw_os_error() == Some(libc::EINVAL) => {
                self.gone = true;
                Some(false)
            }
            Err(_) => {
                self.answer = None;
                None
            }
        }
    }

    /// Reads the clock and compares it with the previous sample.
    fn sample(&mut self, now: Instant) -> io::Result<bool> {
        let mut ns = cpu_ns(self.clock)?;
        let previous = match self.last {
            Some((_, previous)) => previous,
            // The first check: a second read right away (a few hundred ns) answers
            // now rather than one sampling period later.
            None => std::mem::replace(&mut ns, cpu_ns(self.clock)?),
        };
        self.last = Some((now, ns));
        self.answer = Some(ns != previous);
        Ok(ns != previous)
    }
}
