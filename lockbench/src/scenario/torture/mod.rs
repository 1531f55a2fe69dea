//! `lockbench torture`: the kernel's `locktorture`, in userspace.
//!
//! Threads loop on one lock for a set time while faults are injected, and every
//! critical section checks the lock's promise: an occupancy count that a second
//! writer (or a reader beside a writer) sees non-zero, and two non-atomic counters
//! that writers move together and readers find equal. The faults, each on by default
//! (locktorture's, adapted to threads):
//!
//! - **long holds**: about one acquisition in 2,000 holds the lock for 2 ms, to pile
//!   waiters up behind it;
//! - **preemption in the critical section**: one in 100 yields the CPU inside it, one
//!   in 1,000 sleeps 50 µs there;
//! - **stutter**: every 500 ms all threads pause together for 50 ms, then rush back;
//! - **CPU shuffle**: each thread re-pins itself to a random allowed CPU every
//!   ~100 ms;
//! - **thread churn**: each thread exits after a random 1,000–20,000 acquisitions and
//!   a new one takes its place;
//! - **signals**: a thread sends `SIGURG` to a random worker about every millisecond
//!   (the handler counts it): futex waits return early, spins are interrupted. With
//!   `--signals same` the handler takes the lock under test itself, on a mutex's
//!   thread that may be spinning, sleeping, claiming or unlocking on that very lock
//!   (for a reader-writer lock, on a writer thread outside the lock, reading and
//!   writing in turn): a lock that leaves a wake or a reservation to a role the
//!   interrupted thread holds hangs, and the run reports the hang. By default that mode runs the klocks locks that lend their waiting roles to
//!   signal handlers (`docs/misuse.md`); the hidden `busted-delegation` lock is its
//!   negative control.
//!
//! With `--freeze`, the delegates: one waiting worker at a time is frozen inside its
//! lock call (its `SIGUSR1` handler blocks in `read(2)`), in turn one seen running (a
//! spinner, a claimant on its CPU) and one seen asleep, for one and a half times the
//! starvation limit, while the others must go on getting the lock within it: a lock
//! that leaves a wake, a reservation or a writer's place to a waiter that cannot act
//! starves the others, and the run reports it. The frozen worker's own wait is not
//! counted. By default it runs the klocks locks that lend their waiting roles; the
//! FIFO locks are left out by design (a frozen waiter holds its place in line, as a
//! preempted vCPU does in a ticket lock), and `busted-delegation` is its negative
//! control.
//!
//! A lock fails the run on any violation, on lost updates (the counters against the
//! acquisitions counted), or when one acquisition waited longer than
//! `--starvation-ms`. The broken lock (`--locks busted`, `--rwlocks busted`) must fail
//! within seconds.
//!
//! Here: the options, the run of one lock and the table. The data and the check
//! around it are in `guarded`, the faults in `faults`, the signal handler and the
//! workers' phases it reads in `handler`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod faults;
mod guarded;
mod handler;

use faults::{allowed_cpus, next, Faults};
use guarded::{Guarded, Section};
use handler::{
    in_phases, install_freeze_handler, install_signal_handler, quiet_relock_panics, was_frozen,
    HandlerTarget, IS_READER, TARGET,
};

use crate::locks::{BenchLock, LockName, LockVisitor};
use crate::rwlocks::{BenchRwLock, RwLockName, RwLockVisitor};
use klocks::catalog::{MutexKind, RwLockKind};

/// Torture: the kernel's locktorture in userspace
///
/// Threads loop on one lock for --secs per lock while faults are injected (long
/// holds, yields and sleeps inside the critical section, stutter, CPU shuffling,
/// thread exit and re-creation, signals); every critical section checks mutual
/// exclusion, the counters are checked for lost updates at the end, and an
/// acquisition waiting longer than --starvation-ms fails the run. Mutexes from
/// --locks, reader-writer locks from --rwlocks (their defaults below). Prints a
/// table; exit status 1 if any lock failed.
/// --minutes N is the soak run. The deliberately broken lock (hidden from the lists)
/// must fail.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Seconds of torture per lock.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=3600))]
    secs: u64,
    /// The soak: this many minutes in all, split evenly across the locks (instead of
    /// --secs).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1440))]
    minutes: Option<u64>,
    /// Threads per lock (for reader-writer locks, half readers and half writers)
    /// [default: 4 per CPU].
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=1024))]
    threads: Option<u64>,
    /// An acquisition that waits longer than this fails the run (starvation).
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..))]
    starvation_ms: u64,
    /// No long holds.
    #[arg(long)]
    no_long_holds: bool,
    /// No yields or sleeps inside the critical section.
    #[arg(long)]
    no_preemption: bool,
    /// No stutter.
    #[arg(long)]
    no_stutter: bool,
    /// No CPU shuffling.
    #[arg(long)]
    no_shuffle: bool,
    /// No thread exit and re-creation.
    #[arg(long)]
    no_churn: bool,
    /// No signals.
    #[arg(long, conflicts_with = "signals")]
    no_signals: bool,
    /// What the signal handler does: count the signal, or take the lock under test
    /// (`same`: by default on the klocks locks that lend their waiting roles to
    /// handlers).
    #[arg(long, value_enum, default_value_t = Signals::Counted)]
    signals: Signals,
    /// Freeze delegates: one waiting worker at a time is stopped inside its lock call
    /// (its signal handler blocks) for 1.5 × --starvation-ms, and every other worker
    /// must go on getting the lock within --starvation-ms [default locks: those that
    /// lend their waiting roles].
    #[arg(long, conflicts_with = "spinlocks")]
    freeze: bool,
    /// Without --locks, torture the mutexes whose waiters never sleep (the pure
    /// spinlocks, klocks' and the peers') instead of the others; give --threads at
    /// most the CPUs.
    #[arg(long)]
    spinlocks: bool,
}

/// What the torture's signal handler does.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signals {
    /// Counts the signal.
    Counted,
    /// Takes the lock under test (on a reader-writer lock's writers, for reading and
    /// writing in turn).
    Same,
}

/// One lock's result.
struct Outcome {
    name: &'static str,
    threads: u64,
    acquisitions: u64,
    violations: u64,
    lost: u64,
    max_wait: Duration,
    signals: u64,
    /// Threads still waiting when the run ended (a lost wake-up or a deadlock).
    hung: usize,
    /// Workers frozen in their lock call (`--freeze`).
    frozen: u64,
    /// Fork children made meanwhile, and those that could not use the lock.
    forks: u64,
    fork_failures: u64,
}

/// Runs the torture of one lock with `section` and returns its outcome.
fn torture(
    name: &'static str,
    section: Section,
    fork_probe: ForkProbe,
    readers: bool,
    args: &Args,
    secs: u64,
) -> Outcome {
    let threads = args
        .threads
        .unwrap_or_else(|| 4 * std::thread::available_parallelism().map_or(2, |n| n.get()) as u64);
    let guarded = Arc::new(Guarded::new());
    let faults = Arc::new(Faults {
        long_holds: !args.no_long_holds,
        preemption: !args.no_preemption,
        stutter: AtomicBool::new(false),
        shuffle: !args.no_shuffle,
        churn: !args.no_churn,
        cpus: allowed_cpus(),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let acquisitions = Arc::new(AtomicU64::new(0));
    let max_wait_ns = Arc::new(AtomicU64::new(0));
    // Each live worker's thread and kernel tid.
    let live: Arc<std::sync::Mutex<Vec<(libc::pthread_t, i32)>>> = Arc::default();
    let slots: Vec<_> = (0..threads)
        .map(|slot| {
            let (guarded, faults, stop) =
                (Arc::clone(&guarded), Arc::clone(&faults), Arc::clone(&stop));
            let (writes, acquisitions, max_wait_ns) = (
                Arc::clone(&writes),
                Arc::clone(&acquisitions),
                Arc::clone(&max_wait_ns),
            );
            let (section, live) = (Arc::clone(&section), Arc::clone(&live));
            let writer = !readers || slot % 2 == 0;
            // Each slot runs workers one after another (thread churn).
            std::thread::spawn(move || {
                let mut rng =
                    0x2545_F491_4F6C_DD1D ^ (slot + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                while !stop.load(Relaxed) {
                    let life = if faults.churn {
                        1_000 + next(&mut rng) % 19_000
                    } else {
                        u64::MAX
                    };
                    let (guarded, faults, stop) =
                        (Arc::clone(&guarded), Arc::clone(&faults), Arc::clone(&stop));
                    let (writes, acquisitions, max_wait_ns) = (
                        Arc::clone(&writes),
                        Arc::clone(&acquisitions),
                        Arc::clone(&max_wait_ns),
                    );
                    let (section, live) = (Arc::clone(&section), Arc::clone(&live));
                    let seed = next(&mut rng);
                    let worker = std::thread::spawn(move || {
                        // SAFETY: pthread_self has no preconditions.
                        let me = unsafe { libc::pthread_self() };
                        // SAFETY: gettid has no preconditions.
                        let tid = unsafe { libc::gettid() };
                        live.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((me, tid));
                        IS_READER.with(|r| r.set(!writer));
                        let (mut rng, mut last_shuffle) = (seed | 1, Instant::now());
                        let mut i = 0;
                        while i < life && !stop.load(Relaxed) {
                            faults.outside(&mut rng, &mut last_shuffle);
                            let start = Instant::now();
                            section(&guarded, &faults, i, writer);
                            let waited = start.elapsed().as_nanos() as u64;
                            // A frozen worker's wait is the freeze, not the lock's.
                            if !was_frozen() {
                                max_wait_ns.fetch_max(waited, Relaxed);
                            }
                            i += 1;
                        }
                        acquisitions.fetch_add(i, Relaxed);
                        if writer {
                            writes.fetch_add(i, Relaxed);
                        }
                        live.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .retain(|t| t.0 != me);
                    });
                    let _ = worker.join();
                }
            })
        })
        .collect();
    let target: &'static HandlerTarget = Box::leak(Box::new(HandlerTarget {
        section: Arc::clone(&section),
        guarded: Arc::clone(&guarded),
        faults: Faults {
            long_holds: false,
            preemption: false,
            stutter: AtomicBool::new(false),
            shuffle: false,
            churn: false,
            cpus: Vec::new(),
        },
        readers,
        writes: AtomicU64::new(0),
    }));
    if args.signals == Signals::Same {
        // SeqCst: published before any signal is sent for this lock.
        TARGET.store(std::ptr::from_ref(target).cast_mut(), SeqCst);
    }
    let signals = AtomicU64::new(0);
    let start = Instant::now();
    let mut rng = 0x1234_5678_9ABC_DEF1_u64;
    let mut next_stutter = start + Duration::from_millis(500);
    let mut freezes = Freezes::new(args, start);
    while start.elapsed() < Duration::from_secs(secs) || freezes.holding() {
        if args.freeze {
            freezes.step(&live, &mut rng, &fork_probe);
        }
        if !args.no_stutter && Instant::now() >= next_stutter {
            faults.stutter.store(true, Relaxed);
            std::thread::sleep(Duration::from_millis(50));
            faults.stutter.store(false, Relaxed);
            next_stutter = Instant::now() + Duration::from_millis(500);
        }
        if !args.no_signals {
            let live = live.lock().unwrap_or_else(|e| e.into_inner());
            if !live.is_empty() {
                let (target, _) = live[next(&mut rng) as usize % live.len()];
                // SAFETY: a thread in `live` is alive: it removes itself, under this
                // mutex, before it exits.
                unsafe { libc::pthread_kill(target, libc::SIGURG) };
                signals.fetch_add(1, Relaxed);
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Relaxed);
    faults.stutter.store(false, Relaxed);
    // A freeze that landed late, after its try gave up.
    if handler::FROZEN.load(SeqCst) {
        handler::thaw();
    }
    // A worker that waits past the starvation limit after the stop never comes back:
    // report it instead of waiting for it for good.
    let deadline = Instant::now() + Duration::from_millis(args.starvation_ms) * 2;
    while slots.iter().any(|slot| !slot.is_finished()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let hung = slots.iter().filter(|slot| !slot.is_finished()).count();
    // SeqCst: no new handler finds the target; one still running keeps it (leaked).
    TARGET.store(std::ptr::null_mut(), SeqCst);
    if hung > 0 {
        // Their threads stay asleep; the counts below are not final.
        return Outcome {
            name,
            threads,
            acquisitions: acquisitions.load(Relaxed),
            violations: guarded.violations.load(Relaxed),
            lost: 0,
            max_wait: Duration::from_nanos(max_wait_ns.load(Relaxed)),
            signals: signals.load(Relaxed),
            hung,
            frozen: freezes.made,
            forks: freezes.forks,
            fork_failures: freezes.fork_failures,
        };
    }
    for slot in slots {
        let _ = slot.join();
    }
    // SAFETY: every worker has been joined.
    let count = unsafe { *guarded.count.get() };
    let writes = writes.load(Relaxed) + target.writes.load(Relaxed);
    Outcome {
        name,
        threads,
        acquisitions: acquisitions.load(Relaxed),
        violations: guarded.violations.load(Relaxed),
        lost: writes.saturating_sub(count),
        max_wait: Duration::from_nanos(max_wait_ns.load(Relaxed)),
        signals: signals.load(Relaxed),
        hung: 0,
        frozen: freezes.made,
        forks: freezes.forks,
        fork_failures: freezes.fork_failures,
    }
}

/// The scheduler state of thread `tid` of this process ('R', 'S', ...), from `/proc`.
fn thread_state(tid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

/// `--freeze`'s schedule: at most one worker frozen at a time, each freeze held for
/// 1.5 × the starvation limit, alternating between a worker seen running in its lock
/// call and one seen asleep there.
struct Freezes {
    hold: Duration,
    /// When the current freeze ends, if one is held.
    until: Option<Instant>,
    /// When the next freeze is tried.
    next: Instant,
    /// Freezes made.
    made: u64,
    /// Fork children made while a worker was frozen, and those that could not use
    /// the lock.
    forks: u64,
    fork_failures: u64,
}

impl Freezes {
    fn new(args: &Args, start: Instant) -> Self {
        Self {
            hold: Duration::from_millis(args.starvation_ms * 3 / 2),
            until: None,
            next: start + Duration::from_millis(100),
            made: 0,
            forks: 0,
            fork_failures: 0,
        }
    }

    /// Whether a freeze is held (the run goes on until it ends).
    fn holding(&self) -> bool {
        self.until.is_some()
    }

    /// Thaws a freeze whose time is up, or tries to freeze a waiting worker.
    fn step(
        &mut self,
        live: &std::sync::Mutex<Vec<(libc::pthread_t, i32)>>,
        rng: &mut u64,
        fork_probe: &ForkProbe,
    ) {
        let now = Instant::now();
        if let Some(until) = self.until {
            if now >= until {
                handler::thaw();
                self.until = None;
                self.next = now + Duration::from_millis(50);
            }
            return;
        }
        if now < self.next {
            return;
        }
        let want = if self.made.is_multiple_of(2) {
            'R'
        } else {
            'S'
        };
        for _ in 0..64 {
            let live = live.lock().unwrap_or_else(|e| e.into_inner());
            if live.is_empty() {
                break;
            }
            let (target, tid) = live[next(rng) as usize % live.len()];
            if thread_state(tid) != Some(want) {
                continue;
            }
            // SAFETY: a thread in `live` is alive: it removes itself, under this
            // mutex (held here), before it exits.
            unsafe { libc::pthread_kill(target, libc::SIGUSR1) };
            drop(live);
            let asked = Instant::now();
            while !handler::FROZEN.load(SeqCst) && asked.elapsed() < Duration::from_millis(5) {
                std::hint::spin_loop();
            }
            if handler::FROZEN.load(SeqCst) {
                self.made += 1;
                self.until = Some(Instant::now() + self.hold);
                // A fork child of this state: a worker frozen in its lock call,
                // others spinning, sleeping or reserved for, the lock held by us.
                // The probe waits for the lock on a thread of its own: a lock
                // that strands its waiters behind the frozen one would strand the
                // freezer too, and no thaw would come.
                self.forks += 1;
                let probe = Arc::clone(fork_probe);
                let forked = std::thread::spawn(move || probe());
                let deadline = Instant::now() + self.hold;
                while !forked.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let ok = forked.is_finished() && forked.join().unwrap_or(false);
                if !ok {
                    self.fork_failures += 1;
                }
                return;
            }
        }
        // None froze (the signal landed outside a lock call): try again soon, or
        // take the late freeze of one that froze after all.
        if handler::FROZEN.load(SeqCst) {
            self.made += 1;
            self.until = Some(Instant::now() + self.hold);
        }
        self.next = Instant::now() + Duration::from_millis(5);
    }
}

/// `--freeze`'s fork: the freezer holds the lock and forks while a worker is frozen in
/// its lock call and others wait; whether the child, once it repaired its copy
/// (`forget_waiters`, the documented rule for a fork child), released the lock and
/// took it again within a bound.
type ForkProbe = Arc<dyn Fn() -> bool + Send + Sync>;

/// Forks holding the lock (`hold` runs `then` with it held); in the child, repairs
/// the lock with `repair`, lets `hold` release it, takes it again and exits 0, under a
/// 5 s alarm. Whether the child did.
fn fork_holding(hold: &dyn Fn(&dyn Fn()), repair: &dyn Fn(), again: &dyn Fn()) -> bool {
    let child = std::cell::Cell::new(0);
    hold(&|| {
        // SAFETY: fork; the child runs only the lock's code and async-signal-safe
        // calls (alarm, _exit) before it exits.
        child.set(unsafe { libc::fork() });
        if child.get() == 0 {
            // SAFETY: as above.
            unsafe { libc::alarm(5) };
            repair();
        }
    });
    let child = child.get();
    if child == 0 {
        again();
        // SAFETY: the child's end: no destructors, no atexit.
        unsafe { libc::_exit(0) };
    }
    if child < 0 {
        return false;
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
    let waited = unsafe { libc::waitpid(child, &mut status, 0) };
    waited == child && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

struct MutexSection;

impl LockVisitor for MutexSection {
    type Output = (&'static str, Section, ForkProbe);
    fn visit<L: BenchLock>(self) -> Self::Output {
        let lock = Arc::new(L::new());
        let probe: ForkProbe = {
            let lock = Arc::clone(&lock);
            Arc::new(move || {
                fork_holding(
                    &|then| lock.with(then),
                    // SAFETY: in the child, on the forking thread's continuation.
                    &|| unsafe { lock.forget_waiters() },
                    &|| lock.with(|| ()),
                )
            })
        };
        let section: Section = Arc::new(move |guarded: &Guarded, faults: &Faults, i, _| {
            in_phases(|held| {
                lock.with(|| {
                    held();
                    guarded.write(faults, i);
                })
            });
        });
        (L::NAME, section, probe)
    }
}

struct RwSection;

impl RwLockVisitor for RwSection {
    type Output = (&'static str, Section, ForkProbe);
    fn visit<L: BenchRwLock>(self) -> Self::Output {
        let lock = Arc::new(L::new());
        let probe: ForkProbe = {
            let lock = Arc::clone(&lock);
            Arc::new(move || {
                fork_holding(
                    &|then| lock.write(then),
                    // SAFETY: in the child, on the forking thread's continuation.
                    &|| unsafe { lock.forget_waiters() },
                    &|| {
                        lock.write(|| ());
                        lock.read(|| ());
                    },
                )
            })
        };
        let holds: Box<dyn Fn() -> bool + Send + Sync> = {
            let lock = Arc::clone(&lock);
            Box::new(move || lock.writer_is_current_thread())
        };
        // SeqCst: published before this lock's run freezes anyone (leaked: a late
        // handler may still read it).
        handler::HOLDS_WRITER.store(Box::into_raw(Box::new(holds)), SeqCst);
        let section: Section = Arc::new(move |guarded: &Guarded, faults: &Faults, i, writer| {
            in_phases(|held| {
                if writer {
                    lock.write(|| {
                        held();
                        guarded.write(faults, i);
                    });
                } else {
                    lock.read(|| {
                        held();
                        guarded.read(faults, i);
                    });
                }
            });
        });
        (L::NAME, section, probe)
    }
}

/// The mutexes tortured when `--locks` is not given: every lock that sleeps or
/// yields (the pure spinlocks collapse with more threads than CPUs), or with
/// `--spinlocks` every pure spinlock (run them with `--threads` at most the CPUs).
/// With `--signals same`, the klocks mutexes that lend every waiting role to a
/// signal handler on the waiter's own thread (`docs/misuse.md`) and know their
/// owner, so that a handler that interrupts its thread's own section panics (and is
/// counted) instead of deadlocking.
fn default_locks(signals: Signals, spinlocks: bool, freeze: bool) -> Vec<LockName> {
    // The FIFO queue locks are left out: a frozen waiter holds its place in line
    // (module doc). Those that know their owner are the ones that are not queues.
    if freeze {
        return MutexKind::ALL
            .iter()
            .filter(|kind| kind.lends_roles() && kind.tracks_owner())
            .map(|&kind| LockName::Klocks(kind))
            .collect();
    }
    match signals {
        Signals::Counted => LockName::defaults()
            .into_iter()
            .filter(|l| l.sleeps() != spinlocks)
            .collect(),
        Signals::Same => MutexKind::ALL
            .iter()
            .filter(|kind| kind.lends_roles() && kind.tracks_owner())
            .map(|&kind| LockName::Klocks(kind))
            .collect(),
    }
}

/// The reader-writer locks tortured when `--rwlocks` is not given: all, or with
/// `--signals same` those that lend every waiting role to a signal handler on the
/// waiter's own thread (`docs/misuse.md`; the handler interrupts only a thread
/// outside the lock, so no relock needs catching).
fn default_rwlocks(signals: Signals, freeze: bool) -> Vec<RwLockName> {
    if freeze {
        return RwLockKind::ALL
            .iter()
            .filter(|kind| kind.lends_roles())
            .map(|&kind| RwLockName::Klocks(kind))
            .collect();
    }
    match signals {
        Signals::Counted => RwLockName::defaults(),
        Signals::Same => RwLockKind::ALL
            .iter()
            .filter(|kind| kind.lends_roles())
            .map(|&kind| RwLockName::Klocks(kind))
            .collect(),
    }
}

/// Runs the torture of every chosen lock, prints the table; whether all passed.
pub fn run(args: &Args, locks: Option<Vec<LockName>>, rwlocks: Option<Vec<RwLockName>>) -> bool {
    let locks = locks.unwrap_or_else(|| default_locks(args.signals, args.spinlocks, args.freeze));
    let rwlocks = rwlocks.unwrap_or_else(|| default_rwlocks(args.signals, args.freeze));
    let total = (locks.len() + rwlocks.len()).max(1) as u64;
    let secs = args.minutes.map_or(args.secs, |m| (m * 60 / total).max(1));
    if args.freeze {
        install_freeze_handler();
    }
    if !args.no_signals {
        install_signal_handler();
        if args.signals == Signals::Same {
            quiet_relock_panics();
        }
    }
    let mut outcomes = Vec::new();
    for lock in locks {
        // SeqCst: as in `RwSection`; a mutex's waiter holds nothing.
        handler::HOLDS_WRITER.store(std::ptr::null_mut(), SeqCst);
        let (name, section, probe) = lock.visit(MutexSection);
        outcomes.push(torture(name, section, probe, false, args, secs));
    }
    for lock in rwlocks {
        let (name, section, probe) = lock.visit(RwSection);
        outcomes.push(torture(name, section, probe, true, args, secs));
    }
    let limit = Duration::from_millis(args.starvation_ms);
    println!(
        "torture: {secs} s per lock; faults:{}{}{}{}{}{}; starvation limit {} ms",
        if args.no_long_holds {
            ""
        } else {
            " long holds"
        },
        if args.no_preemption {
            ""
        } else {
            " preemption"
        },
        if args.no_stutter { "" } else { " stutter" },
        if args.no_shuffle { "" } else { " shuffle" },
        if args.no_churn { "" } else { " churn" },
        match (args.no_signals, args.signals) {
            (true, _) => "",
            (false, Signals::Counted) => " signals",
            (false, Signals::Same) => " signals (the handler takes the lock)",
        },
        args.starvation_ms
    );
    if args.freeze {
        println!(
            "freeze: one waiting worker at a time stopped in its lock call for {} ms; at \
             each freeze a fork while the lock is held, whose child repairs it, releases \
             it and takes it again",
            args.starvation_ms * 3 / 2
        );
    }
    println!(
        "{:<20} {:>7} {:>13} {:>10} {:>9} {:>12} {:>8}  verdict",
        "lock", "threads", "acquisitions", "violations", "lost", "max wait ms", "signals"
    );
    let mut passed = true;
    for o in &outcomes {
        let verdict = if o.violations > 0 || o.lost > 0 {
            "FAIL: mutual exclusion"
        } else if o.hung > 0 {
            "FAIL: hang (threads never got the lock)"
        } else if o.max_wait > limit {
            "FAIL: starvation"
        } else if o.acquisitions == 0 {
            "FAIL: no progress"
        } else if args.freeze && o.frozen == 0 {
            "FAIL: no worker was frozen in its lock call"
        } else if o.fork_failures > 0 {
            "FAIL: a fork child could not use the lock"
        } else {
            "ok"
        };
        passed &= verdict == "ok";
        println!(
            "{:<20} {:>7} {:>13} {:>10} {:>9} {:>12.1} {:>8}  {verdict}",
            o.name,
            o.threads,
            o.acquisitions,
            o.violations,
            o.lost,
            o.max_wait.as_secs_f64() * 1e3,
            o.signals
        );
    }
    if args.freeze {
        for o in &outcomes {
            println!(
                "freeze: {}: {} workers frozen, {} fork children ({} could not use the lock)",
                o.name, o.frozen, o.forks, o.fork_failures
            );
        }
    }
    println!(
        "{}",
        if passed {
            "torture: SUCCESS"
        } else {
            "torture: FAILURE"
        }
    );
    passed
}
