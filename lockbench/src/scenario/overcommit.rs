//! Seed 003: throughput and fairness when runnable threads outnumber CPUs.
//!
//! T threads loop for a fixed window: take the lock, spin `cs` pauses and increment a
//! plain counter inside it, release it, then spin as many pauses outside it (so one
//! thread alone keeps the lock about half busy, and two running threads saturate
//! it). Overcommit ratio r adds (r - 1) × CPUs hog threads that spin without touching
//! any lock, so the lock threads get about 1/r of the machine, as in a VM whose host
//! runs r vCPUs per physical CPU.
//!
//! The window, the drain, the verification and the child process per run are
//! [`windowed`]'s, shared with mutex-load.

use std::time::Duration;

use klocks::catalog::MutexKind;

use crate::adaptive::Drive;
use crate::html_report::figures::{Chart, Kind, Panel, Threads};
use crate::harness::versus::against_best;
use crate::harness::windowed::{
    self, fairness, or_default, short, show_fairness, Grid, Plan, WindowArgs, Work,
};
use crate::harness::{Common, Error};
use crate::locks::{LockName, ALTERNATIVES, DEFAULT};
use crate::machine;
use crate::cells::{num, si, Cell, Overcommit, Progress, Table};
use crate::verdict::{self, Ledger, Settings};

/// A critical-section length, in `spin_loop()` pauses (run once inside the lock and
/// once outside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Cs {
    /// 10 pauses: about 0.25 µs where a pause costs 24.6 ns (the development VM)
    Short,
    /// 200 pauses: about 5 µs where a pause costs 24.6 ns
    Medium,
}

impl Cs {
    /// Pauses inside the lock (and again outside it).
    pub fn pauses(self) -> u32 {
        match self {
            Cs::Short => 10,
            Cs::Medium => 200,
        }
    }

    /// The name `--cs` accepts.
    pub fn name(self) -> &'static str {
        match self {
            Cs::Short => "short",
            Cs::Medium => "medium",
        }
    }
}

/// Seed 003: throughput and fairness with more runnable threads than CPUs
///
/// For each lock × threads × critical-section length × overcommit ratio, T threads
/// loop for a fixed window: lock; cs pauses and a guarded plain-counter increment;
/// unlock; as many pauses outside the lock (so one thread keeps the lock about half
/// busy and two running threads saturate it). Ratio r adds (r - 1) × CPUs hog
/// threads that spin without touching any lock, so the lock threads get about 1/r
/// of the machine, like a VM overcommitted r times. The clock starts before the
/// start gate opens; only operations finished before a thread sees the stop flag
/// count. Reports throughput (ops/s, all threads), fairness (per-thread
/// operations, min ÷ mean and max ÷ mean) and the drain (stop flag to the last
/// thread returning). Every run happens in a child process: one whose threads do
/// not drain within --drain-cap-secs (a FIFO spinlock with dozens of threads on few
/// CPUs) is killed and its cell reported as "DNF (drain > N s)"; the others are
/// verified: the counter must equal every operation, counted or late. Tables: the
/// seed-003 comparison (base = ticket, patched = pvticket), all locks, the
/// pvqspinlock bars (vs the better of parking_lot and glibc, short cs, 16–128
/// threads), default (`klocks::Mutex`) against the best of std, parking_lot, glibc
/// and glibc-adaptive (throughput ratio and fairness, cell by cell, with their
/// geometric means), default's p99.9 lock wait against the peer with the shortest
/// (one lock call in --wait-every timed, from just before it to just after it
/// returned) and per-cell detail with p50/p99/p99.9/max waits. Default locks: default, ticket, pvticket, qspinlock,
/// pvqspinlock, std, parking_lot, glibc, glibc-adaptive, spin. The full default
/// grid takes several minutes; with --seed-scale (3 s windows) over an hour.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Lock threads per cell, comma-separated [default: 1,2,4,8,16,32,64,128]
    #[arg(long, value_delimiter = ',', value_name = "N,...",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub threads: Vec<usize>,

    /// Critical-section lengths, comma-separated: short = 10 pauses, medium = 200,
    /// inside the lock and again outside it (the tables give the ns) [default:
    /// short,medium]
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LEN,...")]
    pub cs: Vec<Cs>,

    /// Overcommit ratios r, comma-separated: r runs (r - 1) × CPUs hog threads beside
    /// the lock threads, so these get about 1/r of the machine [default: 1,2,4]
    #[arg(long, value_delimiter = ',', value_name = "R,...",
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub overcommit: Vec<u32>,

    #[command(flatten)]
    pub window: WindowArgs,
}

/// The defaults: the full grid, with windows short enough for a run of minutes; the
/// seed's windows; the default suite's reduced grid.
const THREADS: &[usize] = &[1, 2, 4, 8, 16, 32, 64, 128];
const CS: &[Cs] = &[Cs::Short, Cs::Medium];
const RATIOS: &[u32] = &[1, 2, 4];
const WINDOW: Duration = Duration::from_millis(200);
const LOCKS: &[LockName] = &[
    LockName::Klocks(MutexKind::Default),
    LockName::Klocks(MutexKind::Ticket),
    LockName::Klocks(MutexKind::PvTicket),
    LockName::Klocks(MutexKind::QSpinLock),
    LockName::Klocks(MutexKind::PvQSpinLock),
    LockName::Std,
    LockName::ParkingLot,
    LockName::Pthread,
    LockName::PthreadAdaptive,
    LockName::Spin,
];
/// The default suite's thread counts: twice the CPUs of a 2-CPU machine, and 16×
/// (inside the pv bars' range). At 64 threads each gets about one scheduler slice
/// of the suite's 100 ms window, and most locks' fairness read 0.00 there.
const SUITE_THREADS: &[usize] = &[4, 32];
const SUITE_RATIOS: &[u32] = &[1, 2];
const SUITE_WINDOW: Duration = Duration::from_millis(100);
const SUITE_DRAIN_CAP: Duration = Duration::from_secs(1);
const SUITE_LOCKS: &[LockName] = &[
    LockName::Klocks(MutexKind::Default),
    LockName::Klocks(MutexKind::Ticket),
    LockName::Klocks(MutexKind::PvTicket),
    LockName::Klocks(MutexKind::PvQSpinLock),
    LockName::Std,
    LockName::ParkingLot,
    LockName::Pthread,
];

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    plan: Plan,
    threads: Vec<usize>,
    cs: Vec<Cs>,
    ratios: Vec<u32>,
}

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        Self {
            plan: Plan::new(&args.window, common, LOCKS, WINDOW),
            threads: or_default(&args.threads, THREADS),
            cs: or_default(&args.cs, CS),
            ratios: or_default(&args.overcommit, RATIOS),
        }
    }

    /// The default suite's share: a reduced grid ([`SUITE_THREADS`]; short cs; ratios
    /// 1 and 2; 100 ms windows; [`SUITE_LOCKS`]; a 1 s drain cap), or the full grid
    /// with --seed-scale.
    pub fn suite(common: &Common) -> Self {
        if common.seed_scale {
            return Self::new(&Args::default(), common);
        }
        Self {
            plan: Plan {
                locks: common.locks.clone().unwrap_or_else(|| SUITE_LOCKS.to_vec()),
                window: SUITE_WINDOW,
                drain_cap: SUITE_DRAIN_CAP,
                runs: common.runs,
                stats: common.stats,
                adaptive: common.adaptive.clone(),
                wait_every: crate::harness::wait::EVERY,
            },
            threads: SUITE_THREADS.to_vec(),
            cs: vec![Cs::Short],
            ratios: SUITE_RATIOS.to_vec(),
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        windowed::cells(self)
    }
}

impl Grid for Config {
    type Row = Row;
    type Lock = LockName;
    const SCENARIO: &'static str = "overcommit";

    fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Threads outermost, then cs, then overcommit ratio.
    fn rows(&self) -> Vec<Row> {
        self.threads
            .iter()
            .flat_map(|&threads| {
                self.cs.iter().flat_map(move |&cs| {
                    self.ratios
                        .iter()
                        .map(move |&ratio| Row { threads, cs, ratio })
                })
            })
            .collect()
    }

    fn describe(&self, lock: LockName, row: &Row) -> String {
        format!(
            "overcommit: {}, {} threads, cs {}, overcommit {}",
            lock.name(),
            row.threads,
            row.cs.name(),
            row.ratio
        )
    }

    /// cs pauses inside the lock and again outside it, beside the ratio's hogs.
    fn work(&self, row: &Row) -> Work {
        Work {
            threads: row.threads,
            readers: 0,
            inside: row.cs.pauses(),
            outside: row.cs.pauses(),
            hogs: row.hogs(),
        }
    }

    fn annotate(&self, row: &Row, cell: &mut Cell) {
        cell.overcommit = Some(Overcommit {
            cs: row.cs.name(),
            cs_pauses: row.cs.pauses(),
            ratio: row.ratio,
            hogs: row.hogs(),
            window_ms: self.plan.window.as_secs_f64() * 1e3,
        });
    }

    /// Default against the best peer, and seed 003's pvticket against ticket.
    fn drives(&self) -> Vec<Drive> {
        let locks = &self.plan.locks;
        let seed = Drive::pair(
            locks,
            &LockName::Klocks(MutexKind::PvTicket),
            &LockName::Klocks(MutexKind::Ticket),
        );
        [Drive::best_peer(locks, &DEFAULT, &ALTERNATIVES), seed]
            .into_iter()
            .flatten()
            .collect()
    }
}

/// A row of the tables: a cell's parameters but the lock.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    threads: usize,
    cs: Cs,
    ratio: u32,
}

impl Row {
    /// CPU hogs for this ratio: (r - 1) × online CPUs.
    fn hogs(&self) -> usize {
        (self.ratio as usize - 1) * machine::online_cpus()
    }

    fn labels(&self) -> [String; 3] {
        [
            self.threads.to_string(),
            self.cs.name().to_owned(),
            self.ratio.to_string(),
        ]
    }
}

/// Measures every cell, each run in its own process.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    windowed::run(config, progress)
}

/// The seed-003 table, all locks, the pvqspinlock bars, default against the peers and
/// the per-cell detail.
pub fn tables(config: &Config, cells: &[Cell], pause_ns: f64) -> Vec<Table> {
    let lengths: Vec<String> = config
        .cs
        .iter()
        .map(|cs| {
            let us = f64::from(cs.pauses()) * pause_ns / 1e3;
            format!("{} = {} pauses ≈ {} µs", cs.name(), cs.pauses(), num(us))
        })
        .collect();
    let scale = format!(
        "{}; cs {}, inside the lock and again outside; overcommit r = (r - 1) × {} CPU \
         hog threads",
        config.plan.scale("ops/s"),
        lengths.join(", "),
        machine::online_cpus()
    );
    let [versus, fairness, wait] = default_versus_peers(config, cells, &scale);
    let tables = [
        seed_table(config, cells, &scale),
        Some(matrix(config, cells, &scale)),
        bars(config, cells),
        versus,
        fairness,
        wait,
        Some(windowed::detail(
            "overcommit",
            &["threads", "cs", "overcommit"],
            cells,
            |cell| {
                let setup = cell.overcommit?;
                Some(vec![
                    cell.threads.to_string(),
                    setup.cs.to_owned(),
                    setup.ratio.to_string(),
                ])
            },
            ("ops/s", si),
        )),
    ];
    windowed::with_footnotes(tables, cells, &config.plan)
}

fn find<'a>(cells: &'a [Cell], lock: LockName, row: &Row) -> Option<&'a Cell> {
    cells.iter().find(|cell| {
        cell.lock == lock.name()
            && cell.threads == row.threads
            && cell
                .overcommit
                .is_some_and(|o| o.cs == row.cs.name() && o.ratio == row.ratio)
    })
}

/// threads | cs | overcommit | base | patched | patched vs base, when both seed-003
/// locks ran.
fn seed_table(config: &Config, cells: &[Cell], scale: &str) -> Option<Table> {
    let (base, patched) = (
        LockName::Klocks(MutexKind::Ticket),
        LockName::Klocks(MutexKind::PvTicket),
    );
    if !(config.plan.locks.contains(&base) && config.plan.locks.contains(&patched)) {
        return None;
    }
    let rows = config.rows().into_iter().filter_map(|row| {
        let b = find(cells, base, &row)?;
        let p = find(cells, patched, &row)?;
        Some((row.labels().to_vec(), b, p))
    });
    Some(windowed::comparison(
        format!(
            "overcommit, seed 003 (base = {}, patched = {}): {scale}",
            base.name(),
            patched.name()
        ),
        &[
            "threads",
            "cs",
            "overcommit",
            "base ops/s",
            "patched ops/s",
        ],
        (base.name(), patched.name()),
        rows,
        |cell| cell.short(si),
    ))
}

/// threads | cs | overcommit | one column per lock.
fn matrix(config: &Config, cells: &[Cell], scale: &str) -> Table {
    let rows = config.rows().into_iter().map(|row| {
        let row_cells = config.plan.locks.iter().map(|&l| find(cells, l, &row));
        (row.labels().to_vec(), row_cells.collect())
    });
    windowed::matrix(
        format!("overcommit, all locks: {scale}"),
        &["threads", "cs", "overcommit"],
        &config.plan.locks,
        rows,
        si,
    )
}

/// default (`klocks::Mutex`) against the best of the peers that ran, cell by cell:
/// throughput, fairness, then the tail of the waits.
fn default_versus_peers(config: &Config, cells: &[Cell], scale: &str) -> [Option<Table>; 3] {
    let rows: Vec<windowed::VersusRow> = config
        .rows()
        .into_iter()
        .filter_map(|row| {
            let ours = find(cells, DEFAULT, &row)?;
            let peers = ALTERNATIVES.iter().filter_map(|&p| find(cells, p, &row)).collect();
            Some((row.labels().to_vec(), ours, peers))
        })
        .collect();
    windowed::versus_peers(
        format!(
            "overcommit, {} against the best of the peers that ran: {scale}",
            verdict::titled(DEFAULT.name())
        ),
        &["threads", "cs", "overcommit"],
        DEFAULT.name(),
        &rows,
        si,
    )
}

/// The peers pvqspinlock must beat under overcommit: the better of the two.
const BAR_PEERS: &[LockName] = &[LockName::ParkingLot, LockName::Pthread];
/// The thread counts the bars cover.
const BAR_THREADS: std::ops::RangeInclusive<usize> = 16..=128;

/// pvqspinlock against the better of parking_lot and glibc, short cs, 16–128
/// threads: throughput ratio and fairness.
fn bars(config: &Config, cells: &[Cell]) -> Option<Table> {
    let pv = LockName::Klocks(MutexKind::PvQSpinLock);
    let peers: Vec<LockName> = BAR_PEERS
        .iter()
        .copied()
        .filter(|peer| config.plan.locks.contains(peer))
        .collect();
    if !config.plan.locks.contains(&pv) || peers.is_empty() || !config.cs.contains(&Cs::Short) {
        return None;
    }
    let pv_fairness = format!("f {}", pv.name());
    let judged = format!("{} vs best", pv.name());
    let peer_names: Vec<&str> = BAR_PEERS.iter().map(|peer| peer.name()).collect();
    let mut table = Table::new(
        format!(
            "overcommit, bars: {} vs the better of {} (short cs, {}–{} threads); f = \
             fairness, min ÷ mean per-thread operations",
            pv.name(),
            peer_names.join(" and "),
            BAR_THREADS.start(),
            BAR_THREADS.end()
        ),
        &[
            "threads",
            "overcommit",
            pv.name(),
            "best peer",
            &judged,
            &pv_fairness,
            "best peer f",
        ],
    );
    let mut ledger = Ledger::default();
    for row in config.rows().into_iter().filter(|row| row.cs == Cs::Short) {
        if !BAR_THREADS.contains(&row.threads) {
            continue;
        }
        let Some(pv_cell) = find(cells, pv, &row) else {
            continue;
        };
        let peer_cells: Vec<&Cell> = peers.iter().filter_map(|&p| find(cells, p, &row)).collect();
        let best = against_best(pv_cell, peer_cells.iter().copied(), Settings::default());
        if let Some((_, judgement)) = best {
            ledger.add(format!("threads {}, overcommit {}", row.threads, row.ratio), judgement);
        }
        table.row(vec![
            row.threads.to_string(),
            row.ratio.to_string(),
            short(pv_cell, si),
            best.map_or_else(
                || "-".to_owned(),
                |(cell, _)| match cell.summary {
                    Some(s) => format!("{} {}", si(s.median), cell.lock),
                    None => cell.lock.to_owned(),
                },
            ),
            best.map_or_else(|| "-".to_owned(), |(_, j)| j.to_string()),
            show_fairness(fairness(pv_cell)),
            show_fairness(best.and_then(|(cell, _)| fairness(cell))),
        ]);
    }
    for note in ledger.notes(pv.name(), "the best peer", Settings::default()) {
        table.note(note);
    }
    Some(table)
}

/// A chart per critical section and overcommit ratio.
const CHART: Chart = Chart {
    panel: |cell, _| {
        let (cs, ratio) = cell.overcommit.as_ref().map(|o| (&o.cs, o.ratio))?;
        let load = match ratio {
            1 => "no CPU hogs".to_owned(),
            r => format!("{r}× overcommitted"),
        };
        Some(Panel::new(
            format!("{cs}-r{ratio}"),
            format!("overcommit: {cs} cs, {load}"),
        ))
    },
    kind: Kind::Lines(Threads::PLAIN),
};

scenario! {
    takes: Mutexes,
    chart: CHART,
    configure: |args, common| Ok(Config::new(args, common)),
    tables: |config, cells, machine| tables(config, cells, machine.pause_ns),
}
