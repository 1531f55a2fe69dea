//! Seed 002: K threads, each taking only its OWN lock, so no lock is ever contended.
//! "packed" puts the K `lock_api::Mutex<L, u64>` side by side in one array (one cache
//! line): each acquisition steals the line from the threads working on the others,
//! which is false sharing. "padded" uses `lock_api::Mutex<klocks::Padded<L>, u64>`:
//! every lock alone on its line, its counter on the next.

use std::time::Duration;

use crossbeam_utils::CachePadded;
use klocks::Padded;
use lock_api::{Mutex, RawMutex};

use crate::adaptive::Adaptive;
use crate::harness::rounds::{rounds, Plan};
use crate::harness::stats::{self, Counting, Counts};
use crate::html_report::figures::{Chart, Kind, Panel, Threads};
use crate::harness::watch::{self, CellWatch, Conditions};
use crate::harness::{race, verify_count, Common, Error};
use crate::locks::{LockName, RawLockVisitor};
use crate::cells::{si, Cell, Progress, Run, Table};

/// Most threads (locks) the packed array holds: 8 slots of 16 bytes fill the 128
/// bytes of one `CachePadded` block (a pair of 64-byte lines on x86-64).
pub const MAX_THREADS: usize = 8;

/// Seed 002: per-thread locks packed in one cache line vs padded, ops/s
///
/// K threads each increment their OWN counter under their OWN lock, so no lock
/// is contended; only the cache line is. "packed": the K lock_api::Mutex<L, u64>
/// sit side by side in one cache line; "padded": lock_api::Mutex<klocks::Padded<L>,
/// u64>, each lock alone on its line. Reports total ops/s for both layouts and
/// the gain from padding, with the c2c placement probed around each K's row,
/// whose cells run interleaved (marks * and ! as in loop). Runs the lock_api raw locks (klocks, spin, parking_lot);
/// std and glibc cannot be wrapped by Padded and are skipped.
/// Verified: every counter must equal its own thread's operation count.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Thread counts K (each thread has its own lock), comma-separated, at most 8
    /// [default: 2]
    #[arg(long, value_delimiter = ',', value_name = "K,...",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
              .range(1..=MAX_THREADS as u64))]
    pub threads: Vec<usize>,

    /// How long each run hammers, in milliseconds [default: 500]
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub duration_ms: Option<u64>,
}

/// Default K: two threads, as many as this machine has CPUs.
const THREADS: usize = 2;
/// Default run length.
const DURATION_MS: u64 = 500;
/// The default suite's run length: eleven raw locks × two layouts × --runs add up
/// (the padded layout's gain was 5.6–7.1× at 100 ms and 5.8–7.0× at 250 ms, one quiet
/// 2-CPU run each).
const SUITE_DURATION_MS: u64 = 100;

/// Packed or padded.
#[derive(Debug, Clone, Copy)]
enum Layout {
    Packed,
    Padded,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Layout::Packed => "packed",
            Layout::Padded => "padded",
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    locks: Vec<LockName>,
    skipped: Vec<LockName>,
    threads: Vec<usize>,
    duration: Duration,
    runs: u32,
    stats: bool,
    adaptive: Adaptive,
}

/// Answers whether a lock is a `lock_api` raw lock.
struct IsRaw;

impl RawLockVisitor for IsRaw {
    type Output = ();
    fn visit<L: RawMutex + Send + Sync + 'static>(self, _: &'static str) {}
}

impl Config {
    /// From the command line; locks that `Padded` cannot wrap are skipped.
    pub fn new(args: &Args, common: &Common) -> Self {
        let (locks, skipped) = common
            .locks()
            .into_iter()
            .partition(|lock| lock.visit_raw(IsRaw).is_some());
        Self {
            locks,
            skipped,
            threads: match args.threads.is_empty() {
                true => vec![THREADS],
                false => args.threads.clone(),
            },
            duration: Duration::from_millis(args.duration_ms.unwrap_or(DURATION_MS)),
            runs: common.runs,
            stats: common.stats,
            adaptive: common.adaptive.clone(),
        }
    }

    /// The default suite's share: the defaults with [`SUITE_DURATION_MS`] runs (the
    /// scenario's own with --seed-scale).
    pub fn suite(common: &Common) -> Self {
        let args = Args {
            duration_ms: (!common.seed_scale).then_some(SUITE_DURATION_MS),
            ..Args::default()
        };
        Self::new(&args, common)
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        (self.locks.len() * self.threads.len() * 2) as u64
    }
}

/// Measures both layouts for every lock and K, K outermost; within a row every
/// (lock, layout) cell takes its turn, one run each per round ([`rounds`]), under one
/// [`CellWatch`]. No verdict drives extra rounds here: the tables compare layouts, not
/// locks against their peers.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    let slots: Vec<(LockName, Layout)> = config
        .locks
        .iter()
        .flat_map(|&lock| [Layout::Packed, Layout::Padded].map(|layout| (lock, layout)))
        .collect();
    let mut cells = Vec::new();
    for &threads in &config.threads {
        progress.start(format!("false-sharing K={threads}"));
        // The line moving between CPUs is the cost measured: its price depends on
        // where the host placed the vCPUs, so the cells record it.
        let watch = (threads > 1).then(CellWatch::start).transpose()?;
        let plan = Plan {
            runs: config.runs,
            adaptive: &config.adaptive,
            drives: Vec::new(),
            row: format!("false-sharing, K={threads}"),
            lower_is_better: false,
        };
        // Both layouts of a lock share its type: each run counts on its own.
        let mut counted: Vec<Option<Counts>> = vec![None; slots.len()];
        let measured = rounds(slots.len(), &plan, |at, index| {
            let (lock, layout) = slots[at];
            progress.start(format!(
                "false-sharing {} {} K={threads}, run {index}",
                lock.name(),
                layout.name()
            ));
            let counting = Counting::start(config.stats);
            let measure = Measure {
                config,
                threads,
                layout,
                index,
            };
            let run = lock.visit_raw(measure).transpose()?;
            stats::add(&mut counted[at], counting.counts(lock.name()));
            Ok(run)
        })?;
        let conditions = watch.map(CellWatch::finish).transpose()?;
        let results = measured.results.into_iter().zip(counted);
        for (&(lock, layout), (runs, counts)) in slots.iter().zip(results) {
            cells.push(Cell {
                conditions: conditions.clone(),
                stats: counts,
                repeated: measured.repeated.clone(),
                ..Cell::of_runs(
                    "false-sharing",
                    lock.name(),
                    threads,
                    Some(layout.name()),
                    "ops/s",
                    runs,
                )
            });
            progress.done();
        }
    }
    Ok(cells)
}

/// Measures one run of one cell.
struct Measure<'a> {
    config: &'a Config,
    threads: usize,
    layout: Layout,
    index: u32,
}

impl RawLockVisitor for Measure<'_> {
    type Output = Result<Run, Error>;

    fn visit<L: RawMutex + Send + Sync + 'static>(self, name: &'static str) -> Result<Run, Error> {
        let (threads, duration) = (self.threads, self.config.duration);
        let context = format!(
            "false-sharing: {}, {}, K={threads}, run {}",
            name,
            self.layout.name(),
            self.index
        );
        match self.layout {
            Layout::Packed => packed::<L>(threads, duration, &context),
            Layout::Padded => padded::<L>(threads, duration, &context),
        }
    }
}

/// The first `threads` of `MAX_THREADS` mutexes packed into one 128-byte block.
fn packed<L: RawMutex + Sync>(
    threads: usize,
    duration: Duration,
    context: &str,
) -> Result<Run, Error> {
    let slots: CachePadded<[Mutex<L, u64>; MAX_THREADS]> =
        CachePadded::new(std::array::from_fn(|_| Mutex::new(0)));
    hammer(&slots[..threads], duration, context)
}

/// `threads` mutexes, each lock on its own line.
fn padded<L: RawMutex + Sync>(
    threads: usize,
    duration: Duration,
    context: &str,
) -> Result<Run, Error> {
    let slots: Vec<Mutex<Padded<L>, u64>> = (0..threads).map(|_| Mutex::new(0)).collect();
    hammer(&slots, duration, context)
}

/// Thread i increments `slots[i]` under its lock for `duration`; each counter must
/// equal its own thread's operation count.
fn hammer<R: RawMutex + Sync>(
    slots: &[Mutex<R, u64>],
    duration: Duration,
    context: &str,
) -> Result<Run, Error> {
    let race = race(slots.len(), duration, |me, stop| {
        let slot = &slots[me];
        let mut ops = 0_u64;
        while !stop.requested() {
            *slot.lock() += 1;
            ops += 1;
        }
        ops
    });
    for (me, (slot, &ops)) in slots.iter().zip(&race.results).enumerate() {
        verify_count(|| format!("{context}, thread {me}"), *slot.lock(), ops)?;
    }
    let total: u64 = race.results.iter().sum();
    Ok(Run::timed(
        total as f64 / race.wall.as_secs_f64(),
        race.wall,
        total,
    ))
}

/// Bytes one packed slot takes.
struct SlotSize;

impl RawLockVisitor for SlotSize {
    type Output = usize;
    fn visit<L: RawMutex + Send + Sync + 'static>(self, _: &'static str) -> usize {
        std::mem::size_of::<Mutex<L, u64>>()
    }
}

/// lock | K | packed | padded | gain.
pub fn tables(config: &Config, cells: &[Cell]) -> Vec<Table> {
    let mut table = Table::new(
        format!(
            "false-sharing, seed 002: K threads, each incrementing its own counter under \
             its own lock for {} ms, ops/s (median [min–max] of {} runs)",
            config.duration.as_millis(),
            config.runs
        ),
        &[
            "lock",
            "K",
            "packed B",
            "packed ops/s",
            "padded ops/s",
            "gain",
            "placement",
        ],
    );
    for &threads in &config.threads {
        for lock in &config.locks {
            let find = |layout: Layout| {
                cells.iter().find(|cell| {
                    cell.lock == lock.name()
                        && cell.threads == threads
                        && cell.layout == Some(layout.name())
                })
            };
            let (Some(packed), Some(padded)) = (find(Layout::Packed), find(Layout::Padded)) else {
                continue;
            };
            let gain = packed.summary.zip(padded.summary).map_or_else(
                || "-".to_owned(),
                |(p, q)| format!("{:.2}×", q.median / p.median),
            );
            let bytes = lock.visit_raw(SlotSize).map_or(0, |size| size * threads);
            table.row(vec![
                lock.name().to_owned(),
                threads.to_string(),
                bytes.to_string(),
                packed.long(si),
                padded.long(si),
                gain,
                placements(packed, padded),
            ]);
        }
    }
    watch::explain_marks(&mut table, cells);
    table.note("packed B: bytes the K packed mutexes span (lock + u64 counter each); gain = padded / packed");
    if !config.skipped.is_empty() {
        let names: Vec<&str> = config.skipped.iter().map(|lock| lock.name()).collect();
        table.note(format!(
            "skipped (not lock_api raw locks, so klocks::Padded cannot wrap them): {}",
            names.join(", ")
        ));
    }
    vec![table]
}

/// The placement during the packed and the padded cell: `near`, or `far | near`
/// when they differ.
fn placements(packed: &Cell, padded: &Cell) -> String {
    let place = |cell: &Cell| {
        cell.conditions
            .as_ref()
            .map_or_else(|| "-".to_owned(), Conditions::placement)
    };
    let (packed, padded) = (place(packed), place(padded));
    if packed == padded {
        packed
    } else {
        format!("{packed} | {padded}")
    }
}

/// A chart per layout, against K (threads, each with its own lock).
const CHART: Chart = Chart {
    panel: |cell, _| {
        let layout = cell.layout.unwrap_or_default();
        Some(Panel::new(
            layout,
            format!("false-sharing: K threads, own lock each, {layout}"),
        ))
    },
    kind: Kind::Lines(Threads {
        label: "threads (K locks, one each)",
        count: "K = ",
        ceiling: None,
    }),
};

scenario! {
    takes: Mutexes,
    chart: CHART,
    configure: |args, common| Ok(Config::new(args, common)),
    tables: |config, cells, _| tables(config, cells),
}
