//! Seed 001: reader-writer semaphore throughput, readers and writers mixed.
//!
//! Waiman Long's "locking/rwsem: Enable reader optimistic spinning" (2019, merged in
//! Linux 5.3) ran the kernel's rwsem locking microbenchmark: equal numbers of reader
//! and writer threads, each looping `lock; load; unlock` on one rwsem, with a "CS
//! load" of 1 (extremely short), 20 (moderate) and 100 (long) pause instructions, at
//! rising thread counts. The "before" lets readers spin on a writer owner
//! unconditionally; the "after" adds the adaptive bits (a reader that spun in vain
//! marks the writer nonspinnable, so later readers sleep at once). Linux 5.11
//! removed reader spinning altogether: readers get one steal attempt, then sleep,
//! because spinning readers split into small groups between writers. Here the three
//! are klocks' `RwSem` policies, `rwsem-always`, `rwsem-adaptive` and `rwsem-never`,
//! next to std, parking_lot and glibc's two kinds of rwlock.
//!
//! A cell is T threads (T/2 readers, T/2 writers) at load L for a fixed window, each
//! run in a child process by [`windowed`] (clock before the gate, only sections
//! inside the window count, a drain cap). The sections and their verification are
//! [`crate::harness::rw`]'s: writers increment two plain counters around the load, readers check
//! they read equal; at the end both must equal every write section and no read may
//! be torn, or the lock's result is refused. Each cell also counts read phases
//! (runs of readers between writers), so the tables give the average reader group,
//! the fragmentation that 5.11's removal argued against.

use std::time::Duration;

use klocks::catalog::RwLockKind;

use super::{Options, Scenario, Takes};
use crate::harness::rw::{geometric_mean, kops, reader_group, role_fairness, show, show_ratio, times, Role};
use crate::harness::watch::Conditions;
use crate::harness::windowed::{self, fastest, or_default, Grid, Plan, WindowArgs, Work};
use crate::harness::{Common, Error};
use crate::machine::Machine;
use crate::report::{num, si, Cell, Progress, RwRun, RwSetup, Table};
use crate::rwlocks::RwLockName;

/// Seed 001: reader-writer lock throughput, half readers and half writers
///
/// Waiman Long's reader optimistic spinning for rwsems (2019) was measured with
/// the kernel's rwsem locking microbenchmark: equal numbers of reader and writer
/// threads, each looping lock; load pause instructions; unlock, with a CS load of
/// 1 (extremely short), 20 (moderate) and 100 (long). The "before" lets readers
/// spin on a writer owner unconditionally (rwsem-always), the "after" adds the
/// adaptive bits (rwsem-adaptive); Linux 5.11 removed reader spinning
/// (rwsem-never). For each lock × threads (T/2 readers, T/2 writers) × load, the
/// threads loop for a fixed window with no work outside the lock (--outside-pauses
/// adds some). A writer increments two plain counters a and b around the load; a
/// reader reads a, the load, then b. The clock starts before the start gate
/// opens; only sections finished inside the window count.
///
/// Every run happens in a child process: one whose threads do not drain within
/// --drain-cap-secs is killed and its cell reported as "DNF (drain > N s)"; the
/// others are verified: a and b must both equal every write section, counted or
/// late, and no read may have seen a ≠ b, or lockbench refuses the lock's result
/// (exit status 1).
///
/// Tables: the seed-001 comparison (before = rwsem-always, after = rwsem-adaptive,
/// %change, and rwsem-never); all locks (kops/s, reads + writes); the
/// rwsem-adaptive bars (÷ the better of always and never, ÷ the best peer of
/// std-rw, parking_lot-rw, pthread-rw and pthread-rw-writer, and the geometric
/// mean of ÷ best peer over the thread counts per load); per-cell detail (reads/s,
/// writes/s, fairness f = min ÷ mean for readers and writers separately, the
/// average reader group = reads ÷ read phases, drain, c2c placement, foreign CPU
/// time). A read phase is a run of readers between two writers: small groups are
/// the fragmentation that reader spinning causes. Marks: * the c2c placement
/// changed during the cell; ! steal or other processes took over 5% of the CPU
/// time. Loads are also given in ns, from the pause measured at start-up.
///
/// Default: all seven reader-writer locks, threads 2,4,8,16,32,64,80, loads
/// 1,20,100, 500 ms windows, 3 runs: about five minutes on 2 CPUs. Not part of the
/// default suite.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Threads per cell, comma-separated, each even: half read, half write
    /// [default: 2,4,8,16,32,64,80]
    #[arg(long, value_delimiter = ',', value_name = "N,...", value_parser = parse_threads)]
    pub threads: Vec<usize>,

    /// Loads, comma-separated: `pause` instructions inside every read and write
    /// section (the tables also give them in ns, from the pause measured at start-up)
    /// [default: 1,20,100]
    #[arg(long, value_delimiter = ',', value_name = "PAUSES,...",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub load: Vec<u32>,

    /// `pause` instructions each thread spins after every unlock, outside the lock
    /// [default: 0, the microbenchmark's loop: lock; load; unlock]
    #[arg(long, value_name = "PAUSES", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub outside_pauses: Option<u32>,

    #[command(flatten)]
    pub window: WindowArgs,
}

/// Parses a thread count that splits evenly into readers and writers.
fn parse_threads(text: &str) -> Result<usize, String> {
    let threads: usize = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of threads"))?;
    if !(2..=1024).contains(&threads) || threads % 2 != 0 {
        return Err(format!(
            "{threads} threads cannot be split into equal numbers of readers and writers: \
             give an even number from 2 to 1024"
        ));
    }
    Ok(threads)
}

/// The seed's two sides, reader spinning without and with the adaptive bits, and
/// Linux 5.11's policy without reader spinning.
const BEFORE: RwLockName = RwLockName::Klocks(RwLockKind::RwSemAlways);
const AFTER: RwLockName = RwLockName::Klocks(RwLockKind::RwSemAdaptive);
const NEVER: RwLockName = RwLockName::Klocks(RwLockKind::RwSemNever);

/// The reader-writer locks a user would otherwise pick, for the bars.
const PEERS: &[RwLockName] = &[
    RwLockName::Std,
    RwLockName::ParkingLot,
    RwLockName::Pthread,
    RwLockName::PthreadWriter,
];

/// The defaults: the microbenchmark's thread counts on a small machine and its three
/// loads, 500 ms windows (147 cells × 3 runs in about four and a half minutes on 2
/// CPUs).
const THREADS: &[usize] = &[2, 4, 8, 16, 32, 64, 80];
const LOADS: &[u32] = &[1, 20, 100];
const WINDOW: Duration = Duration::from_millis(500);

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    plan: Plan<RwLockName>,
    threads: Vec<usize>,
    loads: Vec<u32>,
    outside: u32,
}

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        Self {
            plan: Plan::with_locks(&args.window, common, common.rwlocks(), WINDOW),
            threads: or_default(&args.threads, THREADS),
            loads: or_default(&args.load, LOADS),
            outside: args.outside_pauses.unwrap_or(0),
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        windowed::cells(self)
    }

    fn has(&self, lock: RwLockName) -> bool {
        self.plan.locks.contains(&lock)
    }
}

impl Grid for Config {
    type Row = Row;
    type Lock = RwLockName;
    const SCENARIO: &'static str = "rwsem";

    fn plan(&self) -> &Plan<RwLockName> {
        &self.plan
    }

    /// Threads outermost, then load.
    fn rows(&self) -> Vec<Row> {
        self.threads
            .iter()
            .flat_map(|&threads| self.loads.iter().map(move |&load| Row { threads, load }))
            .collect()
    }

    fn describe(&self, lock: RwLockName, row: &Row) -> String {
        format!(
            "rwsem: {}, {} readers + {} writers, load {}",
            lock.name(),
            row.threads / 2,
            row.threads / 2,
            row.load
        )
    }

    /// Half the threads read, half write; the load inside, `--outside-pauses` after.
    fn work(&self, row: &Row) -> Work {
        Work {
            threads: row.threads,
            readers: row.threads / 2,
            inside: row.load,
            outside: self.outside,
            hogs: 0,
        }
    }

    fn annotate(&self, row: &Row, cell: &mut Cell) {
        cell.rw = Some(RwSetup {
            readers: row.threads / 2,
            writers: row.threads / 2,
            load_pauses: row.load,
            outside_pauses: self.outside,
            window_ms: self.plan.window.as_secs_f64() * 1e3,
        });
    }
}

/// A row of the tables: a cell's parameters but the lock.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    threads: usize,
    load: u32,
}

impl Row {
    /// threads, load, and the load in ns.
    fn labels(&self, pause_ns: f64) -> Vec<String> {
        vec![
            self.threads.to_string(),
            self.load.to_string(),
            format!("{} ns", num(f64::from(self.load) * pause_ns)),
        ]
    }
}

/// Measures every cell, each run in its own process.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    windowed::run(config, progress)
}

/// The seed-001 table, all locks, the rwsem-adaptive bars and the per-cell detail.
pub fn tables(config: &Config, cells: &[Cell], pause_ns: f64) -> Vec<Table> {
    let outside = match config.outside {
        0 => "no work outside the lock".to_owned(),
        n => format!("{n} pauses outside the lock"),
    };
    let scale = format!(
        "{}; threads = half readers, half writers; load = pause instructions in every \
         read and write section, one pause = {pause_ns:.1} ns; {outside}",
        config.plan.scale("kops/s (reads + writes)"),
    );
    let tables = [
        seed_table(config, cells, pause_ns, &scale),
        Some(matrix(config, cells, pause_ns, &scale)),
        bars(config, cells),
        Some(detail(cells)),
    ];
    windowed::with_footnotes(tables, cells, &config.plan)
}

fn find<'a>(cells: &'a [Cell], lock: RwLockName, row: &Row) -> Option<&'a Cell> {
    cells.iter().find(|cell| {
        cell.lock == lock.name()
            && cell.threads == row.threads
            && cell.rw.is_some_and(|rw| rw.load_pauses == row.load)
    })
}

/// The median throughput of a finished cell.
fn median(cell: Option<&Cell>) -> Option<f64> {
    cell?.summary.map(|s| s.median)
}

/// threads | load | cs | before | after | %change | never, when the seed's two
/// policies ran.
fn seed_table(config: &Config, cells: &[Cell], pause_ns: f64, scale: &str) -> Option<Table> {
    if !(config.has(BEFORE) && config.has(AFTER)) {
        return None;
    }
    let before = format!("before: {} kops/s", BEFORE.name());
    let after = format!("after: {} kops/s", AFTER.name());
    let never = format!("{} kops/s", NEVER.name());
    let mut headers = vec!["threads", "load", "cs", &before, &after, "%change"];
    if config.has(NEVER) {
        headers.push(&never);
    }
    let mut table = Table::new(
        format!(
            "rwsem, seed 001 (before = {}, reader spinning without the adaptive bits; \
             after = {}, seed 001's adaptive reader spinning; {}: Linux 5.11, no \
             reader spinning): {scale}",
            BEFORE.name(),
            AFTER.name(),
            NEVER.name()
        ),
        &headers,
    );
    for row in config.rows() {
        let (Some(base), Some(patched)) = (find(cells, BEFORE, &row), find(cells, AFTER, &row))
        else {
            continue;
        };
        let mut entries = row.labels(pause_ns);
        entries.extend([
            base.long(kops),
            patched.long(kops),
            windowed::change(base, patched),
        ]);
        if config.has(NEVER) {
            entries.push(find(cells, NEVER, &row).map_or_else(|| "-".to_owned(), |c| c.long(kops)));
        }
        table.row(entries);
    }
    Some(table)
}

/// threads | load | cs | one column per lock, kops/s.
fn matrix(config: &Config, cells: &[Cell], pause_ns: f64, scale: &str) -> Table {
    let headers: Vec<&str> = ["threads", "load", "cs"]
        .into_iter()
        .chain(config.plan.locks.iter().map(|lock| lock.name()))
        .collect();
    let mut table = Table::new(format!("rwsem, all locks: {scale}"), &headers);
    for row in config.rows() {
        let entries = config.plan.locks.iter().map(|&lock| {
            find(cells, lock, &row).map_or_else(|| "-".to_owned(), |cell| cell.short(kops))
        });
        table.row(row.labels(pause_ns).into_iter().chain(entries).collect());
    }
    table
}

/// rwsem-adaptive per cell against the better of the other two policies and against
/// the best peer, with the geometric means over the thread grid per load.
fn bars(config: &Config, cells: &[Cell]) -> Option<Table> {
    let policies: Vec<RwLockName> = [BEFORE, NEVER]
        .into_iter()
        .filter(|&lock| config.has(lock))
        .collect();
    let peers: Vec<RwLockName> = PEERS.iter().copied().filter(|&p| config.has(p)).collect();
    if !config.has(AFTER) || (policies.is_empty() && peers.is_empty()) {
        return None;
    }
    let after = AFTER.name();
    let versus_policy = format!("{after} ÷ policy");
    let versus_peer = format!("{after} ÷ peer");
    let mut table = Table::new(
        format!(
            "rwsem, bars: {after} against the better of the other policies ({}) and the \
             best peer ({}), kops/s",
            policies
                .iter()
                .map(|l| l.name())
                .collect::<Vec<_>>()
                .join(", "),
            peers
                .iter()
                .map(|l| l.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        &[
            "threads",
            "load",
            after,
            "best policy",
            versus_policy.as_str(),
            "best peer",
            versus_peer.as_str(),
        ],
    );
    let mut ratios: Vec<Versus> = Vec::new();
    for row in config.rows() {
        let Some(after_cell) = find(cells, AFTER, &row) else {
            continue;
        };
        let best_of = |locks: &[RwLockName]| {
            let found: Vec<&Cell> = locks.iter().filter_map(|&l| find(cells, l, &row)).collect();
            fastest(&found)
        };
        let (policy, peer) = (best_of(&policies), best_of(&peers));
        let versus = |other: Option<(f64, &str)>| {
            median(Some(after_cell))
                .zip(other)
                .filter(|(_, (other, _))| *other > 0.0)
                .map(|(after, (other, _))| after / other)
        };
        let (versus_policy, versus_peer) = (versus(policy), versus(peer));
        ratios.push(Versus {
            load: row.load,
            policy: versus_policy,
            peer: versus_peer,
        });
        let best = |best: Option<(f64, &str)>| {
            best.map_or_else(
                || "-".to_owned(),
                |(ops, lock)| format!("{} {lock}", kops(ops)),
            )
        };
        table.row(vec![
            row.threads.to_string(),
            row.load.to_string(),
            after_cell.short(kops),
            best(policy),
            times(versus_policy),
            best(peer),
            times(versus_peer),
        ]);
    }
    for &load in &config.loads {
        let of = |pick: fn(&Versus) -> Option<f64>| {
            let values: Vec<f64> = ratios
                .iter()
                .filter(|r| r.load == load)
                .filter_map(pick)
                .collect();
            (geometric_mean(&values), values.len())
        };
        let ((policy, policy_cells), (peer, peer_cells)) = (of(|r| r.policy), of(|r| r.peer));
        if policy_cells + peer_cells > 0 {
            table.note(format!(
                "load {load}, geometric mean over the thread counts: {after} ÷ best peer \
                 {} ({peer_cells} cells), ÷ best policy {} ({policy_cells} cells)",
                times(peer),
                times(policy)
            ));
        }
    }
    Some(table)
}

/// rwsem-adaptive ÷ the best other policy and ÷ the best peer in one row, where both
/// finished.
struct Versus {
    load: u32,
    policy: Option<f64>,
    peer: Option<f64>,
}

/// One row per cell: throughput, each role's rate and fairness, the reader group.
fn detail(cells: &[Cell]) -> Table {
    let mut table = Table::new(
        "rwsem, per cell: reads/s and writes/s inside the window; f = the slowest \
         thread's sections ÷ the mean of its role (1.00 = even); reader group = every \
         read ÷ the read phases (runs of readers between two writers); drain = from the \
         stop flag to the last thread returning (medians over the verified runs)",
        &[
            "lock",
            "threads",
            "load",
            "kops/s median [min–max]",
            "reads/s",
            "writes/s",
            "f readers",
            "f writers",
            "reader group",
            "drain ms",
            "placement",
            "steal+others ms",
        ],
    );
    for cell in cells {
        let Some(setup) = cell.rw else {
            continue;
        };
        table.row(
            [
                cell.lock.to_owned(),
                cell.threads.to_string(),
                setup.load_pauses.to_string(),
            ]
            .into_iter()
            .chain(rw_columns(cell))
            .collect(),
        );
    }
    table
}

/// A cell's throughput with its range, each role's rate and fairness, the reader
/// group, the drain and the conditions.
fn rw_columns(cell: &Cell) -> [String; 9] {
    let rate = |of: fn(&RwRun) -> f64| show(cell.median_of(|run| run.rw.as_ref().map(of)), si);
    let conditions = cell.conditions.as_ref();
    [
        cell.long(kops),
        rate(|rw| rw.reads_per_s),
        rate(|rw| rw.writes_per_s),
        show_ratio(role_fairness(cell, Role::Reader)),
        show_ratio(role_fairness(cell, Role::Writer)),
        show(reader_group(cell), num),
        show(cell.median_of(|run| run.drain.map(|d| d.ms)), num),
        conditions.map_or_else(|| "-".to_owned(), Conditions::placement),
        conditions.map_or_else(
            || "-".to_owned(),
            |c| format!("{}+{}", num(c.steal_ms), num(c.others_ms)),
        ),
    ]
}

impl Options for Args {
    const TAKES: Takes = Takes::RwLocks;

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

    fn tables(&self, cells: &[Cell], machine: &Machine) -> Vec<Table> {
        tables(self, cells, machine.pause_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{PerThread, Run, Summary};

    /// A finished one-run cell at `ops` ops/s, half reads.
    fn cell(lock: RwLockName, row: Row, ops: f64) -> Cell {
        let half = (ops / 2.0) as u64;
        Cell {
            scenario: "rwsem",
            lock: lock.name(),
            threads: row.threads,
            layout: None,
            unit: "ops/s",
            summary: Summary::of([ops]),
            unfinished: None,
            handoff: None,
            conditions: None,
            overcommit: None,
            mutex_load: None,
            rw: Some(RwSetup {
                readers: row.threads / 2,
                writers: row.threads / 2,
                load_pauses: row.load,
                outside_pauses: 0,
                window_ms: 1000.0,
            }),
            runs: vec![Run {
                value: ops,
                wall_ns: 1_000_000_000,
                operations: 2 * half,
                target: None,
                handoffs: None,
                finished: true,
                per_thread: PerThread::of(&[half, half]),
                drain: None,
                rw: Some(RwRun {
                    reads: half,
                    writes: half,
                    reads_per_s: half as f64,
                    writes_per_s: half as f64,
                    readers: PerThread::of(&[half]),
                    writers: PerThread::of(&[half]),
                    read_phases: 10,
                    reader_group: Some(half as f64 / 10.0),
                }),
            }],
        }
    }

    #[test]
    fn odd_or_zero_threads_are_refused() {
        assert_eq!(parse_threads("80"), Ok(80));
        for bad in ["0", "1", "3", "2048", "two"] {
            assert!(parse_threads(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_bars_compare_with_the_best_policy_and_peer() {
        let common = Common {
            locks: None,
            rwlocks: Some(vec![
                AFTER,
                BEFORE,
                NEVER,
                RwLockName::Std,
                RwLockName::ParkingLot,
            ]),
            runs: 1,
            seed_scale: false,
        };
        let args = Args {
            threads: vec![2, 4],
            load: vec![1],
            ..Args::default()
        };
        let config = Config::new(&args, &common);
        let (two, four) = (
            Row {
                threads: 2,
                load: 1,
            },
            Row {
                threads: 4,
                load: 1,
            },
        );
        let cells = [
            cell(AFTER, two, 200e3),
            cell(BEFORE, two, 100e3),
            cell(NEVER, two, 50e3),
            cell(RwLockName::Std, two, 400e3),
            cell(RwLockName::ParkingLot, two, 100e3),
            cell(AFTER, four, 200e3),
            cell(BEFORE, four, 100e3),
            cell(NEVER, four, 400e3),
            cell(RwLockName::Std, four, 100e3),
            cell(RwLockName::ParkingLot, four, 25e3),
        ];
        let text = bars(&config, &cells).expect("bars").to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[3].contains("100 rwsem-always") && lines[3].contains("2.00×"),
            "{text}"
        );
        assert!(
            lines[3].contains("400 std-rw") && lines[3].contains("0.50×"),
            "{text}"
        );
        assert!(
            lines[4].contains("400 rwsem-never") && lines[4].contains("0.50×"),
            "{text}"
        );
        assert!(
            lines[4].contains("100 std-rw") && lines[4].contains("2.00×"),
            "{text}"
        );
        // Geometric means: √(0.5 × 2) = 1 both ways.
        assert!(
            text.contains(
                "load 1, geometric mean over the thread counts: rwsem-adaptive ÷ \
                           best peer 1.00× (2 cells), ÷ best policy 1.00× (2 cells)"
            ),
            "{text}"
        );
        let seed = seed_table(&config, &cells, 25.0, "s")
            .expect("seed table")
            .to_string();
        assert!(seed.contains("+100.0%"), "{seed}");
        let detail = detail(&cells).to_string();
        assert!(
            detail.contains("10000"),
            "reader group 100000 ÷ 10: {detail}"
        );
    }
}
