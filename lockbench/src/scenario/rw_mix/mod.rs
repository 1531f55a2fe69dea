//! A read-mostly table: T threads, each operation a read with probability p or else a
//! write, a short critical section and some work outside, as a configuration map or
//! a routing table behind an rwlock. Wall time for a fixed number of operations per
//! thread. The read fraction is exact in parts per million ([`reads`]); the threads
//! run where the scheduler puts them or spread over every CPU
//! ([`crate::harness::spread`]), where a read lock that writes the lock's word moves
//! its line between CPUs at every read.

mod reads;

use std::cell::UnsafeCell;

use reads::ReadFraction;

use crate::adaptive::{Adaptive, Drive};
use crate::cells::{num, Cell, Progress, Run, RwMix, Table, ThreadPlacement, Waits};
use crate::harness::rounds::{rounds, Plan};
use crate::harness::spread::{current_cpu, Spread};
use crate::harness::stats::Counting;
use crate::harness::versus::{leak, pauses, race_to_finish_on, Versus};
use crate::harness::wait::{self, WaitClock};
use crate::harness::windowed::{timing_cost, wait_note, waits, WAIT_HEADER};
use crate::harness::{Common, Error};
use crate::html_report::figures::{self, Chart, Kind, Panel, Threads};
use crate::rwlocks::{BenchRwLock, RwLockName, RwLockVisitor, RW_ALTERNATIVES, RW_DEFAULT};

/// A read-mostly table: T threads × operations that read with probability p, wall ms
///
/// T threads each do --ops operations on one reader-writer lock, each a read with
/// the probability --reads gives (99.9%, 99%, 90% and 50% by default) or else a
/// write, as a configuration map or a routing table does: a short critical section
/// (--cs-pauses; a writer sets both halves of a pair, a reader reads both), then
/// some work outside (--outside-pauses). The threads run where the scheduler puts
/// them, or with --placement spread thread i pinned to the i-th CPU the process may
/// use, modulo their number, so that every CPU runs readers. Wall time from the
/// start gate to the last thread's end; the locks of a row run interleaved, --runs
/// times. Verified: the pair must equal the writes done, no reader may have seen its
/// halves differ, and a spread thread must have run on its CPU. Table: wall ms per
/// rwlock and, with default-rw among them, its ratio to the best of std-rw,
/// parking_lot-rw, glibc-rw and glibc-rw-writer; then each cell's read and write
/// lock waits, p50/p99/p99.9/max (one lock call in --wait-every timed, from just
/// before it to just after it returned). Threads 2,8,32.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Thread counts, comma-separated [default: 2,8,32]
    #[arg(long, value_delimiter = ',', value_name = "N,...", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Vec<u32>,

    /// Read fractions, comma-separated: per mille, decimals allowed (999 = 99.9%
    /// reads, 999.9 = 99.99%), or percent with its sign (99.99%); above 0, at most
    /// 1000 per mille, exact to a millionth [default: 999,990,900,500]
    #[arg(long, value_delimiter = ',', value_name = "PERMILLE|PERCENT%,...", value_parser = ReadFraction::parse)]
    pub reads: Vec<ReadFraction>,

    /// Operations per thread [default: 100000]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub ops: Option<u64>,

    /// `pause` instructions inside each read and write section [default: 5]
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub cs_pauses: Option<u32>,

    /// `pause` instructions between two operations of a thread [default: 20]
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub outside_pauses: Option<u32>,

    /// Where the threads run: free (where the scheduler puts them) or spread (thread
    /// i pinned to the i-th CPU this process may use, modulo their number: every CPU
    /// runs readers) [default: free]
    #[arg(long, value_enum, hide_possible_values = true)]
    pub placement: Option<ThreadPlacement>,

    /// Time one read and one write in N, at random intervals averaging N (1: every
    /// one; 0: none), from just before the lock call to just after it returns, into a
    /// histogram per thread and role, merged after the run [default: 16]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub wait_every: Option<u32>,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    locks: Vec<RwLockName>,
    threads: Vec<usize>,
    reads: Vec<ReadFraction>,
    ops: u64,
    cs_pauses: u32,
    outside_pauses: u32,
    placement: ThreadPlacement,
    wait_every: u32,
    runs: u32,
    stats: bool,
    adaptive: Adaptive,
}

/// The peers the default rwlock is compared with.
const PEERS: [RwLockName; 4] = RW_ALTERNATIVES;
/// The default rwlock, compared with the peers.
const OURS: RwLockName = RW_DEFAULT;
/// The read fractions run without --reads. Not 99.99%: about as long a row as 99.9%'s,
/// it would add a tenth to the default run (rw-mix-2026-11-25); ask for it by name.
const DEFAULT_READS: [ReadFraction; 4] = [
    ReadFraction::per_mille(999),
    ReadFraction::per_mille(990),
    ReadFraction::per_mille(900),
    ReadFraction::per_mille(500),
];

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        fn or<T: Clone>(given: &[T], default: &[T]) -> Vec<T> {
            if given.is_empty() {
                default.to_vec()
            } else {
                given.to_vec()
            }
        }
        Self {
            locks: common.rwlocks(),
            threads: or(&args.threads, &[2, 8, 32])
                .into_iter()
                .map(|n| n as usize)
                .collect(),
            // Once each: `999.9` and `99.99%` are one fraction, and one row.
            reads: or(&args.reads, &DEFAULT_READS)
                .into_iter()
                .fold(Vec::new(), |mut once, reads| {
                    if !once.contains(&reads) {
                        once.push(reads);
                    }
                    once
                }),
            ops: args.ops.unwrap_or(100_000),
            cs_pauses: args.cs_pauses.unwrap_or(5),
            outside_pauses: args.outside_pauses.unwrap_or(20),
            placement: args.placement.unwrap_or_default(),
            wait_every: args.wait_every.unwrap_or(wait::EVERY),
            runs: common.runs,
            stats: common.stats,
            adaptive: common.adaptive.clone(),
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        (self.locks.len() * self.threads.len() * self.reads.len()) as u64
    }

    /// The default suite's share ([`SUITE_THREADS`], [`SUITE_READS`], [`SUITE_OPS`]
    /// operations and [`SUITE_LOCKS`] unless --rwlocks names others), or the full grid
    /// with --seed-scale.
    pub fn suite(common: &Common) -> Self {
        let mut config = Self::new(&Args::default(), common);
        if common.seed_scale {
            return config;
        }
        config.threads = SUITE_THREADS.to_vec();
        config.reads = SUITE_READS.to_vec();
        config.ops = SUITE_OPS;
        if common.rwlocks.is_none() {
            config.locks = SUITE_LOCKS.to_vec();
        }
        config
    }
}

/// The default suite's thread counts: as many as the 2-CPU machine's CPUs, and 4×
/// (more readers than CPUs, where a reader that writes the lock's word pays most).
const SUITE_THREADS: [usize; 2] = [2, 8];
/// The default suite's read fractions: read-mostly, and write-heavy.
const SUITE_READS: [ReadFraction; 2] = [ReadFraction::per_mille(999), ReadFraction::per_mille(500)];
/// The default suite's operations per thread: half the scenario's, so that a row of
/// 8 threads stays short enough to repeat while its verdict is open.
const SUITE_OPS: u64 = 50_000;
/// The default suite's locks: ours and the peers a user would pick. Not
/// glibc-rw-writer: at 50% reads its writers' turns cost seconds per run, a row as long
/// as the rest of the suite, for a lock no user picks over glibc-rw.
const SUITE_LOCKS: [RwLockName; 4] = [
    OURS,
    RwLockName::Std,
    RwLockName::ParkingLot,
    RwLockName::Pthread,
];

/// Measures every cell, the locks of a row interleaved in rotating order.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    let mut cells = Vec::new();
    for &reads in &config.reads {
        for &threads in &config.threads {
            // Each lock type of the row counts in its own cell only.
            let counting = Counting::start(config.stats);
            let plan = Plan {
                runs: config.runs,
                adaptive: &config.adaptive,
                drives: Drive::best_peer(&config.locks, &OURS, &PEERS)
                    .into_iter()
                    .collect(),
                row: format!("rw-mix, {threads} threads, {}", layout(reads, config.placement)),
                lower_is_better: true,
            };
            let measured = rounds(config.locks.len(), &plan, |at, run| {
                config.locks[at].visit(Measure {
                    config,
                    threads,
                    reads,
                    run,
                })
                .map(Some)
            })?;
            for (lock, runs) in config.locks.iter().zip(measured.results) {
                progress.start(format!(
                    "rw-mix {} {threads}×{}%",
                    lock.name(),
                    reads.percent()
                ));
                let mut cell = Cell::of_runs(
                    "rw-mix",
                    lock.name(),
                    threads,
                    Some(leak(layout(reads, config.placement))),
                    "ms",
                    runs,
                );
                cell.rw_mix = Some(RwMix {
                    reads_per_million: reads.per_million(),
                    placement: config.placement,
                });
                counting.attach(&mut cell);
                cell.repeated = measured.repeated.clone();
                cells.push(cell);
                progress.done();
            }
        }
    }
    Ok(cells)
}

/// A cell's layout: `99.99% reads`, as before placements; `99.99% reads, spread` with
/// the threads spread, so that no report or comparison takes one for the other.
fn layout(reads: ReadFraction, placement: ThreadPlacement) -> String {
    match placement {
        ThreadPlacement::Free => reads.label(),
        ThreadPlacement::Spread => format!("{}, {}", reads.label(), placement.name()),
    }
}

/// The table: a writer sets both halves, a reader must see them equal.
struct Shared<L> {
    lock: L,
    pair: UnsafeCell<(u64, u64)>,
}

// SAFETY: `pair` is written only under the write lock and read only under the read
// lock; the run checks both that no reader saw a torn pair and that no write was lost.
unsafe impl<L: BenchRwLock> Sync for Shared<L> {}

/// One run of one cell.
struct Measure<'a> {
    config: &'a Config,
    threads: usize,
    reads: ReadFraction,
    run: u32,
}

impl RwLockVisitor for Measure<'_> {
    type Output = Result<Run, Error>;

    fn visit<L: BenchRwLock>(self) -> Result<Run, Error> {
        let Measure {
            config,
            threads,
            reads,
            run,
        } = self;
        let mut shared = Shared {
            lock: L::new(),
            pair: UnsafeCell::new((0, 0)),
        };
        let table = &shared;
        let spread = match config.placement {
            ThreadPlacement::Free => None,
            ThreadPlacement::Spread => Some(Spread::allowed()?),
        };
        let added_ns = {
            let alone = L::new();
            wait::added_ns(|clock| match clock {
                Some(clock) => {
                    let started = clock.start();
                    let acquired = alone.write(|| WaitClock::acquired(started));
                    clock.record(started, acquired);
                }
                None => alone.write(|| ()),
            })
        };
        let race = race_to_finish_on(threads, spread.as_ref(), |seed| {
            let mut rng =
                0x2545_F491_4F6C_DD1D_u64 ^ (seed as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let (mut writes, mut torn) = (0, 0);
            let mut read_clock = WaitClock::new(config.wait_every, 2 * seed as u64);
            let mut write_clock = WaitClock::new(config.wait_every, 2 * seed as u64 + 1);
            for _ in 0..config.ops {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                if reads.reads(rng) {
                    let started = read_clock.start();
                    let acquired = table.lock.read(|| {
                        let acquired = WaitClock::acquired(started);
                        // SAFETY: under the read lock: no writer meanwhile.
                        let a = unsafe { (*table.pair.get()).0 };
                        pauses(config.cs_pauses);
                        // SAFETY: as above.
                        let b = unsafe { (*table.pair.get()).1 };
                        torn += u64::from(a != b);
                        acquired
                    });
                    read_clock.record(started, acquired);
                } else {
                    let started = write_clock.start();
                    let acquired = table.lock.write(|| {
                        let acquired = WaitClock::acquired(started);
                        // SAFETY: under the write lock: nobody else.
                        unsafe { (*table.pair.get()).0 += 1 };
                        pauses(config.cs_pauses);
                        // SAFETY: as above.
                        unsafe { (*table.pair.get()).1 += 1 };
                        acquired
                    });
                    write_clock.record(started, acquired);
                    writes += 1;
                }
                pauses(config.outside_pauses);
            }
            // A spread thread's CPU, sampled once its work is done: the pinning held.
            let ran_on = spread.as_ref().map(|_| current_cpu());
            let waits = (read_clock.into_histogram(), write_clock.into_histogram());
            (writes, torn, ran_on, waits)
        })?;
        let wall = race.wall;
        let writes: u64 = race.results.iter().map(|&(writes, ..)| writes).sum();
        let torn: u64 = race.results.iter().map(|&(_, torn, ..)| torn).sum();
        let (a, b) = *shared.pair.get_mut();
        let cell = || {
            format!(
                "rw-mix: {}, {threads} threads, {}, run {run}",
                L::NAME,
                layout(reads, config.placement)
            )
        };
        if a != writes || b != writes || torn != 0 {
            return Err(Error::Verification(format!(
                "{}: {writes} writes made the pair ({a}, {b}), and {torn} reads saw it torn",
                cell()
            )));
        }
        if let Some(spread) = &spread {
            let astray = race.results.iter().enumerate().find_map(|(id, &(.., ran_on, _))| {
                let cpu = spread.cpu_of(id);
                (ran_on != Some(Some(cpu))).then_some((id, cpu, ran_on.flatten()))
            });
            if let Some((id, cpu, ran_on)) = astray {
                return Err(Error::Verification(format!(
                    "{}: thread {id}, pinned to cpu{cpu}, ended its work on {}",
                    cell(),
                    ran_on.map_or_else(|| "a CPU the kernel did not tell".to_owned(), |on| format!("cpu{on}"))
                )));
            }
        }
        let merged = |histograms: Vec<_>| wait::merge(histograms).map(|h| wait::quantiles(&h));
        let (reading, writing): (Vec<_>, Vec<_>) =
            race.results.into_iter().map(|(.., waits)| waits).unzip();
        let everyone = reading.iter().chain(&writing).cloned().collect();
        let waits = Waits {
            every: config.wait_every,
            added_ns,
            all: merged(everyone),
            readers: merged(reading),
            writers: merged(writing),
        };
        Ok(Run {
            wait: (config.wait_every > 0).then_some(waits),
            ..Run::timed(wall.as_secs_f64() * 1e3, wall, threads as u64 * config.ops)
        })
    }
}

/// Wall ms per lock for each (read fraction, threads), then the default rwlock's ratio
/// to the best peer.
pub fn tables(config: &Config, cells: &[Cell]) -> Vec<Table> {
    let mut versus = config
        .locks
        .contains(&OURS)
        .then(|| Versus::new(OURS.name(), PEERS.map(RwLockName::name).to_vec()));
    let mut headers: Vec<String> = vec!["reads".to_owned(), "threads".to_owned()];
    headers.extend(config.locks.iter().map(|l| l.name().to_owned()));
    if let Some(versus) = &versus {
        headers.extend(versus.headers());
    }
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut table = Table::new(
        format!(
            "rw-mix: T threads × {} operations each, each a read with the given probability or else a write; {} pauses inside, {} outside; threads {}; wall ms, median [min–max] of {} runs (the locks of a row interleaved, in rotating order)",
            config.ops,
            config.cs_pauses,
            config.outside_pauses,
            placement_title(config.placement),
            config.runs
        ),
        &headers,
    );
    for &reads in &config.reads {
        let (label, layout) = (reads.label(), layout(reads, config.placement));
        for &threads in &config.threads {
            let row: Vec<&Cell> = cells
                .iter()
                .filter(|c| c.threads == threads && c.layout == Some(layout.as_str()))
                .collect();
            let mut line = vec![label.clone(), threads.to_string()];
            line.extend(config.locks.iter().map(|lock| {
                row.iter()
                    .find(|c| c.lock == lock.name())
                    .map_or_else(|| "-".to_owned(), |c| c.long(num))
            }));
            if let Some(versus) = &mut versus {
                line.extend(versus.row(&format!("{label}, threads {threads}"), &row));
            }
            table.row(line);
        }
    }
    for note in versus.as_ref().map(Versus::notes).unwrap_or_default() {
        table.note(note);
    }
    if config.placement == ThreadPlacement::Spread {
        table.note(spread_note());
    }
    [Some(table), wait_table(config, cells)].into_iter().flatten().collect()
}

/// The lock waits per cell, readers' and writers' apart; `None` when no cell timed
/// them (`--wait-every 0`).
fn wait_table(config: &Config, cells: &[Cell]) -> Option<Table> {
    let note = wait_note(cells)?;
    let (read, write) = (format!("read {WAIT_HEADER}"), format!("write {WAIT_HEADER}"));
    let mut table = Table::new(
        "rw-mix, lock waits per cell: wait = one lock call, from just before it to just \
         after it returned",
        &["lock", "reads", "threads", &read, &write, "timing ns"],
    );
    for &reads in &config.reads {
        let layout = layout(reads, config.placement);
        for &threads in &config.threads {
            for lock in &config.locks {
                let found = cells.iter().find(|c| {
                    c.lock == lock.name() && c.threads == threads && c.layout == Some(layout.as_str())
                });
                let Some(cell) = found else {
                    continue;
                };
                table.row(vec![
                    lock.name().to_owned(),
                    reads.label(),
                    threads.to_string(),
                    waits(cell, |w| w.readers),
                    waits(cell, |w| w.writers),
                    timing_cost(cell),
                ]);
            }
        }
    }
    table.note(note);
    Some(table)
}

/// How the title names the threads' placement.
fn placement_title(placement: ThreadPlacement) -> &'static str {
    match placement {
        ThreadPlacement::Free => "placed by the scheduler",
        ThreadPlacement::Spread => "spread: thread i pinned to CPU i mod N",
    }
}

/// The CPUs a spread run used, for the table's note.
fn spread_note() -> String {
    match Spread::allowed() {
        Ok(spread) => {
            let cpus: Vec<String> = spread.cpus().iter().map(|cpu| format!("cpu{cpu}")).collect();
            format!(
                "spread: thread i ran pinned to the i-th of this process's {} CPUs ({}), modulo their number, so every CPU ran readers",
                cpus.len(),
                cpus.join(", ")
            )
        }
        Err(err) => format!("spread: thread i ran pinned to the i-th CPU this process may use, modulo their number ({err})"),
    }
}

/// A chart per read fraction.
const CHART: Chart = Chart {
    panel: |cell, _| {
        let layout = cell.layout.unwrap_or_default();
        Some(Panel::new(figures::slug(layout), format!("rw-mix: {layout}")))
    },
    kind: Kind::Lines(Threads::PLAIN),
};

scenario! {
    takes: RwLocks,
    chart: CHART,
    configure: |args, common| Ok(Config::new(args, common)),
    tables: |config, cells, _| tables(config, cells),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common() -> Common {
        Common {
            locks: None,
            rwlocks: None,
            runs: 1,
            seed_scale: false,
            stats: false,
            adaptive: crate::adaptive::Adaptive::new(crate::adaptive::Budget::Off),
        }
    }

    /// A tiny cell runs and verifies for the default rwlock and a peer, with writes
    /// (half the operations); also in debug builds, where arithmetic overflow panics.
    #[test]
    fn a_tiny_cell_runs_and_verifies() {
        let args = Args {
            ops: Some(300),
            wait_every: Some(1),
            ..Default::default()
        };
        let config = Config::new(&args, &common());
        for lock in [OURS, RwLockName::Std] {
            let measure = Measure {
                config: &config,
                threads: 3,
                reads: ReadFraction::per_mille(500),
                run: 1,
            };
            let run = lock.visit(measure).expect("verified");
            assert_eq!(run.operations, 900, "{}", lock.name());
            assert!(run.wall_ns > 0, "{}", lock.name());
            // Every acquisition timed, each role in its own histogram.
            let waits = run.wait.expect("timed");
            let (readers, writers) = (waits.readers.unwrap(), waits.writers.unwrap());
            assert_eq!(readers.samples + writers.samples, 900, "{}", lock.name());
            assert_eq!(waits.all.unwrap().samples, 900, "{}", lock.name());
            assert!(readers.p50_ns <= readers.max_ns, "{}", lock.name());
        }
    }

    /// Spread, each thread runs pinned to its CPU: the run's verification samples
    /// the CPU each thread ended on, and a thread on another CPU fails it. More
    /// threads than CPUs, so that some share one.
    #[test]
    fn spread_threads_run_on_their_cpus() {
        let args = Args {
            ops: Some(2_000),
            placement: Some(ThreadPlacement::Spread),
            ..Default::default()
        };
        let config = Config::new(&args, &common());
        let threads = Spread::allowed().expect("the affinity mask").cpus().len() + 1;
        let measure = Measure {
            config: &config,
            threads,
            reads: ReadFraction::parse("99.99%").expect("a fraction"),
            run: 1,
        };
        let run = OURS.visit(measure).expect("verified, every thread on its CPU");
        assert_eq!(run.operations, threads as u64 * 2_000);
    }
}
