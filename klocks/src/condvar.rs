//! A sequence-counter condition variable: the protocol ([`SeqCondvar`]), and
//! [`Condvar`], the protocol with its futex calls for any `lock_api` mutex
//! ([`Mutex`](crate::Mutex) first).
//!
//! The pthread interposer (`klocks-ffi`) runs its `pthread_cond_t` on
//! [`SeqCondvar`] and makes the futex calls itself, because they depend on the
//! condvar's attributes (process-shared or private, which clock a deadline is on).
//! Two 32-bit words:
//!
//! - `seq`, bumped by every signal and broadcast: waiters sleep on it.
//! - `waiters`: threads between [`register`](SeqCondvar::register) and
//!   [`leave`](SeqCondvar::leave), plus [`DESTROYING`] while a thread waits in
//!   `destroy` for them to drain.
//!
//! A waiter, holding the mutex: `register` (count itself, read `seq`), unlock the
//! mutex, futex-wait on `seq` for the value read, `leave`, relock. A signaller:
//! [`notify`](SeqCondvar::notify) (bump `seq`, then see whether anyone counts), and
//! futex-wake `seq` if so. All zero is a condvar with no waiters, so a zero-filled
//! `pthread_cond_t` (`PTHREAD_COND_INITIALIZER`) is one.
//!
//! # No lost wake-up
//!
//! A waiter registers and reads `seq` while it holds the mutex, before it releases
//! it. A signaller that changed the predicate under the mutex (what POSIX asks for
//! a reliable wake-up) either held the mutex before the waiter took it (then the
//! waiter sees the predicate and never waits) or after the waiter released it: then
//! the mutex's Release/Acquire orders the registration before the signaller's load
//! of `waiters`, which sees it, and the waiter's read of `seq` before the bump, so
//! the waiter sleeps on the old value and the futex (whose value check and sleep are
//! atomic against wakes) either finds it asleep for the wake or makes it see the new
//! value and return. The loom models check both signal placements, and that a
//! waiter reading `seq` after releasing the mutex is caught sleeping through a
//! signal.
//!
//! The counter's two pairs are `SeqCst` besides (`register`: a store then a load;
//! `notify`: a store then a load, the store-buffering pattern): for a signal from a
//! thread that never took the mutex (POSIX allows it), a `notify` that misses a
//! registration is then one whose bump that waiter reads, so it does not sleep on a
//! value older than the signal. This costs nothing on x86 (the stores are RMWs,
//! a `SeqCst` load is a plain load).
//!
//! A waiter woken by a signal meant for another, or by a timeout racing a signal,
//! returns as a spurious wake-up, which POSIX allows: callers re-check their
//! predicate.
//!
//! # Destroy
//!
//! POSIX lets a thread destroy a condvar as soon as no thread is blocked on it, for
//! example right after a broadcast while the woken waiters have yet to run. So
//! [`begin_destroy`](SeqCondvar::begin_destroy) sets [`DESTROYING`] and the destroyer
//! futex-waits on `waiters` until the count drains; the waiter whose `leave` empties
//! it learns it must wake the destroyer, and touches nothing of the condvar after
//! that wake but its address.
//!
//! The counter wraps after 2³² signals; a waiter that sleeps through exactly that
//! many reads an old value as current (the futex ABA every counter condvar accepts).

use crate::sync::{AtomicU32, Ordering::*};

/// `waiters`: a thread waits in `destroy` for the count to drain.
pub const DESTROYING: u32 = 1 << 31;

/// The two words; see the module doc.
#[derive(Debug)]
#[repr(C)]
pub struct SeqCondvar {
    seq: AtomicU32,
    waiters: AtomicU32,
}

impl SeqCondvar {
    /// A condvar nobody waits on (all zero).
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            seq: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
        }
    }

    /// A condvar nobody waits on (all zero).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            seq: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
        }
    }

    /// The word waiters sleep on and signallers wake.
    pub fn seq_word(&self) -> &AtomicU32 {
        &self.seq
    }

    /// The word a destroyer sleeps on and the last waiter wakes.
    pub fn waiters_word(&self) -> &AtomicU32 {
        &self.waiters
    }

    /// A waiter, holding the mutex, counts itself; returns the `seq` value to sleep
    /// on once the mutex is released.
    pub fn register(&self) -> u32 {
        // SeqCst (both): the waiter's half of the store-buffering pattern; pairs with
        // `notify` (module doc).
        self.waiters.fetch_add(1, SeqCst);
        self.seq.load(SeqCst)
    }

    /// A waiter is done waiting (woken, timed out, or it failed to unlock); whether
    /// it emptied a condvar being destroyed, so that it must wake `waiters_word`.
    /// After a `true`, only the condvar's address may be used.
    pub fn leave(&self) -> bool {
        // Release: pairs with the Acquire of `begin_destroy` and `drained`, so this
        // waiter's reads of the condvar happen before it is torn down.
        self.waiters.fetch_sub(1, Release) == DESTROYING | 1
    }

    /// A signal or broadcast: bumps `seq`; whether a thread may sleep on it, so that
    /// the caller must wake `seq_word` (one thread for a signal, all for a broadcast).
    pub fn notify(&self) -> bool {
        // SeqCst (both): the signaller's half of the store-buffering pattern; pairs
        // with `register` (module doc).
        self.seq.fetch_add(1, SeqCst);
        self.waiters.load(SeqCst) & !DESTROYING != 0
    }

    /// Starts a destroy: from here, the waiter that empties the count is told to wake
    /// `waiters_word`; sleep on it while the condvar is not [`drained`](Self::drained).
    pub fn begin_destroy(&self) {
        // Acquire: pairs with the Release in `leave`.
        self.waiters.fetch_or(DESTROYING, Acquire);
    }

    /// Whether a destroy can finish, and the `waiters` word to sleep on if not.
    pub fn drained(&self) -> Result<(), u32> {
        // Acquire: pairs with the Release in `leave`.
        match self.waiters.load(Acquire) {
            DESTROYING => Ok(()),
            waiting => Err(waiting),
        }
    }
}

impl Default for SeqCondvar {
    fn default() -> Self {
        Self::new()
    }
}

/// A condition variable for `lock_api` mutexes: [`Mutex`](crate::Mutex) and every
/// other klocks mutex. Eight bytes, `const fn new()`, no allocation.
///
/// Waits may end spuriously, as with every condition variable: wait in a loop on a
/// predicate ([`wait_while`](Self::wait_while) does). A waiter is woken by a notify
/// that comes after it released the mutex (module doc, "No lost wake-up").
///
/// ```
/// let ready = klocks::Mutex::new(false);
/// let changed = klocks::Condvar::new();
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         *ready.lock() = true;
///         changed.notify_all();
///     });
///     let mut guard = ready.lock();
///     changed.wait_while(&mut guard, |ready| !*ready);
///     assert!(*guard);
/// });
/// ```
#[cfg(not(loom))]
#[derive(Debug, Default)]
pub struct Condvar {
    seq: SeqCondvar,
}

/// Whether a timed [`Condvar`] wait returned because its time ran out.
#[cfg(not(loom))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

#[cfg(not(loom))]
impl WaitTimeoutResult {
    /// The wait ended at its deadline (the predicate may still have come true).
    pub fn timed_out(self) -> bool {
        self.0
    }
}

#[cfg(not(loom))]
impl Condvar {
    /// A condition variable nobody waits on.
    pub const fn new() -> Self {
        Self {
            seq: SeqCondvar::new(),
        }
    }

    /// Releases the guard's mutex, sleeps until notified (or spuriously), and takes
    /// the mutex again before returning.
    pub fn wait<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
    ) {
        self.wait_inner(guard, None);
    }

    /// Waits while `condition` holds for the protected data (checked under the mutex,
    /// first before any wait).
    pub fn wait_while<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        mut condition: impl FnMut(&mut T) -> bool,
    ) {
        while condition(&mut *guard) {
            self.wait(guard);
        }
    }

    /// [`wait`](Self::wait) for at most `timeout`.
    pub fn wait_for<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        timeout: std::time::Duration,
    ) -> WaitTimeoutResult {
        match std::time::Instant::now().checked_add(timeout) {
            Some(deadline) => self.wait_until(guard, deadline),
            // Too far out to represent: a wait without a deadline.
            None => {
                self.wait(guard);
                WaitTimeoutResult(false)
            }
        }
    }

    /// [`wait`](Self::wait) until `deadline` at the latest.
    pub fn wait_until<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        deadline: std::time::Instant,
    ) -> WaitTimeoutResult {
        self.wait_inner(guard, Some(deadline));
        WaitTimeoutResult(std::time::Instant::now() >= deadline)
    }

    fn wait_inner<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        deadline: Option<std::time::Instant>,
    ) {
        // Registered while the mutex is held: a notify after our release sees us.
        let seq = self.seq.register();
        lock_api::MutexGuard::unlocked(guard, || {
            crate::park::wait_as(
                self.seq.seq_word(),
                seq,
                u32::MAX,
                deadline.map(crate::park::Deadline::at),
            );
        });
        // Nobody destroys a condvar that we borrow: no destroyer to wake.
        self.seq.leave();
    }

    /// Wakes one waiter, if any.
    pub fn notify_one(&self) {
        if self.seq.notify() {
            crate::park::wake_one(self.seq.seq_word());
        }
    }

    /// Wakes every waiter.
    pub fn notify_all(&self) {
        if self.seq.notify() {
            crate::park::wake_all(self.seq.seq_word());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// `klocks::Mutex`, named where it is defined.
    type Mutex<T> = lock_api::Mutex<crate::mutex::raw_mutex::RawMutex, T>;

    #[test]
    fn a_new_condvar_is_two_zero_words() {
        assert_eq!(std::mem::size_of::<SeqCondvar>(), 8);
        let cv = SeqCondvar::new();
        assert_eq!(cv.seq_word().load(SeqCst), 0);
        assert_eq!(cv.waiters_word().load(SeqCst), 0);
    }

    #[test]
    fn notify_wakes_only_when_someone_counts() {
        let cv = SeqCondvar::new();
        assert!(!cv.notify(), "nobody registered");
        let seq = cv.register();
        assert_eq!(seq, 1, "the bump is seen");
        assert!(cv.notify());
        assert!(!cv.leave());
        assert!(!cv.notify());
    }

    #[test]
    fn destroy_drains_the_waiters() {
        let cv = SeqCondvar::new();
        cv.register();
        cv.register();
        cv.begin_destroy();
        assert_eq!(cv.drained(), Err(DESTROYING | 2));
        assert!(!cv.leave(), "one waiter left");
        assert!(cv.leave(), "the last one wakes the destroyer");
        assert_eq!(cv.drained(), Ok(()));
    }

    #[test]
    fn a_condvar_hands_values_between_threads_in_order() {
        let state = Mutex::new((0u32, false));
        let changed = Condvar::new();
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 1..=1_000 {
                    let mut guard = state.lock();
                    changed.wait_while(&mut guard, |(_, full)| *full);
                    *guard = (i, true);
                    changed.notify_all();
                }
            });
            for i in 1..=1_000 {
                let mut guard = state.lock();
                changed.wait_while(&mut guard, |(_, full)| !*full);
                assert_eq!(guard.0, i);
                guard.1 = false;
                changed.notify_all();
            }
        });
    }

    #[test]
    fn a_timed_wait_times_out_and_holds_the_mutex_again() {
        let lock = Mutex::new(());
        let changed = Condvar::new();
        let mut guard = lock.lock();
        let start = std::time::Instant::now();
        let result = changed.wait_for(&mut guard, std::time::Duration::from_millis(20));
        assert!(result.timed_out());
        assert!(start.elapsed() >= std::time::Duration::from_millis(20));
        assert!(lock.is_locked());
    }

    #[test]
    fn notify_all_wakes_every_waiter() {
        let state = Mutex::new(false);
        let changed = Condvar::new();
        let waiting = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let mut guard = state.lock();
                    waiting.fetch_add(1, SeqCst);
                    changed.wait_while(&mut guard, |go| !*go);
                });
            }
            while waiting.load(SeqCst) < 4 {
                std::thread::yield_now();
            }
            *state.lock() = true;
            changed.notify_all();
        });
    }
}

/// Exhaustive checks under the C11 memory model, with loom's futex model
/// ([`park`](crate::park)): a waiter that sleeps and is never woken is a deadlock
/// loom reports. The mutex is loom's; the predicate is a flag under it.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::park;
    use crate::sync::{spawn, Arc};
    use loom::sync::Mutex;

    /// The mutex with the predicate, and the condvar.
    type Pair = (Mutex<bool>, SeqCondvar);
    type Shared = Arc<Pair>;

    /// Waits, as a pthread waiter does, until the flag is set; `late`: the broken
    /// variant that reads `seq` after releasing the mutex.
    fn wait_for_flag(shared: &Pair, late: bool) {
        let (mutex, cv) = shared;
        let mut flag = mutex.lock().unwrap();
        while !*flag {
            let seq = if late {
                cv.waiters.fetch_add(1, SeqCst);
                drop(flag);
                cv.seq.load(SeqCst)
            } else {
                let seq = cv.register();
                drop(flag);
                seq
            };
            park::wait(cv.seq_word(), seq);
            if cv.leave() {
                park::wake_all(cv.waiters_word());
            }
            flag = mutex.lock().unwrap();
        }
    }

    /// A waiter and a signaller that sets the flag and then notifies (inside the
    /// mutex or after it); the waiter must finish.
    fn signal(inside: bool) {
        loom::model(move || {
            let shared: Shared = Arc::new((Mutex::new(false), SeqCondvar::new()));
            let waiter = {
                let shared = shared.clone();
                spawn(move || wait_for_flag(&shared, false))
            };
            set_and_notify(&shared, inside);
            waiter.join().unwrap();
        });
    }

    fn set_and_notify(shared: &Pair, inside: bool) {
        let (mutex, cv) = shared;
        let mut flag = mutex.lock().unwrap();
        *flag = true;
        let held = inside.then_some(flag);
        if cv.notify() {
            park::wake_one(cv.seq_word());
        }
        drop(held);
    }

    #[test]
    fn a_signal_after_the_unlock_wakes_the_waiter() {
        signal(false);
    }

    #[test]
    fn a_signal_under_the_mutex_wakes_the_waiter() {
        signal(true);
    }

    /// The negative control: a waiter that reads `seq` after releasing the mutex can
    /// read a signal's bump and sleep through it.
    #[test]
    #[should_panic]
    fn reading_seq_after_the_unlock_is_caught() {
        loom::model(|| {
            // Leaked, not shared through loom's `Arc`: the deadlock loom reports
            // unwinds this closure, and dropping loom objects then would abort.
            let shared: &'static Pair = Box::leak(Box::new((Mutex::new(false), SeqCondvar::new())));
            let waiter = spawn(move || wait_for_flag(shared, true));
            set_and_notify(shared, false);
            waiter.join().unwrap();
        });
    }

    /// Broadcast, then destroy at once: the destroyer returns only after the waiter
    /// left (two waiters: the same with one more thread, past what loom explores in
    /// minutes).
    #[test]
    fn destroy_after_broadcast_waits_for_the_waiter() {
        loom::model(|| {
            let shared: Shared = Arc::new((Mutex::new(false), SeqCondvar::new()));
            let waiters: Vec<_> = (0..1)
                .map(|_| {
                    let shared = shared.clone();
                    spawn(move || wait_for_flag(&shared, false))
                })
                .collect();
            let (mutex, cv) = &*shared;
            *mutex.lock().unwrap() = true;
            if cv.notify() {
                park::wake_all(cv.seq_word());
            }
            cv.begin_destroy();
            while let Err(waiting) = cv.drained() {
                park::wait(cv.waiters_word(), waiting);
            }
            assert_eq!(cv.waiters_word().load(SeqCst), DESTROYING);
            for waiter in waiters {
                waiter.join().unwrap();
            }
        });
    }
}
