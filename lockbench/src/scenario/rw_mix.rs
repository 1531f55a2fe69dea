//! A read-mostly table: T threads, each operation a read with probability p or else a
//! write, a short critical section and some work outside, as a configuration map or
//! a routing table behind an rwlock. Wall time for a fixed number of operations per
//! thread.

use std::cell::UnsafeCell;


use crate::html_report::figures::{self, Chart, Kind, Panel, Threads};
use crate::harness::stats::Counting;
use crate::adaptive::{Adaptive, Drive};
use crate::harness::rounds::{rounds, Plan};
use crate::harness::versus::{leak, pauses, race_to_finish, Versus};
use crate::harness::{Common, Error};
use crate::cells::{num, Cell, Progress, Run, Table};
use crate::rwlocks::{BenchRwLock, RwLockName, RwLockVisitor, RW_ALTERNATIVES, RW_DEFAULT};

/// A read-mostly table: T threads × operations that read with probability p, wall ms
///
/// T threads each do --ops operations on one reader-writer lock, each a read with
/// the probability --reads gives (per mille: 999, 990, 900 and 500 by default) or
/// else a write, as a configuration map or a routing table does: a short critical
/// section (--cs-pauses; a writer sets both halves of a pair, a reader reads
/// both), then some work outside (--outside-pauses). Wall time from the start
/// gate to the last thread's end; the locks of a row run interleaved, --runs
/// times. Verified: the pair must equal the writes done and no reader may have
/// seen its halves differ. Table: wall ms per rwlock and, with default-rw among
/// them, its ratio to the best of std-rw, parking_lot-rw, pthread-rw and
/// pthread-rw-writer. Threads 2,8,32.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Thread counts, comma-separated [default: 2,8,32]
    #[arg(long, value_delimiter = ',', value_name = "N,...", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Vec<u32>,

    /// Read fractions in per mille, comma-separated (999 = 99.9% reads) [default:
    /// 999,990,900,500]
    #[arg(long, value_delimiter = ',', value_name = "PERMILLE,...", value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub reads: Vec<u32>,

    /// Operations per thread [default: 100000]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub ops: Option<u64>,

    /// `pause` instructions inside each read and write section [default: 5]
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub cs_pauses: Option<u32>,

    /// `pause` instructions between two operations of a thread [default: 20]
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub outside_pauses: Option<u32>,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    locks: Vec<RwLockName>,
    threads: Vec<usize>,
    reads: Vec<u32>,
    ops: u64,
    cs_pauses: u32,
    outside_pauses: u32,
    runs: u32,
    stats: bool,
    adaptive: Adaptive,
}

/// The peers the default rwlock is compared with.
const PEERS: [RwLockName; 4] = RW_ALTERNATIVES;
/// The default rwlock, compared with the peers.
const OURS: RwLockName = RW_DEFAULT;

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        let or = |given: &[u32], default: &[u32]| {
            if given.is_empty() {
                default.to_vec()
            } else {
                given.to_vec()
            }
        };
        Self {
            locks: common.rwlocks(),
            threads: or(&args.threads, &[2, 8, 32])
                .into_iter()
                .map(|n| n as usize)
                .collect(),
            reads: or(&args.reads, &[999, 990, 900, 500]),
            ops: args.ops.unwrap_or(100_000),
            cs_pauses: args.cs_pauses.unwrap_or(5),
            outside_pauses: args.outside_pauses.unwrap_or(20),
            runs: common.runs,
            stats: common.stats,
            adaptive: common.adaptive.clone(),
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        (self.locks.len() * self.threads.len() * self.reads.len()) as u64
    }
}

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
                row: format!("rw-mix, {threads} threads, {reads}‰ reads"),
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
                progress.start(format!("rw-mix {} {threads}×{reads}‰", lock.name()));
                let mut cell = Cell::of_runs(
                    "rw-mix",
                    lock.name(),
                    threads,
                    Some(reads_label(reads)),
                    "ms",
                    runs,
                );
                counting.attach(&mut cell);
                cell.repeated = measured.repeated.clone();
                cells.push(cell);
                progress.done();
            }
        }
    }
    Ok(cells)
}

/// "p% reads".
fn reads_label(permille: u32) -> &'static str {
    leak(format!("{}% reads", f64::from(permille) / 10.0))
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
    reads: u32,
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
        let race = race_to_finish(threads, |seed| {
            let mut rng =
                0x2545_F491_4F6C_DD1D_u64 ^ (seed as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let (mut writes, mut torn) = (0, 0);
            for _ in 0..config.ops {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                if (rng % 1000) < u64::from(reads) {
                    table.lock.read(|| {
                        // SAFETY: under the read lock: no writer meanwhile.
                        let a = unsafe { (*table.pair.get()).0 };
                        pauses(config.cs_pauses);
                        // SAFETY: as above.
                        let b = unsafe { (*table.pair.get()).1 };
                        torn += u64::from(a != b);
                    });
                } else {
                    table.lock.write(|| {
                        // SAFETY: under the write lock: nobody else.
                        unsafe { (*table.pair.get()).0 += 1 };
                        pauses(config.cs_pauses);
                        // SAFETY: as above.
                        unsafe { (*table.pair.get()).1 += 1 };
                    });
                    writes += 1;
                }
                pauses(config.outside_pauses);
            }
            (writes, torn)
        });
        let wall = race.wall;
        let writes: u64 = race.results.iter().map(|&(writes, _)| writes).sum();
        let torn: u64 = race.results.iter().map(|&(_, torn)| torn).sum();
        let (a, b) = *shared.pair.get_mut();
        if a != writes || b != writes || torn != 0 {
            return Err(Error::Verification(format!(
                "rw-mix: {}, {threads} threads, {reads}‰ reads, run {run}: {writes} writes made the pair ({a}, {b}), and {torn} reads saw it torn",
                L::NAME
            )));
        }
        Ok(Run::timed(
            wall.as_secs_f64() * 1e3,
            wall,
            threads as u64 * config.ops,
        ))
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
            "rw-mix: T threads × {} operations each, each a read with the given probability or else a write; {} pauses inside, {} outside; wall ms, median [min–max] of {} runs (the locks of a row interleaved, in rotating order)",
            config.ops, config.cs_pauses, config.outside_pauses, config.runs
        ),
        &headers,
    );
    for &reads in &config.reads {
        let label = format!("{}% reads", f64::from(reads) / 10.0);
        for &threads in &config.threads {
            let row: Vec<&Cell> = cells
                .iter()
                .filter(|c| c.threads == threads && c.layout == Some(label.as_str()))
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
    vec![table]
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

    /// A tiny cell runs and verifies for the default rwlock and a peer, with writes
    /// (half the operations); also in debug builds, where arithmetic overflow panics.
    #[test]
    fn a_tiny_cell_runs_and_verifies() {
        let args = Args {
            ops: Some(300),
            ..Default::default()
        };
        let common = Common {
            locks: None,
            rwlocks: None,
            runs: 1,
            seed_scale: false,
            stats: false,
            adaptive: crate::adaptive::Adaptive::new(crate::adaptive::Budget::Off),
        };
        let config = Config::new(&args, &common);
        for lock in [OURS, RwLockName::Std] {
            let measure = Measure {
                config: &config,
                threads: 3,
                reads: 500,
                run: 1,
            };
            let run = lock.visit(measure).expect("verified");
            assert_eq!(run.operations, 900, "{}", lock.name());
            assert!(run.wall_ns > 0, "{}", lock.name());
        }
    }
}
