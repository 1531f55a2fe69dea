//! Is the lock owner on a CPU right now? The userspace `owner_on_cpu()`.
//!
//! The kernel's mutex and rwsem waiters spin only while the owner is running
//! (`mutex_spin_on_owner` polls `owner->on_cpu`): a running owner will release soon,
//! and a waiter that spins for it saves a sleep and a wake-up (~33 µs one-way on the
//! development VM, against ~0.1 µs for a cache-line handoff); a preempted or blocked
//! owner will not, and spinning for it only takes a CPU it may need. Userspace cannot
//! read another thread's `on_cpu`, so this module offers the closest answers Linux
//! gives without kernel patches.
//!
//! **Use.** The owner publishes its [`current_tid`] (in the lock word, as PI futexes
//! do). An owner that learns it has waiters calls [`watch_current`] (once per thread;
//! later calls are a thread-local check). A waiter makes one [`Watch::new`]`(owner)`
//! per spin episode and calls [`Watch::owner_running`] every ~100 ns of spinning:
//! `Some(true)` keep spinning, `Some(false)` go to sleep, `None` unknown, fall back
//! to the time budget ([`crate::budget`]). Let one waiter poll (the kernel's rule:
//! only the head of the queue spins on the owner): perf checks write a per-owner
//! reader count, and every clock read disturbs the owner (below).
//!
//! # Mechanisms
//!
//! | [`ProbeKind`] | how | cost per check | agreement | cost to the watched thread | limits |
//! |---|---|---|---|---|---|
//! | `PerfSwitch` (`perf`) | the owner opened a perf event on itself that logs its context switches in a ring; the waiter reads the newest record (`perf.rs`) | a few ns (two uncontended RMWs and three loads) | near total | every context switch writes a record (about doubles a yield ping-pong's switch); one fd and 2 locked pages per registered thread, at most [`MAX_WATCHED_THREADS`] (32) at once | `perf_event_open` allowed (refused under seccomp, `perf_event_paranoid` ≥ 3, fd or locked-memory limits); registered owners only, the first 32 alive at once |
//! | `CpuClock` (`clock`) | the waiter reads the owner's thread CPU clock at most every 2 µs; advanced = ran (`cpu_clock.rs`) | tens of ns: a clock read is a system call, amortised over 2 µs | most samples | none while it has its CPU alone; **when another task waits for its CPU, the reads make the kernel send it reschedule IPIs and slow it down** (see below) | threads of this process |
//! | `Budget` (`budget`) | nothing: always `None` | under a ns | — | none | — |
//!
//! `lockbench owner-probe` measures the cost per check and the agreement with a
//! heartbeat the owner advances while it runs, the owner sharing its CPU with a hog so
//! that it is preempted about half the time; the development VM's figures are in
//! `docs/results/owner-probe.txt`.
//!
//! Reading the CPU clock of a thread that is on a CPU makes the kernel lock that
//! CPU's runqueue and bring the thread's runtime up to date (`task_sched_runtime` →
//! `update_curr`). With another task runnable there, that update often decides the
//! owner should yield (as the tick would, every 4 ms) and sends its CPU a reschedule
//! IPI: tens of thousands per second with a read every few µs, the owner slowed to
//! little more than half its speed and seen running in fewer samples than it ran
//! (`docs/results/tuning.md`). So
//! `CpuClock` is a fallback: it disturbs exactly the owners a waiter most needs to
//! judge. The perf probe costs nothing at read time; its price is paid at every
//! context switch of a registered thread, for the rest of its life.
//!
//! # Selection
//!
//! One mechanism per process, chosen on first use ([`probe_kind`]):
//! `KLOCKS_OWNER_PROBE=perf|clock|budget` forces one (any other value, or a mechanism
//! the system refuses, is reported once on stderr and automatic selection is used:
//! [`crate::config`]), otherwise the first that works of `PerfSwitch` (a
//! context-switch event opened and mapped on the calling thread), `CpuClock` (the
//! calling thread's CPU clock read), `Budget`. [`ProbeKind::watch`] and
//! [`ProbeKind::watch_current`] use a mechanism explicitly (benchmarks, tests).
//!
//! # Lifetimes
//!
//! A tid names a thread only while it lives; then the kernel may give it to another.
//! The perf rings therefore live in a type-stable registry and a thread's exit retires
//! its ring under a Dekker protocol (in `perf.rs`): a waiter never reads an unmapped
//! ring, and a waiter that watched the thread reads "not running" once it exited,
//! never the state of a newer thread with the same tid. The CPU clock of an exited
//! thread reads EINVAL, also "not running"; a tid reused *during* one [`Watch`] (the
//! kernel hands tids out cyclically, 32768 or more apart) would go unnoticed.
//! [`current_tid`] is cached per thread, and a fork child (whose only thread has a
//! new tid, and no perf mappings: the kernel does not copy them) drops the cache and
//! the registry in a `pthread_atfork` handler.
//!
//! # Caveats
//!
//! - Every answer is a snapshot: the owner may be switched out right after (the
//!   kernel's `owner_on_cpu()` is as racy, by design). Waiters re-check as they spin.
//! - A vCPU preempted by the hypervisor is invisible: its thread still reads as
//!   running (the kernel asks `vcpu_is_preempted()`, which userspace cannot).
//! - `PerfSwitch` knows only threads that called [`watch_current`], and at most
//!   [`MAX_WATCHED_THREADS`] of them alive at once (later ones read `None`, unknown);
//!   a thread that exits while it holds a lock reads "not running".
//!
//! Under `--cfg loom` the module is a model: [`Watch::owner_running`] answers what a
//! model thread last set with `set_model_answer` (a loom atomic, so every answer a
//! concurrent setter makes possible is explored).

#[cfg(not(loom))]
mod cpu_clock;
#[cfg(not(loom))]
mod perf;

#[cfg(not(loom))]
pub use perf::MAX_WATCHED as MAX_WATCHED_THREADS;

/// The mechanism answering "is thread T on a CPU?" (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// The owner's context switches, read from a perf ring.
    PerfSwitch,
    /// The owner's thread CPU clock, sampled.
    CpuClock,
    /// No probe: always unknown.
    Budget,
}

/// The environment variable that forces a mechanism.
pub const OWNER_PROBE_VAR: &str = "KLOCKS_OWNER_PROBE";

impl ProbeKind {
    /// Every mechanism, in the order automatic selection tries them.
    pub const ALL: [ProbeKind; 3] = [
        ProbeKind::PerfSwitch,
        ProbeKind::CpuClock,
        ProbeKind::Budget,
    ];

    /// The name `KLOCKS_OWNER_PROBE` takes: `perf`, `clock` or `budget`.
    pub fn name(self) -> &'static str {
        match self {
            ProbeKind::PerfSwitch => "perf",
            ProbeKind::CpuClock => "clock",
            ProbeKind::Budget => "budget",
        }
    }
}

/// Parses a `KLOCKS_OWNER_PROBE` value.
pub fn parse_probe_kind(text: &str) -> Result<ProbeKind, String> {
    ProbeKind::ALL
        .into_iter()
        .find(|kind| kind.name() == text.trim())
        .ok_or_else(|| {
            format!("{OWNER_PROBE_VAR}={text:?} is not a probe: use perf, clock or budget")
        })
}

#[cfg(loom)]
pub use model::*;
#[cfg(not(loom))]
pub use native::*;

#[cfg(not(loom))]
mod native {
    use super::{cpu_clock, perf, ProbeKind, OWNER_PROBE_VAR};
    use crate::config::Resolved;
    use std::cell::Cell;
    use std::io;

    impl ProbeKind {
        /// Whether this mechanism works in this process (perf: an event opened and
        /// mapped on the calling thread, once per process; clock: the calling
        /// thread's CPU clock read).
        pub fn check(self) -> io::Result<()> {
            match self {
                ProbeKind::PerfSwitch => perf::check(),
                ProbeKind::CpuClock => cpu_clock::check(),
                ProbeKind::Budget => Ok(()),
            }
        }

        /// Makes the calling thread observable by this mechanism: registers its perf
        /// ring the first time for `PerfSwitch`, nothing for the others.
        pub fn watch_current(self) {
            if self == ProbeKind::PerfSwitch {
                perf::watch_current();
            }
        }

        /// A waiter's view of thread `tid` through this mechanism.
        pub fn watch(self, tid: u32) -> Watch {
            let probe = match (self, tid) {
                // Tid 0 is no thread (and clock id 0 would be the caller's own).
                (_, 0) | (ProbeKind::Budget, _) => Probe::Unknown,
                (ProbeKind::PerfSwitch, _) => Probe::Perf(perf::PerfWatch::new(tid)),
                (ProbeKind::CpuClock, _) => Probe::Clock(cpu_clock::ClockWatch::new(tid)),
            };
            Watch { probe }
        }
    }

    /// The process-wide mechanism, chosen on first use (see the module doc).
    ///
    /// Never panics and never waits: a `KLOCKS_OWNER_PROBE` that is not `perf`,
    /// `clock` or `budget`, or that forces a mechanism this system refuses, is
    /// reported once on stderr and automatic selection is used instead
    /// ([`crate::config`]); a thread that asks while another chooses gets `Budget`
    /// for that question.
    pub fn probe_kind() -> ProbeKind {
        static KIND: Resolved = Resolved::new();
        let (index, _) = KIND.get(|| choose() as u64, ProbeKind::Budget as u64);
        ProbeKind::ALL[index as usize]
    }

    /// `KLOCKS_OWNER_PROBE`'s mechanism if it works here, else the first that does.
    fn choose() -> ProbeKind {
        let automatic = || {
            ProbeKind::ALL
                .into_iter()
                .find(|kind| kind.check().is_ok())
                .unwrap_or(ProbeKind::Budget)
        };
        match crate::config::owner_probe() {
            Ok(None) => automatic(),
            Ok(Some(kind)) => match kind.check() {
                Ok(()) => kind,
                Err(err) => {
                    let problem = crate::config::ConfigError {
                        message: format!(
                            "{OWNER_PROBE_VAR}={} is refused here: {}: {err}",
                            kind.name(),
                            match kind {
                                ProbeKind::PerfSwitch =>
                                    "perf_event_open of a context-switch event",
                                _ => "clock_gettime of a thread CPU clock",
                            }
                        ),
                    };
                    crate::config::report(&problem, "choosing the owner probe automatically");
                    automatic()
                }
            },
            Err(problem) => {
                crate::config::report(&problem, "choosing the owner probe automatically");
                automatic()
            }
        }
    }

    std::thread_local! {
        /// The thread's tid, 0 until asked. No destructor: readable at any time,
        /// also from the fork handler.
        static TID: Cell<u32> = const { Cell::new(0) };
        /// Whether this thread made itself observable already ([`watch_current`]).
        static WATCHED: Cell<bool> = const { Cell::new(false) };
    }

    /// The calling thread's kernel thread id (`gettid`), cached in a thread-local.
    #[inline]
    pub fn current_tid() -> u32 {
        TID.with(|tid| match tid.get() {
            0 => {
                let fresh = gettid();
                tid.set(fresh);
                fresh
            }
            cached => cached,
        })
    }

    #[cold]
    fn gettid() -> u32 {
        // The cache must be dropped in a fork child before the child can use it.
        install_fork_handler();
        // SAFETY: gettid has no preconditions and cannot fail.
        let tid = unsafe { libc::gettid() };
        tid as u32
    }

    /// Installs the fork handler once per process; whether it is in place.
    /// (A thread that asks while another installs it is told "not yet".)
    pub(super) fn install_fork_handler() -> bool {
        static INSTALLED: Resolved = Resolved::new();
        let (installed, _) = INSTALLED.get(
            || {
                // SAFETY: `forget_parent_in_child` is a plain function that lives as
                // long as the process; it does only what is allowed between fork and
                // exec.
                let rc = unsafe { libc::pthread_atfork(None, None, Some(forget_parent_in_child)) };
                u64::from(rc == 0)
            },
            0,
        );
        installed == 1
    }

    /// Runs in a fork child, on its only thread, before the child's own code: the
    /// tid changed, and the parent's perf rings were not mapped into the child.
    extern "C" fn forget_parent_in_child() {
        TID.with(|tid| tid.set(0));
        WATCHED.with(|watched| watched.set(false));
        perf::forget_parent_threads();
    }

    /// Makes the calling thread observable by [`Watch`]: with `PerfSwitch`, opens and
    /// maps its perf ring the first time (a `perf_event_open` and an `mmap`), nothing
    /// for the others. Later calls are a thread-local check. Called by a lock owner
    /// that learns it has waiters; the registration ends when the thread exits. A
    /// thread the system refuses (fd or locked-memory limits, a full registry, or
    /// [`MAX_WATCHED_THREADS`](super::MAX_WATCHED_THREADS) registered already) stays
    /// unobservable.
    #[inline]
    pub fn watch_current() {
        // One thread-local read once done: unlocks that find a spinner call this every
        // time (the process-wide `probe_kind` lookup here was ~3% of a contended
        // `SpinFutexMutex` at load 1).
        if !WATCHED.with(Cell::get) {
            watch_current_first();
        }
    }

    #[cold]
    fn watch_current_first() {
        probe_kind().watch_current();
        WATCHED.with(|watched| watched.set(true));
    }

    /// Whether the calling thread is registered with `PerfSwitch`.
    pub fn current_is_watched() -> bool {
        perf::current_is_watched()
    }

    /// A waiter's view of one owner, through the process's mechanism. Make one per
    /// spin episode: it caches what it found.
    #[derive(Debug)]
    pub struct Watch {
        probe: Probe,
    }

    #[derive(Debug)]
    enum Probe {
        Perf(perf::PerfWatch),
        Clock(cpu_clock::ClockWatch),
        Unknown,
    }

    impl Watch {
        /// Watches thread `tid` with [`probe_kind`].
        pub fn new(tid: u32) -> Watch {
            probe_kind().watch(tid)
        }

        /// `Some(true)`: the owner is on a CPU now; `Some(false)`: it is not
        /// (preempted, blocked, or exited); `None`: unknown (the `Budget` mechanism,
        /// an owner that is not registered with `PerfSwitch`): fall back to the time
        /// budget. Cheap enough to call every ~100 ns (see the module doc).
        #[inline]
        pub fn owner_running(&mut self) -> Option<bool> {
            match &mut self.probe {
                Probe::Perf(watch) => watch.owner_running(),
                Probe::Clock(watch) => watch.owner_running(),
                Probe::Unknown => None,
            }
        }
    }
}

#[cfg(loom)]
mod model {
    //! The probe as loom models see it: every thread is observable, and the answer is
    //! whatever a model thread last set.

    use std::cell::Cell;

    use super::ProbeKind;
    use crate::sync::{AtomicU32, Ordering::Relaxed};

    const UNKNOWN: u32 = 0;
    const RUNNING: u32 = 1;
    const NOT_RUNNING: u32 = 2;

    loom::lazy_static! {
        static ref ANSWER: AtomicU32 = AtomicU32::new(UNKNOWN);
        static ref NEXT_TID: AtomicU32 = AtomicU32::new(1);
    }

    loom::thread_local! {
        static TID: Cell<u32> = Cell::new(0);
    }

    /// The model answers like a registration-based probe: anything.
    pub fn probe_kind() -> ProbeKind {
        ProbeKind::PerfSwitch
    }

    /// A small id per model thread, stable for its life.
    pub fn current_tid() -> u32 {
        TID.with(|tid| match tid.get() {
            0 => {
                // Relaxed: ids only need to be distinct, which the RMW guarantees.
                let fresh = NEXT_TID.fetch_add(1, Relaxed);
                tid.set(fresh);
                fresh
            }
            cached => cached,
        })
    }

    /// Nothing to register in the model.
    pub fn watch_current() {}

    /// Sets what every [`Watch`] answers from now on.
    pub fn set_model_answer(answer: Option<bool>) {
        let code = match answer {
            None => UNKNOWN,
            Some(true) => RUNNING,
            Some(false) => NOT_RUNNING,
        };
        // Relaxed: the answer is a hint, as the real probes' are; loom explores every
        // value a Relaxed load may return.
        ANSWER.store(code, Relaxed);
    }

    /// A waiter's view of one owner (model).
    #[derive(Debug)]
    pub struct Watch(());

    impl Watch {
        /// Watches thread `tid` (the model ignores it).
        pub fn new(_tid: u32) -> Watch {
            Watch(())
        }

        /// The answer a model thread set last, or any earlier one loom allows.
        pub fn owner_running(&mut self) -> Option<bool> {
            // Relaxed: see `set_model_answer`.
            match ANSWER.load(Relaxed) {
                RUNNING => Some(true),
                NOT_RUNNING => Some(false),
                _ => None,
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    use std::sync::{mpsc, Barrier, Mutex, PoisonError};
    use std::thread;
    use std::time::{Duration, Instant};

    /// Tests that keep a thread busy take turns: on 2 CPUs they would starve the
    /// threads they watch.
    static MACHINE: Mutex<()> = Mutex::new(());

    fn take_turn() -> std::sync::MutexGuard<'static, ()> {
        MACHINE.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The mechanisms that work here, loudly skipping the others.
    fn usable() -> Vec<ProbeKind> {
        [ProbeKind::PerfSwitch, ProbeKind::CpuClock]
            .into_iter()
            .filter(|kind| match kind.check() {
                Ok(()) => true,
                Err(err) => {
                    eprintln!("skipping {}: {err}", kind.name());
                    false
                }
            })
            .collect()
    }

    /// Spawns a thread watched by `kind` that runs `body` after telling its tid.
    fn spawn_watched<T: Send + 'static>(
        kind: ProbeKind,
        body: impl FnOnce() -> T + Send + 'static,
    ) -> (u32, thread::JoinHandle<T>) {
        let (tid_tx, tid_rx) = mpsc::channel();
        let handle = thread::spawn(move || {
            kind.watch_current();
            if kind == ProbeKind::PerfSwitch {
                assert!(current_is_watched(), "perf registration refused");
            }
            tid_tx.send(current_tid()).unwrap();
            body()
        });
        (tid_rx.recv().expect("the watched thread starts"), handle)
    }

    /// Waits until the kernel has released thread `tid` (join only waits for it to
    /// stop running our code).
    fn await_reaped(tid: u32) {
        let path = format!("/proc/self/task/{tid}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::path::Path::new(&path).exists() {
            assert!(Instant::now() < deadline, "thread {tid} was never reaped");
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn probe_names_parse_back() {
        for kind in ProbeKind::ALL {
            assert_eq!(parse_probe_kind(kind.name()), Ok(kind));
        }
        assert_eq!(parse_probe_kind(" clock\n"), Ok(ProbeKind::CpuClock));
    }

    #[test]
    fn bad_probe_names_are_rejected_with_the_variable_and_the_choices() {
        for bad in ["", "PERF", "auto", "perf,clock", "spin"] {
            let err = parse_probe_kind(bad).unwrap_err();
            for needed in [
                OWNER_PROBE_VAR,
                &format!("{bad:?}"),
                "perf",
                "clock",
                "budget",
            ] {
                assert!(err.contains(needed), "{bad:?}: {err}");
            }
        }
    }

    #[test]
    fn the_selected_probe_works_and_is_the_first_that_does() {
        let kind = probe_kind();
        assert!(kind.check().is_ok(), "{kind:?}");
        if std::env::var_os(OWNER_PROBE_VAR).is_none() {
            let first = ProbeKind::ALL.into_iter().find(|k| k.check().is_ok());
            assert_eq!(Some(kind), first);
        }
    }

    #[test]
    fn current_tid_is_the_kernel_tid() {
        // SAFETY: gettid has no preconditions.
        let main = unsafe { libc::gettid() } as u32;
        assert_eq!(current_tid(), main);
        assert_eq!(current_tid(), main, "cached");
        let other = thread::spawn(|| {
            // SAFETY: as above.
            (current_tid(), unsafe { libc::gettid() } as u32)
        })
        .join()
        .unwrap();
        assert_eq!(other.0, other.1);
        assert_ne!(other.0, main);
    }

    #[test]
    fn thread_clock_ids_are_the_ones_glibc_makes() {
        let mut glibc: libc::clockid_t = 0;
        // SAFETY: `glibc` is a valid out-parameter; pthread_self is this thread.
        let status = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut glibc) };
        assert_eq!(status, 0);
        assert_eq!(cpu_clock::clock_of(current_tid()), glibc);
    }

    #[test]
    fn budget_never_knows() {
        let (tid, owner) = spawn_watched(ProbeKind::Budget, || ());
        let mut watch = ProbeKind::Budget.watch(tid);
        assert_eq!(watch.owner_running(), None);
        owner.join().unwrap();
        assert_eq!(ProbeKind::CpuClock.watch(0).owner_running(), None, "tid 0");
    }

    #[test]
    fn a_blocked_owner_reads_not_running() {
        let _turn = take_turn();
        for kind in usable() {
            let (wake, blocked) = mpsc::channel::<()>();
            let (tid, owner) = spawn_watched(kind, move || blocked.recv().unwrap());
            let mut watch = kind.watch(tid);
            let deadline = Instant::now() + Duration::from_secs(10);
            while watch.owner_running() != Some(false) {
                assert!(
                    Instant::now() < deadline,
                    "{kind:?}: never read not running"
                );
                thread::sleep(Duration::from_micros(100));
            }
            // Once asleep it stays asleep: every later check must say so.
            let mut answers = Vec::new();
            for _ in 0..200 {
                thread::sleep(Duration::from_micros(20));
                answers.push(watch.owner_running());
            }
            let not_running = answers.iter().filter(|&&a| a == Some(false)).count();
            assert!(not_running >= 190, "{kind:?}: {answers:?}");
            wake.send(()).unwrap();
            owner.join().unwrap();
        }
    }

    /// Samples a busy owner: (answer, whether its heartbeat advanced meanwhile).
    fn sample(watch: &mut Watch, heartbeat: &AtomicU64) -> (Option<bool>, bool) {
        // Relaxed: the heartbeat is only compared with itself.
        let before = heartbeat.load(Relaxed);
        let start = Instant::now();
        let answer = watch.owner_running();
        // Longer than a clock sampling period, so every check takes a fresh sample.
        while start.elapsed() < Duration::from_micros(3) {
            std::hint::spin_loop();
        }
        (answer, heartbeat.load(Relaxed) != before)
    }

    /// The first two CPUs this process may use.
    fn two_cpus() -> Option<[usize; 2]> {
        // SAFETY: an all-zero cpu_set_t is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } != 0 {
            return None;
        }
        // SAFETY: every `cpu` is below CPU_SETSIZE, inside `set`.
        let mut cpus =
            (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) });
        Some([cpus.next()?, cpus.next()?])
    }

    /// Pins the calling thread to `cpu`.
    fn pin(cpu: usize) {
        // SAFETY: an all-zero cpu_set_t is the empty set; `cpu` is below CPU_SETSIZE.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
        // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
        let pinned = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
        assert_eq!(pinned, 0, "pinning to cpu{cpu}");
    }

    #[test]
    fn a_spinning_owner_reads_running() {
        let _turn = take_turn();
        // Owner and observer on two different CPUs: unpinned on a loaded machine,
        // the scheduler may keep them on one, taking turns, and the observer would
        // never see the owner run.
        let Some([owner_cpu, observer_cpu]) = two_cpus() else {
            eprintln!("skipping: needs two CPUs");
            return;
        };
        for kind in usable() {
            let heartbeat = std::sync::Arc::new(AtomicU64::new(0));
            let stop = std::sync::Arc::new(AtomicBool::new(false));
            let (tid, owner) = spawn_watched(kind, {
                let (heartbeat, stop) = (heartbeat.clone(), stop.clone());
                move || {
                    pin(owner_cpu);
                    // Relaxed: a flag and a counter, no data behind them.
                    while !stop.load(Relaxed) {
                        heartbeat.fetch_add(1, Relaxed);
                    }
                }
            });
            let observer = thread::spawn(move || {
                pin(observer_cpu);
                let mut watch = kind.watch(tid);
                // Judge the answers only where the heartbeat proves the owner ran (on
                // a loaded machine it may not run all the time), until enough of
                // those: in this sample and the one before, since the clock probe
                // answers for the period that ends with the check.
                let (mut ran, mut said_running, mut ran_before) = (0, 0, false);
                let deadline = Instant::now() + Duration::from_secs(10);
                while ran < 2_000 && Instant::now() < deadline {
                    let (answer, advanced) = sample(&mut watch, &heartbeat);
                    if advanced && ran_before {
                        ran += 1;
                        said_running += usize::from(answer == Some(true));
                    }
                    ran_before = advanced;
                }
                (ran, said_running)
            });
            let (ran, said_running) = observer.join().unwrap();
            stop.store(true, Relaxed);
            owner.join().unwrap();
            if ran < 200 {
                eprintln!("{kind:?}: not judged, the machine is too busy ({ran} samples)");
                continue;
            }
            assert!(
                said_running * 10 >= ran * 8,
                "{kind:?}: read running in {said_running} of {ran} samples where it ran"
            );
        }
    }

    #[test]
    fn an_exited_owner_never_reads_running() {
        for kind in usable() {
            let (exit, parked) = mpsc::channel::<()>();
            let (tid, owner) = spawn_watched(kind, move || parked.recv().unwrap());
            let mut before_exit = kind.watch(tid);
            exit.send(()).unwrap();
            owner.join().unwrap();
            await_reaped(tid);
            let mut after_exit = kind.watch(tid);
            for _ in 0..1_000 {
                assert_eq!(before_exit.owner_running(), Some(false), "{kind:?}");
                assert_ne!(after_exit.owner_running(), Some(true), "{kind:?}");
            }
        }
    }

    #[test]
    fn owners_exiting_under_watch_are_read_safely() {
        let _turn = take_turn();
        for kind in usable() {
            for _ in 0..50 {
                let (go, parked) = mpsc::channel::<()>();
                let (tid, owner) = spawn_watched(kind, move || {
                    parked.recv().unwrap();
                    let start = Instant::now();
                    while start.elapsed() < Duration::from_micros(200) {
                        std::hint::spin_loop();
                    }
                });
                let mut watch = kind.watch(tid);
                go.send(()).unwrap();
                while !owner.is_finished() {
                    watch.owner_running();
                }
                owner.join().unwrap();
                await_reaped(tid);
                assert_eq!(watch.owner_running(), Some(false), "{kind:?}");
            }
        }
    }

    /// The perf event fds this process holds.
    fn perf_fds() -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
            .filter(|target| target.to_string_lossy().contains("perf_event"))
            .count()
    }

    #[test]
    fn registration_churn_leaks_nothing() {
        if ProbeKind::PerfSwitch.check().is_err() {
            eprintln!("skipping: perf refused");
            return;
        }
        // Alone in a child process: see `crate::testing::alone`.
        if !crate::testing::alone("owner::tests::registration_churn_leaks_nothing") {
            return;
        }
        let (fds, slots) = (perf_fds(), perf::registered_slots());
        for _ in 0..200 {
            thread::spawn(|| {
                ProbeKind::PerfSwitch.watch_current();
                assert!(current_is_watched());
            })
            .join()
            .unwrap();
        }
        assert_eq!((perf_fds(), perf::registered_slots()), (fds, slots));
        let together = std::sync::Arc::new(Barrier::new(MAX_WATCHED_THREADS));
        let threads: Vec<_> = (0..MAX_WATCHED_THREADS)
            .map(|_| {
                let together = together.clone();
                thread::spawn(move || {
                    ProbeKind::PerfSwitch.watch_current();
                    assert!(current_is_watched());
                    together.wait();
                })
            })
            .collect();
        // Joined one by one: a scope ends before its threads' thread-local
        // destructors (which retire the rings) have run.
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!((perf_fds(), perf::registered_slots()), (fds, slots));
    }

    #[test]
    fn a_fork_child_forgets_the_parents_rings() {
        if ProbeKind::PerfSwitch.check().is_err() {
            eprintln!("skipping: perf refused");
            return;
        }
        let (wake, blocked) = mpsc::channel::<()>();
        let (tid, owner) = spawn_watched(ProbeKind::PerfSwitch, move || blocked.recv().unwrap());
        let mut watch = ProbeKind::PerfSwitch.watch(tid);
        let deadline = Instant::now() + Duration::from_secs(10);
        while watch.owner_running() != Some(false) {
            assert!(Instant::now() < deadline, "the owner never blocked");
            thread::sleep(Duration::from_micros(100));
        }
        current_tid();
        // SAFETY: the child only does atomics, loads, gettid and _exit: no locks, no
        // allocation (the probe's lazy state is initialised above).
        let child = unsafe { libc::fork() };
        if child == 0 {
            // The parent's ring is not mapped here: reading it would fault.
            let answer = ProbeKind::PerfSwitch.watch(tid).owner_running();
            // SAFETY: as above.
            let fresh_tid = current_tid() == unsafe { libc::gettid() } as u32;
            let code = if answer.is_none() && fresh_tid { 0 } else { 1 };
            // SAFETY: ends the child without running the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        assert!(child > 0, "fork: {}", std::io::Error::last_os_error());
        let mut status = 0;
        // SAFETY: `status` is a valid out-parameter; `child` is our child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        wake.send(()).unwrap();
        owner.join().unwrap();
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the fork child failed: status {status:#x}"
        );
    }
}

#[cfg(all(test, loom))]
mod loom_model {
    use super::*;

    #[test]
    fn the_model_answers_what_a_thread_set() {
        loom::model(|| {
            let setter = loom::thread::spawn(|| set_model_answer(Some(false)));
            let mut watch = Watch::new(current_tid());
            let early = watch.owner_running();
            assert!(early.is_none() || early == Some(false), "{early:?}");
            setter.join().unwrap();
            assert_eq!(watch.owner_running(), Some(false));
        });
    }

    #[test]
    fn model_tids_are_distinct_and_stable() {
        loom::model(|| {
            let other = loom::thread::spawn(current_tid);
            let mine = current_tid();
            assert_eq!(current_tid(), mine);
            assert_ne!(other.join().unwrap(), mine);
        });
    }
}
