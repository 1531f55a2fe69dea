//! Deadlines of the timed calls (`timedlock`, `clocklock`, `timedwait`, ...), of
//! the C API and of the interposed pthread functions alike.

use std::ffi::c_int;
use std::time::{Duration, Instant};

use libc::{clockid_t, timespec, CLOCK_MONOTONIC, CLOCK_REALTIME, EINVAL, ETIMEDOUT};

/// An absolute time on `CLOCK_REALTIME` or `CLOCK_MONOTONIC`, as POSIX's timed calls
/// take it.
#[derive(Clone, Copy)]
pub(crate) struct Deadline {
    pub(crate) clock: clockid_t,
    pub(crate) at: timespec,
}

/// The first sleep of a polling wait, and the longest.
const FIRST_NAP: Duration = Duration::from_micros(1);
const LONGEST_NAP: Duration = Duration::from_millis(1);

impl Deadline {
    /// The deadline `*at` on `clock`: `EINVAL` for another clock or a null `at`.
    ///
    /// # Safety
    /// `at` is null or points to a readable `timespec`.
    pub(crate) unsafe fn new(clock: clockid_t, at: *const timespec) -> Result<Deadline, c_int> {
        if !(clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC) || at.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: non-null, and readable by the caller's contract.
        let at = unsafe { *at };
        Ok(Deadline { clock, at })
    }

    /// `duration` from now, on `CLOCK_MONOTONIC`.
    pub(crate) fn after(duration: Duration) -> Deadline {
        let mut now = timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a writable timespec.
        unsafe { libc::clock_gettime(CLOCK_MONOTONIC, &mut now) };
        let nanos = now.tv_nsec as u64 + u64::from(duration.subsec_nanos());
        Deadline {
            clock: CLOCK_MONOTONIC,
            at: timespec {
                tv_sec: now.tv_sec
                    + duration.as_secs() as libc::time_t
                    + (nanos / 1_000_000_000) as libc::time_t,
                tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
            },
        }
    }

    /// Whether the nanoseconds are in range; POSIX has the call fail with `EINVAL`
    /// otherwise, but only once it would have to wait.
    pub(crate) fn is_valid(&self) -> bool {
        (0..1_000_000_000).contains(&self.at.tv_nsec)
    }

    /// The deadline as an `Instant` (on the monotonic clock, which is what the Rust
    /// locks' timed waits take): now plus the time left. A `CLOCK_REALTIME` deadline
    /// thus follows the wall clock as it stands at the call, not later jumps of it.
    pub(crate) fn instant(&self) -> Instant {
        let now = Instant::now();
        self.left()
            .and_then(|left| now.checked_add(left))
            .unwrap_or(now)
    }

    /// How long until the deadline; `None` once it passed.
    pub(crate) fn left(&self) -> Option<Duration> {
        let mut now = timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a writable timespec; the clock is one of the two valid ones.
        unsafe { libc::clock_gettime(self.clock, &mut now) };
        let nanos = |t: &timespec| i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec);
        let left = nanos(&self.at) - nanos(&now);
        (left > 0).then(|| Duration::from_nanos(left.min(i128::from(u64::MAX)) as u64))
    }

    /// Calls `attempt` until it succeeds (0) or the deadline passes (`ETIMEDOUT`),
    /// sleeping between attempts: 1 µs, doubling up to 1 ms, never past the deadline.
    /// `EINVAL` if the first attempt fails and the deadline is malformed.
    pub(crate) fn poll(&self, mut attempt: impl FnMut() -> bool) -> c_int {
        self.poll_or_refuse(|| Ok(attempt()))
    }

    /// As [`poll`](Self::poll), for an attempt that may also be refused for good
    /// (`Err(errno)`, such as a read lock's `EAGAIN`): that answer ends the wait.
    pub(crate) fn poll_or_refuse(&self, mut attempt: impl FnMut() -> Result<bool, c_int>) -> c_int {
        match attempt() {
            Ok(true) => return 0,
            Err(errno) => return errno,
            Ok(false) => {}
        }
        if !self.is_valid() {
            return EINVAL;
        }
        let mut nap = FIRST_NAP;
        loop {
            let Some(left) = self.left() else {
                return ETIMEDOUT;
            };
            nap_for(nap.min(left));
            nap = (nap * 2).min(LONGEST_NAP);
            match attempt() {
                Ok(true) => return 0,
                Err(errno) => return errno,
                Ok(false) => {}
            }
        }
    }
}

/// Sleeps for `duration` with the raw `nanosleep` system call (not a cancellation
/// point, unlike glibc's: a cancellation must not unwind out of an interposed call).
/// A signal may cut it short.
pub(crate) fn nap_for(duration: Duration) {
    let time = timespec {
        tv_sec: duration.as_secs() as libc::time_t,
        tv_nsec: duration.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `time` is a valid timespec that lives for the call; no remainder wanted.
    unsafe { libc::syscall(libc::SYS_nanosleep, &time, std::ptr::null::<timespec>()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_ms(clock: clockid_t, ms: i64) -> Deadline {
        let mut now = timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a writable timespec.
        unsafe { libc::clock_gettime(clock, &mut now) };
        let total = now.tv_nsec + ms * 1_000_000;
        Deadline {
            clock,
            at: timespec {
                tv_sec: now.tv_sec + total / 1_000_000_000,
                tv_nsec: total % 1_000_000_000,
            },
        }
    }

    #[test]
    fn other_clocks_and_null_are_invalid() {
        let at = timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `at` is readable; null is allowed.
        unsafe {
            assert_eq!(
                Deadline::new(libc::CLOCK_PROCESS_CPUTIME_ID, &at).err(),
                Some(EINVAL)
            );
            assert_eq!(
                Deadline::new(CLOCK_REALTIME, std::ptr::null()).err(),
                Some(EINVAL)
            );
            assert!(Deadline::new(CLOCK_MONOTONIC, &at).is_ok());
        }
    }

    #[test]
    fn poll_times_out_after_the_deadline_and_not_before() {
        for clock in [CLOCK_REALTIME, CLOCK_MONOTONIC] {
            let start = std::time::Instant::now();
            let mut tries = 0;
            assert_eq!(
                in_ms(clock, 20).poll(|| {
                    tries += 1;
                    false
                }),
                ETIMEDOUT
            );
            assert!(start.elapsed() >= Duration::from_millis(19));
            assert!(tries > 2, "it polls, not only once: {tries}");
        }
    }

    #[test]
    fn poll_succeeds_when_the_attempt_does() {
        let mut tries = 0;
        let done = in_ms(CLOCK_MONOTONIC, 10_000).poll(|| {
            tries += 1;
            tries == 3
        });
        assert_eq!((done, tries), (0, 3));
        // A past deadline still gets one attempt, and a free lock is taken.
        assert_eq!(in_ms(CLOCK_REALTIME, -5).poll(|| true), 0);
    }

    #[test]
    fn an_instant_is_the_time_left_from_now() {
        let start = Instant::now();
        let instant = in_ms(CLOCK_REALTIME, 500).instant();
        let ahead = instant - start;
        assert!(ahead > Duration::from_millis(400) && ahead <= Duration::from_millis(501));
        // A past deadline is now: a timed wait then tries once.
        assert!(in_ms(CLOCK_MONOTONIC, -500).instant() <= Instant::now());
    }

    #[test]
    fn malformed_nanoseconds_fail_only_when_waiting() {
        let mut bad = in_ms(CLOCK_REALTIME, 10);
        bad.at.tv_nsec = 1_000_000_000;
        assert_eq!(bad.poll(|| true), 0);
        assert_eq!(bad.poll(|| false), EINVAL);
    }
}
