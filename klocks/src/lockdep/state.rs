//! The validator's switch, bounds and the types its parts share: the leaf every
//! other file of `lockdep` imports.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::OnceLock;

use super::report::Report;
pub use super::report::FRAMES;

/// The most classes.
pub const MAX_CLASSES: usize = 4096;
/// The most dependencies between classes.
pub const MAX_DEPENDENCIES: usize = 16384;
/// The most live locks with a class at once.
pub const MAX_LOCKS: usize = 1 << 20;
/// The most locks one thread holds at once (the kernel's `MAX_LOCK_DEPTH`).
pub const MAX_HELD: usize = 48;
/// The most reports kept; later ones are counted.
pub const MAX_REPORTS: usize = 32;

/// How a lock is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A mutex, spinlock or write lock.
    Exclusive,
    /// A non-recursive mutex type that may be relocked by its holder without
    /// deadlock (recursive and error-checking pthread mutexes): a relock is no
    /// dependency.
    Reentrant,
    /// A read lock that waits behind a queued writer (klocks' rwlocks' `read`,
    /// glibc's writer-preferring rwlock).
    Read,
    /// A read lock that waits only for a writer holding the lock (glibc's default
    /// rwlock, `read_recursive`).
    RecursiveRead,
}

impl Mode {
    pub(super) fn shared(self) -> bool {
        matches!(self, Mode::Read | Mode::RecursiveRead)
    }
}

/// What a host gives the validator.
pub struct Host {
    /// Fills `frames` with the calling thread's stack from the lock call that returns
    /// to `site` (0 past the last). Called only for a dependency never seen before.
    pub capture: fn(site: usize, frames: &mut [usize; FRAMES]),
    /// Told of each report as it is made (with the graph's lock held: it must not
    /// take a lock the validator sees).
    pub found: fn(report: &Report),
    /// Told once that a bound was reached, with the one-line reason.
    pub stopped: fn(why: &str),
}

/// Who switched the validator on: bit [`PRELOAD`] or [`RUST`]; 0 while off.
pub(super) static ON: AtomicU8 = AtomicU8::new(0);
/// The interposer's bit of [`ON`].
pub(super) const PRELOAD: u8 = 1;
/// klocks' Rust locks' bit of [`ON`].
pub(super) const RUST: u8 = 2;

/// Whether the interposer's hooks validate: the one check they pay when off.
#[inline(always)]
pub fn preload_on() -> bool {
    // Relaxed: the tables are published by `start`'s Release store of the table
    // pointers, which every use loads with Acquire; this flag only says "try".
    ON.load(Relaxed) & PRELOAD != 0
}

/// Whether klocks' Rust locks validate.
#[inline(always)]
pub(crate) fn rust_on() -> bool {
    // Relaxed: as in `preload_on`.
    ON.load(Relaxed) & RUST != 0
}

/// Whether the validator runs for anyone.
pub fn on() -> bool {
    // Relaxed: as in `preload_on`.
    ON.load(Relaxed) != 0
}

/// The host the validator was started with (for [`stop`]'s line).
static HOST: OnceLock<&'static Host> = OnceLock::new();

/// Records the host (from `graph::start`).
pub(super) fn set_host(host: &'static Host) {
    let _ = HOST.set(host);
}

/// Stops validating for the rest of the process, after `why` (a bound was reached).
pub(super) fn stop(why: &str) {
    // Relaxed: see `preload_on`; a thread already past its check finishes its call
    // on tables that stay mapped.
    if ON.swap(0, Relaxed) != 0 {
        if let Some(host) = HOST.get() {
            (host.stopped)(why);
        }
    }
}
