//! What every scenario stands on and none knows about: the options every scenario
//! takes, the error type, the guarded critical section and its verification, the
//! start-gate race, the windowed runner and its child processes, the reader-writer
//! sections, the cell conditions (placement and load) and the interleaved rounds.

pub mod ping_pong;
pub mod rounds;
pub mod rw;
pub mod spread;
pub mod stats;
pub mod versus;
pub mod wait;
pub mod watch;
pub mod windowed;

use std::cell::UnsafeCell;
use std::fmt;
use std::sync::atomic::{
    AtomicBool, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::locks::{BenchLock, LockName};
use crate::rwlocks::RwLockName;
use wait::WaitClock;

/// The global options, resolved.
#[derive(Debug, Clone)]
pub struct Common {
    /// `--locks`, deduplicated; `None` means each scenario's default set.
    pub locks: Option<Vec<LockName>>,
    /// `--rwlocks`, deduplicated; `None` means every listed reader-writer lock.
    pub rwlocks: Option<Vec<RwLockName>>,
    /// `--runs`: repetitions per cell.
    pub runs: u32,
    /// `--seed-scale`: the seeds' own sizes.
    pub seed_scale: bool,
    /// `--stats`: count klocks' slow-path events per cell ([`stats`]).
    pub stats: bool,
    /// `--budget`: extra rounds for rows still undecided ([`crate::adaptive`]).
    pub adaptive: crate::adaptive::Adaptive,
}

impl Common {
    /// The locks to run: `--locks`, or every listed lock.
    pub fn locks(&self) -> Vec<LockName> {
        self.locks.clone().unwrap_or_else(LockName::defaults)
    }

    /// The reader-writer locks to run: `--rwlocks`, or every listed one.
    pub fn rwlocks(&self) -> Vec<RwLockName> {
        self.rwlocks.clone().unwrap_or_else(RwLockName::defaults)
    }
}

/// Why lockbench stopped.
#[derive(Debug)]
pub enum Error {
    /// A result was wrong: the lock (or the machine) broke mutual exclusion.
    Verification(String),
    /// The OS refused something (pinning, writing a report, starting a process).
    Io(String, std::io::Error),
    /// A cell's child process broke down (crashed, or answered nonsense).
    Child(String),
    /// The report of the run could not be drawn or written.
    Report(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Verification(what) => write!(f, "verification failed: {what}"),
            Error::Io(what, err) => write!(f, "{what}: {err}"),
            Error::Child(what) | Error::Report(what) => write!(f, "{what}"),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// lockbench's exit status for it: 1 for a result that failed its check (a broken
    /// lock, a crashed cell), 2 for a run that could not be made or written as asked.
    pub fn exit_status(&self) -> u8 {
        match self {
            Error::Verification(_) | Error::Child(_) => 1,
            Error::Io(..) | Error::Report(_) => 2,
        }
    }
}

/// Fails unless the guarded counter saw every critical section that was counted.
pub fn verify_count(
    context: impl FnOnce() -> String,
    counted: u64,
    done: u64,
) -> Result<(), Error> {
    if counted == done {
        return Ok(());
    }
    Err(Error::Verification(format!(
        "{}: the lock-protected counter reads {counted} but {done} critical sections \
         completed ({} updates lost or invented): the lock did not exclude",
        context(),
        done.abs_diff(counted)
    )))
}

/// Parses a positive number of seconds (fractions allowed), for clap.
pub fn parse_secs(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!(
            "{secs} s is out of range: give more than 0 and at most 86400"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Owner id stored before any thread has taken the lock.
const NO_OWNER: usize = usize::MAX;

/// The data the critical section touches: a plain counter and the last owner's id.
struct Data {
    count: u64,
    owner: usize,
}

/// A lock and the data only it protects, as in any `Mutex<T>`; alone on its cache
/// lines so nothing else (stop flags, other locks) shares them.
pub struct Guarded<L> {
    inner: CachePadded<GuardedInner<L>>,
}

struct GuardedInner<L> {
    lock: L,
    data: UnsafeCell<Data>,
}

// SAFETY: `data` is only touched inside `lock.with` (and, once the threads are gone,
// through `into_count`'s ownership). That this excludes is the claim every scenario
// verifies; the negative control `busted` breaks it on purpose and is caught.
unsafe impl<L: BenchLock> Sync for Guarded<L> {}

impl<L: BenchLock> Guarded<L> {
    /// An unlocked lock, a zero count, no owner yet.
    pub fn unlocked() -> Self {
        Self {
            inner: CachePadded::new(GuardedInner {
                lock: L::new(),
                data: UnsafeCell::new(Data {
                    count: 0,
                    owner: NO_OWNER,
                }),
            }),
        }
    }

    /// One critical section by thread `me`: count it and become the last owner.
    /// Returns whether the lock came from another thread (a handoff).
    #[inline]
    pub fn enter(&self, me: usize) -> bool {
        self.enter_with(me, || {})
    }

    /// [`enter`](Self::enter), running `work` under the lock before counting.
    #[inline]
    pub fn enter_with(&self, me: usize, work: impl FnOnce()) -> bool {
        let previous = self.inner.lock.with(|| {
            work();
            // SAFETY: inside the lock (see the `Sync` impl); the reference does not
            // outlive the critical section.
            let data = unsafe { &mut *self.inner.data.get() };
            data.count += 1;
            std::mem::replace(&mut data.owner, me)
        });
        previous != me && previous != NO_OWNER
    }

    /// [`enter_with`](Self::enter_with), `clock` timing the lock call when it picks
    /// this acquisition: read just before the call and first thing under the lock,
    /// recorded after the unlock.
    #[inline]
    pub fn enter_timed(&self, me: usize, clock: &mut WaitClock, work: impl FnOnce()) -> bool {
        let started = clock.start();
        let (previous, acquired) = self.inner.lock.with(|| {
            let acquired = WaitClock::acquired(started);
            work();
            // SAFETY: inside the lock (see the `Sync` impl); the reference does not
            // outlive the critical section.
            let data = unsafe { &mut *self.inner.data.get() };
            data.count += 1;
            (std::mem::replace(&mut data.owner, me), acquired)
        });
        clock.record(started, acquired);
        previous != me && previous != NO_OWNER
    }

    /// The final count.
    pub fn into_count(self) -> u64 {
        CachePadded::into_inner(self.inner).data.into_inner().count
    }
}

/// A lock thread's result: its operations inside the window and after it.
pub trait Tallied {
    /// Operations finished inside the window.
    fn counted(&self) -> u64;
    /// Operations finished after the thread saw the stop flag.
    fn late(&self) -> u64;
}

/// Spins `pauses` `spin_loop()`s (x86 `pause`): the load inside and outside the lock.
#[inline]
pub fn pause(pauses: u32) {
    for _ in 0..pauses {
        std::hint::spin_loop();
    }
}

/// Asks workers to stop early; they poll it once per operation.
pub struct Stop(CachePadded<AtomicBool>);

impl Stop {
    fn new() -> Self {
        Self(CachePadded::new(AtomicBool::new(false)))
    }

    /// Whether to stop now.
    #[inline]
    pub fn requested(&self) -> bool {
        // Relaxed: a hint only, paired with nothing. No data is published through the
        // flag; results are read after the threads are joined, which synchronises.
        self.0.load(Relaxed)
    }

    fn request(&self) {
        // Relaxed: see `requested`.
        self.0.store(true, Relaxed);
    }
}

/// The start gate. Workers wait at it spinning, so that the ones on a CPU all see
/// it open within a cache-line transfer (a blocking gate wakes them one by one, tens
/// of microseconds apart, enough for a short run to finish before the next thread
/// starts). They yield while they spin so that, with more threads than CPUs, the
/// thread that opens the gate and the other waiters still get to run.
///
/// The opener waits until every worker has arrived before it starts the clock and
/// opens. Arrival is a count, not a blocking barrier: `std::sync::Barrier` lets its
/// waiters out one at a time through its mutex, each needing a CPU in turn. With 256
/// threads on 2 CPUs, the first ones already running the measured loop, half the
/// workers of one run passed the gate 270 ms after the clock started and the last a
/// second after it, and a 1 s window counted their absence as the lock's unfairness
/// (`docs/results/start-gate-2026-11-28.txt`).
struct Gate {
    arrived: CachePadded<AtomicUsize>,
    open: CachePadded<AtomicBool>,
}

impl Gate {
    fn new() -> Self {
        Self {
            arrived: CachePadded::new(AtomicUsize::new(0)),
            open: CachePadded::new(AtomicBool::new(false)),
        }
    }

    /// Counts this worker in and waits for the gate to open.
    fn arrive_and_wait(&self) {
        // Release: pairs with the Acquire in `await_arrivals`, so that the opener,
        // and through its Release in `open` every worker, sees what this worker did
        // before arriving (its `prepare` outcome).
        self.arrived.fetch_add(1, Release);
        // Acquire: pairs with the Release in `open`, so the worker's run happens after
        // everything the opener did first, reading the start time included.
        while !self.open.load(Acquire) {
            thread::yield_now();
        }
    }

    /// Returns `true` once `workers` workers have arrived, `false` as soon as
    /// `any_gone` says a worker ended without arriving (it panicked). It sleeps
    /// between looks: the workers it waits for need the CPUs.
    fn await_arrivals(&self, workers: usize, any_gone: impl Fn() -> bool) -> bool {
        // Acquire: pairs with the Release of every worker's arrival (the count's
        // read-modify-writes form one release sequence).
        while self.arrived.load(Acquire) < workers {
            if any_gone() {
                return false;
            }
            thread::sleep(Duration::from_micros(50));
        }
        true
    }

    fn open(&self) {
        // Release: pairs with the Acquire in `arrive_and_wait`; the clock was read
        // before this.
        self.open.store(true, Release);
    }
}

/// What a [`race`] returns.
pub struct Race<T> {
    /// Each worker's result, by worker id.
    pub results: Vec<T>,
    /// From opening the gate to the last worker returning.
    pub wall: Duration,
    /// From opening the gate to requesting the stop; `None` if every worker returned
    /// before `limit`.
    pub stopped: Option<Duration>,
    /// From opening the gate to the last worker passing it. With more threads than
    /// CPUs a worker passes when the scheduler next runs it; its operations in a
    /// window are low by the time it missed.
    pub last_start: Duration,
}

/// Runs `threads` workers `work(id, stop)` from one start gate. The clock starts just
/// before the gate opens and stops when the last worker returns. If they are not all
/// done after `limit`, `stop` is requested and they are awaited.
pub fn race<T: Send>(
    threads: usize,
    limit: Duration,
    work: impl Fn(usize, &Stop) -> T + Sync,
) -> Race<T> {
    race_announced(threads, limit, || {}, work)
}

/// [`race`], calling `started` once the clock runs, just before the gate opens.
pub fn race_announced<T: Send>(
    threads: usize,
    limit: Duration,
    started: impl FnOnce(),
    work: impl Fn(usize, &Stop) -> T + Sync,
) -> Race<T> {
    let ready = |_: usize| Ok::<(), std::convert::Infallible>(());
    match race_prepared(threads, limit, ready, started, work) {
        Ok(race) => race,
        Err(never) => match never {},
    }
}

/// [`race_announced`], each worker first calling `prepare(id)` (pinning itself, say)
/// before the start gate, off the clock. If any worker's `prepare` fails, no worker
/// runs `work` and the first failure (by worker id) is returned.
pub fn race_prepared<T: Send, E: Send>(
    threads: usize,
    limit: Duration,
    prepare: impl Fn(usize) -> Result<(), E> + Sync,
    started: impl FnOnce(),
    work: impl Fn(usize, &Stop) -> T + Sync,
) -> Result<Race<T>, E> {
    let (gate, stop) = (Gate::new(), Stop::new());
    let unprepared = AtomicBool::new(false);
    let (done_tx, done_rx) = mpsc::channel::<()>();
    thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|id| {
                let (done, gate, stop, unprepared, prepare, work) =
                    (done_tx.clone(), &gate, &stop, &unprepared, &prepare, &work);
                scope.spawn(move || {
                    let prepared = prepare(id);
                    if prepared.is_err() {
                        // Relaxed: the gate's arrival count and opening order this store
                        // before every worker's load below.
                        unprepared.store(true, Relaxed);
                    }
                    gate.arrive_and_wait();
                    let passed = Instant::now();
                    // Relaxed: ordered by the gate (see above).
                    let result = match unprepared.load(Relaxed) {
                        false => Some(work(id, stop)),
                        true => None,
                    };
                    let finished = Instant::now();
                    // The receiver outlives the workers; a send cannot fail.
                    let _ = done.send(());
                    (prepared.map(|()| result), passed, finished)
                })
            })
            .collect();
        drop(done_tx);
        if !gate.await_arrivals(threads, || workers.iter().any(|w| w.is_finished())) {
            // A worker panicked before the gate: release the others without work, so
            // that joining them passes the panic on instead of waiting forever.
            // Relaxed: ordered by the gate's opening, as a `prepare` failure is.
            unprepared.store(true, Relaxed);
        }
        let start = Instant::now();
        started();
        gate.open();
        let stopped = await_workers(&done_rx, threads, start + limit, &stop);
        let mut results = Vec::with_capacity(threads);
        let (mut last, mut last_start) = (start, start);
        for worker in workers {
            let (result, passed, finished) = join(worker);
            // `None` only when another worker's `prepare` failed: its `Err` follows.
            results.extend(result?);
            last = last.max(finished);
            last_start = last_start.max(passed);
        }
        Ok(Race {
            results,
            wall: last.saturating_duration_since(start),
            stopped: stopped.map(|at| at.saturating_duration_since(start)),
            last_start: last_start.saturating_duration_since(start),
        })
    })
}

/// Joins a scoped thread, passing its panic on.
pub fn join<T>(thread: thread::ScopedJoinHandle<'_, T>) -> T {
    thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Blocks until `threads` workers reported done, requesting a stop at `deadline`;
/// returns when it requested the stop, if it did.
fn await_workers(
    done: &mpsc::Receiver<()>,
    threads: usize,
    deadline: Instant,
    stop: &Stop,
) -> Option<Instant> {
    for _ in 0..threads {
        match done.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(()) => {}
            Err(RecvTimeoutError::Timeout) => {
                stop.request();
                return Some(Instant::now());
            }
            // Every worker is gone (one panicked); joining reports it.
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_parse_with_fractions_and_reject_nonsense() {
        assert_eq!(parse_secs("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["0", "-1", "nan", "inf", "1e9", "soon"] {
            assert!(parse_secs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_race_stops_at_its_limit_and_counts_every_worker() {
        let race = race(3, Duration::from_millis(20), |id, stop| {
            let mut spins = 0_u64;
            while !stop.requested() {
                spins += 1;
                std::hint::spin_loop();
            }
            (id, spins)
        });
        assert_eq!(
            race.results.iter().map(|r| r.0).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert!(race.wall >= Duration::from_millis(20));
        assert!(race
            .stopped
            .is_some_and(|at| at >= Duration::from_millis(20)));
    }

    #[test]
    #[should_panic(expected = "worker 1 cannot prepare")]
    fn a_worker_that_panics_before_the_gate_fails_the_race_instead_of_hanging_it() {
        let prepare = |id: usize| -> Result<(), ()> {
            assert!(id != 1, "worker {id} cannot prepare");
            Ok(())
        };
        let _ = race_prepared(3, Duration::from_secs(60), prepare, || {}, |_, _| ());
    }

    #[test]
    fn guarded_counts_and_sees_handoffs() {
        let guarded = Guarded::<std::sync::Mutex<()>>::unlocked();
        assert!(!guarded.enter(0), "the first acquisition is no handoff");
        assert!(!guarded.enter(0));
        assert!(guarded.enter(1));
        assert_eq!(guarded.into_count(), 3);
    }
}
