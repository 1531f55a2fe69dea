//! Condition variables: [`Condvar`], the one for `lock_api` mutexes
//! ([`Mutex`](crate::Mutex) first), and [`SeqCondvar`], the sequence-counter protocol
//! under the pthread interposer's `pthread_cond_t`.
//!
//! # `Condvar`: a queue of waiters, woken by name
//!
//! [`Condvar`] is parking_lot's design without the global table: each condvar holds
//! its own FIFO wait queue (`rwlock/wait_queue.rs`: a list of nodes on the
//! waiters' stacks under a short lock), and a notify dequeues the waiters it wakes
//! and tells each on its node's own word. So a wait returns only when a notify took
//! it off the queue or its deadline passed and it took itself off, never spuriously,
//! and [`notify_one`](Condvar::notify_one) / [`notify_all`](Condvar::notify_all) know
//! whom they woke.
//!
//! A waiter's node goes through `WAITING -> SLEEPING -> NOTIFIED` (the sleep is
//! optional): the waiter queues itself while it holds the mutex, so a notify that
//! comes after its release (under the mutex or after a predicate change made under
//! it) finds it queued; then it releases the mutex and sleeps on the node's word
//! while it reads `SLEEPING`. A notifier, under the queue's lock, unlinks the node
//! and swaps in `NOTIFIED`, its last access to the node but the futex wake it makes
//! by address if the old value was `SLEEPING` (the waiter may return and free the
//! node as soon as it sees `NOTIFIED`). A waiter whose deadline passed takes the
//! queue's lock: `NOTIFIED` there means a notify chose it first (the wait counts as
//! notified, as in parking_lot, whose unpark and timeout race the same way);
//! otherwise it unlinks itself. Under the queue's lock the node is in the queue if
//! and only if it is not `NOTIFIED`.
//!
//! Unlike the rwsem's use of the queue, a notify wakes while it holds the queue's
//! lock (one futex wake per sleeping waiter it unlinked, none for one not yet
//! asleep): a woken waiter does not take that lock on its way out, only one whose
//! deadline passed does, so it does not run into it.
//!
//! All the waiters in a queue wait with one mutex (the first node's address of it is
//! compared with each new waiter's); a wait with another mutex while the queue is
//! not empty panics, as parking_lot's does, instead of leaving a thread waiting for
//! a notify that the other mutex's users do not know they owe.
//!
//! # `SeqCondvar`
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

use crate::rwlock::wait_queue::{WaitQueue, Waiter};
use crate::sync::{AtomicU32, Ordering::*};

/// `waiters`: a thread waits in `destroy` for the count to drain.
#[doc(hidden)]
pub const DESTROYING: u32 = 1 << 31;

/// The two words; see the module doc. The pthread interposer's (klocks-ffi), not
/// part of the library's API.
#[doc(hidden)]
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
/// other klocks mutex. `const fn new()`, no allocation: the waiters queue on their
/// own stacks (module doc).
///
/// As parking_lot's: a wait returns only after a notify chose this waiter or its
/// timeout passed, never spuriously; a notify wakes the waiters that were queued when
/// it ran, oldest first; [`notify_one`](Self::notify_one) and
/// [`notify_all`](Self::notify_all) say how many they woke. A waiter is woken by a
/// notify that comes after it released the mutex. Waiting on one condvar with two
/// different mutexes at once panics ("attempted to use a condition variable with
/// more than one mutex").
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
pub struct Condvar {
    /// The waiters, oldest first, each with the address of the mutex it waits with.
    queue: WaitQueue<usize>,
}

/// A waiter's node is queued and it has not slept yet.
#[cfg_attr(all(loom, not(test)), allow(dead_code))]
const WAITING: u32 = 0;
/// The waiter sleeps on its node's word: a notify must wake it.
const SLEEPING: u32 = 1;
/// A notify unlinked the node: the wait is over.
const NOTIFIED: u32 = 2;

/// Whether a timed [`Condvar`] wait returned because its time ran out.
#[cfg(not(loom))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

#[cfg(not(loom))]
impl WaitTimeoutResult {
    /// The wait ended at its deadline without a notify (the predicate may still have
    /// come true).
    pub fn timed_out(self) -> bool {
        self.0
    }
}

impl Default for Condvar {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad("Condvar { .. }")
    }
}

#[cfg(not(loom))]
impl Condvar {
    /// A condition variable nobody waits on.
    pub const fn new() -> Self {
        Self {
            queue: WaitQueue::new(),
        }
    }

    /// Releases the guard's mutex, sleeps until notified, and takes the mutex again
    /// before returning.
    ///
    /// # Panics
    /// If other threads wait on this condvar with a different mutex.
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
        // Too far out to represent: a wait without a deadline.
        let deadline = std::time::Instant::now().checked_add(timeout);
        WaitTimeoutResult(!self.wait_inner(guard, deadline))
    }

    /// [`wait`](Self::wait) until `deadline` at the latest.
    pub fn wait_until<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        deadline: std::time::Instant,
    ) -> WaitTimeoutResult {
        WaitTimeoutResult(!self.wait_inner(guard, Some(deadline)))
    }

    /// [`wait_while`](Self::wait_while) for at most `timeout`: returns once
    /// `condition` is false, or timed out once a wait timed out (then `condition`
    /// is not checked again).
    pub fn wait_while_for<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        condition: impl FnMut(&mut T) -> bool,
        timeout: std::time::Duration,
    ) -> WaitTimeoutResult {
        let deadline = std::time::Instant::now().checked_add(timeout);
        self.wait_while_inner(guard, condition, deadline)
    }

    /// [`wait_while`](Self::wait_while) until `deadline` at the latest, as
    /// [`wait_while_for`](Self::wait_while_for).
    pub fn wait_while_until<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        condition: impl FnMut(&mut T) -> bool,
        deadline: std::time::Instant,
    ) -> WaitTimeoutResult {
        self.wait_while_inner(guard, condition, Some(deadline))
    }

    fn wait_while_inner<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        mut condition: impl FnMut(&mut T) -> bool,
        deadline: Option<std::time::Instant>,
    ) -> WaitTimeoutResult {
        let mut result = WaitTimeoutResult(false);
        while !result.timed_out() && condition(&mut *guard) {
            result = WaitTimeoutResult(!self.wait_inner(guard, deadline));
        }
        result
    }

    /// Queues, releases the mutex, waits, relocks; whether a notify ended the wait.
    fn wait_inner<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        deadline: Option<std::time::Instant>,
    ) -> bool {
        let mutex = lock_api::MutexGuard::mutex(guard) as *const lock_api::Mutex<R, T>;
        let node = Waiter::new(WAITING, mutex.cast::<()>() as usize);
        // Queued while the mutex is held: a notify after our release finds us. The
        // node is unlinked again before this frame ends: by a notify, or by `cancel`.
        self.enqueue(&node);
        lock_api::MutexGuard::unlocked(guard, || self.sleep(&node, deadline))
    }
}

/// The protocol's steps (module doc), also driven by the loom models.
#[cfg_attr(all(loom, not(test)), allow(dead_code))]
impl Condvar {
    /// A condition variable nobody waits on.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            queue: WaitQueue::new(),
        }
    }

    /// Sleeps on `node` until a notify unlinks it or `deadline` passes; whether it
    /// was notified. (The models pass no deadline: loom has no time.)
    fn sleep(&self, node: &Waiter<usize>, deadline: Option<std::time::Instant>) -> bool {
        loop {
            // Acquire: pairs with the notifier's Release swap, after its unlink.
            let state = node.state.load(Acquire);
            if state == NOTIFIED {
                return true;
            }
            if deadline.is_some_and(|at| std::time::Instant::now() >= at) {
                return self.cancel(node);
            }
            // WAITING -> SLEEPING. Relaxed: publishes nothing; the notifier's swap
            // reads it to decide its wake; a failure is the notify, re-read above.
            if state == WAITING
                && node
                    .state
                    .compare_exchange(WAITING, SLEEPING, Relaxed, Relaxed)
                    .is_err()
            {
                continue;
            }
            crate::park::wait_as(
                &node.state,
                SLEEPING,
                u32::MAX,
                deadline.map(crate::park::Deadline::at),
            );
        }
    }

    /// Links `node` at the back of the queue; panics if the queued waiters wait
    /// with another mutex than the node's.
    fn enqueue(&self, node: &Waiter<usize>) {
        let mut queue = self.queue.lock();
        if queue.front().is_some_and(|front| front.data != node.data) {
            drop(queue);
            more_than_one_mutex();
        }
        queue.push(node);
    }

    /// A waiter whose deadline passed takes itself off the queue; whether a notify
    /// had chosen it first (then the wait counts as notified).
    fn cancel(&self, node: &Waiter<usize>) -> bool {
        let mut queue = self.queue.lock();
        // Relaxed: a notify swaps in NOTIFIED under the queue's lock, whose Acquire
        // orders that swap before this load.
        if node.state.load(Relaxed) == NOTIFIED {
            return true;
        }
        queue.remove(node);
        false
    }

    /// Wakes the oldest waiter, if any; whether there was one.
    pub fn notify_one(&self) -> bool {
        self.notify(1) == 1
    }

    /// Wakes every waiter; how many there were.
    pub fn notify_all(&self) -> usize {
        self.notify(usize::MAX)
    }

    /// Unlinks up to `max` waiters, oldest first, and tells each; how many.
    fn notify(&self, max: usize) -> usize {
        let mut queue = self.queue.lock();
        let woken = queue.detach_where(max, |_| true);
        let mut count = 0;
        woken.release_each(|_, node| {
            count += 1;
            let word: *const AtomicU32 = &node.state;
            // Release: pairs with the waiter's Acquire load, so the wait ends after
            // the unlink. The node's last access: the waiter may free it once it
            // reads NOTIFIED; the wake takes the address alone.
            if node.state.swap(NOTIFIED, Release) == SLEEPING {
                crate::park::wake_one_at(word);
            }
        });
        drop(queue);
        count
    }
}

#[cfg_attr(all(loom, not(test)), allow(dead_code))]
#[cold]
#[inline(never)]
fn more_than_one_mutex() -> ! {
    panic!("attempted to use a condition variable with more than one mutex");
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

    /// Starts `n` threads waiting on `changed` (each with `wait_for` of `patience`),
    /// and returns once all of them are queued; each sends whether it timed out.
    fn waiters<'s>(
        s: &'s std::thread::Scope<'s, '_>,
        lock: &'s Mutex<u32>,
        changed: &'s Condvar,
        n: u32,
        patience: std::time::Duration,
        done: std::sync::mpsc::Sender<bool>,
    ) {
        for _ in 0..n {
            let done = done.clone();
            s.spawn(move || {
                let mut guard = lock.lock();
                *guard += 1;
                let timed_out = changed.wait_for(&mut guard, patience).timed_out();
                done.send(timed_out).unwrap();
            });
        }
        // A waiter counts itself and queues itself before it releases the mutex.
        while *lock.lock() < n {
            std::thread::yield_now();
        }
    }

    #[test]
    fn notify_one_says_whether_it_woke_a_thread() {
        let lock = Mutex::new(0);
        let changed = Condvar::new();
        assert!(!changed.notify_one(), "nobody waits");
        let (done, returned) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            waiters(
                s,
                &lock,
                &changed,
                2,
                std::time::Duration::from_secs(60),
                done,
            );
            assert!(changed.notify_one());
            assert!(!returned.recv().unwrap(), "woken, not timed out");
            // Exactly one woke: the other still waits.
            let late = returned.recv_timeout(std::time::Duration::from_millis(50));
            assert!(late.is_err(), "a second waiter returned: {late:?}");
            assert!(changed.notify_one());
            assert!(!returned.recv().unwrap());
            assert!(!changed.notify_one(), "both gone");
        });
    }

    #[test]
    fn notify_all_counts_the_threads_it_woke() {
        let lock = Mutex::new(0);
        let changed = Condvar::new();
        assert_eq!(changed.notify_all(), 0);
        let (done, returned) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            waiters(
                s,
                &lock,
                &changed,
                3,
                std::time::Duration::from_secs(60),
                done,
            );
            assert_eq!(changed.notify_all(), 3);
            for _ in 0..3 {
                assert!(!returned.recv().unwrap());
            }
        });
        assert_eq!(changed.notify_all(), 0);
    }

    #[test]
    fn a_timed_out_waiter_leaves_no_trace() {
        let lock = Mutex::new(0);
        let changed = Condvar::new();
        let (done, returned) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            waiters(
                s,
                &lock,
                &changed,
                1,
                std::time::Duration::from_millis(10),
                done,
            );
            assert!(returned.recv().unwrap(), "timed out");
            assert!(!changed.notify_one(), "the timed-out waiter is not woken");
        });
    }

    #[test]
    fn wait_while_for_returns_when_the_condition_fails_or_the_time_is_up() {
        let lock = Mutex::new(false);
        let changed = Condvar::new();
        let mut guard = lock.lock();
        let short = std::time::Duration::from_millis(10);
        assert!(changed
            .wait_while_for(&mut guard, |go| !*go, short)
            .timed_out());
        let deadline = std::time::Instant::now() + short;
        assert!(changed
            .wait_while_until(&mut guard, |go| !*go, deadline)
            .timed_out());
        *guard = true;
        assert!(!changed
            .wait_while_for(&mut guard, |go| !*go, short)
            .timed_out());
        drop(guard);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(short);
                *lock.lock() = false;
                changed.notify_all();
            });
            let mut guard = lock.lock();
            let long = std::time::Duration::from_secs(60);
            let result = changed.wait_while_for(&mut guard, |go| *go, long);
            assert!(!result.timed_out());
            assert!(!*guard);
        });
    }

    #[test]
    fn debug_shows_no_internals() {
        assert_eq!(format!("{:?}", Condvar::new()), "Condvar { .. }");
    }

    #[test]
    fn waiting_with_a_second_mutex_panics() {
        let first = Mutex::new(0);
        let second = Mutex::new(());
        let changed = Condvar::new();
        let (done, returned) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            waiters(
                s,
                &first,
                &changed,
                1,
                std::time::Duration::from_secs(60),
                done,
            );
            let misuse = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut guard = second.lock();
                changed.wait_for(&mut guard, std::time::Duration::from_secs(60));
            }));
            let message = misuse.expect_err("a second mutex must panic");
            let message = message.downcast_ref::<&str>().copied().unwrap_or_default();
            assert!(message.contains("more than one mutex"), "{message}");
            assert!(!second.is_locked(), "the guard was released by the unwind");
            assert!(changed.notify_one(), "the first waiter still waits");
            assert!(!returned.recv().unwrap());
        });
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

    /// [`Condvar`]'s queue: a waiter queued under the mutex, released, asleep on its
    /// node; `flag` set under the mutex.
    mod queue {
        use super::super::{Condvar, Waiter, WAITING};
        use crate::sync::{spawn, Arc};
        use loom::sync::Mutex;

        type Pair = (Mutex<bool>, Condvar);

        /// Three threads: one preemption, as the rwlock clients bound theirs
        /// (`testing::explore_rw`).
        fn explore_three(model: impl Fn() + Sync + Send + 'static) {
            let mut builder = loom::model::Builder::new();
            if builder.preemption_bound.is_none() {
                builder.preemption_bound = Some(1);
            }
            builder.check(model);
        }

        /// One wait, as `Condvar::wait` makes it (the mutex's address is any one
        /// value: every waiter in a model waits with the same mutex).
        fn wait_once(pair: &Pair, flag: loom::sync::MutexGuard<'_, bool>) -> bool {
            let (_, cv) = pair;
            let node = Waiter::new(WAITING, 1);
            cv.enqueue(&node);
            drop(flag);
            cv.sleep(&node, None)
        }

        /// Waits until the flag is set, re-checking after each (never spurious) wake.
        fn wait_for_flag(pair: &Pair) {
            let mut flag = pair.0.lock().unwrap();
            while !*flag {
                assert!(
                    wait_once(pair, flag),
                    "a wait without a deadline returned unnotified"
                );
                flag = pair.0.lock().unwrap();
            }
        }

        fn signal(inside: bool) {
            loom::model(move || {
                let pair = Arc::new((Mutex::new(false), Condvar::new()));
                let waiter = {
                    let pair = pair.clone();
                    spawn(move || wait_for_flag(&pair))
                };
                let mut flag = pair.0.lock().unwrap();
                *flag = true;
                let held = inside.then_some(flag);
                pair.1.notify_one();
                drop(held);
                waiter.join().unwrap();
            });
        }

        #[test]
        fn a_notify_after_the_unlock_wakes_the_queued_waiter() {
            signal(false);
        }

        #[test]
        fn a_notify_under_the_mutex_wakes_the_queued_waiter() {
            signal(true);
        }

        /// The negative control: a waiter that queues itself only after releasing the
        /// mutex can miss a notify made in between and sleep through it.
        #[test]
        #[should_panic]
        fn queueing_after_the_unlock_is_caught() {
            loom::model(|| {
                // Leaked, as in the `SeqCondvar` control: the deadlock unwinds.
                let pair: &'static Pair = Box::leak(Box::new((Mutex::new(false), Condvar::new())));
                let waiter = spawn(move || {
                    let flag = pair.0.lock().unwrap();
                    if !*flag {
                        let node = Waiter::new(WAITING, 1);
                        drop(flag);
                        pair.1.enqueue(&node);
                        pair.1.sleep(&node, None);
                    }
                });
                *pair.0.lock().unwrap() = true;
                pair.1.notify_one();
                waiter.join().unwrap();
            });
        }

        /// Two waiters, each waiting exactly once: each wait ends only by a notify
        /// that reported it (`true`), one per notify.
        #[test]
        fn each_notify_one_ends_exactly_one_wait() {
            explore_three(|| {
                let pair = Arc::new((Mutex::new(false), Condvar::new()));
                let waiters: Vec<_> = (0..2)
                    .map(|_| {
                        let pair = pair.clone();
                        spawn(move || {
                            let flag = pair.0.lock().unwrap();
                            wait_once(&pair, flag)
                        })
                    })
                    .collect();
                let mut woken = 0;
                while woken < 2 {
                    if pair.1.notify_one() {
                        woken += 1;
                    } else {
                        loom::thread::yield_now();
                    }
                }
                for waiter in waiters {
                    assert!(waiter.join().unwrap());
                }
                assert!(!pair.1.notify_one(), "the queue is empty");
            });
        }

        /// A waiter that times out at once (its `cancel`) races a `notify_one`:
        /// either the notify chose it (both say so) or it left the queue first (the
        /// notify found nobody); the queue is empty after both.
        #[test]
        fn a_timeout_racing_a_notify_agrees_with_it() {
            loom::model(|| {
                let pair = Arc::new((Mutex::new(false), Condvar::new()));
                let waiter = {
                    let pair = pair.clone();
                    spawn(move || {
                        let (mutex, cv) = &*pair;
                        let node = Waiter::new(WAITING, 1);
                        let flag = mutex.lock().unwrap();
                        cv.enqueue(&node);
                        drop(flag);
                        cv.cancel(&node)
                    })
                };
                let notified = pair.1.notify_one();
                assert_eq!(waiter.join().unwrap(), notified);
                assert_eq!(pair.1.notify_all(), 0);
            });
        }

        /// `notify_all` ends every queued wait and counts it.
        #[test]
        fn notify_all_ends_every_queued_wait() {
            explore_three(|| {
                let pair = Arc::new((Mutex::new(false), Condvar::new()));
                let waiters: Vec<_> = (0..2)
                    .map(|_| {
                        let pair = pair.clone();
                        spawn(move || wait_for_flag(&pair))
                    })
                    .collect();
                *pair.0.lock().unwrap() = true;
                let woken = pair.1.notify_all();
                for waiter in waiters {
                    waiter.join().unwrap();
                }
                assert!(woken <= 2);
                assert_eq!(pair.1.notify_all(), 0);
            });
        }
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
