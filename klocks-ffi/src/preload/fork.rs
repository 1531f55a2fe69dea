//! Fork generations: how a child repairs the locks it inherited.
//!
//! The process starts in generation 0; a fork child is one generation past its
//! parent. Every interposed object records the generation it was last used in
//! (zero-filled objects: 0). The first use of an object from an older generation
//! repairs it ([`holder`] says how) while the other threads of the child wait. The
//! C API's `klocks_mutex_t` keeps a stamp of the same generations (`crate::mutex`),
//! so the library's constructor installs the handlers whether or not it is
//! preloaded.
//!
//! For that, each fork records which thread forked: its kernel tid before the fork
//! and in the child (the same thread goes on, with a new tid). A lock whose recorded
//! holder is the forking thread is held by the child's continuation of it; any other
//! recorded holder is a thread the child does not have. Mutexes and rwlocks record
//! holders by tid ([`this_thread`]; the rwsem's owner word).

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Once;

use klocks_core::owner::{current_tid, current_tid_inline};
use klocks_core::stamp::{make_current, Repair};

use super::time::Deadline;

/// How many generations back a holder is followed; older objects held at a fork
/// are treated as held by a thread the child does not have.
const HISTORY: usize = 64;

/// The current generation. Written only in a fork child's handler, while the child
/// has one thread; threads created later are ordered after it by `pthread_create`.
static GENERATION: AtomicU32 = AtomicU32::new(0);
/// `FORKER[g]`: the tid, in generation `g`, of the thread that forked generation
/// `g + 1`. `CONTINUATION[g + 1]`: the same thread's tid in generation `g + 1`.
static FORKER: [AtomicU32; HISTORY] = [const { AtomicU32::new(0) }; HISTORY];
static CONTINUATION: [AtomicU32; HISTORY] = [const { AtomicU32::new(0) }; HISTORY];

std::thread_local! {
    /// The forking thread's tid, recorded by the prepare handler; the child's copy of
    /// this thread-local is how the child learns it.
    static FORKING_TID: Cell<u32> = const { Cell::new(0) };
}

/// The calling thread's identity in mutex owner fields: its kernel thread id, as
/// glibc keeps it, which no live thread shares and the kernel hands out again only
/// after its tid counter wraps (a thread pointer, which glibc gives to the next thread
/// at once from its stack cache, would let a new thread pass for a dead owner). The
/// same id the lock words of `default` and `spinfutex` hold, and as cheap: one
/// `%fs`-relative load once the constructor calibrated it
/// (`klocks::owner::calibrate_glibc_tid`).
#[inline(always)]
pub(super) fn this_thread() -> u64 {
    u64::from(current_tid())
}

/// [`this_thread`] if it is one load (`None` before the constructor's calibration,
/// or if glibc's tid field was not found): for the routes' fast paths, which take the
/// general entry on `None` and so stay leaf functions without a stack frame.
#[inline(always)]
pub(super) fn this_thread_inline() -> Option<u32> {
    current_tid_inline()
}

/// The stamp of an rwlock glibc owns: a magic value, as `klocks::stamp::REPAIRING`
/// (from which it differs), since an rwlock's stamp lives in padding that a stack
/// initialiser may leave as garbage.
pub(super) const GLIBC_OWNED: u32 = 0x4B4C_4B50;
const _: () = assert!(GLIBC_OWNED != klocks_core::stamp::REPAIRING);

/// The current generation.
#[inline]
pub(crate) fn generation() -> u32 {
    // Relaxed: see `GENERATION`.
    GENERATION.load(Relaxed)
}

/// Registers the fork handlers (once per process).
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // klocks' cached tid registers its own fork handler on first use: do that
        // now, not in `prepare` (a handler registered during a fork is skipped).
        current_tid();
        // SAFETY: both handlers are plain functions that live as long as the process
        // and do only what is allowed around fork (thread-local and atomic accesses,
        // gettid).
        let failed = unsafe { libc::pthread_atfork(Some(prepare), None, Some(in_child)) } != 0;
        if failed {
            super::stderr::say(
                "pthread_atfork failed: locks held across fork() may not be usable in the child",
            );
        }
    });
}

extern "C" fn prepare() {
    FORKING_TID.with(|tid| tid.set(current_tid()));
}

extern "C" fn in_child() {
    let parent = generation();
    let child = parent + 1;
    if let (Some(forker), Some(continuation)) = (
        FORKER.get(parent as usize),
        CONTINUATION.get(child as usize),
    ) {
        // Relaxed (the three stores): as `GENERATION`, written while the child has
        // one thread, and read by threads it creates later.
        forker.store(FORKING_TID.with(Cell::get), Relaxed);
        // SAFETY: gettid has no preconditions. Asked directly: klocks' cached tid may
        // not be reset yet (handlers run in registration order).
        continuation.store(unsafe { libc::gettid() } as u32, Relaxed);
    }
    // Relaxed: see `GENERATION`.
    GENERATION.store(child, Relaxed);
}

/// Who holds, in this generation, a lock that `recorded` (0: nobody) held when it
/// was last used, in generation `stamp`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Holder {
    /// Nobody: repair it as a free lock.
    Nobody,
    /// The child's continuation of the forking thread, by the identity asked with
    /// (its tid in this generation): it re-takes the lock.
    Continuation(u64),
    /// A thread the child does not have: the lock stays held, as with glibc.
    Gone,
}

/// See [`Holder`]; `recorded` is a tid.
pub(crate) fn holder_by_tid(stamp: u32, recorded: u32) -> Holder {
    holder_in(stamp, generation(), recorded.into(), |g| {
        // Relaxed: see the stores in `in_child`.
        (
            FORKER[g].load(Relaxed).into(),
            CONTINUATION[g + 1].load(Relaxed).into(),
        )
    })
}

/// [`holder_by_tid`] over a given history: `step(g)` is the forking thread's identity
/// in generation `g` and in `g + 1`.
fn holder_in(stamp: u32, now: u32, recorded: u64, step: impl Fn(usize) -> (u64, u64)) -> Holder {
    if recorded == 0 {
        return Holder::Nobody;
    }
    let mut tid = recorded;
    for g in stamp as usize..now as usize {
        if g + 1 >= HISTORY {
            return Holder::Gone;
        }
        let (forker, continuation) = step(g);
        if tid != forker {
            return Holder::Gone;
        }
        tid = continuation;
    }
    Holder::Continuation(tid)
}

/// How long a call waits for a stale object to become current.
#[derive(Clone, Copy)]
pub(crate) enum Patience {
    /// A blocking call (`lock`, `rdlock`): as long as it takes.
    Forever,
    /// A try (`trylock`, `tryrdlock`, and `unlock`/`destroy`, whose caller cannot be
    /// the one the repair waits for): a few spins for another thread's repair in
    /// progress, never for the forking thread's continuation, which may never come.
    Try,
    /// A timed call: until its deadline.
    Until(Deadline),
}

/// Repairs an object stamped `stamp` if it was last used in an older generation;
/// whether it is current (`false` only when `patience` ran out first).
///
/// `klocks::stamp::make_current`'s election (loom-checked there): one thread at a
/// time wins the stale object. `holder(stale)` says who holds it; a lock of the
/// forking thread is only re-taken by its continuation (`is_me`), so another thread
/// hands the object back untouched and waits, as `patience` allows; `fix` repairs it
/// for the holder.
#[cold]
pub(crate) fn repair(
    stamp: &AtomicU32,
    patience: Patience,
    holder: impl Fn(u32) -> Holder,
    is_me: impl Fn(u64) -> bool,
    mut fix: impl FnMut(Holder),
) -> bool {
    make_current(
        stamp,
        generation(),
        |stale| match holder(stale) {
            Holder::Continuation(who) if !is_me(who) => Repair::NotMine,
            holder => {
                fix(holder);
                Repair::Done
            }
        },
        |round| wait_for_repair(round, patience),
    )
}

/// Waits a little for another thread's repair (or the continuation's) to finish:
/// spins at first, then naps; whether to try again.
fn wait_for_repair(round: u32, patience: Patience) -> bool {
    if round < SPINS {
        std::hint::spin_loop();
        return true;
    }
    let nap = std::time::Duration::from_micros(50);
    match patience {
        Patience::Forever => super::nap(nap),
        Patience::Try => return false,
        Patience::Until(deadline) => match deadline.left() {
            Some(left) => super::nap(nap.min(left)),
            None => return false,
        },
    }
    true
}

/// Rounds of spinning before a waiter for a repair naps (or a try gives up).
const SPINS: u32 = 64;

#[cfg(test)]
mod tests {
    use super::*;

    /// Generation 0 forked by tid 10 (tid 20 in the child); generation 1 forked by
    /// tid 20 (tid 30 in the grandchild).
    fn history(g: usize) -> (u64, u64) {
        [(10, 20), (20, 30)][g]
    }

    #[test]
    fn the_forking_thread_keeps_its_locks_across_generations() {
        assert_eq!(holder_in(0, 1, 10, history), Holder::Continuation(20));
        assert_eq!(holder_in(0, 2, 10, history), Holder::Continuation(30));
        assert_eq!(holder_in(1, 2, 20, history), Holder::Continuation(30));
    }

    #[test]
    fn other_holders_are_gone_and_free_locks_stay_free() {
        assert_eq!(holder_in(0, 1, 11, history), Holder::Gone);
        // Held by tid 10 in generation 1 is not the forker of generation 1 (tid 20).
        assert_eq!(holder_in(1, 2, 10, history), Holder::Gone);
        assert_eq!(holder_in(0, 2, 0, history), Holder::Nobody);
    }

    #[test]
    fn history_is_bounded() {
        let endless = |_| (7, 7);
        assert_eq!(holder_in(0, HISTORY as u32 + 5, 7, endless), Holder::Gone);
        assert_eq!(holder_in(0, 3, 7, endless), Holder::Continuation(7));
    }
}
