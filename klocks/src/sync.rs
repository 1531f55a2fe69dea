//! The atomics and thread primitives klocks is written against.
//!
//! Normal builds use `std`; `--cfg loom` swaps in loom's models so the same lock
//! code is explored under the C11 memory model. Everything a lock touches
//! concurrently goes through here, nothing else.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU16, AtomicU32, AtomicU64, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU16, AtomicU32, AtomicU64, Ordering};

/// One polite iteration of a busy-wait loop (`cpu_relax()`).
///
/// Under loom this yields to the model scheduler: loom's scheduler is deliberately
/// unfair, so a spin loop that does not yield never lets the thread it waits for run.
#[inline(always)]
pub(crate) fn cpu_relax() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// `n` iterations of [`cpu_relax`]: a backoff step.
#[inline]
pub(crate) fn cpu_relax_times(n: u32) {
    for _ in 0..n {
        cpu_relax();
    }
}

#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;
#[cfg(all(not(loom), any(test, feature = "testing")))]
pub(crate) use std::{sync::Arc, thread::spawn};

#[cfg(loom)]
pub(crate) use loom::thread::yield_now;
#[cfg(all(loom, any(test, feature = "testing")))]
pub(crate) use loom::{cell::UnsafeCell, sync::Arc, thread::spawn};

/// `std::cell::UnsafeCell` with loom's closure API, so test data can be checked for
/// races by loom and used unchanged in native stress tests.
#[cfg(all(not(loom), any(test, feature = "testing")))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(all(not(loom), any(test, feature = "testing")))]
impl<T> UnsafeCell<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }
}
