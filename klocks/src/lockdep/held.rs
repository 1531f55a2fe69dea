//! Each thread's held locks, the hot path that turns them into dependencies, and the
//! check at thread exit.
//!
//! A thread's record is a thread-local array of [`MAX_HELD`] entries (most recent
//! last) and a direct-mapped cache of the [`CACHE`] dependencies it made last. It is
//! changed only with its `busy` flag set, so a signal handler that takes a lock while
//! its thread is inside the validator sees the flag and goes unvalidated, instead of
//! changing the array under the interrupted code; a handler that comes between two
//! calls pushes and pops its own entries above the thread's, as its locks nest.
//!
//! A thread's exit is seen by the destructor of a `pthread_key_create` key, set once
//! per thread on its first tracked lock (a key made at start is one of the 32 whose
//! value glibc keeps in the thread's descriptor: setting it allocates nothing).

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use super::class;
use super::graph::{self, key};
use super::report::{Dependency, ReportKind};
use super::state::{self, stop, Mode, FRAMES, MAX_HELD};

/// Dependencies a thread remembers having made.
const CACHE: usize = 64;

/// One held lock.
#[derive(Clone, Copy)]
struct Held {
    lock: usize,
    class: u32,
    mode: Mode,
    /// Whether it was waited for (not a `trylock`): dependencies from the locks below
    /// it go through it.
    waited: bool,
    site: usize,
}

const NOTHING: Held = Held {
    lock: 0,
    class: 0,
    mode: Mode::Exclusive,
    waited: false,
    site: 0,
};

struct Thread {
    busy: Cell<bool>,
    depth: Cell<usize>,
    held: [Cell<Held>; MAX_HELD],
    cache: [Cell<u64>; CACHE],
    /// Whether the exit key is set for this thread.
    watched: Cell<bool>,
}

std::thread_local! {
    static THREAD: Thread = const {
        Thread {
            busy: Cell::new(false),
            depth: Cell::new(0),
            held: [const { Cell::new(NOTHING) }; MAX_HELD],
            cache: [const { Cell::new(0) }; CACHE],
            watched: Cell::new(false),
        }
    };
}

/// The exit key, `u32::MAX` until made.
static EXIT_KEY: AtomicU32 = AtomicU32::new(u32::MAX);

/// Makes the exit key (from the validator's start).
pub(super) fn start() {
    // Relaxed: see below; a second start (both hosts) keeps the first key.
    if EXIT_KEY.load(Relaxed) != u32::MAX {
        return;
    }
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: a plain function that lives as long as the process.
    if unsafe { libc::pthread_key_create(&mut key, Some(thread_exit)) } == 0 {
        // Relaxed: read by the thread's own later calls, after `start`'s tables are
        // published by the validator's switch.
        EXIT_KEY.store(key, Relaxed);
    }
}

/// Runs `body` on this thread's record, unless the thread is inside the validator
/// (a signal handler's call) or exiting.
#[inline(always)]
fn with_thread<R: Default>(body: impl FnOnce(&Thread) -> R) -> R {
    THREAD
        .try_with(|thread| {
            if thread.busy.replace(true) {
                return R::default();
            }
            let result = body(thread);
            thread.busy.set(false);
            result
        })
        .unwrap_or_default()
}

/// See `lockdep::wait`.
#[inline]
pub(super) fn wait(lock: usize, mode: Mode, site: usize) -> u32 {
    with_thread(|thread| {
        let class = class::of(lock, site);
        if class != 0 {
            thread.depend(lock, class, mode, site);
        }
        class
    })
}

/// See `lockdep::acquire`: one look at the thread's record for the wait, the take
/// and the hold (the flag stays set while `take` runs, so a signal handler's lock
/// calls meanwhile go unvalidated).
#[inline]
pub(super) fn acquire(lock: usize, mode: Mode, site: usize, take: impl FnOnce() -> i32) -> i32 {
    let mut take = Some(take);
    let mut run = || take.take().map_or(0, |take| take());
    let result = THREAD.try_with(|thread| {
        if thread.busy.replace(true) {
            return run();
        }
        let class = class::of(lock, site);
        if class != 0 {
            thread.depend(lock, class, mode, site);
        }
        let result = run();
        if result == 0 && class != 0 {
            thread.push(lock, class, mode, true, site);
        }
        thread.busy.set(false);
        result
    });
    result.unwrap_or_else(|_| run())
}

/// See `lockdep::acquired`.
#[inline]
pub(super) fn acquired(lock: usize, class: u32, mode: Mode, site: usize) {
    with_thread(|thread| {
        let waited = class != 0;
        let class = if waited { class } else { class::of(lock, site) };
        if class == 0 {
            return;
        }
        thread.push(lock, class, mode, waited, site);
    });
}

/// See `lockdep::released`.
#[inline]
pub(super) fn released(lock: usize) {
    with_thread(|thread| {
        thread.remove(lock);
    });
}

/// See `lockdep::destroyed`.
pub(super) fn destroyed(lock: usize) {
    let held = with_thread(|thread| thread.remove(lock));
    if let Some(held) = held {
        warn(ReportKind::DestroyedWhileHeld, held);
    }
}

impl Thread {
    #[inline]
    fn push(&self, lock: usize, class: u32, mode: Mode, waited: bool, site: usize) {
        let depth = self.depth.get();
        if depth == MAX_HELD {
            return stop("lockdep: a thread holds more than 48 locks; validation stopped");
        }
        self.held[depth].set(Held {
            lock,
            class,
            mode,
            waited,
            site,
        });
        self.depth.set(depth + 1);
        if !self.watched.replace(true) {
            watch_exit();
        }
    }

    /// The dependencies of waiting for `lock` (of `class`, as `mode`, from `site`):
    /// from the top of the held locks down to the first that was waited for.
    #[inline(always)]
    fn depend(&self, lock: usize, class: u32, mode: Mode, site: usize) {
        let recursive = mode == Mode::RecursiveRead;
        for i in (0..self.depth.get()).rev() {
            let held = self.held[i].get();
            if held.lock == lock && matches!(mode, Mode::Reentrant | Mode::RecursiveRead) {
                // A relock that does not wait: a recursive mutex's count, a recursive
                // read of a lock the thread reads.
                if mode == Mode::Reentrant || held.mode.shared() {
                    return;
                }
            }
            self.dependency(held, class, recursive, site);
            if held.waited {
                return;
            }
        }
    }

    #[inline(always)]
    fn dependency(&self, held: Held, class: u32, recursive: bool, site: usize) {
        let shared = held.mode.shared();
        if held.class == class && shared && recursive {
            return;
        }
        let key = key(held.class, class, shared, recursive);
        let cached = &self.cache[(key as usize ^ (key >> 32) as usize) % CACHE];
        if cached.get() == key {
            return;
        }
        if !graph::seen(key) {
            self.new_dependency(key, held, class, recursive, site);
        }
        cached.set(key);
    }

    #[cold]
    #[inline(never)]
    fn new_dependency(&self, key: u64, held: Held, class: u32, recursive: bool, site: usize) {
        let Some(host) = graph::host() else { return };
        let mut stack = [0; FRAMES];
        (host.capture)(site, &mut stack);
        graph::add(
            key,
            Dependency {
                from: held.class,
                to: class,
                from_shared: held.mode.shared(),
                to_recursive_read: recursive,
                holder_site: held.site,
                waiter_site: site,
                waiter_stack: stack,
                thread: crate::owner::current_tid(),
            },
        );
    }

    /// Takes the most recent entry of `lock` out.
    #[inline]
    fn remove(&self, lock: usize) -> Option<Held> {
        let depth = self.depth.get();
        // Locks are mostly released in the reverse order of their taking.
        if depth > 0 && self.held[depth - 1].get().lock == lock {
            self.depth.set(depth - 1);
            return Some(self.held[depth - 1].get());
        }
        let at = (0..depth)
            .rev()
            .find(|&i| self.held[i].get().lock == lock)?;
        let held = self.held[at].get();
        for i in at + 1..depth {
            self.held[i - 1].set(self.held[i].get());
        }
        self.depth.set(depth - 1);
        Some(held)
    }
}

/// A warning about `held` (where it was taken is its site).
#[cold]
fn warn(kind: ReportKind, held: Held) {
    graph::warn(
        kind,
        Dependency {
            from: held.class,
            holder_site: held.site,
            thread: crate::owner::current_tid(),
            ..Dependency::default()
        },
    );
}

/// Sets the exit key for this thread (its value only has to be non-null).
#[cold]
fn watch_exit() {
    // Relaxed: see `start`.
    let key = EXIT_KEY.load(Relaxed);
    if key != u32::MAX {
        // SAFETY: a key made by `start`; the value is never dereferenced.
        unsafe { libc::pthread_setspecific(key, std::ptr::dangling::<libc::c_void>()) };
    }
}

/// The exit key's destructor: a warning for each class the thread still holds.
extern "C" fn thread_exit(_: *mut libc::c_void) {
    if !state::on() {
        return;
    }
    let held: Option<[Held; MAX_HELD]> = with_thread(|thread| {
        let mut held = [NOTHING; MAX_HELD];
        for (i, slot) in held.iter_mut().enumerate().take(thread.depth.get()) {
            *slot = thread.held[i].get();
        }
        thread.depth.set(0);
        Some(held)
    });
    for entry in held.iter().flatten().filter(|entry| entry.class != 0) {
        warn(ReportKind::HeldAtThreadExit, *entry);
    }
}
