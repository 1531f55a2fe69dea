//! What being watched costs a thread, and when the probe stops charging it.
//!
//! A registered thread pays at every context switch it makes, whether or not anyone
//! watches it then: the kernel switches its perf context and writes a record (about
//! twice a yield ping-pong's switch). A thread that runs for milliseconds between
//! switches never notices; one that switches every few µs does (`sysbench threads`,
//! each thread yielding inside its critical section, ran visibly more CPU per event
//! with every thread registered than with the lock watched through CPU clocks:
//! `docs/decisions/waiting.md`, perf-probe-price). The waiters of such a thread gain
//! little from perf over the clock: its switches are what they watch for.
//!
//! So an owner reviews its own price now and then: at every [`REVIEW_EVERY`]-th
//! `watch_current` (the unlocks that found waiters: the only moments the owner runs
//! probe code), it compares the switch records its ring received since the
//! window began with the CPU time it ran since then. Once it has switched at least
//! [`MIN_SWITCHES`] times:
//!
//! ```text
//!   CPU time < switches × CPU_PER_SWITCH   retire the ring, key = (gen, tid|CLOCK)
//!                                          (waiters watch its CPU clock; its place
//!                                          in the budget goes back)
//!   otherwise                              a new window begins now
//! ```
//!
//! [`CPU_PER_SWITCH_NS`] bounds what the probe costs a thread that stays registered to
//! a small share of its CPU time (perf-probe-price). The move is one
//! way: a thread watched through its clock stays so until it exits (a second
//! `perf_event_open` takes milliseconds, and a thread that switched that often
//! usually keeps doing so). The move retires the ring with the exit's protocol
//! (`retire`, the module doc's Dekker pair), so a waiter never reads an unmapped
//! ring; a waiter that meets the moved key switches to the clock.
//!
//! The review reads the thread's own CPU clock (a system call) and two words of its
//! own ring, once every [`REVIEW_EVERY`] unlocks that found waiters; every other
//! call is a thread-local increment.

use std::cell::Cell;
use std::sync::atomic::{compiler_fence, Ordering::Relaxed, Ordering::SeqCst};

use super::ring::{layout, records_written};
use super::{current_tid, retire, Own, CLOCK, OWN, REGISTRY};
use crate::owner::cpu_clock::cpu_ns;

/// `watch_current` calls between two reviews.
pub(super) const REVIEW_EVERY: u32 = 64;
/// Switches a window needs before it is judged.
pub(super) const MIN_SWITCHES: u64 = 64;
/// The CPU time a registered thread runs per switch, at least, to stay registered.
pub(super) const CPU_PER_SWITCH_NS: u64 = 50_000;

/// The review window of the calling thread.
#[derive(Clone, Copy)]
struct Window {
    /// Whether the first window has begun: it begins at the first review, so the
    /// switches of the first [`REVIEW_EVERY`] calls are not judged.
    begun: bool,
    /// `watch_current` calls since registration.
    calls: u32,
    /// The thread's CPU time when the window began, in ns.
    cpu_ns: u64,
    /// The records its ring had received then.
    records: u64,
}

std::thread_local! {
    /// No destructor: readable from the fork handler and from signal handlers.
    static WINDOW: Cell<Window> = const {
        Cell::new(Window { begun: false, calls: 0, cpu_ns: 0, records: 0 })
    };
}

/// Counts one `watch_current` of an already observable thread and reviews the
/// thread's price every [`REVIEW_EVERY`]-th time (module doc).
#[inline]
pub(in crate::owner) fn review_now_and_then() {
    let Ok(Own::Slot(slot)) = OWN.try_with(Cell::get) else {
        return;
    };
    let Ok(mut window) = WINDOW.try_with(Cell::get) else {
        return;
    };
    window.calls = window.calls.wrapping_add(1);
    WINDOW.with(|cell| cell.set(window));
    if window.calls % REVIEW_EVERY == 0 {
        review(slot, window);
    }
}

/// Judges the window that began at `window` (module doc).
#[cold]
fn review(slot: usize, window: Window) {
    let (Ok(layout), Some(cpu_ns)) = (layout(), own_cpu_ns()) else {
        return;
    };
    // Relaxed: our own ring, published by this thread.
    let ring = REGISTRY.slots[slot].ring.load(Relaxed);
    // SAFETY: our own ring: only this thread retires it (here or at its exit), and
    // `OWN` says it is registered, so it is mapped.
    let records = unsafe { records_written(ring, &layout) };
    let switches = records.saturating_sub(window.records) / 2;
    if window.begun && switches < MIN_SWITCHES {
        return;
    }
    if window.begun && cpu_ns.saturating_sub(window.cpu_ns) < switches * CPU_PER_SWITCH_NS {
        move_to_clock(slot);
    } else {
        WINDOW.with(|cell| {
            cell.set(Window {
                begun: true,
                calls: window.calls,
                cpu_ns,
                records,
            })
        });
    }
}

/// Retires the calling thread's ring and leaves its slot marked [`CLOCK`].
fn move_to_clock(slot: usize) {
    OWN.with(|own| own.set(Own::Registering));
    // SeqCst signal fences: a handler on this thread that meets contention sees
    // `Registering` (and neither reviews nor registers) until the move is complete.
    compiler_fence(SeqCst);
    retire(slot, current_tid() | CLOCK);
    compiler_fence(SeqCst);
    OWN.with(|own| own.set(Own::Clock(slot)));
}

/// The calling thread's CPU time, in ns.
fn own_cpu_ns() -> Option<u64> {
    cpu_ns(libc::CLOCK_THREAD_CPUTIME_ID).ok()
}

#[cfg(test)]
mod tests;
