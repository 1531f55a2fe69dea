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

use std::time::Duration;

use klocks::owner::{self, ProbeKind};

use crate::harness::ping_pong::cpu_pair;
use crate::harness::watch::{self, Conditions};
use crate::harness::{Common, Error};
use crate::cells::{num, si, Cell, Progress, Run, Table};

mod measure;
use measure::{agreement, check_cost, switch_cost, Owner, Samples, SAMPLE_WINDOW};

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

scenario! {
    takes: Neither,
    configure: |args, common| Ok(Config::new(args, common)),
    tables: |config, cells, _| tables(config, cells),
}
