//! The probe on a real system: the mechanism chosen once per process, and the watch
//! a waiter keeps on one owner.

use super::fork_child::at_fork_child;
use super::{cpu_clock, perf};
use crate::config::resolved::Resolved;
use crate::config::settings::ProbeKind;
use crate::config::settings::OWNER_PROBE;
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
    /// ring the first time for `PerfSwitch`, nothing for the others. Whether that is
    /// settled: `false` when another thread was still probing perf, and the calling
    /// thread should ask again later.
    pub fn watch_current(self) -> bool {
        self != ProbeKind::PerfSwitch || perf::watch_current()
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
    settled_probe_kind().0
}

/// [`probe_kind`], and whether it is final (not the `Budget` answered while another
/// thread chooses).
pub(super) fn settled_probe_kind() -> (ProbeKind, bool) {
    static KIND: Resolved = Resolved::new();
    let (index, settled) = KIND.get(|| choose() as u64, ProbeKind::Budget as u64);
    (ProbeKind::ALL[index as usize], settled)
}

/// `KLOCKS_OWNER_PROBE`'s mechanism if it works here, else the first that does.
fn choose() -> ProbeKind {
    let automatic = || {
        ProbeKind::ALL
            .into_iter()
            .find(|&kind| check_patiently(kind).is_ok())
            .unwrap_or(ProbeKind::Budget)
    };
    match crate::config::settings::owner_probe() {
        Ok(None) => automatic(),
        Ok(Some(kind)) => match check_patiently(kind) {
            Ok(()) => kind,
            Err(err) => {
                let problem = crate::config::settings::ConfigError {
                    message: format!(
                        "{OWNER_PROBE}={} is refused here: {}: {err}",
                        kind.name(),
                        match kind {
                            ProbeKind::PerfSwitch => "perf_event_open of a context-switch event",
                            _ => "clock_gettime of a thread CPU clock",
                        }
                    ),
                };
                crate::config::settings::report(&problem, "choosing the owner probe automatically");
                automatic()
            }
        },
        Err(problem) => {
            crate::config::settings::report(&problem, "choosing the owner probe automatically");
            automatic()
        }
    }
}

/// `kind.check()`, asked again while another thread probes perf (`EAGAIN`, which
/// benchmarks and tests that register threads explicitly can cause), for 50 ms at
/// most: the mechanism is chosen once for the process, and "another thread is
/// probing" is not "refused". Bounded, because the prober may be this very thread,
/// interrupted by a signal handler that met contention.
fn check_patiently(kind: ProbeKind) -> io::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(50);
    loop {
        match kind.check() {
            Err(err)
                if err.raw_os_error() == Some(libc::EAGAIN)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::yield_now()
            }
            checked => return checked,
        }
    }
}

std::thread_local! {
    /// Whether this thread made itself observable already ([`watch_current`]). No
    /// destructor: readable at any time, also from the fork handler.
    static WATCHED: Cell<bool> = const { Cell::new(false) };
}

/// Makes the calling thread observable by [`Watch`]: with `PerfSwitch`, opens and
/// maps its perf ring the first time (a `perf_event_open` and an `mmap`), nothing
/// for the others. Later calls are a thread-local check, and with `PerfSwitch` a
/// look now and then at what being watched costs the thread (a thread that switches
/// too often moves to its CPU clock: `perf/price.rs`). Called by a lock owner
/// that found waiters, *after* its release: `perf_event_open` can sleep for
/// milliseconds (6–13 ms measured on the development VM, under `strace -T`), and an
/// owner that did so while holding the lock stalled every waiter with it (`rw-mix`
/// with 2 threads: two runs in five took 1.5–2× as long). The registration ends when
/// the thread exits. A
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
    } else {
        // A thread-local increment, and now and then a look at what being watched
        // costs this thread (`perf/price.rs`).
        perf::price::review_now_and_then();
    }
}

#[cold]
fn watch_current_first() {
    static FORGET_IN_CHILD: Resolved = Resolved::new();
    // A fork child's thread has registered nothing (`perf` forgets the parent's
    // registrations in its own fork handler).
    if !at_fork_child(&FORGET_IN_CHILD, forget_watched_in_child) {
        // Another thread is installing it: ask again at the next call.
        return;
    }
    // A thread that comes while another chooses the mechanism, or probes perf, asks
    // again at its next call: the first threads to meet contention are often two at
    // once, and a thread marked done here is never registered.
    let (kind, settled) = settled_probe_kind();
    if settled && kind.watch_current() {
        WATCHED.with(|watched| watched.set(true));
    }
}

/// Runs in a fork child, on its only thread, before the child's own code.
extern "C" fn forget_watched_in_child() {
    WATCHED.with(|watched| watched.set(false));
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
