//! One thread, lock/unlock pairs in a loop: the cost of a lock nobody else wants.

use std::time::Instant;

use crate::html_report::figures::{self, Chart, Kind, Panel};
use crate::harness::rw::{self, Role, RwGuarded};
use crate::adaptive::{Adaptive, Drive};
use crate::harness::rounds::{rounds, Plan};
use crate::harness::stats::{self, Counting, Counts};
use crate::harness::{verify_count, Common, Error, Guarded};
use crate::cells::{num, Cell, Progress, Run, Table};
use crate::locks::{BenchLock, LockName, LockVisitor, ALTERNATIVES, DEFAULT};
use crate::rwlocks::{BenchRwLock, RwLockName, RwLockVisitor, RW_ALTERNATIVES, RW_DEFAULT};
use crate::verdict::{self, Ledger, Settings};

/// One thread, no contention: ns per lock + increment + unlock
///
/// One thread takes and releases the lock in a loop, incrementing a counter
/// inside. Measures the bare cost of an uncontended acquisition and release
/// (atomic RMWs, fences, function calls), in ns per pair, with the ratio to
/// std::sync::Mutex. Verified: the counter must equal the iterations.
///
/// With --rwlocks, each reader-writer lock named is measured too, as a read pair
/// (read lock, read two counters, unlock) and a write pair (write lock, increment
/// both, unlock), with the ratios to std::sync::RwLock. Verified: no read saw the
/// counters differ, and both equal the write pairs.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Lock/unlock pairs per run [default: 2000000; 5000000 with --seed-scale]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
}

/// Default pairs per run, and the seed's loop length.
const ITERATIONS: u64 = 2_000_000;
const SEED_ITERATIONS: u64 = 5_000_000;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    locks: Vec<LockName>,
    /// `--rwlocks`, if given: none by default.
    rwlocks: Vec<RwLockName>,
    iterations: u64,
    runs: u32,
    stats: bool,
    adaptive: Adaptive,
}

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        let default = if common.seed_scale {
            SEED_ITERATIONS
        } else {
            ITERATIONS
        };
        Self {
            locks: common.locks(),
            rwlocks: common.rwlocks.clone().unwrap_or_default(),
            iterations: args.iterations.unwrap_or(default),
            runs: common.runs,
            stats: common.stats,
            adaptive: common.adaptive.clone(),
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        (self.locks.len() + SIDES.len() * self.rwlocks.len()) as u64
    }
}

/// The sides of a reader-writer lock a cell can take, in table order.
const SIDES: [Role; 2] = [Role::Reader, Role::Writer];

/// The layout label of a reader-writer cell: which side it took.
fn label(side: Role) -> &'static str {
    match side {
        Role::Reader => "read",
        Role::Writer => "write",
    }
}

/// One cell of the table: a mutex, or one side of a reader-writer lock.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Slot {
    Mutex(LockName),
    Rw(RwLockName, Role),
}

impl Slot {
    fn describe(self) -> String {
        match self {
            Slot::Mutex(lock) => lock.name().to_owned(),
            Slot::Rw(lock, side) => format!("{} {}", lock.name(), label(side)),
        }
    }
}

/// Measures every lock and every reader-writer lock's two sides, one run each per
/// round ([`rounds`]), so that a slow spell of the machine falls on all alike.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    let slots: Vec<Slot> = config
        .locks
        .iter()
        .map(|&lock| Slot::Mutex(lock))
        .chain(
            config
                .rwlocks
                .iter()
                .flat_map(|&lock| SIDES.map(|side| Slot::Rw(lock, side))),
        )
        .collect();
    let plan = Plan {
        runs: config.runs,
        adaptive: &config.adaptive,
        drives: drives(&slots),
        row: "uncontended".to_owned(),
        lower_is_better: true,
    };
    // A reader-writer lock's two sides share its type: each run counts on its own.
    let mut counted: Vec<Option<Counts>> = vec![None; slots.len()];
    let measured = rounds(slots.len(), &plan, |at, run| {
        let slot = slots[at];
        progress.start(format!("uncontended {}, run {run}", slot.describe()));
        let counting = Counting::start(config.stats);
        let measured = match slot {
            Slot::Mutex(lock) => lock.visit(Measure(config, run))?,
            Slot::Rw(lock, side) => lock.visit(MeasureRw(config, side, run))?,
        };
        let name = match slot {
            Slot::Mutex(lock) => lock.name(),
            Slot::Rw(lock, _) => lock.name(),
        };
        stats::add(&mut counted[at], counting.counts(name));
        Ok(Some(measured))
    })?;
    let results = measured.results.into_iter().zip(counted);
    let cells = slots.iter().zip(results).map(|(&slot, (runs, counts))| {
        let (name, side) = match slot {
            Slot::Mutex(lock) => (lock.name(), None),
            Slot::Rw(lock, side) => (lock.name(), Some(label(side))),
        };
        progress.done();
        Cell {
            stats: counts,
            repeated: measured.repeated.clone(),
            ..Cell::of_runs("uncontended", name, 1, side, "ns/pair", runs)
        }
    });
    Ok(cells.collect())
}

/// The comparisons that drive extra rounds: default against the best peer, and
/// default-rw's each side against the best peer's same side.
fn drives(slots: &[Slot]) -> Vec<Drive> {
    let mutex = Drive::best_peer(slots, &Slot::Mutex(DEFAULT), &ALTERNATIVES.map(Slot::Mutex));
    let rw = SIDES.map(|side| {
        let peers = RW_ALTERNATIVES.map(|peer| Slot::Rw(peer, side));
        Drive::best_peer(slots, &Slot::Rw(RW_DEFAULT, side), &peers)
    });
    [mutex].into_iter().chain(rw).flatten().collect()
}

/// One run of a mutex's cell.
struct Measure<'a>(&'a Config, u32);

impl LockVisitor for Measure<'_> {
    type Output = Result<Run, Error>;

    fn visit<L: BenchLock>(self) -> Result<Run, Error> {
        let Measure(config, run) = self;
        pairs::<L>(config.iterations, || {
            format!("uncontended: {}, run {run}", L::NAME)
        })
    }
}

/// One run of one side of a reader-writer lock.
struct MeasureRw<'a>(&'a Config, Role, u32);

impl RwLockVisitor for MeasureRw<'_> {
    type Output = Result<Run, Error>;

    fn visit<L: BenchRwLock>(self) -> Result<Run, Error> {
        let MeasureRw(config, side, run) = self;
        rw_pairs::<L>(config.iterations, side, || {
            format!("uncontended: {} {}, run {run}", L::NAME, label(side))
        })
    }
}

/// One timed run of `iterations` read or write sections, verified as the
/// reader-writer scenarios verify theirs.
fn rw_pairs<L: BenchRwLock>(
    iterations: u64,
    side: Role,
    context: impl FnOnce() -> String,
) -> Result<Run, Error> {
    let guarded = RwGuarded::<L>::unlocked();
    // Hide from the optimiser that no other thread can observe the lock or the data.
    let shared = std::hint::black_box(&guarded);
    let mut torn = 0;
    let start = Instant::now();
    match side {
        Role::Reader => {
            for _ in 0..iterations {
                torn += u64::from(!shared.read(0));
            }
        }
        Role::Writer => {
            for _ in 0..iterations {
                shared.write(0);
            }
        }
    }
    let wall = start.elapsed();
    // One thread and no window: no per-thread tallies, so the counts take this
    // thread's torn reads directly, and every section counts.
    let readers = usize::from(side == Role::Reader);
    let mut counts = guarded.into_counts(readers, &[]);
    counts.torn_reads = torn;
    rw::verify(&context(), &counts, &[iterations], wall)?;
    Ok(Run::timed(
        wall.as_secs_f64() * 1e9 / iterations as f64,
        wall,
        iterations,
    ))
}

/// One timed run of `iterations` critical sections, verified.
fn pairs<L: BenchLock>(iterations: u64, context: impl FnOnce() -> String) -> Result<Run, Error> {
    let guarded = Guarded::<L>::unlocked();
    // Hide from the optimiser that no other thread can observe the lock or the data.
    let shared = std::hint::black_box(&guarded);
    let start = Instant::now();
    for _ in 0..iterations {
        shared.enter(0);
    }
    let wall = start.elapsed();
    verify_count(context, guarded.into_count(), iterations)?;
    Ok(Run::timed(
        wall.as_secs_f64() * 1e9 / iterations as f64,
        wall,
        iterations,
    ))
}

/// lock | ns/pair | against std; then, with --rwlocks, rwlock | read | against
/// std-rw | write | against std-rw. Every "vs" column is the lock's throughput ÷
/// std's with its interval and verdict ([`crate::verdict`]).
pub fn tables(cells: &[Cell]) -> Vec<Table> {
    let (mutexes, rwlocks): (Vec<&Cell>, Vec<&Cell>) =
        cells.iter().partition(|cell| cell.layout.is_none());
    let mut table = Table::new(
        "uncontended: one thread, lock + increment + unlock",
        &["lock", "ns/pair median [min–max]", "vs std (throughput)"],
    );
    let std = find(&mutexes, <std::sync::Mutex<()> as BenchLock>::NAME, None);
    let mut ledger = Ledger::default();
    for cell in &mutexes {
        table.row(vec![
            verdict::label(cell.lock).to_owned(),
            cell.long(num),
            against(cell, std, &mut ledger),
        ]);
    }
    let mut tables = vec![table];
    if !rwlocks.is_empty() {
        tables.push(rw_table(&rwlocks, &mut ledger));
    }
    if let Some(last) = tables.last_mut() {
        last.note(ledger.tally().note(Settings::default()));
    }
    tables
}

/// The reader-writer locks' table: a row per lock, both sides.
fn rw_table(cells: &[&Cell], ledger: &mut Ledger) -> Table {
    let std_rw = <std::sync::RwLock<()> as BenchRwLock>::NAME;
    let std = SIDES.map(|side| find(cells, std_rw, Some(side)));
    let mut table = Table::new(
        "uncontended, reader-writer locks: one thread, read pair (lock shared, read two \
         counters, unlock) and write pair (lock exclusive, increment both, unlock)",
        &[
            "rwlock",
            "read ns/pair median [min–max]",
            "vs std-rw",
            "write ns/pair median [min–max]",
            "vs std-rw",
        ],
    );
    let mut names: Vec<&str> = cells.iter().map(|cell| cell.lock).collect();
    names.dedup();
    for name in names {
        let mut row = vec![verdict::label(name).to_owned()];
        for (side, std) in SIDES.into_iter().zip(std) {
            let cell = find(cells, name, Some(side));
            row.push(cell.map_or_else(|| "-".to_owned(), |cell| cell.long(num)));
            row.push(cell.map_or_else(|| "-".to_owned(), |cell| against(cell, std, ledger)));
        }
        table.row(row);
    }
    table
}

/// The cell of `lock` on `side`, if measured.
fn find<'a>(cells: &[&'a Cell], lock: &str, side: Option<Role>) -> Option<&'a Cell> {
    cells
        .iter()
        .copied()
        .find(|cell| cell.lock == lock && cell.layout == side.map(label))
}

/// `cell` against the reference's (std's) cell, recorded in `ledger`; `-` for the
/// reference itself or without one.
fn against(cell: &Cell, reference: Option<&Cell>, ledger: &mut Ledger) -> String {
    let Some(reference) = reference.filter(|r| r.lock != cell.lock) else {
        return "-".to_owned();
    };
    let judged = verdict::judge(
        &cell.log_throughputs(),
        &reference.log_throughputs(),
        Settings::default(),
    );
    judged.map_or_else(
        || "-".to_owned(),
        |judgement| {
            let side = cell.layout.map_or(String::new(), |side| format!(" {side}"));
            ledger.add(format!("{}{side}", cell.lock), judgement);
            judgement.to_string()
        },
    )
}

/// Bars: one chart of the mutexes, one per reader-writer layout.
const CHART: Chart = Chart {
    panel: |cell, _| {
        Some(match cell.layout.unwrap_or_default() {
            "" => Panel::new("", "uncontended: one thread, lock + unlock"),
            layout => Panel::new(
                figures::slug(layout),
                format!("uncontended: one thread, reader-writer locks, {layout} pairs"),
            ),
        })
    },
    kind: Kind::Bars,
};

scenario! {
    takes: Both,
    chart: CHART,
    configure: |args, common| Ok(Config::new(args, common)),
    tables: |_, cells, _| tables(cells),
}
