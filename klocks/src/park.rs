//! Block and wake: the userspace `pv_wait` / `pv_kick`.
//!
//! [`wait`] sleeps while a 32-bit word holds an expected value; [`wake_one`] and
//! [`wake_all`] wake threads sleeping on a word. On Linux this is the futex syscall
//! with `FUTEX_PRIVATE_FLAG` (the word is never shared between processes, so the
//! kernel hashes it by address alone, which is cheaper). The one lock whose word other
//! processes share, [`SharedFutexSpinLock`](crate::SharedFutexSpinLock), sleeps in
//! [`wait_shared`] and is woken by [`wake_one_shared_at`], the futex without that
//! flag, keyed by the memory behind the word. Under `--cfg loom` it is a
//! model with the same contract built from loom's mutex and condition variable, so
//! every sleeping path is model-checked.
//!
//! The contract, which every caller must be written against:
//! - `wait(word, v)` returns at once if `*word != v`; otherwise it sleeps until a
//!   `wake_*` on the same word, or spuriously (signals). Callers re-check and loop.
//! - The value check and the sleep are atomic with respect to wakes: a wake issued
//!   after a store that changed the word, by a thread whose store happens-before its
//!   wake, either finds the sleeper queued or the sleeper sees the new value.
//! - A wake on a word nobody sleeps on is a no-op, but still a syscall: callers avoid
//!   it with their own "someone may sleep" flag.

use crate::sync::AtomicU32;

#[cfg(not(loom))]
mod futex {
    use super::AtomicU32;
    use std::time::Duration;

    /// Sleeps while `*word == expected` (or until woken, timed out, or spuriously).
    pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
        let timeout = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs() as libc::time_t,
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let timeout = timeout
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `word` is a live, aligned u32 for the whole call; FUTEX_WAIT only reads
        // it. `timeout` is null ("no timeout") or points to a timespec that outlives the
        // call (a relative time). Errors (EAGAIN: the value differs, EINTR: a signal,
        // ETIMEDOUT) are spurious returns, which the contract allows.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                timeout,
            );
        }
    }

    /// Sleeps while `*word == expected`, as a sleeper of class `bits`, until woken by
    /// a wake of a matching class, until `deadline` (absolute, `CLOCK_MONOTONIC`), or
    /// spuriously. How the sleep ended.
    pub(crate) fn wait_bits(
        word: &AtomicU32,
        expected: u32,
        bits: u32,
        deadline: Option<&libc::timespec>,
    ) -> super::Woke {
        let deadline = deadline.map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: as in `wait`; `deadline` is null or a timespec that outlives the call
        // (FUTEX_WAIT_BITSET takes an absolute time on CLOCK_MONOTONIC). The unused
        // fifth argument is null. Errors are spurious returns.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
                expected,
                deadline,
                std::ptr::null::<u32>(),
                bits,
            )
        };
        if ret == 0 {
            return super::Woke::Woken;
        }
        // SAFETY: errno is this thread's; read right after the call that set it.
        match unsafe { *libc::__errno_location() } {
            libc::ETIMEDOUT => super::Woke::TimedOut,
            // EAGAIN (the word differed), EINTR (a signal).
            _ => super::Woke::NotAsleep,
        }
    }

    /// Wakes up to `count` sleepers of a class in `bits` on the word at `word`, which
    /// may be gone; how many it woke.
    pub(crate) fn wake_bits(word: *const AtomicU32, count: i32, bits: u32) -> u32 {
        // SAFETY: as in `wake`: the address is hashed, never dereferenced.
        let woken = unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.cast::<u32>(),
                libc::FUTEX_WAKE_BITSET | libc::FUTEX_PRIVATE_FLAG,
                count,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                bits,
            )
        };
        woken_of(woken)
    }

    /// Wakes up to `count` threads sleeping on the word at `word`, which may be gone;
    /// how many it woke.
    pub(crate) fn wake(word: *const AtomicU32, count: i32) -> u32 {
        // SAFETY: FUTEX_WAKE on a private futex hashes the address and never reads or
        // writes the memory there, so any aligned address is sound; `AtomicU32` has the
        // layout of `u32`.
        let woken = unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.cast::<u32>(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                count,
            )
        };
        woken_of(woken)
    }

    /// Sleeps while `*word == expected`, on a shared futex: the kernel keys the wait
    /// by the memory behind the word, not by this process's address of it, so a wake
    /// from another process, or through another mapping of the same memory, finds it.
    pub(crate) fn wait_shared(word: &AtomicU32, expected: u32) {
        // SAFETY: as in `wait`, with no timeout. Errors are spurious returns.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT,
                expected,
                std::ptr::null::<libc::timespec>(),
            );
        }
    }

    /// Wakes up to `count` threads of any process sleeping on the memory behind
    /// `word` (see [`wait_shared`]); how many it woke.
    pub(crate) fn wake_shared(word: *const AtomicU32, count: i32) -> u32 {
        // SAFETY: a shared FUTEX_WAKE looks up the mapping at the address to find the
        // memory behind it (an unmapped address is EFAULT, no wake) but never reads or
        // writes the word; `AtomicU32` has the layout of `u32`.
        let woken =
            unsafe { libc::syscall(libc::SYS_futex, word.cast::<u32>(), libc::FUTEX_WAKE, count) };
        woken_of(woken)
    }

    /// A wake's result: the threads woken, or -1 on an error (none woken).
    fn woken_of(result: libc::c_long) -> u32 {
        u32::try_from(result).unwrap_or(0)
    }
}

#[cfg(loom)]
mod futex {
    //! The futex as loom sees it: one table of sleepers under one mutex (the kernel's
    //! hash-bucket lock), one condition variable. A sleeper is only released when a
    //! wake picks it, so a wake sent to the wrong word is a lost wake-up here too.

    use super::AtomicU32;
    use crate::sync::Ordering::Relaxed;
    use loom::sync::{Condvar, Mutex};

    struct Sleeper {
        word: usize,
        /// The sleeper's class: a wake wakes it only if their bits intersect.
        bits: u32,
        id: u64,
        woken: bool,
    }

    #[derive(Default)]
    struct Table {
        sleepers: Vec<Sleeper>,
        next_id: u64,
    }

    loom::lazy_static! {
        static ref TABLE: (Mutex<Table>, Condvar) = (Mutex::new(Table::default()), Condvar::new());
    }

    fn key(word: *const AtomicU32) -> usize {
        word as usize
    }

    /// Loom models only take exact pairings (see `barrier`), so never a timeout.
    pub(crate) fn wait(word: &AtomicU32, expected: u32, _timeout: Option<std::time::Duration>) {
        wait_bits(word, expected, u32::MAX, None);
    }

    /// A sleeper of class `bits`; no timeout in a model (it never times out).
    pub(crate) fn wait_bits(
        word: &AtomicU32,
        expected: u32,
        bits: u32,
        _deadline: Option<&libc::timespec>,
    ) -> super::Woke {
        let (table, wakeup) = &*TABLE;
        let mut t = table.lock().unwrap();
        // Relaxed: the table lock orders this read after any store that preceded a
        // wake which took the lock first, as the kernel's bucket lock does.
        if word.load(Relaxed) != expected {
            return super::Woke::NotAsleep;
        }
        let id = t.next_id;
        t.next_id += 1;
        t.sleepers.push(Sleeper {
            word: key(word),
            bits,
            id,
            woken: false,
        });
        loop {
            t = wakeup.wait(t).unwrap();
            let me = t.sleepers.iter().position(|s| s.id == id).unwrap();
            if t.sleepers[me].woken {
                t.sleepers.remove(me);
                return super::Woke::Woken;
            }
        }
    }

    pub(crate) fn wake(word: *const AtomicU32, count: i32) -> u32 {
        wake_bits(word, count, u32::MAX)
    }

    /// A model has one process and one mapping: a shared futex is the private one.
    pub(crate) fn wait_shared(word: &AtomicU32, expected: u32) {
        wait(word, expected, None);
    }

    pub(crate) fn wake_shared(word: *const AtomicU32, count: i32) -> u32 {
        wake(word, count)
    }

    pub(crate) fn wake_bits(word: *const AtomicU32, count: i32, bits: u32) -> u32 {
        let (table, wakeup) = &*TABLE;
        let mut t = table.lock().unwrap();
        let mut left = count;
        for s in t.sleepers.iter_mut() {
            if left == 0 {
                break;
            }
            if s.word == key(word) && s.bits & bits != 0 && !s.woken {
                s.woken = true;
                left -= 1;
            }
        }
        wakeup.notify_all();
        count.abs_diff(left)
    }
}

/// Sleeps while `*word == expected`; may return spuriously. See the module doc.
#[inline]
pub(crate) fn wait(word: &AtomicU32, expected: u32) {
    futex::wait(word, expected, None);
}

/// [`wait`] for at most `timeout`.
#[inline]
pub(crate) fn wait_at_most(word: &AtomicU32, expected: u32, timeout: std::time::Duration) {
    futex::wait(word, expected, Some(timeout));
}

/// [`wait`] after a [`barrier::heavy`](crate::barrier::heavy): bounded when the barrier
/// pairing is.
#[inline]
pub(crate) fn wait_paired(word: &AtomicU32, expected: u32, pairing: crate::barrier::Pairing) {
    match pairing {
        crate::barrier::Pairing::Exact => wait(word, expected),
        crate::barrier::Pairing::Bounded => {
            wait_at_most(word, expected, crate::barrier::BOUNDED_SLEEP)
        }
    }
}

/// Wakes one thread sleeping on `word`, if any; how many it woke (the `stats`
/// feature counts wakes that found nobody).
#[inline]
pub(crate) fn wake_one(word: &AtomicU32) -> u32 {
    futex::wake(word, 1)
}

/// Wakes one thread sleeping on the word at `word`, if any. The word may be gone
/// already (a waiter that saw its wake-up condition and returned): then this wakes
/// nobody, or spuriously wakes whoever sleeps at that address now, which the contract
/// allows.
#[inline]
pub(crate) fn wake_one_at(word: *const AtomicU32) -> u32 {
    futex::wake(word, 1)
}

/// [`wait`] on a word that other processes may share, possibly mapped at other
/// addresses: the futex is not `FUTEX_PRIVATE_FLAG`, so the kernel keys it by the
/// memory behind the word. Pair it with [`wake_one_shared_at`] only.
#[inline]
pub(crate) fn wait_shared(word: &AtomicU32, expected: u32) {
    futex::wait_shared(word, expected);
}

/// Wakes one thread, of any process, sleeping in [`wait_shared`] on the memory behind
/// the word at `word`, whichever address it mapped it at; as [`wake_one_at`], the word
/// may be gone (then the address is unmapped, or names other memory, and the wake finds
/// nobody or wakes spuriously).
#[inline]
pub(crate) fn wake_one_shared_at(word: *const AtomicU32) -> u32 {
    futex::wake_shared(word, 1)
}

/// Wakes every thread sleeping on `word`; how many it woke.
#[inline]
pub(crate) fn wake_all(word: &AtomicU32) -> u32 {
    futex::wake(word, i32::MAX)
}

/// [`wait`] as a sleeper of class `bits` (a nonzero mask), until `deadline` if one is
/// given: only a [`wake_one_of_at`] whose class intersects `bits` wakes it. Lets one
/// word have sleepers that must be woken apart (the futex queue stays one queue,
/// ordered by priority, then arrival).
#[inline]
pub(crate) fn wait_as(word: &AtomicU32, expected: u32, bits: u32, deadline: Option<Deadline>) {
    futex::wait_bits(word, expected, bits, deadline.as_ref().map(|d| &d.0));
}

/// [`wait_as`] without a deadline, telling how the sleep ended (the loom models'
/// sleeps, which never time out).
#[cfg(loom)]
pub(crate) fn wait_bits_model(word: &AtomicU32, expected: u32, bits: u32) -> Woke {
    futex::wait_bits(word, expected, bits, None)
}

/// How a sleep of [`wait_as_until_woke`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woke {
    /// A wake (or a spurious return while asleep).
    Woken,
    /// The deadline passed while asleep.
    // The loom models never time out.
    #[cfg_attr(loom, allow(dead_code))]
    TimedOut,
    /// It did not sleep, or not to the end: the word differed from the expected value
    /// (it changed before the kernel compared it), or a signal interrupted the sleep.
    NotAsleep,
}

/// [`wait_as`] until `deadline`, telling how the sleep ended: whether the deadline
/// passed (not woken, not spurious), and whether it slept at all (a wait that
/// returned at once on a changed word did not). Under loom it never times out.
// Timed waits are native only (loom has no time).
#[cfg_attr(loom, allow(dead_code))]
#[inline]
pub(crate) fn wait_as_until_woke(
    word: &AtomicU32,
    expected: u32,
    bits: u32,
    deadline: Deadline,
) -> Woke {
    futex::wait_bits(word, expected, bits, Some(&deadline.0))
}

/// Wakes the first thread sleeping on the word at `word` whose class intersects
/// `bits`, if any; the word may be gone, as for [`wake_one_at`]. How many it woke.
#[inline]
pub(crate) fn wake_one_of_at(word: *const AtomicU32, bits: u32) -> u32 {
    futex::wake_bits(word, 1, bits)
}

/// Wakes every thread sleeping on the word at `word` whose class intersects `bits`;
/// the word may be gone, as for [`wake_one_at`]. How many it woke.
#[inline]
pub(crate) fn wake_all_of_at(word: *const AtomicU32, bits: u32) -> u32 {
    futex::wake_bits(word, i32::MAX, bits)
}

/// A point in time on `CLOCK_MONOTONIC` (the clock of `std::time::Instant` on Linux),
/// as the futex takes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline(libc::timespec);

impl Deadline {
    /// `after` from now on `CLOCK_MONOTONIC`: one clock read.
    // Ticked sleeps (`crate::wait`) do not sleep under loom.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn after(after: std::time::Duration) -> Self {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: writes the current time into `now`; CLOCK_MONOTONIC always exists.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        let nanos = now.tv_nsec as u64 + u64::from(after.subsec_nanos());
        Self(libc::timespec {
            tv_sec: now.tv_sec
                + after.as_secs() as libc::time_t
                + (nanos / 1_000_000_000) as libc::time_t,
            tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
        })
    }

    /// The moment `at`: `now` on `CLOCK_MONOTONIC` plus what is left until `at`.
    // Deadlines come from timed waits, which loom models do not make.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn at(at: std::time::Instant) -> Self {
        let left = at.saturating_duration_since(std::time::Instant::now());
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: writes the current time into `now`; CLOCK_MONOTONIC always exists.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        let nanos = now.tv_nsec as u64 + u64::from(left.subsec_nanos());
        let secs = (now.tv_sec as u64)
            .saturating_add(left.as_secs())
            .saturating_add(nanos / 1_000_000_000);
        Self(libc::timespec {
            tv_sec: secs.min(libc::time_t::MAX as u64) as libc::time_t,
            tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sync::Ordering::SeqCst;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn wait_returns_at_once_when_the_word_differs() {
        let word = AtomicU32::new(1);
        wait(&word, 0);
    }

    #[test]
    fn a_bounded_wait_times_out() {
        let word = AtomicU32::new(0);
        let start = std::time::Instant::now();
        wait_at_most(&word, 0, Duration::from_millis(5));
        assert!(start.elapsed() >= Duration::from_millis(4));
    }

    #[test]
    fn a_wake_tells_that_it_found_nobody() {
        let word = AtomicU32::new(0);
        assert_eq!(wake_one(&word), 0);
        assert_eq!(wake_all(&word), 0);
        assert_eq!(wake_one_of_at(&word, 1), 0);
    }

    #[test]
    fn wake_one_releases_a_sleeper() {
        let word = Arc::new(AtomicU32::new(0));
        let sleeper = {
            let word = Arc::clone(&word);
            std::thread::spawn(move || {
                while word.load(SeqCst) == 0 {
                    wait(&word, 0);
                }
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        word.store(1, SeqCst);
        wake_one(&word);
        sleeper.join().unwrap();
    }

    #[test]
    fn wake_all_releases_every_sleeper() {
        let word = Arc::new(AtomicU32::new(0));
        let sleepers: Vec<_> = (0..4)
            .map(|_| {
                let word = Arc::clone(&word);
                std::thread::spawn(move || {
                    while word.load(SeqCst) == 0 {
                        wait(&word, 0);
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
        word.store(1, SeqCst);
        wake_all(&word);
        for s in sleepers {
            s.join().unwrap();
        }
    }
}
