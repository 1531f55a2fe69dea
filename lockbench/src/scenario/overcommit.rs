//! Seed 003: throughput and fairness when runnable threads outnumber CPUs.
//!
//! T threads loop for a fixed window: take the lock, spin `cs` pauses and increment a
//! plain counter inside it, release it, then spin as many pauses outside it (so one
//! thread alone keeps the lock about half busy, and two running threads saturate
//! it). Overcommit ratio r adds (r - 1) × CPUs hog threads that spin without touching
//! any lock, so the lock threads get about 1/r of the machine, as in a VM whose host
//! runs r vCPUs per physical CPU.
//!
//! The clock starts before the start gate opens; at the end of the window the stop
//! flag is raised and only the operations finished before a thread saw it count. The
//! threads then drain: each finishes its operation in flight, and a thread queued on
//! a FIFO lock must still take it once. The drain time is reported; every run is
//! verified (the guarded counter must equal every operation, counted or late).
//!
//! Each run happens in a child process (this binary, re-executed with the hidden
//! `__overcommit-cell` subcommand, printing JSON lines), because a pure FIFO spinlock
//! with dozens of threads on 2 CPUs can take minutes to drain (every handoff to a
//! preempted waiter costs a time slice), and its spinning threads would pollute every
//! later cell. The parent gives the drain a cap, kills the child when it runs out and
//! reports the cell as not finished.

use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::watch::{self, Conditions, Watch};
use super::{join, parse_secs, race_announced, verify_count, Common, Error, Guarded, Stop};
use crate::locks::{BenchLock, LockName, LockVisitor};
use crate::machine;
use crate::report::{
    num, si, Cell, Drain, Overcommit, PerThread, Progress, Run, Summary, Table, Unfinished,
};

/// The hidden subcommand that runs one cell in a child process.
pub const CELL_COMMAND: &str = "__overcommit-cell";

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

/// `lockbench overcommit` options.
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

    /// Measurement window of each run, in milliseconds. Short windows flatter
    /// collapsing FIFO locks (start-up burst) [default: 200; 3000 with --seed-scale]
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub window_ms: Option<u64>,

    /// How long the threads may take to return after the window, in seconds, before
    /// the run's process is killed and the cell reported as "DNF (drain > N s)"
    /// [default: 3]
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub drain_cap_secs: Option<Duration>,
}

/// The defaults: the full grid, with windows short enough for a run of minutes; the
/// seed's windows; the default suite's reduced grid.
const THREADS: &[usize] = &[1, 2, 4, 8, 16, 32, 64, 128];
const CS: &[Cs] = &[Cs::Short, Cs::Medium];
const RATIOS: &[u32] = &[1, 2, 4];
const WINDOW: Duration = Duration::from_millis(200);
const SEED_WINDOW: Duration = Duration::from_secs(3);
const DRAIN_CAP: Duration = Duration::from_secs(3);
const LOCKS: &[LockName] = &[
    LockName::Ticket,
    LockName::PvTicket,
    LockName::QSpinLock,
    LockName::PvQSpinLock,
    LockName::Std,
    LockName::ParkingLot,
    LockName::Pthread,
    LockName::PthreadAdaptive,
    LockName::Spin,
];
const SUITE_THREADS: &[usize] = &[4, 16, 64];
const SUITE_RATIOS: &[u32] = &[1, 2];
const SUITE_WINDOW: Duration = Duration::from_millis(100);
const SUITE_DRAIN_CAP: Duration = Duration::from_secs(1);
const SUITE_LOCKS: &[LockName] = &[
    LockName::Ticket,
    LockName::PvTicket,
    LockName::PvQSpinLock,
    LockName::Std,
    LockName::ParkingLot,
    LockName::Pthread,
];

/// Windows shorter than this flatter collapsing FIFO locks (BENCHMARKS.md).
const TRUSTED_WINDOW: Duration = Duration::from_secs(3);

/// How long a cell process may take to spawn its threads and open its start gate.
const SETUP_CAP: Duration = Duration::from_secs(30);

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    locks: Vec<LockName>,
    threads: Vec<usize>,
    cs: Vec<Cs>,
    ratios: Vec<u32>,
    window: Duration,
    drain_cap: Duration,
    runs: u32,
}

/// `values`, or `default` when it is empty.
fn or_default<T: Clone>(values: &[T], default: &[T]) -> Vec<T> {
    if values.is_empty() { default } else { values }.to_vec()
}

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        let window = args.window_ms.map_or(
            if common.seed_scale {
                SEED_WINDOW
            } else {
                WINDOW
            },
            Duration::from_millis,
        );
        Self {
            locks: common.locks.clone().unwrap_or_else(|| LOCKS.to_vec()),
            threads: or_default(&args.threads, THREADS),
            cs: or_default(&args.cs, CS),
            ratios: or_default(&args.overcommit, RATIOS),
            window,
            drain_cap: args.drain_cap_secs.unwrap_or(DRAIN_CAP),
            runs: common.runs,
        }
    }

    /// The default suite's share: a reduced grid (threads 4,16,64; short cs; ratios 1
    /// and 2; 100 ms windows; six locks; a 1 s drain cap), or the full grid with
    /// --seed-scale.
    pub fn suite(common: &Common) -> Self {
        if common.seed_scale {
            return Self::new(&Args::default(), common);
        }
        Self {
            locks: common.locks.clone().unwrap_or_else(|| SUITE_LOCKS.to_vec()),
            threads: SUITE_THREADS.to_vec(),
            cs: vec![Cs::Short],
            ratios: SUITE_RATIOS.to_vec(),
            window: SUITE_WINDOW,
            drain_cap: SUITE_DRAIN_CAP,
            runs: common.runs,
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        self.grid().len() as u64
    }

    /// Every cell, rows in table order and locks innermost, so that the locks
    /// compared in one row run close together in time.
    fn grid(&self) -> Vec<Setup> {
        self.rows()
            .flat_map(|row| self.locks.iter().map(move |&lock| Setup { lock, row }))
            .collect()
    }

    /// Every row of the tables: threads outermost, then cs, then overcommit ratio.
    fn rows(&self) -> impl Iterator<Item = Row> + '_ {
        self.threads.iter().flat_map(move |&threads| {
            self.cs.iter().flat_map(move |&cs| {
                self.ratios
                    .iter()
                    .map(move |&ratio| Row { threads, cs, ratio })
            })
        })
    }
}

/// A row of the tables: a cell's parameters but the lock.
#[derive(Debug, Clone, Copy)]
struct Row {
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

/// One cell's parameters.
#[derive(Debug, Clone, Copy)]
struct Setup {
    lock: LockName,
    row: Row,
}

impl Setup {
    fn describe(&self) -> String {
        format!(
            "overcommit: {}, {} threads, cs {}, overcommit {}",
            self.lock.name(),
            self.row.threads,
            self.row.cs.name(),
            self.row.ratio
        )
    }
}

/// Measures every cell.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    config
        .grid()
        .into_iter()
        .map(|setup| {
            progress.start(format!(
                "overcommit {} × {} threads, cs {}, {}×",
                setup.lock.name(),
                setup.row.threads,
                setup.row.cs.name(),
                setup.row.ratio
            ));
            let cell = measure(config, setup);
            progress.done();
            cell
        })
        .collect()
}

/// Up to `--runs` runs of one cell; a run that does not drain ends the cell, since
/// every repetition would cost the whole cap again.
fn measure(config: &Config, setup: Setup) -> Result<Cell, Error> {
    let watch = Watch::start()?;
    let mut runs = Vec::new();
    let mut unfinished = None;
    for index in 1..=config.runs {
        match run_once(config, setup, index)? {
            Some(run) => runs.push(run),
            None => {
                unfinished = Some(Unfinished::Undrained {
                    cap_secs: config.drain_cap.as_secs_f64(),
                });
                break;
            }
        }
    }
    let conditions = watch.finish()?;
    let row = setup.row;
    Ok(Cell {
        scenario: "overcommit",
        lock: setup.lock.name(),
        threads: row.threads,
        layout: None,
        unit: "ops/s",
        summary: unfinished
            .is_none()
            .then(|| Summary::of(runs.iter().map(|run| run.value)))
            .flatten(),
        unfinished,
        handoff: None,
        conditions: Some(conditions),
        overcommit: Some(Overcommit {
            cs: row.cs.name(),
            cs_pauses: row.cs.pauses(),
            ratio: row.ratio,
            hogs: row.hogs(),
            window_ms: config.window.as_secs_f64() * 1e3,
        }),
        runs,
    })
}

/// One run in a child process, verified; `None` when it did not drain in time.
fn run_once(config: &Config, setup: Setup, index: u32) -> Result<Option<Run>, Error> {
    let context = format!("{}, run {index}", setup.describe());
    let process = CellProcess::spawn(config, setup, &context)?;
    let Some(measured) = process.result(config.window + config.drain_cap)? else {
        return Ok(None);
    };
    let counted: u64 = measured.counted.iter().sum();
    verify_count(|| context, measured.count, counted + measured.late)?;
    let window = Duration::from_nanos(measured.window_ns);
    Ok(Some(Run {
        value: counted as f64 / window.as_secs_f64(),
        wall_ns: measured.window_ns + measured.drain_ns,
        operations: counted,
        target: None,
        handoffs: None,
        finished: true,
        per_thread: PerThread::of(&measured.counted),
        drain: Some(Drain {
            ms: measured.drain_ns as f64 / 1e6,
            operations: measured.late,
        }),
    }))
}

/// One line of the child's stdout.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
enum Report {
    /// The clock runs and the start gate is opening.
    Started,
    /// Every lock thread has returned.
    Finished(Measured),
}

/// What a cell process measured.
#[derive(Debug, Serialize, Deserialize)]
struct Measured {
    /// The guarded counter once every thread returned.
    count: u64,
    /// Per thread: operations finished inside the window.
    counted: Vec<u64>,
    /// All threads: operations finished after the stop flag.
    late: u64,
    /// From opening the gate to raising the stop flag.
    window_ns: u64,
    /// From raising the stop flag to the last thread returning.
    drain_ns: u64,
}

/// A cell's child process, killed (if still running) and reaped when dropped.
struct CellProcess {
    child: Child,
    lines: Receiver<io::Result<String>>,
    reader: Option<JoinHandle<()>>,
    context: String,
}

impl CellProcess {
    /// Re-executes this binary on one run of `setup`. The child gets this process's
    /// pv spin budget, so that every cell spins the same and none calibrates under
    /// load.
    fn spawn(config: &Config, setup: Setup, context: &str) -> Result<Self, Error> {
        let failed = |what: &str| {
            let what = format!("{context}: {what}");
            move |err| Error::Io(what, err)
        };
        let exe = std::env::current_exe().map_err(failed("finding lockbench's executable"))?;
        let mut child = Command::new(exe)
            .arg(CELL_COMMAND)
            .args(["--lock", setup.lock.name(), "--cs", setup.row.cs.name()])
            .args(["--threads", &setup.row.threads.to_string()])
            .args(["--hogs", &setup.row.hogs().to_string()])
            .args(["--window-ms", &config.window.as_millis().to_string()])
            .env(
                klocks::budget::SPIN_NS_VAR,
                machine::pv_spin_ns().to_string(),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(failed("starting a cell process"))?;
        let (lines, reader) = read_lines(child.stdout.take());
        Ok(Self {
            child,
            lines,
            reader: Some(reader),
            context: context.to_owned(),
        })
    }

    /// Waits for the start, then for the result up to `cap` after it; `None` (and the
    /// child killed) when the cap runs out.
    fn result(mut self, cap: Duration) -> Result<Option<Measured>, Error> {
        match self.next(SETUP_CAP)? {
            Some(Report::Started) => {}
            Some(Report::Finished(_)) => return Err(self.garbled("a result before the start")),
            None => {
                return Err(Error::Child(format!(
                    "{}: the cell process did not open its start gate within {} s",
                    self.context,
                    SETUP_CAP.as_secs()
                )))
            }
        }
        match self.next(cap)? {
            Some(Report::Finished(measured)) => {
                self.exited()?;
                Ok(Some(measured))
            }
            Some(Report::Started) => Err(self.garbled("a second start")),
            None => Ok(None),
        }
    }

    /// The next report, or `None` if none came within `timeout`.
    fn next(&mut self, timeout: Duration) -> Result<Option<Report>, Error> {
        match self.lines.recv_timeout(timeout) {
            Ok(Ok(line)) => serde_json::from_str(&line)
                .map(Some)
                .map_err(|err| self.garbled(&format!("`{line}` ({err})"))),
            Ok(Err(err)) => Err(Error::Io(
                format!("{}: reading the cell process", self.context),
                err,
            )),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => {
                self.exited()?;
                Err(self.garbled("no result"))
            }
        }
    }

    /// Reaps the child; an error unless it exited successfully.
    fn exited(&mut self) -> Result<(), Error> {
        let status = self.child.wait().map_err(|err| {
            Error::Io(
                format!("{}: waiting for the cell process", self.context),
                err,
            )
        })?;
        if status.success() {
            return Ok(());
        }
        Err(Error::Child(format!(
            "{}: the cell process failed ({status}; its message, if any, is above)",
            self.context
        )))
    }

    fn garbled(&self, what: &str) -> Error {
        Error::Child(format!(
            "{}: the cell process reported {what}",
            self.context
        ))
    }
}

impl Drop for CellProcess {
    fn drop(&mut self) {
        // Both fail harmlessly on a child that was already reaped.
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The child is gone, so its stdout is at end of file and the reader returns.
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// Forwards the child's stdout (always piped, so always there) line by line, so the
/// parent can wait with a timeout.
fn read_lines(stdout: Option<ChildStdout>) -> (Receiver<io::Result<String>>, JoinHandle<()>) {
    let (send, lines) = mpsc::channel();
    let reader = thread::spawn(move || {
        for line in stdout
            .into_iter()
            .flat_map(|out| BufReader::new(out).lines())
        {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    (lines, reader)
}

/// The hidden `__overcommit-cell` subcommand: one run of one cell, in this process.
#[derive(Debug, Clone, clap::Args)]
pub struct CellArgs {
    /// The lock
    #[arg(long, value_enum)]
    lock: LockName,

    /// Lock threads
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    threads: usize,

    /// Critical-section length
    #[arg(long, value_enum)]
    cs: Cs,

    /// CPU hog threads
    #[arg(long)]
    hogs: usize,

    /// Measurement window
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    window_ms: u64,
}

/// Runs one cell and prints its reports on stdout, one JSON line each: `started` when
/// the clock runs, then `finished` with the counts (the parent verifies them).
pub fn cell(args: &CellArgs) {
    let measured = args.lock.visit(CellRun(args));
    report(&Report::Finished(measured));
}

/// Prints one report line. A failed write means the parent is gone: nobody is left to
/// tell, and the run still ends by itself after its window.
fn report(report: &Report) {
    let line = serde_json::to_string(report).unwrap_or_else(|err| unreachable!("{err}"));
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// One run, monomorphized for its lock.
struct CellRun<'a>(&'a CellArgs);

impl LockVisitor for CellRun<'_> {
    type Output = Measured;

    fn visit<L: BenchLock>(self) -> Measured {
        let args = self.0;
        let guarded = Guarded::<L>::unlocked();
        let hogs_stop = Stop::new();
        let race = thread::scope(|scope| {
            let hogs: Vec<_> = (0..args.hogs)
                .map(|_| scope.spawn(|| hog(&hogs_stop)))
                .collect();
            let race = race_announced(
                args.threads,
                Duration::from_millis(args.window_ms),
                || report(&Report::Started),
                |me, stop| work(&guarded, me, args.cs.pauses(), stop),
            );
            hogs_stop.request();
            hogs.into_iter().for_each(join);
            race
        });
        // The workers only return once stopped, so `stopped` is always set.
        let window = race.stopped.unwrap_or(race.wall);
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Measured {
            count: guarded.into_count(),
            counted: race.results.iter().map(|t| t.counted).collect(),
            late: race.results.iter().map(|t| t.late).sum(),
            window_ns: nanos(window),
            drain_ns: nanos(race.wall.saturating_sub(window)),
        }
    }
}

/// One thread's operations: inside the window, and finished after the stop flag.
struct Tally {
    counted: u64,
    late: u64,
}

/// A lock thread: critical section, then as long outside the lock, until stopped.
/// An operation that finishes after the thread sees the stop flag is late: it is
/// verified but not counted.
fn work<L: BenchLock>(guarded: &Guarded<L>, me: usize, pauses: u32, stop: &Stop) -> Tally {
    let mut tally = Tally {
        counted: 0,
        late: 0,
    };
    while !stop.requested() {
        guarded.enter_with(me, || pause(pauses));
        if stop.requested() {
            tally.late += 1;
        } else {
            tally.counted += 1;
        }
        pause(pauses);
    }
    tally
}

/// A CPU hog, the load of another VM's vCPU: spins, touching no lock.
fn hog(stop: &Stop) {
    while !stop.requested() {
        std::hint::spin_loop();
    }
}

fn pause(pauses: u32) {
    for _ in 0..pauses {
        std::hint::spin_loop();
    }
}

/// The seed-003 table, all locks, the pvqspinlock bars and the per-cell detail.
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
        "ops/s of all threads in a {} ms window (median of up to {} runs); cs {}, inside \
         the lock and again outside; overcommit r = (r - 1) × {} CPU hog threads",
        config.window.as_millis(),
        config.runs,
        lengths.join(", "),
        machine::online_cpus()
    );
    let mut tables: Vec<Table> = [
        seed_table(config, cells, &scale),
        Some(matrix(config, cells, &scale)),
        bars(config, cells),
    ]
    .into_iter()
    .flatten()
    .collect();
    tables.push(detail(cells));
    for table in &mut tables {
        footnotes(config, table, cells);
    }
    tables
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

/// The median fairness (min ÷ mean per-thread operations) over a cell's runs.
fn fairness(cell: &Cell) -> Option<f64> {
    cell.median_of(|run| run.per_thread.map(|p| p.min_per_mean()))
}

/// `1.23M f0.97`, or `DNF (drain > 3 s)`, with the cell's marks.
fn short(cell: &Cell) -> String {
    match (cell.summary, cell.unfinished) {
        (Some(summary), None) => format!(
            "{} f{}{}",
            si(summary.median),
            fairness(cell).map_or_else(|| "-".to_owned(), |f| format!("{f:.2}")),
            cell.marks()
        ),
        _ => cell.short(si),
    }
}

/// threads | cs | overcommit | base | patched | %gain, when both seed-003 locks ran.
fn seed_table(config: &Config, cells: &[Cell], scale: &str) -> Option<Table> {
    let (base, patched) = (LockName::Ticket, LockName::PvTicket);
    if !(config.locks.contains(&base) && config.locks.contains(&patched)) {
        return None;
    }
    let mut table = Table::new(
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
            "%gain",
        ],
    );
    for row in config.rows() {
        let (Some(b), Some(p)) = (find(cells, base, &row), find(cells, patched, &row)) else {
            continue;
        };
        let gain = b
            .summary
            .zip(p.summary)
            .filter(|(b, _)| b.median > 0.0)
            .map_or_else(
                || "-".to_owned(),
                |(b, p)| format!("{:+.1}%", (p.median / b.median - 1.0) * 100.0),
            );
        let [threads, cs, ratio] = row.labels();
        table.row(vec![threads, cs, ratio, b.short(si), p.short(si), gain]);
    }
    Some(table)
}

/// threads | cs | overcommit | one column per lock.
fn matrix(config: &Config, cells: &[Cell], scale: &str) -> Table {
    let names: Vec<&str> = config.locks.iter().map(|lock| lock.name()).collect();
    let headers: Vec<&str> = ["threads", "cs", "overcommit"]
        .into_iter()
        .chain(names.iter().copied())
        .collect();
    let mut table = Table::new(
        format!(
            "overcommit, all locks: {scale}; f = fairness, the slowest thread's \
             operations ÷ the mean (1.00 = even)"
        ),
        &headers,
    );
    for row in config.rows() {
        let entries = config
            .locks
            .iter()
            .map(|&lock| find(cells, lock, &row).map_or_else(|| "-".to_owned(), short));
        table.row(row.labels().into_iter().chain(entries).collect());
    }
    table
}

/// The peers pvqspinlock must beat under overcommit: the better of the two.
const BAR_PEERS: &[LockName] = &[LockName::ParkingLot, LockName::Pthread];
/// The thread counts the bars cover.
const BAR_THREADS: std::ops::RangeInclusive<usize> = 16..=128;

/// pvqspinlock against the better of parking_lot and pthread, short cs, 16–128
/// threads: throughput ratio and fairness.
fn bars(config: &Config, cells: &[Cell]) -> Option<Table> {
    let pv = LockName::PvQSpinLock;
    let peers: Vec<LockName> = BAR_PEERS
        .iter()
        .copied()
        .filter(|peer| config.locks.contains(peer))
        .collect();
    if !config.locks.contains(&pv) || peers.is_empty() || !config.cs.contains(&Cs::Short) {
        return None;
    }
    let mut table = Table::new(
        "overcommit, bars: pvqspinlock vs the better of parking_lot and pthread (short cs, \
         16–128 threads); f = fairness, min ÷ mean per-thread operations",
        &[
            "threads",
            "overcommit",
            "pvqspinlock",
            "best peer",
            "÷ best",
            "f pvqspinlock",
            "best peer f",
        ],
    );
    let mut versus_best = Vec::new();
    for row in config.rows().filter(|row| row.cs == Cs::Short) {
        if !BAR_THREADS.contains(&row.threads) {
            continue;
        }
        let Some(pv_cell) = find(cells, pv, &row) else {
            continue;
        };
        let peer_cells: Vec<&Cell> = peers.iter().filter_map(|&p| find(cells, p, &row)).collect();
        let best = peer_cells
            .iter()
            .filter_map(|cell| cell.summary.map(|s| (s.median, cell.lock)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let best_fairness = peer_cells
            .iter()
            .filter_map(|cell| fairness(cell))
            .max_by(f64::total_cmp);
        let versus = pv_cell
            .summary
            .zip(best)
            .filter(|(_, (best, _))| *best > 0.0)
            .map(|(pv, (best, _))| pv.median / best);
        versus_best.extend(versus);
        let show = |value: Option<f64>| value.map_or_else(|| "-".to_owned(), |f| format!("{f:.2}"));
        table.row(vec![
            row.threads.to_string(),
            row.ratio.to_string(),
            short(pv_cell),
            best.map_or_else(
                || "-".to_owned(),
                |(ops, lock)| format!("{} {lock}", si(ops)),
            ),
            versus.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}×")),
            show(fairness(pv_cell)),
            show(best_fairness),
        ]);
    }
    if let Some(geomean) = geometric_mean(&versus_best) {
        table.note(format!(
            "pvqspinlock ÷ best peer throughput: geometric mean {geomean:.2}× over {} rows",
            versus_best.len()
        ));
    }
    Some(table)
}

fn geometric_mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty())
        .then(|| (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

/// One row per cell: throughput with its range, fairness both ways, drain, conditions.
fn detail(cells: &[Cell]) -> Table {
    let mut table = Table::new(
        "overcommit, per cell: f min/max = the slowest/fastest thread's operations ÷ the \
         mean; drain = from the stop flag to the last thread returning (medians over the \
         verified runs)",
        &[
            "lock",
            "threads",
            "cs",
            "overcommit",
            "ops/s median [min–max]",
            "f min",
            "f max",
            "drain ms",
            "placement",
            "steal+others ms",
        ],
    );
    let show = |value: Option<f64>, format: fn(f64) -> String| {
        value.map_or_else(|| "-".to_owned(), format)
    };
    for cell in cells {
        let Some(setup) = cell.overcommit else {
            continue;
        };
        let conditions = cell.conditions.as_ref();
        table.row(vec![
            cell.lock.to_owned(),
            cell.threads.to_string(),
            setup.cs.to_owned(),
            setup.ratio.to_string(),
            cell.long(si),
            show(fairness(cell), |f| format!("{f:.2}")),
            show(
                cell.median_of(|run| run.per_thread.map(|p| p.max_per_mean())),
                |f| format!("{f:.2}"),
            ),
            show(cell.median_of(|run| run.drain.map(|d| d.ms)), num),
            conditions.map_or_else(|| "-".to_owned(), Conditions::placement),
            conditions.map_or_else(
                || "-".to_owned(),
                |c| format!("{}+{}", num(c.steal_ms), num(c.others_ms)),
            ),
        ]);
    }
    table
}

fn footnotes(config: &Config, table: &mut Table, cells: &[Cell]) {
    if cells
        .iter()
        .any(|cell| matches!(cell.unfinished, Some(Unfinished::Undrained { .. })))
    {
        table.note(format!(
            "DNF (drain > {} s): after the window the threads were still draining (each \
             waiter queued on a FIFO lock takes it once more, and each handoff to a \
             preempted waiter costs a time slice); the run's process was killed, so \
             nothing of it could be verified and the cell is not repeated",
            config.drain_cap.as_secs_f64()
        ));
    }
    if config.window < TRUSTED_WINDOW {
        table.note(format!(
            "windows under {} s flatter collapsing FIFO locks (their first handoffs \
             happen before the scheduler interleaves the waiters): use --seed-scale or \
             --window-ms 3000 for numbers to quote",
            TRUSTED_WINDOW.as_secs()
        ));
    }
    watch::explain_marks(table, cells);
}
