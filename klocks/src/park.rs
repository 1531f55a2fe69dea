//! Block and wake: the userspace `pv_wait` / `pv_kick`.
//!
//! [`wait`] sleeps while a 32-bit word holds an expected value; [`wake_one`] and
//! [`wake_all`] wake threads sleeping on a word. On Linux this is the futex syscall
//! with `FUTEX_PRIVATE_FLAG` (the word is never shared between processes, so the
//! kernel hashes it by address alone, which is cheaper). Under `--cfg loom` it is a
//! model with the same contract built from loom's mutex and condition variable, so
//! every sleeping path is model-checked.
//!
//! The contract, which every caller must be written against:
//! - `wait(word, v)` returns at once if `*word != v`; otherwise it sleeps until a
//!   `wake_*` on the same word, or spuriously (signals). Callers re-check and loop.
//! - The value check and the sleep are atomic with respect to wakes: a wake issued
//!   after a store that changed the word, by a thread whose store happens-before its
//!   wake, either finds the sleeper queued or the sleeper sees the new value.
//! - A wake on a word nobody sleeps on is a no-op (a syscall, ~0.25 µs: callers avoid
//!   it with their own "someone may sleep" flag).

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

    /// Wakes up to `count` threads sleeping on the word at `word`, which may be gone.
    pub(crate) fn wake(word: *const AtomicU32, count: i32) {
        // SAFETY: FUTEX_WAKE on a private futex hashes the address and never reads or
        // writes the memory there, so any aligned address is sound; `AtomicU32` has the
        // layout of `u32`.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.cast::<u32>(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                count,
            );
        }
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
        let (table, wakeup) = &*TABLE;
        let mut t = table.lock().unwrap();
        // Relaxed: the table lock orders this read after any store that preceded a
        // wake which took the lock first, as the kernel's bucket lock does.
        if word.load(Relaxed) != expected {
            return;
        }
        let id = t.next_id;
        t.next_id += 1;
        t.sleepers.push(Sleeper {
            word: key(word),
            id,
            woken: false,
        });
        loop {
            t = wakeup.wait(t).unwrap();
            let me = t.sleepers.iter().position(|s| s.id == id).unwrap();
            if t.sleepers[me].woken {
                t.sleepers.remove(me);
                return;
            }
        }
    }

    pub(crate) fn wake(word: *const AtomicU32, count: i32) {
        let (table, wakeup) = &*TABLE;
        let mut t = table.lock().unwrap();
        let mut left = count;
        for s in t.sleepers.iter_mut() {
            if left == 0 {
                break;
            }
            if s.word == key(word) && !s.woken {
                s.woken = true;
                left -= 1;
            }
        }
        wakeup.notify_all();
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

/// Wakes one thread sleeping on `word`, if any.
#[inline]
pub(crate) fn wake_one(word: &AtomicU32) {
    futex::wake(word, 1);
}

/// Wakes one thread sleeping on the word at `word`, if any. The word may be gone
/// already (a waiter that saw its wake-up condition and returned): then this wakes
/// nobody, or spuriously wakes whoever sleeps at that address now, which the contract
/// allows.
#[inline]
pub(crate) fn wake_one_at(word: *const AtomicU32) {
    futex::wake(word, 1);
}

/// Wakes every thread sleeping on `word`.
#[inline]
pub(crate) fn wake_all(word: &AtomicU32) {
    futex::wake(word, i32::MAX);
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
