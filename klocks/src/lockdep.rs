//! Lockdep: the deadlocks a program *could* have, found from the lock orders it *did*
//! take, in a run where nothing deadlocked (the kernel's `kernel/locking/lockdep.c`,
//! for userspace).
//!
//! # The model
//!
//! - **Classes.** Every lock belongs to a class (`class.rs`): where it was made (its
//!   `init` call site, for the preload), or, for a lock never initialised by a call,
//!   the global it lies in (its address, named by its symbol in reports) or the site
//!   of its first use; a Rust lock not in a global is its own class. A class may be
//!   named ([`name_class`], `klocks_lockdep_class` in C): every lock given one name
//!   is one class. Dependencies are between classes, so an order taken on two objects
//!   convicts every pair of objects made at the same places.
//! - **Dependencies.** A thread that holds A and *waits* for B records A→B. A `trylock`
//!   never waits, so it records nothing, but the lock it took is held: a later wait
//!   records a dependency from it and from each lock below it down to the first that
//!   was waited for (as `check_prevs_add`). Only the held locks' top is linked
//!   otherwise: the rest are linked through it.
//! - **Reads** follow lockdep's recursive-read rules. Each dependency carries how the
//!   held lock was held (shared `S`, or exclusive) and how the wanted lock is taken
//!   (a recursive read `R`, which waits only for a writer *holding* the lock — glibc's
//!   default rwlock, `read_recursive` — or anything else, which also waits behind a
//!   queued writer: klocks' rwlocks' `read`, every write and mutex). A cycle is a
//!   possible deadlock unless, somewhere along it, a dependency that ends in `R` is
//!   followed by one that starts from `S`: two readers never wait for each other.
//!   So read-read orders reversed on two glibc rwlocks are not reported, but a read
//!   order reversed against a write order is. The graph (`graph.rs`) holds each class
//!   twice, once as "reached by an `R` dependency" and once otherwise, so that the
//!   rule is plain reachability.
//! - **Recursive locking.** Waiting for a lock of a class the thread already holds (two
//!   objects of one class nested, or a normal mutex relocked) is reported at once,
//!   unless both are recursive reads over a shared hold.
//! - **Also**: a lock held when its thread exits, and a lock destroyed while the
//!   destroying thread holds it, as warnings.
//!
//! # Cost and bounds
//!
//! With the validator off, each hook is one relaxed load and a branch. On, a lock call
//! takes no global lock and makes no system call: its class is one probe of a
//! lock-free table keyed by the lock's address, the held-lock stack is a thread-local
//! array, and the dependency it makes is looked up in a per-thread cache of recent
//! dependencies, then in a lock-free hash set of every dependency seen. Only a
//! dependency never seen before takes the graph's lock (`graph.rs`), which keeps a
//! topological order of the classes by Pearce and Kelly's dynamic algorithm (as
//! Abseil's deadlock detector): a new dependency that agrees with the order costs a
//! comparison, one that does not reorders only the classes between its ends, and
//! only one that closes a cycle is reported. Everything is allocated once, when the
//! validator is switched on, and never grows:
//!
//! | what | bound |
//! |---|---|
//! | classes | [`MAX_CLASSES`] |
//! | dependencies | [`MAX_DEPENDENCIES`] |
//! | live locks with a class | [`MAX_LOCKS`] (destroyed locks' slots are reused) |
//! | locks one thread holds at once | [`MAX_HELD`] |
//! | reports kept | [`MAX_REPORTS`] (later ones counted) |
//!
//! A bound reached prints one line and switches the validator off for the rest of
//! the process: it stops validating, it never guesses.
//!
//! # Hosts
//!
//! The validator is this module; what a report looks like is its host's
//! ([`Host`]): the LD_PRELOAD interposer (klocks-ffi) walks stacks with its unwinder
//! and prints reports symbolised at exit, the Rust host ([`enable`]) prints them when
//! found. klocks' own Rust locks (`Mutex`, `RwLock` and the other raw locks through
//! `lock_api`) call the validator only after [`enable`]: a runtime switch rather
//! than a cargo feature, so that a program can turn it on in its tests or under an
//! environment variable without a rebuild, and so that one build of the workspace
//! serves both (a feature would be unified into the preload's build by cargo).
//!
//! # Fork and signals
//!
//! The graph's lock is taken around `fork` (a `pthread_atfork` handler), so a child
//! never inherits it mid-change; the child keeps its parent's graph and its forking
//! thread's held locks, as the locks themselves are kept. A thread's held-lock stack
//! is changed only with its `busy` flag set: a signal handler that takes a lock while
//! its thread is inside the validator is not validated (its lock works as always).

mod class;
mod graph;
mod held;
mod report;
pub(crate) mod rust;
mod state;

use std::sync::atomic::Ordering::Relaxed;

pub use class::{ClassKind, NAME_BYTES};
pub use report::{Dependency, Report, ReportKind, FRAMES, MAX_CHAIN};
pub use state::{
    on, preload_on, Host, Mode, MAX_CLASSES, MAX_DEPENDENCIES, MAX_HELD, MAX_LOCKS, MAX_REPORTS,
};
use state::{ON, PRELOAD, RUST};

/// Switches the validator on for klocks' Rust locks, with the Rust host: reports
/// are printed on stderr as they are found (and kept: [`reports`]). Idempotent;
/// `false` if its tables could not be mapped.
pub fn enable() -> bool {
    start(&rust::HOST, RUST)
}

/// Switches the validator on for an interposer's hooks with its `host` (klocks-ffi);
/// `false` if the tables could not be mapped. Not part of the library's API.
#[doc(hidden)]
pub fn enable_for_preload(host: &'static Host) -> bool {
    start(host, PRELOAD)
}

fn start(host: &'static Host, who: u8) -> bool {
    if !graph::start(host) {
        return false;
    }
    held::start();
    // Relaxed: see `preload_on`.
    ON.fetch_or(who, Relaxed);
    true
}

/// Gives the lock at `lock` the class `name`: every lock given the same name is one
/// class (the kernel's `lockdep_set_class_and_name`). The name's first
/// [`NAME_BYTES`] bytes count. Call it before the lock is first taken.
pub fn name_class(lock: usize, name: &str) {
    if on() {
        class::name(lock, name);
    }
}

/// Names the class of a [`crate::Mutex`] or [`crate::RwLock`] (any `lock_api` lock
/// on a klocks raw lock): see [`name_class`].
pub fn name<L: Validated + ?Sized>(lock: &L, name: &str) {
    name_class(lock.raw_address(), name);
}

/// A lock whose raw lock the validator knows by address.
pub trait Validated {
    /// The address of its raw lock, the one its hooks pass.
    fn raw_address(&self) -> usize;
}

impl<R: lock_api::RawMutex, T: ?Sized> Validated for lock_api::Mutex<R, T> {
    fn raw_address(&self) -> usize {
        // SAFETY: only the raw lock's address is taken; nothing is locked or unlocked
        // through it.
        unsafe { self.raw() as *const R as usize }
    }
}

impl<R: lock_api::RawRwLock, T: ?Sized> Validated for lock_api::RwLock<R, T> {
    fn raw_address(&self) -> usize {
        // SAFETY: as for the mutex.
        unsafe { self.raw() as *const R as usize }
    }
}

/// The interposer's `init` of the lock at `lock`, called from `site`: its class is
/// the site's (a lock re-initialised at another address-reusing site takes the new
/// one).
pub fn initialised(lock: usize, site: usize) {
    if on() {
        class::initialised(lock, site);
    }
}

/// The lock at `lock` is destroyed: a warning if this thread holds it, and its slot
/// in the table of locks is freed.
pub fn destroyed(lock: usize) {
    if !on() {
        return;
    }
    held::destroyed(lock);
    class::forget(lock);
}

/// Before a thread waits for the lock at `lock` (taken as `mode`, called from
/// `site`): records the dependencies from the locks it holds, and reports what they
/// make possible. Returns the class to pass to [`acquired`] (0: not validated).
#[inline]
pub fn wait(lock: usize, mode: Mode, site: usize) -> u32 {
    held::wait(lock, mode, site)
}

/// A blocking lock call `take` (0: the lock was taken) on the lock at `lock`, as
/// `mode`, from `site`: [`wait`], `take`, then [`acquired`], with one look at the
/// thread's record.
#[inline]
pub fn acquire(lock: usize, mode: Mode, site: usize, take: impl FnOnce() -> i32) -> i32 {
    held::acquire(lock, mode, site, take)
}

/// The lock at `lock` was taken (`class` from [`wait`], or 0 for a `trylock`, which
/// waited for nothing and records no dependency).
#[inline]
pub fn acquired(lock: usize, class: u32, mode: Mode, site: usize) {
    held::acquired(lock, class, mode, site);
}

/// The lock at `lock` is released by this thread (an unknown lock is ignored: taken
/// before the validator started, or by a thread it did not follow).
#[inline]
pub fn released(lock: usize) {
    held::released(lock);
}

/// The reports found so far (a copy), oldest first, and how many more were not kept.
pub fn reports() -> (Vec<Report>, u64) {
    graph::reports()
}

/// Counts of what the validator holds: classes, dependencies, locks with a class.
pub fn usage() -> (usize, usize, usize) {
    (class::count(), graph::dependencies(), class::live_locks())
}

/// The class with id `class`: its kind and the site or address that keys it,
/// without allocating.
pub fn class_key(class: u32) -> (ClassKind, usize) {
    class::kind_and_site(class)
}

/// The name of the class with id `class` (empty unless named), into `out`, without
/// allocating.
pub fn class_name_into(class: u32, out: &mut [u8; class::NAME_BYTES]) -> &str {
    let len = class::name_into(class, out);
    std::str::from_utf8(&out[..len]).unwrap_or("?")
}

/// The class with id `class`: its kind, the site or address that keys it, and its
/// name (empty unless named).
pub fn class_info(class: u32) -> (ClassKind, usize, String) {
    class::info(class)
}
