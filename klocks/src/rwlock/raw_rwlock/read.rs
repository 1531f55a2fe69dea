//! The read paths past the fast path: enter while the word lets readers in, spin on
//! a writer owner, sleep until readers may enter; the readers' limit (the `_within_max`
//! entries refuse past it, the others panic), and a transient wrap left by an unheld
//! read unlock waited out.

use super::*;

impl RawRwLock {
    /// `(r,0,0,*,*) or (r,0,*,*,1) -> (r+1,0,*,*,0)` while no writer holds the lock and
    /// none sleeps, or a turn is on.
    #[inline]
    pub(super) fn try_enter_reader(&self) -> bool {
        // A load first, as std's: with readers on both CPUs, a cmpxchg that
        // guessed the free word fails at almost every read and takes the line from
        // the other reader each time. Not the kernel rwsem's one fetch_add: a
        // refused reader would hold a count until it takes itself out again, and a
        // signal handler that write-locks in that moment waits for the interrupted
        // code, or a fork leaves the child a reader that does not exist
        // (`docs/decisions/raw-rwlock.md`: read-entry-loads-first).
        self.enter_reader_while(readers_may_enter)
    }

    /// `(r,*,*,*,t) -> (r+1,*,*,*,0)` while `may_enter(word)`.
    #[inline]
    pub(super) fn enter_reader_while(&self, may_enter: impl Fn(u32) -> bool) -> bool {
        // Relaxed: picks the transition; the cmpxchg is the Acquire.
        let mut val = self.word.load(Relaxed);
        while may_enter(val) {
            if readers(val) >= MAX_READERS {
                val = self.wait_below_max_readers(val);
                continue;
            }
            // Acquire: pairs with the Release of the write unlock.
            match self.word.compare_exchange_weak(
                val,
                (val + READER) & !READER_TURN,
                Acquire,
                Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => val = now,
            }
        }
        false
    }

    /// `lock_api`'s recursive read (`read_recursive`): a read lock that enters even
    /// where `lock_shared` would wait, so that a thread that holds a read lock
    /// already never waits for a writer that waits for it. It enters past sleeping
    /// writers (`WRITERS_WAITING`, whatever the turn), and past `WRITER` only where
    /// that writer cannot be in its section: while it drains readers still counted in
    /// the word (as parking_lot's recursive read does), or while this thread holds
    /// the lock by a reader-bias slot, which the revoking writer waits for before it
    /// drains the word (so it sees this entry). A thread that holds no read lock
    /// waits behind a writer as `lock_shared` does.
    ///
    /// `(r,0,*,*,*) or (r,1u,*,*,*) or (r>0,1,*,*,*) -> (r+1,...)`.
    pub fn lock_shared_recursive(&self) {
        if !self.try_lock_shared_recursive() {
            self.lock_shared();
        }
    }

    /// [`lock_shared_recursive`](Self::lock_shared_recursive) without the wait.
    pub fn try_lock_shared_recursive(&self) -> bool {
        if self.try_enter_biased() {
            return true;
        }
        let slot_held = bravo::held_here(self.address());
        self.enter_reader_while(|val| {
            val & (WRITER | UPGRADABLE) != WRITER || readers(val) != 0 || slot_held
        })
    }

    /// The count is at or above [`MAX_READERS`]. Entries stop at `MAX_READERS`, so
    /// a count above it can only be an unheld read unlock's wrap of an empty count,
    /// which that unlock undoes before its panic (`undo_unheld_read_unlock`): wait
    /// until it has, however long its thread is kept from running; the word once it
    /// is back. A count at `MAX_READERS` is that many readers inside: one more panics.
    #[cold]
    #[inline(never)]
    pub(super) fn wait_below_max_readers(&self, val: u32) -> u32 {
        let val = self.wait_out_unheld_wrap(val);
        if readers(val) == MAX_READERS {
            too_many_readers();
        }
        val
    }

    /// Waits while the count is above [`MAX_READERS`]: an unheld read unlock's wrap,
    /// which its undo takes back (see `wait_below_max_readers`); the word once it is.
    #[cold]
    #[inline(never)]
    pub(super) fn wait_out_unheld_wrap(&self, mut val: u32) -> u32 {
        let mut looks = 0u32;
        while readers(val) > MAX_READERS {
            // The undo is one instruction away unless its thread is preempted: spin
            // briefly, then give the CPU away.
            looks += 1;
            if looks < 64 {
                cpu_relax_times(16);
            } else {
                crate::sync::yield_now();
            }
            // Relaxed: the caller's cmpxchg is the Acquire.
            val = self.word.load(Relaxed);
        }
        val
    }

    /// A reader that found a writer: spin while it runs, then sleep until the write
    /// unlock wakes the readers. Whether it entered (always, unless `patience` ran
    /// out).
    #[cold]
    pub(super) fn lock_shared_slow(&self, patience: Patience) -> bool {
        self.wait_to_read(patience)
            .unwrap_or_else(|TooManyReaders| too_many_readers())
    }

    /// `lock_shared_slow`'s wait, entering through `enter_reader_within_max`: `Err`
    /// when [`MAX_READERS`] readers are inside as it would enter.
    pub(super) fn wait_to_read(&self, patience: Patience) -> Result<bool, TooManyReaders> {
        // A signal handler whose thread drains the readers enters alongside
        // (`reader_may_enter`); a holder of the write lock may not.
        if self.write_locked_by_current_thread() {
            // A timed try fails, as `try_lock_shared` does (it cannot deadlock).
            if patience.gives_up() {
                return Ok(false);
            }
            let me = owner::current_tid();
            panic!("klocks: thread {me} read-locked a klocks::RwLock it holds for writing");
        }
        stats::count(STATS, Event::ReadSlowpath);
        // Whether our last sleep ended by its liveness tick, not a wake
        // (`crate::wait`): then `WRITERS_WAITING` on a lock no writer holds may stand
        // for a writer that is not coming (the spinner, or one woken before the
        // release, kept from running), and we enter past it. Entering a word
        // without `WRITER` is always safe: a writer takes `WRITER` by cmpxchg and
        // then drains the readers inside.
        let mut ticked = false;
        loop {
            let after_tick = std::mem::take(&mut ticked);
            let may_enter = |val| self.reader_may_enter(val) || (after_tick && val & WRITER == 0);
            if self.enter_reader_within_max(may_enter)? {
                return Ok(true);
            }
            let entered = self.spin_on_writer(may_enter, reader_may_spin)
                && self.enter_reader_within_max(may_enter)?;
            if entered {
                stats::count(STATS, Event::ReaderSpinAcquired);
                return Ok(true);
            }
            stats::count(STATS, Event::ReaderSpinFailed);
            if patience.expired() {
                stats::count(STATS, Event::Timeout);
                return Ok(false);
            }
            self.stop_own_thread_spinning();
            self.wake_owed_drainer();
            // Relaxed: the value to sleep on; the futex re-reads it atomically.
            let val = self.word.load(Relaxed);
            if self.reader_may_enter(val) {
                continue;
            }
            if val & READERS_WAITING == 0 {
                // Relaxed: the write unlock reads READERS_WAITING through its RMW on
                // this same word; the flag publishes nothing.
                if self
                    .word
                    .compare_exchange(val, val | READERS_WAITING, Relaxed, Relaxed)
                    .is_err()
                {
                    continue;
                }
                // Relaxed: a hint for the write unlock's turn decision.
                self.readers_since.store(now_us(), Relaxed);
            }
            stats::count(STATS, Event::Sleep);
            ticked = patience.sleep(&self.word, val | READERS_WAITING, READER_CLASS);
            if ticked {
                stats::count(STATS, Event::Tick);
            }
        }
    }

    /// Spins while `done(word)` is false, `worth(word, pauses spent)` is true and the
    /// writer holding the lock (if any) runs on a CPU, within the budget
    /// ([`spin_on_owner`]); whether `done` came true.
    pub(super) fn spin_on_writer(
        &self,
        done: impl Fn(u32) -> bool,
        worth: impl Fn(u32, u32) -> bool,
    ) -> bool {
        let first = FIRST_BACKOFF.with(Cell::get);
        let pauses = Pauses {
            first,
            max: MAX_BACKOFF,
        };
        let spun = spin_on_owner(STATS, BUDGET.spins(), pauses, Patience::Forever, |spent| {
            // Relaxed: only watches; the caller's cmpxchg is the Acquire.
            let val = self.word.load(Relaxed);
            if done(val) {
                return Look::Done;
            }
            if !worth(val, spent) {
                return Look::Stop;
            }
            // Relaxed: a hint for the probe.
            Look::WhileRuns(self.writer.load(Relaxed) & !BORROWED)
        });
        match spun {
            Spun::Done { looks } => {
                FIRST_BACKOFF.with(|f| f.set(backoff::next_first(first, looks)));
                true
            }
            Spun::Stopped | Spun::OwnerOffCpu | Spun::BudgetSpent => false,
        }
    }
}

/// A read lock refused because [`MAX_READERS`](RawRwLock::MAX_READERS) readers hold the lock (pthread's
/// `EAGAIN`: "the maximum number of read locks has been exceeded"). Only the
/// `_within_max` entries answer it; `lock_shared` and `lock_api`'s readers panic there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyReaders;

/// Read locks that refuse the reader past [`MAX_READERS`](RawRwLock::MAX_READERS) instead of panicking, for
/// callers with an error to return: the C API's `klocks_rwlock_t` and the preload's
/// `pthread_rwlock_t` answer `EAGAIN` with them. Each takes the lock as its
/// counterpart does (`try_lock_shared`, `lock_shared`, `try_lock_shared_until`), with
/// the same transitions and orderings, but always by the word, never through the
/// reader bias's table (`raw_rwlock/bias.rs`), and never turns the bias on: a reader
/// in the table is in no count, so [`MAX_READERS`](RawRwLock::MAX_READERS) is exact
/// only for readers that all count in the word. The C API and the preload therefore
/// run this lock without its reader bias (a lock that Rust readers biased still
/// works with them: their unlock finds its slot or the word).
impl RawRwLock {
    /// The most readers at once (2²³ − 1, half of what the count holds): one more is
    /// [`TooManyReaders`].
    pub const MAX_READERS: u32 = MAX_READERS;

    /// Takes a read lock if no writer holds the lock (as `try_lock_shared`); `Err`
    /// if [`MAX_READERS`](RawRwLock::MAX_READERS) readers hold it. Inline: it is the read fast path of
    /// pthread's `rdlock` and `tryrdlock` routes (klocks-ffi).
    #[inline]
    pub fn try_lock_shared_within_max(&self) -> Result<bool, TooManyReaders> {
        self.enter_reader_within_max(readers_may_enter)
    }

    /// Takes a read lock, waiting as `lock_shared` does; `Err` if [`MAX_READERS`](RawRwLock::MAX_READERS)
    /// readers hold it when the caller would enter.
    pub fn lock_shared_within_max(&self) -> Result<(), TooManyReaders> {
        if !self.try_lock_shared_within_max()? {
            self.wait_to_read(Patience::Forever)?;
        }
        Ok(())
    }

    /// Takes a read lock unless `deadline` passes first (as `try_lock_shared_until`);
    /// whether it did, or `Err` if [`MAX_READERS`](RawRwLock::MAX_READERS) readers hold it when the caller
    /// would enter.
    #[cfg(not(loom))]
    pub fn try_lock_shared_within_max_until(
        &self,
        deadline: std::time::Instant,
    ) -> Result<bool, TooManyReaders> {
        Ok(self.try_lock_shared_within_max()? || self.wait_to_read(Patience::Until(deadline))?)
    }

    /// `(r,*,*,*,t) -> (r+1,*,*,*,0)` while `may_enter(word)`, as `enter_reader_while`,
    /// but a count at [`MAX_READERS`](RawRwLock::MAX_READERS) is `Err` instead of a panic. A count above it (an
    /// unheld read unlock's transient wrap) is waited out, as there.
    #[inline]
    fn enter_reader_within_max(
        &self,
        may_enter: impl Fn(u32) -> bool,
    ) -> Result<bool, TooManyReaders> {
        // Relaxed: picks the transition; the cmpxchg is the Acquire.
        let mut val = self.word.load(Relaxed);
        while may_enter(val) {
            if readers(val) == MAX_READERS {
                return Err(TooManyReaders);
            }
            if readers(val) > MAX_READERS {
                val = self.wait_out_unheld_wrap(val);
                continue;
            }
            // Acquire: pairs with the Release of the write unlock.
            match self.word.compare_exchange_weak(
                val,
                (val + READER) & !READER_TURN,
                Acquire,
                Relaxed,
            ) {
                Ok(_) => return Ok(true),
                Err(now) => val = now,
            }
        }
        Ok(false)
    }
}
