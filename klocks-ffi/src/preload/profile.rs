//! `KLOCKS_PROFILE`: which lock hurts, in an unmodified program.
//!
//! With `KLOCKS_PROFILE=1` the preload times every pthread mutex and rwlock call,
//! whoever runs the lock (klocks, or glibc with `KLOCKS_LOCK` unset), and at exit
//! prints the share of the threads' time spent waiting for locks, then the locks
//! that made threads wait longest ([`report`]): the global each lies in, if any, where
//! it was initialised or first locked and where its longest wait was, its
//! acquisitions, how many had to wait, the total and longest wait and hold, the
//! read/write split of rwlocks, the few call stacks at which threads waited longest
//! ([`stacks`]), and a suggestion derived from that shape ([`advice`]), never the
//! lock already in use. `KLOCKS_PROFILE=sigusr2` also prints it each time the process
//! receives `SIGUSR2`; `KLOCKS_PROFILE_FILE` sends it to a file (appended to; `%p`
//! becomes the process id), `KLOCKS_PROFILE_TOP` sets how many locks it lists (10),
//! `KLOCKS_PROFILE_LOCKS` how many live locks it tracks at once (65,536),
//! `KLOCKS_PROFILE_FORMAT` whether it is text, JSON lines, the folded stacks of
//! flame-graph tools or a pprof profile ([`format`]).
//!
//! # What a lock call costs
//!
//! A blocking call first tries the lock. If that succeeds the acquisition is
//! counted as uncontended and costs a table lookup ([`table`]: a hash of the
//! address, one load) and a counter update made while holding the lock (no locked
//! instruction); one uncontended acquisition in [`SAMPLE_EVERY`] per thread also
//! has its hold timed. If the try fails, the wait is timed with the clock ([`clock`]:
//! the time-stamp counter where it is invariant) from that failed try, the stack is
//! walked (a few frames, without allocating: [`stacks`]) and the lock tried again, so
//! that the walk counts as waiting only while the lock stayed busy ([`waited`]); the
//! hold that follows is timed too. A release while threads wait notes its time for
//! them (one clock read). The report scales the sampled holds up to every
//! acquisition, and says so. With the profile off, a lock call pays one load and branch: the profiled
//! paths are out of line (`#[cold]`), so the unprofiled one keeps no stack frame.
//!
//! # Where a lock comes from
//!
//! The `init` and the taking calls of mutexes and rwlocks (lock, try, timed and
//! clock) are entered through a two-instruction stub ([`with_caller`]) that passes
//! the caller's return address on; the first such call of a lock is its site, and
//! the call whose wait was the longest is noted too. The report symbolises both with
//! the program's debug information (file and line, with `-g`) or its symbol table.
//!
//! # Safe in any program
//!
//! - No lock call allocates (an allocator may take pthread locks): the table is an
//!   array mapped at start (`KLOCKS_PROFILE_LOCKS` entries of 512 bytes, pages backed
//!   as they are used), a lock it has no room for is counted, not profiled; the
//!   per-thread record of held locks is a fixed array of 8, the oldest dropped when
//!   full.
//! - A destroyed lock's counts are added to its site's totals (a fixed table of
//!   sites) and its entry is freed for another lock, so the table holds live locks
//!   only and memory stays bounded however many locks a program makes; `init` on an
//!   address forgets the lock that lived there before, so reused memory is a new lock
//!   (memory reused without `destroy` or `init`, e.g. a static initialiser copied
//!   over a freed lock's bytes, stays the old lock's entry).
//! - A fork child starts its counts from zero and reports its own life.
//! - The report never calls the C library's allocator, so it ends even when `exit`
//!   runs in a signal handler that interrupted `malloc` (or while any thread holds the
//!   allocator's lock): the report at exit resolves sites with memory from an arena
//!   that it maps first ([`arena`]: from then on this library's Rust code allocates
//!   only there), and prints them unresolved, with a note, if the arena cannot be
//!   mapped; the one a signal asks for allocates nothing and prints return addresses
//!   unresolved. Both write with the raw `write` system call. A process that ends by `_exit` or a
//!   signal prints nothing; calls made before the library's constructor ran (by an
//!   earlier constructor) are not counted.

mod advice;
mod arena;
mod clock;
mod format;
mod report;
mod stacks;
mod table;
mod units;
mod waited;

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{
    AtomicBool,
    Ordering::{Acquire, Release},
};

use super::settings::{
    parse_profile, parse_profile_locks, parse_profile_top, Profile, DEFAULT_PROFILE_LOCKS, PROFILE,
    PROFILE_FILE, PROFILE_FORMAT, PROFILE_LOCKS, PROFILE_TOP,
};
use libc::{EBUSY, ETIMEDOUT};

use super::config;
use super::stderr::say;
use format::Format;
pub(super) use table::Role;

/// One uncontended acquisition in this many has its hold timed, per thread.
const SAMPLE_EVERY: u32 = 16;

/// Whether the profile is on.
static ON: AtomicBool = AtomicBool::new(false);

/// Whether the profile is on: the one check a lock call pays when it is not.
#[inline(always)]
pub(super) fn on() -> bool {
    // Acquire: pairs with the Release in `start`, after which the clock and the
    // report's settings are ready.
    ON.load(Acquire)
}

/// A lock this thread holds, as the profile saw it taken.
#[derive(Clone, Copy)]
struct Held {
    lock: usize,
    slot: u32,
    role: Role,
    /// When its timed hold began; `None` for an untimed one.
    since: Option<u64>,
}

/// The locks a thread holds (most recent last), and its sampling countdown.
struct Thread {
    held: [Cell<Held>; HELD],
    depth: Cell<usize>,
    countdown: Cell<u32>,
}

/// How many held locks a thread's record keeps.
const HELD: usize = 8;
const NOTHING: Held = Held {
    lock: 0,
    slot: 0,
    role: Role::Mutex,
    since: None,
};

std::thread_local! {
    static THREAD: Thread = const {
        Thread {
            held: [const { Cell::new(NOTHING) }; HELD],
            depth: Cell::new(0),
            countdown: Cell::new(0),
        }
    };
}

impl Thread {
    /// Records a lock taken; when the record is full its oldest entry goes (a lock
    /// another thread released for this one, as a normal mutex allows, would
    /// otherwise stay forever).
    fn push(&self, held: Held) {
        let mut depth = self.depth.get().min(HELD);
        if depth == HELD {
            for i in 1..HELD {
                self.held[i - 1].set(self.held[i].get());
            }
            depth -= 1;
        }
        self.held[depth].set(held);
        self.depth.set(depth + 1);
    }

    /// Takes the most recent record of `lock` out.
    fn pop(&self, lock: usize) -> Option<Held> {
        let depth = self.depth.get().min(HELD);
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

    /// Whether this uncontended acquisition's hold is timed: `Some(now)` for one in
    /// [`SAMPLE_EVERY`].
    fn sample(&self) -> Option<u64> {
        match self.countdown.get() {
            0 => {
                self.countdown.set(SAMPLE_EVERY - 1);
                Some(clock::now())
            }
            n => {
                self.countdown.set(n - 1);
                None
            }
        }
    }
}

/// Counts an acquisition (`waited`: its wait and the time it ended, if it had to
/// wait, at `site`) and starts its hold.
fn acquired(lock: usize, slot: u32, role: Role, waited: Option<(u64, u64)>, site: usize) {
    table::at(slot)
        .counters(role)
        .acquired(role, waited.map(|(ticks, _)| (ticks, site)));
    // A thread that is exiting has no record: the hold goes untimed.
    let _ = THREAD.try_with(|thread| {
        let since = match waited {
            Some((_, at)) => Some(at),
            None => thread.sample(),
        };
        thread.push(Held {
            lock,
            slot,
            role,
            since,
        });
    });
}

/// A blocking acquisition of the lock at `lock`, called from `site`: `try_first`,
/// and if the lock is busy, `wait`, timed from the failed try ([`waited`]: the stack
/// is walked first, the lock tried again, and the walk counted only while the lock
/// stayed busy).
#[cold]
#[inline(never)]
pub(super) fn acquire(
    lock: usize,
    role: Role,
    site: usize,
    try_first: impl Fn() -> c_int,
    wait: impl FnOnce() -> c_int,
) -> c_int {
    let Some((slot, entry)) = table::entry(lock, site, role != Role::Mutex) else {
        return wait();
    };
    match try_first() {
        0 => {
            acquired(lock, slot, role, None, site);
            0
        }
        EBUSY => {
            let (stack, waited) =
                waited::wait_after_failed_try(entry, || stacks::capture(site), &try_first, wait);
            if waited.result == 0 {
                entry.stacks.record(stack.as_ref(), waited.ticks);
                let caller = stack.map_or(site, |stack| stack.caller());
                acquired(
                    lock,
                    slot,
                    role,
                    Some((waited.ticks, waited.acquired_at)),
                    caller,
                );
            }
            waited.result
        }
        error => error,
    }
}

/// A try, called from `site`: counted as an uncontended acquisition when it succeeds.
#[cold]
#[inline(never)]
pub(super) fn try_acquire(
    lock: usize,
    role: Role,
    site: usize,
    try_lock: impl FnOnce() -> c_int,
) -> c_int {
    let result = try_lock();
    if result == 0 {
        if let Some((slot, _)) = table::entry(lock, site, role != Role::Mutex) {
            acquired(lock, slot, role, None, site);
        }
    }
    result
}

/// Ends this thread's hold of `lock`, timed if its start was, while it still holds
/// the lock: an exclusive hold's counters are then ordered by the lock. A release
/// while threads wait is noted in the lock's entry ([`waited`]).
fn end_hold(lock: usize) {
    let held = THREAD.try_with(|thread| thread.pop(lock)).ok().flatten();
    let Some(Held {
        slot, role, since, ..
    }) = held
    else {
        return;
    };
    let entry = table::at(slot);
    if let Some(since) = since {
        entry
            .counters(role)
            .held(role, clock::now().saturating_sub(since));
    }
    entry.note_release();
}

/// A release of the lock at `lock`: the hold ends, then `unlock` runs.
#[cold]
#[inline(never)]
pub(super) fn release(lock: usize, unlock: impl FnOnce() -> c_int) -> c_int {
    end_hold(lock);
    unlock()
}

/// A condvar wait that releases and retakes the mutex at `lock` inside glibc: the
/// hold ends before, and a new one (counted as an acquisition, its wait unknown
/// since it is the condvar's) starts after. Klocks' condvars retake the mutex through
/// the interposed lock instead, where a wait for it is timed as any other.
pub(super) fn cond_wait(lock: usize, wait: impl FnOnce() -> c_int) -> c_int {
    end_hold(lock);
    let result = wait();
    if result == 0 || result == ETIMEDOUT {
        try_acquire(lock, Role::Mutex, 0, || 0);
    }
    result
}

/// The lock at `lock` was initialised, from `site`.
pub(super) fn initialised(lock: usize, site: usize, role: Role) {
    table::initialised(lock, site, role != Role::Mutex);
}

/// The lock at `lock` was destroyed.
pub(super) fn destroyed(lock: usize) {
    table::forget(lock);
}

/// Reads `KLOCKS_PROFILE` and its companions and, if asked, starts the profile.
/// Called from the library's constructor (where allocating is safe).
pub(super) fn start() {
    let profile = match config::var(PROFILE).map(parse_profile) {
        None | Some(Ok(Profile::Off)) => return,
        Some(Ok(profile)) => profile,
        Some(Err(bad)) => return say(&format!("{bad}; no profile")),
    };
    let top = match config::var(PROFILE_TOP).map(parse_profile_top) {
        None => report::DEFAULT_TOP,
        Some(Ok(top)) => top,
        Some(Err(bad)) => {
            say(&format!("{bad}; listing {}", report::DEFAULT_TOP));
            report::DEFAULT_TOP
        }
    };
    let locks = match config::var(PROFILE_LOCKS).map(parse_profile_locks) {
        None => DEFAULT_PROFILE_LOCKS,
        Some(Ok(locks)) => locks,
        Some(Err(bad)) => {
            say(&format!("{bad}; tracking {DEFAULT_PROFILE_LOCKS}"));
            DEFAULT_PROFILE_LOCKS
        }
    };
    let format = Format::parse(config::var(PROFILE_FORMAT)).unwrap_or_else(|complaint| {
        say(&complaint);
        Format::Text
    });
    if !table::allocate(locks) {
        return say(&format!(
            "could not map the profile's table of {locks} locks; no profile"
        ));
    }
    // The locks that run, not the variables as typed: `KLOCKS_LOCK=Default` alone
    // runs the rwlocks on `default-rw` too, and the advice must not suggest what
    // already runs.
    let choice = config::choice();
    let in_use = advice::InUse {
        lock: choice.mutex.map(klocks_core::catalog::MutexKind::name),
        rwlock: choice.rwlock.map(klocks_core::catalog::RwLockKind::name),
    };
    report::configure(top, config::var(PROFILE_FILE), in_use, format);
    clock::start();
    stacks::find_own_code();
    extern "C" fn in_child() {
        table::restart_counts();
        clock::restart();
    }
    // SAFETY: a plain function that lives as long as the process and, in the child,
    // touches only the table's atomics and the clock.
    if unsafe { libc::pthread_atfork(None, None, Some(in_child)) } != 0 {
        say("pthread_atfork failed: a fork child's profile includes its parent's counts");
    }
    if profile == Profile::AtExitAndSigusr2 {
        report::on_sigusr2();
    }
    // Release: pairs with the Acquire in `on`.
    ON.store(true, Release);
}

/// Prints the profile, if it is on (from the library's destructor, at exit), its
/// sites resolved with memory from the [`arena`], never the C library's allocator
/// (`exit` may run in a signal handler that interrupted `malloc`); if the arena
/// cannot be mapped, unresolved, with a note.
pub(super) fn at_exit() {
    if !on() {
        return;
    }
    if arena::enter() {
        report::print(report::Sites::Resolved);
        return;
    }
    const NOTE: &[u8] = b"klocks: profile: no memory to resolve sites at exit; sites unresolved\n";
    // SAFETY: writes NOTE's bytes, which are static, to fd 2 (the raw system call:
    // no allocation, no lock).
    unsafe { libc::syscall(libc::SYS_write, 2, NOTE.as_ptr(), NOTE.len()) };
    report::print(report::Sites::Raw);
}

/// The profile's stack walk, symbols and arena, which the lock validator
/// ([`super::lockdep`]) reuses.
pub(super) mod for_lockdep {
    use std::fmt::{self, Write};

    use super::{arena, report, stacks};

    /// Finds the preload's own code, so that walks skip it (see [`stacks`]).
    pub(in crate::preload) fn find_own_code() {
        stacks::find_own_code();
    }

    /// Walks the stack from the lock call that returns to `site` into `frames`
    /// (innermost first, 0 past the last; all 0 if it could not be walked).
    pub(in crate::preload) fn capture(site: usize, frames: &mut [usize]) {
        if let Some(stack) = stacks::capture(site) {
            for (to, &from) in frames.iter_mut().zip(stack.frames()) {
                *to = from;
            }
        }
    }

    /// Sends this library's allocations to the arena for the rest of the process
    /// (see [`arena`]): whether it could be mapped.
    pub(in crate::preload) fn enter_arena() -> bool {
        arena::enter()
    }

    /// `file:line (function)` of a return address, as the profile prints it.
    pub(in crate::preload) fn write_code(out: &mut impl Write, site: usize) -> fmt::Result {
        report::write_code(out, site, report::Sites::Resolved)
    }

    /// `lock SYMBOL[+offset]` for a lock in a global; `false` if in none.
    pub(in crate::preload) fn write_data_symbol(
        out: &mut impl Write,
        lock: usize,
    ) -> Result<bool, fmt::Error> {
        report::write_data_symbol(out, lock)
    }
}

/// Defines the C function `$name`, which calls `$target` with its arguments and then
/// the address its caller returns to (the call's site): two instructions, no frame.
/// `$site` is the register of the argument after the last (System V x86-64 order:
/// rdi, rsi, rdx, ...). On other architectures the site is 0 (unknown); the
/// preload's object layouts are x86-64's in any case. Exported under its name, or
/// with `local` first, visible to the preload only (a route's target, see `route`).
macro_rules! with_caller {
    (local $(#[$meta:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty
        => $target:path, site: $site:literal) => {
        with_caller!(@define [pub(in crate::preload)] $(#[$meta])* fn $name($($arg: $ty),*) -> $ret
            => $target, site: $site);
    };
    ($(#[$meta:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty
        => $target:path, site: $site:literal) => {
        with_caller!(@define [#[no_mangle] pub] $(#[$meta])* fn $name($($arg: $ty),*) -> $ret
            => $target, site: $site);
    };
    (@define [$($export:tt)*] $(#[$meta:meta])* fn $name:ident($($arg:ident: $ty:ty),*)
        -> $ret:ty => $target:path, site: $site:literal) => {
        $(#[$meta])*
        #[unsafe(naked)]
        #[cfg(target_arch = "x86_64")]
        $($export)* unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            core::arch::naked_asm!(
                concat!("mov ", $site, ", qword ptr [rsp]"),
                "jmp {target}",
                target = sym $target,
            );
        }

        $(#[$meta])*
        #[cfg(not(target_arch = "x86_64"))]
        $($export)* unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            // SAFETY: the caller's contract; the site is unknown here.
            unsafe { $target($($arg,)* 0) }
        }
    };
}
pub(super) use with_caller;

#[cfg(test)]
mod tests {
    use super::*;

    /// A release while a thread waits for the lock is noted in the lock's entry (where
    /// a wait that ended during the waiter's stack walk ended: `waited`); a release
    /// nobody waits for is not.
    #[test]
    fn a_release_while_threads_wait_is_noted() {
        // The only test that maps the table.
        assert!(table::allocate(64));
        // Never dereferenced: the table knows a lock by its address alone.
        let lock = 0x1000;
        let (slot, entry) = table::entry(lock, 0, false).expect("an empty table has room");
        acquired(lock, slot, Role::Mutex, None, 0);
        assert_eq!(release(lock, || 0), 0);
        assert_eq!(entry.last_release(), 0);
        acquired(lock, slot, Role::Mutex, None, 0);
        entry.start_waiting();
        assert_eq!(release(lock, || 0), 0);
        assert_ne!(entry.last_release(), 0);
    }
}
