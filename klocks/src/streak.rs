//! A thread's run of acquisitions that bypassed a lock's queue, and its bound.
//!
//! Locks that let a running thread take the lock ahead of sleeping waiters (the pv
//! qspinlock's steals, the rwsem's spinning readers) pass it among the threads that
//! happen to be running: without a bound, a thread asleep in the queue gets the lock
//! once per queue rotation while the running ones get all the rest. A [`Streak`]
//! counts the calling thread's bypasses in a row; once it reaches its bound the
//! thread must queue, and queueing starts the count again.
//!
//! The count is a thread-local per kind of bypass ([`Run`]), across all locks of that
//! kind, touched only on slow paths. Under loom the bound never applies: the models
//! take far fewer locks per thread than any bound, and a bound only ever removes a
//! bypass attempt (the models cover both a failed bypass and a queued acquisition).

/// Which run a [`Streak`] counts.
#[derive(Clone, Copy)]
pub(crate) enum Run {
    /// `PvQSpinLock` steals.
    Steals,
    /// `RwSem` reader acquisitions by spinning.
    ReaderSpins,
}

/// A bound on the calling thread's bypasses in a row (module doc).
pub(crate) struct Streak {
    #[cfg_attr(loom, allow(dead_code))]
    run: Run,
    #[cfg_attr(loom, allow(dead_code))]
    bound: u32,
}

/// How many kinds of run there are: one counter each.
#[cfg(not(loom))]
const RUN_KINDS: usize = Run::ReaderSpins as usize + 1;

#[cfg(not(loom))]
std::thread_local!(static RUNS: [std::cell::Cell<u32>; RUN_KINDS] = const {
    [const { std::cell::Cell::new(0) }; RUN_KINDS]
});

impl Streak {
    /// Threads may bypass the queue `bound` times in a row.
    pub(crate) const fn new(run: Run, bound: u32) -> Self {
        Self { run, bound }
    }

    /// Whether the calling thread may bypass the queue now.
    pub(crate) fn may_bypass(&self) -> bool {
        #[cfg(not(loom))]
        return RUNS.with(|runs| runs[self.run as usize].get() < self.bound);
        #[cfg(loom)]
        true
    }

    /// The calling thread took the lock by bypassing the queue.
    pub(crate) fn bypassed(&self) {
        #[cfg(not(loom))]
        RUNS.with(|runs| {
            let run = &runs[self.run as usize];
            run.set(run.get().saturating_add(1));
        });
    }

    /// The calling thread queued: its run starts again.
    pub(crate) fn queued(&self) {
        #[cfg(not(loom))]
        RUNS.with(|runs| runs[self.run as usize].set(0));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_run_stops_at_its_bound_restarts_on_queueing_and_runs_are_separate() {
        let steals = Streak::new(Run::Steals, 3);
        let spins = Streak::new(Run::ReaderSpins, 1);
        for _ in 0..3 {
            assert!(steals.may_bypass());
            steals.bypassed();
        }
        assert!(!steals.may_bypass());
        assert!(
            spins.may_bypass(),
            "a run of steals must not count reader spins"
        );
        spins.bypassed();
        assert!(!spins.may_bypass());
        steals.queued();
        assert!(steals.may_bypass());
        assert!(
            !spins.may_bypass(),
            "queueing on one kind leaves the other's run"
        );
        // Each thread has its own runs.
        std::thread::spawn(|| assert!(Streak::new(Run::ReaderSpins, 1).may_bypass()))
            .join()
            .unwrap();
    }
}
