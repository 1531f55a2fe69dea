//! Fork generations: how a child repairs the locks it inherited.
//!
//! The process starts in generation 0; a fork child is one generation past its
//! parent. Every interposed object records the generation it was last used in
//! (zero-filled objects: 0). The first use of an object from an older generation
//! repairs it ([`holder`] says how) while the other threads of the child wait.
//!
//! For that, each fork records which thread forked: its id before the fork, and its
//! id in the child (the same thread goes on, with a new kernel tid). A lock whose
//! recorded holder is the forking thread is held by the child's continuation of
//! it; any other recorded holder is a thread the child does not have.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Once;

use klocks_core::owner::current_tid;

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

/// Generation stamps that are not generations: an object being repaired, and (in
/// rwlocks) an object glibc owns. Magic values, since an rwlock's stamp lives in
/// padding that a stack initialiser may leave as garbage.
pub(super) const REPAIRING: u32 = 0x4B4C_4B52;
pub(super) const GLIBC_OWNED: u32 = 0x4B4C_4B50;

/// The current generation.
#[inline]
pub(super) fn generation() -> u32 {
    // Relaxed: see `GENERATION`.
    GENERATION.load(Relaxed)
}

/// Registers the fork handlers (once per process).
pub(super) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: both handlers are plain functions that live as long as the process
        // and do only what is allowed around fork (thread-local and atomic accesses,
        // gettid).
        let failed = unsafe { libc::pthread_atfork(Some(prepare), None, Some(in_child)) } != 0;
        if failed {
            super::say("pthread_atfork failed: locks held across fork() may not be usable in the child");
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
pub(super) enum Holder {
    /// Nobody: repair it as a free lock.
    Nobody,
    /// This tid of the child (the forking thread, forked on): it re-takes the lock.
    Continuation(u32),
    /// A thread the child does not have: the lock stays held, as with glibc.
    Gone,
}

/// See [`Holder`].
pub(super) fn holder(stamp: u32, recorded: u32) -> Holder {
    holder_in(stamp, generation(), recorded, |g| {
        (FORKER[g].load(Relaxed), CONTINUATION[g + 1].load(Relaxed))
    })
}

/// [`holder`] over a given history: `step(g)` is `(FORKER[g], CONTINUATION[g + 1])`.
fn holder_in(stamp: u32, now: u32, recorded: u32, step: impl Fn(usize) -> (u32, u32)) -> Holder {
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

/// Waits a little for another thread's repair (or the continuation's) to finish.
pub(super) fn wait_for_repair(round: &mut u32) {
    if *round < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    *round = round.saturating_add(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Generation 0 forked by tid 10 (tid 20 in the child); generation 1 forked by
    /// tid 20 (tid 30 in the grandchild).
    fn history(g: usize) -> (u32, u32) {
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
