//! The data under torture: what only the lock protects, and the check every critical
//! section makes around it (an occupancy count that a second writer, or a reader
//! beside a writer, sees non-zero; two non-atomic counters that writers move together
//! and readers find equal); and a worker's section, which runs that check under the
//! lock.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use std::sync::Arc;

use super::faults::Faults;

/// The data only the lock protects, and the occupancy check around it.
pub(super) struct Guarded {
    pub(super) writers_inside: AtomicU32,
    pub(super) readers_inside: AtomicU32,
    pub(super) count: UnsafeCell<u64>,
    pub(super) shadow: UnsafeCell<u64>,
    pub(super) violations: AtomicU64,
}

// SAFETY: `count` and `shadow` are touched only inside the lock under test (writers),
// or read there (readers); whether the lock really excludes is what is checked.
unsafe impl Sync for Guarded {}

impl Guarded {
    pub(super) fn new() -> Self {
        Self {
            writers_inside: AtomicU32::new(0),
            readers_inside: AtomicU32::new(0),
            count: UnsafeCell::new(0),
            shadow: UnsafeCell::new(0),
            violations: AtomicU64::new(0),
        }
    }

    /// A writer's critical section.
    pub(super) fn write(&self, faults: &Faults, i: u64) {
        // SeqCst (the four occupancy accesses): a writer and a reader each announce
        // themselves, then look for the other (store buffering must not hide both).
        if self.writers_inside.fetch_add(1, SeqCst) != 0 || self.readers_inside.load(SeqCst) != 0 {
            self.violations.fetch_add(1, Relaxed);
        }
        // SAFETY: the lock excludes other writers and readers (checked above).
        unsafe {
            let count = self.count.get().read_volatile();
            faults.inside(i);
            self.count.get().write_volatile(count + 1);
            self.shadow
                .get()
                .write_volatile(self.shadow.get().read_volatile() + 1);
        }
        self.writers_inside.fetch_sub(1, SeqCst);
    }

    /// A reader's critical section.
    pub(super) fn read(&self, faults: &Faults, i: u64) {
        // SeqCst: see `write`.
        self.readers_inside.fetch_add(1, SeqCst);
        if self.writers_inside.load(SeqCst) != 0 {
            self.violations.fetch_add(1, Relaxed);
        }
        // SAFETY: the lock excludes writers (checked above); readers only read.
        let (count, shadow) = unsafe {
            (
                self.count.get().read_volatile(),
                self.shadow.get().read_volatile(),
            )
        };
        faults.inside(i);
        if count != shadow {
            self.violations.fetch_add(1, Relaxed);
        }
        self.readers_inside.fetch_sub(1, SeqCst);
    }
}

/// What a worker does with the lock: `true` for a write (or mutex) section.
pub(super) type Section = Arc<dyn Fn(&Guarded, &Faults, u64, bool) + Send + Sync>;
