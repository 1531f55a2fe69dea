//! Is the lock owner on a CPU? What klocks' owner probes (`klocks::owner`) cost a
//! spinning waiter, how often they are right, and what being watched costs the owner.
//!
//! - **Cost**: an owner thread, watched, either spins (pinned to one CPU) or sleeps
//!   on a channel; an observer pinned to another CPU times back-to-back
//!   `Watch::owner_running` checks.
//! - **Agreement**: the owner, pinned to the first CPU, advances a heartbeat while a
//!   hog thread shares that CPU, so the scheduler preempts the owner about half the
//!   time; the observer on the second CPU takes samples, each a check followed by a
//!   [`SAMPLE_WINDOW`] wait. Ground truth: the heartbeat advanced during the sample.
//!   Agreement counts the samples the probe answered; "answered" is their share.
//!   The same runs give the owner's speed (heartbeats per µs of its CPU time,
//!   relative to the budget probe's run, where nobody reads anything of the owner)
//!   and the reschedule IPIs its CPU took: reading a running thread's CPU clock
//!   makes the kernel interrupt it.
//! - **Context switch**: two threads pinned to the same CPU pass a turn back and
//!   forth, yielding while it is not theirs, so every pass is a context switch; run
//!   unwatched and with both threads watched by perf (the only probe that changes
//!   the watched thread: the kernel writes a record at every switch).
//!
//! Cells: `lock` is the probe (or `unwatched`), `layout` the measure.

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

use super::{Options, Scenario, Takes};
use crate::harness::ping_pong::{cpu_pair, pin};
use crate::harness::watch::{self, Conditions};
use crate::harness::{join, Common, Error};
use crate::machine::Machine;
use crate::report::{num, si, Cell, Progress, Run, Table};

/// Is the lock owner on a CPU? Cost and accuracy of klocks' owner probes
///
/// For each probe this system allows (perf: the owner's context switches read from
/// a perf ring; clock: the owner's thread CPU clock, sampled; budget: no probe):
/// ns per Watch::owner_running check, timed back to back by an observer on one CPU
/// while the watched owner spins on another, and while it sleeps; then agreement
/// with ground truth: the owner, pinned to the first CPU, advances a heartbeat
/// while a hog thread shares that CPU (so it is preempted about half the time),
/// and an observer on the second CPU takes samples of one check plus 2 µs; truth
/// = the heartbeat advanced during the sample. Reports the share of samples the
/// probe answered, its agreement with the truth on those, the owner's on-CPU
/// share, its speed (heartbeats per µs of its CPU time, relative to the budget
/// run) and the reschedule IPIs its CPU took per second (x86: the RES row of
/// /proc/interrupts). Last, what being watched costs a thread: two threads pinned
/// to one CPU pass a turn back and forth with sched_yield, unwatched and both
/// watched by perf; ns per switch. Needs two CPUs for everything but the asleep
/// cost and the switch cost. --locks does not apply. About 4 s with the defaults.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Checks per cost run [default: 200000]
    #[arg(long, value_parser = clap::value_parser!(u64).range(100..=1_000_000_000))]
    pub checks: Option<u64>,

    /// Length of one agreement run, in ms [default: 300]
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub agreement_ms: Option<u64>,

    /// Context switches per switch-cost run [default: 20000]
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=1_000_000_000))]
    pub switches: Option<u64>,
}

const CHECKS: u64 = 200_000;
const AGREEMENT_MS: u64 = 300;
const SWITCHES: u64 = 20_000;
/// How long one agreement sample lasts: longer than the owner's heartbeat takes to
/// reach the observer, and than the clock probe's sampling period.
pub const SAMPLE_WINDOW: Duration = Duration::from_micros(2);

/// A probe this system refused, and why.
#[derive(Debug, Clone)]
struct Refused {
    kind: ProbeKind,
    why: String,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    probes: Vec<ProbeKind>,
    refused: Vec<Refused>,
    cpus: Option<[usize; 2]>,
    checks: u64,
    agreement: Duration,
    switches: u64,
    runs: u32,
}

impl Config {
    /// From the command line (`--locks` does not apply).
    pub fn new(args: &Args, common: &Common) -> Self {
        let (mut probes, mut refused) = (Vec::new(), Vec::new());
        for kind in ProbeKind::ALL {
            match kind.check() {
                Ok(()) => probes.push(kind),
                Err(err) => refused.push(Refused {
                    kind,
                    why: err.to_string(),
                }),
            }
        }
        Self {
            probes,
            refused,
            cpus: cpu_pair(),
            checks: args.checks.unwrap_or(CHECKS),
            agreement: Duration::from_millis(args.agreement_ms.unwrap_or(AGREEMENT_MS)),
            switches: args.switches.unwrap_or(SWITCHES),
            runs: common.runs,
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        let per_probe = if self.cpus.is_some() { 7 } else { 1 };
        let switch_cells = if self.probes.contains(&ProbeKind::PerfSwitch) {
            2
        } else {
            1
        };
        self.probes.len() as u64 * per_probe + switch_cells
    }

    /// The CPU the owner (and the ping-pong) runs on.
    fn owner_cpu(&self) -> Option<usize> {
        match self.cpus {
            Some([owner, _]) => Some(owner),
            None => first_cpu(),
        }
    }
}

/// Measures every usable probe, then the context-switch cost.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    let mut cells = Vec::new();
    for &kind in &config.probes {
        if let Some(cpus) = config.cpus {
            progress.start(format!("owner-probe {} check, owner running", kind.name()));
            let (runs, around) = observed(|| {
                repeat(config.runs, || {
                    check_cost(kind, Some(cpus), config.checks, Owner::Spins)
                })
            })?;
            cells.push(cell(
                kind.name(),
                "check-running",
                "ns/check",
                2,
                runs,
                around,
            ));
            progress.done();
        }
        progress.start(format!("owner-probe {} check, owner asleep", kind.name()));
        let (runs, around) = observed(|| {
            repeat(config.runs, || {
                check_cost(kind, config.cpus, config.checks, Owner::Sleeps)
            })
        })?;
        cells.push(cell(
            kind.name(),
            "check-asleep",
            "ns/check",
            2,
            runs,
            around,
        ));
        progress.done();
        if let Some(cpus) = config.cpus {
            progress.start(format!("owner-probe {} agreement", kind.name()));
            let (samples, around) = observed(|| {
                (0..config.runs)
                    .map(|_| agreement(kind, cpus, config.agreement))
                    .collect::<Result<Vec<_>, Error>>()
            })?;
            for (measure, unit, value) in [
                (
                    "agreement",
                    "%",
                    Samples::agreement as fn(&Samples) -> Option<f64>,
                ),
                ("answered", "%", Samples::answered),
                ("owner-on-cpu", "%", Samples::on_cpu),
                ("owner-beats", "beats/cpu-µs", Samples::beats_per_cpu_us),
                ("owner-resched-ipis", "IPI/s", Samples::resched_per_s),
            ] {
                let runs = samples
                    .iter()
                    .filter_map(|s| Some(s.run(value(s)?)))
                    .collect();
                // Owner, hog and observer.
                cells.push(cell(kind.name(), measure, unit, 3, runs, around.clone()));
                progress.done();
            }
        }
    }
    let cpu = config.owner_cpu();
    let mut watchers = vec![None];
    if config.probes.contains(&ProbeKind::PerfSwitch) {
        watchers.push(Some(ProbeKind::PerfSwitch));
    }
    for watcher in watchers {
        let name = watcher.map_or(UNWATCHED, ProbeKind::name);
        progress.start(format!("owner-probe context switch, {name}"));
        let (runs, around) =
            observed(|| repeat(config.runs, || switch_cost(cpu, config.switches, watcher)))?;
        cells.push(cell(name, "switch", "ns/switch", 2, runs, around));
        progress.done();
    }
    Ok(cells)
}

/// The `lock` of the context-switch cell without a probe.
const UNWATCHED: &str = "unwatched";

fn repeat(runs: u32, mut one: impl FnMut() -> Result<Run, Error>) -> Result<Vec<Run>, Error> {
    (0..runs).map(|_| one()).collect()
}

/// Runs `measure` between two looks at the machine (c2c placement, other load).
fn observed<T>(measure: impl FnOnce() -> Result<T, Error>) -> Result<(T, Conditions), Error> {
    let watch = watch::CellWatch::start()?;
    let measured = measure()?;
    Ok((measured, watch.finish()?))
}

fn cell(
    lock: &'static str,
    measure: &'static str,
    unit: &'static str,
    threads: usize,
    runs: Vec<Run>,
    around: Conditions,
) -> Cell {
    Cell {
        conditions: Some(around),
        ..Cell::of_runs("owner-probe", lock, threads, Some(measure), unit, runs)
    }
}

/// The first CPU this process may use.
fn first_cpu() -> Option<usize> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } != 0 {
        return None;
    }
    // SAFETY: every `cpu` is below CPU_SETSIZE, inside `set`.
    (0..libc::CPU_SETSIZE as usize).find(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
}

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
enum Owner {
    Spins,
    Sleeps,
}

/// Times `checks` back-to-back checks of an owner that spins on `cpus[0]` or
/// sleeps, by an observer on `cpus[1]`: ns per check.
fn check_cost(
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
struct Samples {
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
    fn agreement(&self) -> Option<f64> {
        (self.answered > 0).then(|| 100.0 * self.agreed as f64 / self.answered as f64)
    }

    fn answered(&self) -> Option<f64> {
        (self.taken > 0).then(|| 100.0 * self.answered as f64 / self.taken as f64)
    }

    fn on_cpu(&self) -> Option<f64> {
        (self.taken > 0).then(|| 100.0 * self.on_cpu as f64 / self.taken as f64)
    }

    fn beats_per_cpu_us(&self) -> Option<f64> {
        Some(self.beats_per_cpu_us)
    }

    fn resched_per_s(&self) -> Option<f64> {
        self.resched_per_s
    }

    fn run(&self, value: f64) -> Run {
        Run::timed(value, self.wall, self.taken)
    }
}

/// The calling thread's CPU time.
fn thread_cpu_time() -> Duration {
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
fn resched_ipis(cpu: usize) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/interrupts").ok()?;
    let mut lines = text.lines();
    let name = format!("CPU{cpu}");
    let column = lines.next()?.split_whitespace().position(|c| c == name)?;
    let row = lines.find(|line| line.trim_start().starts_with("RES:"))?;
    row.split_whitespace().nth(1 + column)?.parse().ok()
}

/// The owner and a hog share `cpus[0]`; an observer on `cpus[1]` compares the
/// probe's answers with the owner's heartbeat for `length`.
fn agreement(kind: ProbeKind, cpus: [usize; 2], length: Duration) -> Result<Samples, Error> {
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
fn sample(watch: &mut Watch, heartbeat: &AtomicU64) -> (Option<bool>, bool) {
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
fn switch_cost(
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

fn percent(x: f64) -> String {
    format!("{x:.2}%")
}

/// The probe table and the context-switch table.
pub fn tables(config: &Config, cells: &[Cell]) -> Vec<Table> {
    let find = |lock: &str, measure: &str| {
        cells
            .iter()
            .find(|c| c.lock == lock && c.layout == Some(measure))
    };
    let show = |lock: &str, measure: &str, format: fn(f64) -> String| {
        find(lock, measure).map_or_else(|| "-".to_owned(), |c| c.long(format))
    };
    let mut probes = Table::new(
        "owner-probe: is the lock owner on a CPU? (klocks::owner)",
        &[
            "probe",
            "ns/check owner running",
            "ns/check owner asleep",
            "answered",
            "agreement",
            "owner on CPU",
            "owner speed",
            "owner resched IPI/s",
        ],
    );
    let unwatched_beats = find(ProbeKind::Budget.name(), "owner-beats")
        .and_then(|c| c.summary)
        .map(|s| s.median);
    for kind in &config.probes {
        let name = kind.name();
        probes.row(vec![
            name.to_owned(),
            show(name, "check-running", num),
            show(name, "check-asleep", num),
            show(name, "answered", percent),
            show(name, "agreement", percent),
            show(name, "owner-on-cpu", percent),
            find(name, "owner-beats")
                .and_then(|c| c.summary)
                .zip(unwatched_beats)
                .map_or_else(
                    || "-".to_owned(),
                    |(s, base)| percent(100.0 * s.median / base),
                ),
            show(name, "owner-resched-ipis", si),
        ]);
    }
    probes.note(format!(
        "process default: {} (KLOCKS_OWNER_PROBE overrides)",
        owner::probe_kind().name()
    ));
    match config.cpus {
        Some([owner_cpu, observer_cpu]) => probes.note(format!(
            "agreement: owner pinned to cpu{owner_cpu} with a CPU hog, observer on \
             cpu{observer_cpu}; a sample = one check + {} µs, truth = the owner's heartbeat \
             advanced during it; agreement counts answered samples; owner speed = its \
             heartbeats per µs of its CPU time, relative to budget (nobody reads anything \
             of the owner); resched IPI/s: taken by cpu{owner_cpu}",
            SAMPLE_WINDOW.as_micros()
        )),
        None => probes.note(
            "owner running and agreement skipped: they need the owner and the observer on \
             two CPUs, and this process may use only one",
        ),
    }
    probes.note(
        "clock reads the owner's CPU clock at most every 2 µs and answers from its last \
         two reads in between; ns/check is for back-to-back checks",
    );
    watch::explain_marks(&mut probes, cells);
    for refused in &config.refused {
        probes.note(format!(
            "{}: not measured, refused: {}",
            refused.kind.name(),
            refused.why
        ));
    }

    let cpu = config
        .owner_cpu()
        .map_or_else(|| "one CPU".to_owned(), |c| format!("cpu{c}"));
    let mut switches = Table::new(
        format!(
            "owner-probe: what being watched costs a thread (yield ping-pong, two threads on {cpu})"
        ),
        &["watched by", "ns/switch", "vs unwatched"],
    );
    let base = find(UNWATCHED, "switch")
        .and_then(|c| c.summary)
        .map(|s| s.median);
    for cell in cells.iter().filter(|c| c.layout == Some("switch")) {
        let versus = match (cell.summary, base) {
            (Some(s), Some(base)) if cell.lock != UNWATCHED => {
                format!("{:+.0} ns ({:.2}×)", s.median - base, s.median / base)
            }
            _ => "-".to_owned(),
        };
        let label = match cell.lock {
            UNWATCHED => "none (clock, budget)".to_owned(),
            lock => lock.to_owned(),
        };
        switches.row(vec![label, cell.long(num), versus]);
    }
    switches.note(
        "perf: both threads watched; the kernel writes a switch record into each one's ring \
         at every switch. clock and budget add nothing to a switch (clock's cost to the owner is \
         its speed above)",
    );
    watch::explain_marks(&mut switches, cells);
    vec![probes, switches]
}

impl Options for Args {
    const TAKES: Takes = Takes::Neither;

    fn configure(&self, common: &Common) -> Result<Box<dyn Scenario>, String> {
        Ok(Box::new(Config::new(self, common)))
    }
}

impl Scenario for Config {
    fn cells(&self) -> u64 {
        Config::cells(self)
    }

    fn run(&self, progress: &Progress) -> Result<Vec<Cell>, Error> {
        run(self, progress)
    }

    fn tables(&self, cells: &[Cell], _: &Machine) -> Vec<Table> {
        tables(self, cells)
    }
}
