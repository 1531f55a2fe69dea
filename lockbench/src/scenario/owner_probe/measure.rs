//! The owner probe's three measurements: the cost of a check, the agreement with the owner's heartbeat, and what being watched costs a thread that switches.

use std::io;
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::{mpsc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use klocks::owner::{self, ProbeKind, Watch};

use crate::cells::Run;
use crate::harness::ping_pong::pin;
use crate::harness::{join, Error};

/// How long one agreement sample lasts: longer than the owner's heartbeat takes to
/// reach the observer, and than the clock probe's sampling period.
pub const SAMPLE_WINDOW: Duration = Duration::from_micros(2);

fn pinned(cpu: Option<usize>) -> io::Result<()> {
    cpu.map_or(Ok(()), pin)
}

fn pin_failed(cpu: Option<usize>) -> impl FnOnce(io::Error) -> Error {
    move |err| {
        Error::Io(
            format!("owner-probe: pinning to cpu{}", cpu.unwrap_or(0)),
            err,
        )
    }
}


/// What the watched owner does while it is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Owner {
    Spins,
    Sleeps,
}

/// Times `checks` back-to-back checks of an owner that spins on `cpus[0]` or
/// sleeps, by an observer on `cpus[1]`: ns per check.
pub(super) fn check_cost(
    kind: ProbeKind,
    cpus: Option<[usize; 2]>,
    checks: u64,
    owner: Owner,
) -> Result<Run, Error> {
    let (owner_cpu, observer_cpu) = (cpus.map(|c| c[0]), cpus.map(|c| c[1]));
    let stop = CachePadded::new(AtomicBool::new(false));
    let (tid_tx, tid_rx) = mpsc::channel();
    let (wake_tx, wake_rx) = mpsc::channel::<()>();
    thread::scope(|scope| {
        let stop = &stop;
        let owner_thread = scope.spawn(move || {
            let pinned = pinned(owner_cpu);
            kind.watch_current();
            let _ = tid_tx.send(owner::current_tid());
            pinned.map_err(pin_failed(owner_cpu))?;
            match owner {
                // Relaxed: a flag with no data behind it.
                Owner::Spins => {
                    while !stop.load(Relaxed) {
                        std::hint::spin_loop();
                    }
                }
                Owner::Sleeps => {
                    let _ = wake_rx.recv();
                }
            }
            Ok(())
        });
        let observer = scope.spawn(move || {
            pinned(observer_cpu).map_err(pin_failed(observer_cpu))?;
            let tid = tid_rx.recv().expect("the owner sends its tid first");
            if owner == Owner::Sleeps {
                // Let it reach its sleep (it was on its way when it sent its tid).
                thread::sleep(Duration::from_millis(2));
            }
            let mut watch = kind.watch(tid);
            for _ in 0..checks / 10 {
                std::hint::black_box(watch.owner_running());
            }
            let start = Instant::now();
            for _ in 0..checks {
                std::hint::black_box(watch.owner_running());
            }
            let wall = start.elapsed();
            Ok(Run::timed(
                wall.as_secs_f64() * 1e9 / checks as f64,
                wall,
                checks,
            ))
        });
        let measured = join(observer);
        // Relaxed: see the owner's loop.
        stop.store(true, Relaxed);
        drop(wake_tx);
        join(owner_thread).and(measured)
    })
}

/// One agreement run's samples.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Samples {
    taken: u64,
    answered: u64,
    agreed: u64,
    on_cpu: u64,
    wall: Duration,
    /// The owner's heartbeats per µs of its CPU time: how much of the CPU time it
    /// was charged it spent running its own code.
    beats_per_cpu_us: f64,
    /// Reschedule IPIs the owner's CPU took per second of the run (x86 only).
    resched_per_s: Option<f64>,
}

impl Samples {
    pub(super) fn agreement(&self) -> Option<f64> {
        (self.answered > 0).then(|| 100.0 * self.agreed as f64 / self.answered as f64)
    }

    pub(super) fn answered(&self) -> Option<f64> {
        (self.taken > 0).then(|| 100.0 * self.answered as f64 / self.taken as f64)
    }

    pub(super) fn on_cpu(&self) -> Option<f64> {
        (self.taken > 0).then(|| 100.0 * self.on_cpu as f64 / self.taken as f64)
    }

    pub(super) fn beats_per_cpu_us(&self) -> Option<f64> {
        Some(self.beats_per_cpu_us)
    }

    pub(super) fn resched_per_s(&self) -> Option<f64> {
        self.resched_per_s
    }

    pub(super) fn run(&self, value: f64) -> Run {
        Run::timed(value, self.wall, self.taken)
    }
}

/// The calling thread's CPU time.
pub(super) fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; this clock always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Reschedule IPIs `cpu` has taken since boot (the `RES` row of /proc/interrupts,
/// x86), if readable.
pub(super) fn resched_ipis(cpu: usize) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/interrupts").ok()?;
    let mut lines = text.lines();
    let name = format!("CPU{cpu}");
    let column = lines.next()?.split_whitespace().position(|c| c == name)?;
    let row = lines.find(|line| line.trim_start().starts_with("RES:"))?;
    row.split_whitespace().nth(1 + column)?.parse().ok()
}

/// The owner and a hog share `cpus[0]`; an observer on `cpus[1]` compares the
/// probe's answers with the owner's heartbeat for `length`.
pub(super) fn agreement(kind: ProbeKind, cpus: [usize; 2], length: Duration) -> Result<Samples, Error> {
    let heartbeat = CachePadded::new(AtomicU64::new(0));
    let stop = CachePadded::new(AtomicBool::new(false));
    let ready = Barrier::new(3);
    let (tid_tx, tid_rx) = mpsc::channel();
    thread::scope(|scope| {
        let (heartbeat, stop, ready) = (&heartbeat, &stop, &ready);
        let owner_thread = scope.spawn(move || {
            let pinned = pin(cpus[0]);
            kind.watch_current();
            let _ = tid_tx.send(owner::current_tid());
            ready.wait();
            pinned.map_err(pin_failed(Some(cpus[0])))?;
            let (mut beat, cpu_before) = (0_u64, thread_cpu_time());
            // Relaxed: the heartbeat is compared only with itself; the stop flag
            // carries no data.
            while !stop.load(Relaxed) {
                beat += 1;
                heartbeat.store(beat, Relaxed);
            }
            let cpu = thread_cpu_time().saturating_sub(cpu_before);
            Ok(beat as f64 / (cpu.as_secs_f64() * 1e6).max(1e-3))
        });
        let hog = scope.spawn(move || {
            let pinned = pin(cpus[0]);
            ready.wait();
            pinned.map_err(pin_failed(Some(cpus[0])))?;
            // Relaxed: as above.
            while !stop.load(Relaxed) {
                std::hint::spin_loop();
            }
            Ok(())
        });
        let observer = scope.spawn(move || {
            let pinned = pin(cpus[1]);
            let tid = tid_rx.recv().expect("the owner sends its tid first");
            ready.wait();
            pinned.map_err(pin_failed(Some(cpus[1])))?;
            let mut watch = kind.watch(tid);
            let mut samples = Samples::default();
            let ipis_before = resched_ipis(cpus[0]);
            let start = Instant::now();
            while start.elapsed() < length {
                let (answer, ran) = sample(&mut watch, heartbeat);
                samples.taken += 1;
                samples.on_cpu += u64::from(ran);
                if let Some(running) = answer {
                    samples.answered += 1;
                    samples.agreed += u64::from(running == ran);
                }
            }
            samples.wall = start.elapsed();
            samples.resched_per_s =
                resched_ipis(cpus[0])
                    .zip(ipis_before)
                    .map(|(after, before)| {
                        after.saturating_sub(before) as f64 / samples.wall.as_secs_f64()
                    });
            Ok(samples)
        });
        let measured = join(observer);
        // Relaxed: see the owner's loop.
        stop.store(true, Relaxed);
        let beats_per_cpu_us = join(owner_thread)?;
        join(hog)?;
        measured.map(|samples| Samples {
            beats_per_cpu_us,
            ..samples
        })
    })
}

/// One check, then the rest of a [`SAMPLE_WINDOW`]: the answer, and whether the
/// owner's heartbeat advanced meanwhile.
pub(super) fn sample(watch: &mut Watch, heartbeat: &AtomicU64) -> (Option<bool>, bool) {
    // Relaxed: the heartbeat is compared only with itself.
    let before = heartbeat.load(Relaxed);
    let start = Instant::now();
    let answer = watch.owner_running();
    while start.elapsed() < SAMPLE_WINDOW {
        std::hint::spin_loop();
    }
    (answer, heartbeat.load(Relaxed) != before)
}

/// Two threads on `cpu` pass a turn `switches` times, yielding while it is not
/// theirs, both watched by `watcher` if any: ns per pass.
pub(super) fn switch_cost(
    cpu: Option<usize>,
    switches: u64,
    watcher: Option<ProbeKind>,
) -> Result<Run, Error> {
    let turn = CachePadded::new(AtomicU64::new(0));
    let (ready, failed) = (Barrier::new(2), AtomicBool::new(false));
    thread::scope(|scope| {
        let (turn, ready, failed) = (&turn, &ready, &failed);
        let players: Vec<_> = (0..2_u64)
            .map(|me| {
                scope.spawn(move || {
                    let set_up = pinned(cpu).map_err(pin_failed(cpu)).and_then(|()| {
                        if let Some(kind) = watcher {
                            kind.watch_current();
                        }
                        match watcher.is_none() || owner::current_is_watched() {
                            true => Ok(()),
                            false => Err(Error::Io(
                                "owner-probe: registering with perf".into(),
                                io::Error::other("refused"),
                            )),
                        }
                    });
                    if set_up.is_err() {
                        // Relaxed: the barrier orders this store before the peer's load.
                        failed.store(true, Relaxed);
                    }
                    ready.wait();
                    set_up?;
                    // Relaxed: see above. A peer that could not start would never take
                    // its turns: stop here, it reports why.
                    if failed.load(Relaxed) {
                        return Ok(None);
                    }
                    let start = Instant::now();
                    loop {
                        // Acquire/Release: the turn is handed over, as a lock would
                        // be; nothing else is published.
                        let now = turn.load(Acquire);
                        if now >= switches {
                            return Ok(Some(start.elapsed()));
                        }
                        if now % 2 == me {
                            turn.store(now + 1, Release);
                        } else {
                            // SAFETY: sched_yield has no preconditions.
                            unsafe { libc::sched_yield() };
                        }
                    }
                })
            })
            .collect();
        let walls = players
            .into_iter()
            .map(join)
            .collect::<Result<Vec<_>, Error>>()?;
        let wall = walls.into_iter().flatten().max().unwrap_or_default();
        Ok(Run::timed(
            wall.as_secs_f64() * 1e9 / switches as f64,
            wall,
            switches,
        ))
    })
}
