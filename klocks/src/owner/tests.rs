//! Tests of the probe mechanisms, the selection and the per-thread budget.

use super::*;
use crate::testing::{pin, two_cpus};
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
fn the_selected_probe_works_and_is_the_first_that_does() {
    // Other tests' threads may be choosing the probe, or probing perf, right now:
    // until they are done a thread is answered provisionally.
    let kind = loop {
        match super::native::settled_probe_kind() {
            (kind, true) => break kind,
            _ => thread::yield_now(),
        }
    };
    let check = |kind: ProbeKind| loop {
        match kind.check() {
            Err(err) if err.raw_os_error() == Some(libc::EAGAIN) => thread::yield_now(),
            checked => break checked,
        }
    };
    assert!(check(kind).is_ok(), "{kind:?}");
    if std::env::var_os(crate::config::OWNER_PROBE.name()).is_none() {
        let first = ProbeKind::ALL.into_iter().find(|&k| check(k).is_ok());
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

/// The perf event fds this process holds (also used by `perf`'s tests).
pub(super) fn perf_fds() -> usize {
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
