//! Fixed-window runs in a child process: the harness that overcommit (seed 003),
//! mutex-load (seed 004), rwsem and rw-fair (seed 001) share, and the table pieces
//! they print.
//!
//! T threads loop for a fixed window: take the lock, spin `inside` pauses and
//! increment a plain counter inside it, release it, then spin `outside` pauses.
//! Beside them `hogs` threads may spin without touching any lock (overcommit's
//! stand-in for other VMs' vCPUs). With a reader-writer lock the first `readers`
//! threads take it shared and the others exclusive, around the critical sections of
//! [`super::rw`].
//!
//! The clock starts before the start gate opens; at the end of the window the stop
//! flag is raised and only the operations finished before a thread saw it count. The
//! threads then drain: each finishes its operation in flight, and a thread queued on
//! a FIFO lock must still take it once. The drain time is reported; every run is
//! verified (the guarded counter must equal every operation, counted or late).
//!
//! Each run happens in a child process (this binary, re-executed with the hidden
//! `__window-cell` subcommand, printing JSON lines), because a pure FIFO spinlock
//! with dozens of threads on 2 CPUs can take minutes to drain (every handoff to a
//! preempted waiter costs a time slice), and its spinning threads would pollute every
//! later cell. The parent gives the drain a cap, kills the child when it runs out and
//! reports the cell as not finished.
//!
//! The locks of a row run interleaved: round 1 runs each lock once, then round 2, and
//! so on. Run one lock's repetitions back to back instead and a row compares locks
//! measured minutes apart: in one mutex-load run spinfutex's five runs of 64 threads
//! at load 1 all fell in a "far" vCPU placement (29.9k ops/s) and parking_lot's mostly
//! in a "near" one (34.1k), a 0.88× ratio where other runs measured 1.00–1.12×.

use std::fmt;
use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::rw::{self, RwCounts, RwGuarded};
use super::watch::{self, CellWatch, Conditions};
use super::{
    join, parse_secs, pause, race_announced, verify_count, Common, Error, Guarded, Race, Stop,
    Tallied,
};
use crate::locks::{BenchLock, LockName, LockVisitor};
use crate::machine;
use crate::report::{num, si, Cell, Drain, PerThread, Progress, Run, Table, Unfinished};
use crate::rwlocks::{BenchRwLock, RwLockName, RwLockVisitor};

/// The hidden subcommand that runs one window in a child process.
pub const CELL_COMMAND: &str = "__window-cell";

/// Windows shorter than this flatter collapsing FIFO locks (BENCHMARKS.md).
pub const TRUSTED_WINDOW: Duration = Duration::from_secs(3);

/// The window with --seed-scale: one to trust.
pub const SEED_WINDOW: Duration = TRUSTED_WINDOW;

/// The default drain cap, hundreds of times what the sleeping locks need (about 10 ms
/// for 256 threads on the development VM).
pub const DRAIN_CAP: Duration = Duration::from_secs(3);

/// How long a cell process may take to spawn its threads and open its start gate.
const SETUP_CAP: Duration = Duration::from_secs(30);

/// `--window-ms` and `--drain-cap-secs`, shared by the windowed scenarios.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WindowArgs {
    /// Measurement window of each run, in milliseconds. Short windows flatter
    /// collapsing FIFO locks (start-up burst) [default: 200 for overcommit, 1000 for
    /// mutex-load, 500 for rwsem, 1000 for rw-fair; 3000 with --seed-scale]
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub window_ms: Option<u64>,

    /// How long the threads may take to return after the window, in seconds, before
    /// the run's process is killed and the cell reported as "DNF (drain > N s)"
    /// [default: 3]
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub drain_cap_secs: Option<Duration>,
}

/// A lock a windowed cell can run: a mutex ([`LockName`]) or a reader-writer lock
/// ([`RwLockName`]).
pub trait CellLock: Copy + PartialEq + fmt::Debug + 'static {
    /// The cell subcommand's option that names it.
    const OPTION: &'static str;
    /// Whether its cells split their threads into readers and writers.
    const READER_WRITER: bool;
    /// Its name in tables and on the command line.
    fn name(self) -> &'static str;
}

impl CellLock for LockName {
    const OPTION: &'static str = "--lock";
    const READER_WRITER: bool = false;
    fn name(self) -> &'static str {
        LockName::name(self)
    }
}

impl CellLock for RwLockName {
    const OPTION: &'static str = "--rwlock";
    const READER_WRITER: bool = true;
    fn name(self) -> &'static str {
        RwLockName::name(self)
    }
}

/// What a windowed scenario is configured with besides its rows.
#[derive(Debug, Clone)]
pub struct Plan<L = LockName> {
    /// The locks: one cell each per row.
    pub locks: Vec<L>,
    /// The measurement window of each run.
    pub window: Duration,
    /// How long the threads may take to return after the window.
    pub drain_cap: Duration,
    /// Repetitions per cell.
    pub runs: u32,
}

impl Plan {
    /// From the command line: `--locks`, else `locks`; `--window-ms`, else
    /// [`SEED_WINDOW`] with --seed-scale, else `window`; `--drain-cap-secs`, else
    /// [`DRAIN_CAP`].
    pub fn new(args: &WindowArgs, common: &Common, locks: &[LockName], window: Duration) -> Self {
        let locks = common.locks.clone().unwrap_or_else(|| locks.to_vec());
        Self::with_locks(args, common, locks, window)
    }
}

impl<L: CellLock> Plan<L> {
    /// `locks`, and the rest as in [`Plan::new`].
    pub fn with_locks(args: &WindowArgs, common: &Common, locks: Vec<L>, window: Duration) -> Self {
        Self {
            locks,
            window: match (args.window_ms, common.seed_scale) {
                (Some(ms), _) => Duration::from_millis(ms),
                (None, true) => SEED_WINDOW,
                (None, false) => window,
            },
            drain_cap: args.drain_cap_secs.unwrap_or(DRAIN_CAP),
            runs: common.runs,
        }
    }

    /// `kops/s of all threads in a 1000 ms window (median of up to 3 runs)`, with
    /// `unit` for kops/s.
    pub fn scale(&self, unit: &str) -> String {
        format!(
            "{unit} of all threads in a {} ms window (median of up to {} runs)",
            self.window.as_millis(),
            self.runs
        )
    }
}

/// What a row's threads do, per operation and beside them.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    /// Lock threads.
    pub threads: usize,
    /// Of the lock threads, how many take a reader-writer lock shared (the first
    /// ones; the others take it exclusive); 0 for a mutex.
    pub readers: usize,
    /// `spin_loop()` pauses inside the lock, per operation.
    pub inside: u32,
    /// `spin_loop()` pauses after releasing it, per operation.
    pub outside: u32,
    /// CPU hog threads beside the lock threads.
    pub hogs: usize,
}

/// One cell's work, as the child process runs it.
#[derive(Debug, Clone, Copy)]
struct Spec<L> {
    lock: L,
    work: Work,
    window: Duration,
    drain_cap: Duration,
}

/// A scenario made of windowed cells: its rows (a cell's parameters but the lock)
/// and how a cell of a row runs. [`run`] measures the grid it spans.
pub trait Grid {
    /// A row of the tables.
    type Row: Copy;
    /// The kind of lock its cells run.
    type Lock: CellLock;
    /// The scenario's name, as cells record it.
    const SCENARIO: &'static str;
    /// The locks, window, drain cap and runs.
    fn plan(&self) -> &Plan<Self::Lock>;
    /// Every row, in table order.
    fn rows(&self) -> Vec<Self::Row>;
    /// Names a cell on the progress bar and in errors.
    fn describe(&self, lock: Self::Lock, row: &Self::Row) -> String;
    /// What the threads of a row's cells do.
    fn work(&self, row: &Self::Row) -> Work;
    /// Records the row's parameters in its cell (the scenario's own field).
    fn annotate(&self, row: &Self::Row, cell: &mut Cell);
}

/// Cells `grid` measures.
pub fn cells(grid: &impl Grid) -> u64 {
    (grid.rows().len() * grid.plan().locks.len()) as u64
}

/// Measures every cell, rows in table order. Within a row the locks take turns, one
/// run each per round, so that the host's drift (where it places our vCPUs, what a
/// `pause` costs: both move within seconds here) falls on every lock of the row
/// alike; one [`CellWatch`] spans the row, and each of its cells carries its conditions.
pub fn run<G: Grid>(grid: &G, progress: &Progress) -> Result<Vec<Cell>, Error> {
    let plan = grid.plan();
    let mut cells = Vec::new();
    for row in grid.rows() {
        let work = grid.work(&row);
        let watch = CellWatch::start()?;
        let mut series: Vec<Series<G::Lock>> = plan
            .locks
            .iter()
            .map(|&lock| Series::new(lock, grid.describe(lock, &row)))
            .collect();
        for round in 1..=plan.runs {
            for one in series.iter_mut().filter(|one| one.unfinished.is_none()) {
                let context = format!("{}, run {round}", one.describe);
                progress.start(context.clone());
                let spec = Spec {
                    lock: one.lock,
                    work,
                    window: plan.window,
                    drain_cap: plan.drain_cap,
                };
                one.add(run_once(&spec, &context)?, plan.drain_cap);
            }
        }
        let conditions = watch.finish()?;
        for one in series {
            let mut cell = one.into_cell(G::SCENARIO, work.threads, conditions.clone());
            grid.annotate(&row, &mut cell);
            cells.push(cell);
            progress.done();
        }
    }
    Ok(cells)
}

/// One lock's runs in a row.
struct Series<L> {
    lock: L,
    describe: String,
    verified: Vec<Run>,
    /// Set by a run that did not drain: it ends the series, since every repetition
    /// would cost the whole cap again.
    unfinished: Option<Unfinished>,
}

impl<L: CellLock> Series<L> {
    fn new(lock: L, describe: String) -> Self {
        Self {
            lock,
            describe,
            verified: Vec::new(),
            unfinished: None,
        }
    }

    /// A verified run, or `None` for one that did not drain within `drain_cap`.
    fn add(&mut self, run: Option<Run>, drain_cap: Duration) {
        match run {
            Some(run) => self.verified.push(run),
            None => {
                self.unfinished = Some(Unfinished::Undrained {
                    cap_secs: drain_cap.as_secs_f64(),
                })
            }
        }
    }

    /// The cell, without the scenario's own setup field; an unfinished series has no
    /// summary.
    fn into_cell(self, scenario: &'static str, threads: usize, conditions: Conditions) -> Cell {
        let cell = Cell::of_runs(
            scenario,
            self.lock.name(),
            threads,
            None,
            "ops/s",
            self.verified,
        );
        Cell {
            summary: cell.summary.filter(|_| self.unfinished.is_none()),
            unfinished: self.unfinished,
            conditions: Some(conditions),
            ..cell
        }
    }
}

/// `values`, or `default` when it is empty.
pub fn or_default<T: Clone>(values: &[T], default: &[T]) -> Vec<T> {
    if values.is_empty() { default } else { values }.to_vec()
}

/// One run in a child process, verified; `None` when it did not drain in time.
fn run_once<L: CellLock>(spec: &Spec<L>, context: &str) -> Result<Option<Run>, Error> {
    let process = CellProcess::spawn(spec, context)?;
    let Some(measured) = process.result(spec.window + spec.drain_cap)? else {
        return Ok(None);
    };
    let window = Duration::from_nanos(measured.window_ns);
    let counted: u64 = measured.counted.iter().sum();
    let rw = match (L::READER_WRITER, &measured.rw) {
        (false, None) => {
            verify_count(
                || context.to_owned(),
                measured.count,
                counted + measured.late,
            )?;
            None
        }
        (true, Some(counts)) => Some(rw::verify(context, counts, &measured.counted, window)?),
        (true, None) | (false, Some(_)) => {
            return Err(Error::Child(format!(
                "{context}: the cell process reported the wrong kind of lock's counts"
            )))
        }
    };
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
        rw,
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
    /// The guarded counter once every thread returned (a mutex's cell; 0 for a
    /// reader-writer lock's, whose counters are in `rw`).
    count: u64,
    /// Per thread: operations finished inside the window.
    counted: Vec<u64>,
    /// All threads: operations finished after the stop flag.
    late: u64,
    /// From opening the gate to raising the stop flag.
    window_ns: u64,
    /// From raising the stop flag to the last thread returning.
    drain_ns: u64,
    /// A reader-writer lock's cell: the data's counters and the roles' counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rw: Option<RwCounts>,
}

/// A cell's child process, killed (if still running) and reaped when dropped.
struct CellProcess {
    child: Child,
    lines: Receiver<io::Result<String>>,
    reader: Option<JoinHandle<()>>,
    context: String,
}

impl CellProcess {
    /// Re-executes this binary on one run of `spec`. The child gets this process's
    /// pv spin budget, so that every cell spins the same and none calibrates under
    /// load.
    fn spawn<L: CellLock>(spec: &Spec<L>, context: &str) -> Result<Self, Error> {
        let failed = |what: &str| {
            let what = format!("{context}: {what}");
            move |err| Error::Io(what, err)
        };
        let exe = std::env::current_exe().map_err(failed("finding lockbench's executable"))?;
        let mut child = Command::new(exe)
            .arg(CELL_COMMAND)
            .args([L::OPTION, spec.lock.name()])
            .args(["--threads", &spec.work.threads.to_string()])
            .args(["--readers", &spec.work.readers.to_string()])
            .args(["--inside", &spec.work.inside.to_string()])
            .args(["--outside", &spec.work.outside.to_string()])
            .args(["--hogs", &spec.work.hogs.to_string()])
            .args(["--window-ms", &spec.window.as_millis().to_string()])
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

/// The hidden `__window-cell` subcommand: one run of one cell, in this process.
#[derive(Debug, Clone, clap::Args)]
pub struct CellArgs {
    /// The mutex
    #[arg(
        long,
        value_enum,
        required_unless_present = "rwlock",
        conflicts_with = "rwlock"
    )]
    lock: Option<LockName>,

    /// The reader-writer lock
    #[arg(long, value_enum)]
    rwlock: Option<RwLockName>,

    /// Lock threads
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    threads: usize,

    /// Of the threads, how many read (reader-writer locks only; the first ones)
    #[arg(long, default_value_t = 0)]
    readers: usize,

    /// Pauses inside the lock
    #[arg(long)]
    inside: u32,

    /// Pauses outside the lock
    #[arg(long)]
    outside: u32,

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
    let measured = match (args.lock, args.rwlock) {
        (Some(lock), _) => lock.visit(CellRun(args)),
        (None, Some(rwlock)) => rwlock.visit(RwCellRun(args)),
        (None, None) => unreachable!("clap requires --lock or --rwlock"),
    };
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
        let race = race_with_hogs(args, |me, stop| work(&guarded, me, args, stop));
        Measured {
            count: guarded.into_count(),
            ..Measured::of(&race)
        }
    }
}

/// One run of a reader-writer lock, monomorphized for it.
struct RwCellRun<'a>(&'a CellArgs);

impl RwLockVisitor for RwCellRun<'_> {
    type Output = Measured;

    fn visit<L: BenchRwLock>(self) -> Measured {
        let args = self.0;
        assert!(
            args.readers <= args.threads,
            "{} readers among {} threads",
            args.readers,
            args.threads
        );
        let guarded = RwGuarded::<L>::unlocked();
        let race = race_with_hogs(args, |me, stop| {
            let role = if me < args.readers {
                rw::Role::Reader
            } else {
                rw::Role::Writer
            };
            guarded.work(role, args.inside, args.outside, stop)
        });
        Measured {
            rw: Some(guarded.into_counts(args.readers, &race.results)),
            ..Measured::of(&race)
        }
    }
}

impl Measured {
    /// The per-thread counts and the timing of `race`; no lock's counters yet.
    fn of<T: Tallied>(race: &Race<T>) -> Self {
        // The workers only return once stopped, so `stopped` is always set.
        let window = race.stopped.unwrap_or(race.wall);
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Measured {
            count: 0,
            counted: race.results.iter().map(Tallied::counted).collect(),
            late: race.results.iter().map(Tallied::late).sum(),
            window_ns: nanos(window),
            drain_ns: nanos(race.wall.saturating_sub(window)),
            rw: None,
        }
    }
}

impl Tallied for Tally {
    fn counted(&self) -> u64 {
        self.counted
    }
    fn late(&self) -> u64 {
        self.late
    }
}

/// Races the cell's lock threads through `work` for its window, announcing the start
/// on stdout, with the cell's hogs spinning beside them.
fn race_with_hogs<T: Send>(args: &CellArgs, work: impl Fn(usize, &Stop) -> T + Sync) -> Race<T> {
    let hogs_stop = Stop::new();
    thread::scope(|scope| {
        let hogs: Vec<_> = (0..args.hogs)
            .map(|_| scope.spawn(|| hog(&hogs_stop)))
            .collect();
        let race = race_announced(
            args.threads,
            Duration::from_millis(args.window_ms),
            || report(&Report::Started),
            work,
        );
        hogs_stop.request();
        hogs.into_iter().for_each(join);
        race
    })
}

/// One thread's operations: inside the window, and finished after the stop flag.
struct Tally {
    counted: u64,
    late: u64,
}

/// A lock thread: the critical section, then the work outside the lock, until
/// stopped. An operation that finishes after the thread sees the stop flag is late:
/// it is verified but not counted.
fn work<L: BenchLock>(guarded: &Guarded<L>, me: usize, args: &CellArgs, stop: &Stop) -> Tally {
    let mut tally = Tally {
        counted: 0,
        late: 0,
    };
    while !stop.requested() {
        guarded.enter_with(me, || pause(args.inside));
        if stop.requested() {
            tally.late += 1;
        } else {
            tally.counted += 1;
        }
        pause(args.outside);
    }
    tally
}

/// A CPU hog, the load of another VM's vCPU: spins, touching no lock.
fn hog(stop: &Stop) {
    while !stop.requested() {
        std::hint::spin_loop();
    }
}

/// The median fairness (min ÷ mean per-thread operations) over a cell's runs.
pub fn fairness(cell: &Cell) -> Option<f64> {
    cell.median_of(|run| run.per_thread.map(|p| p.min_per_mean()))
}

/// A fairness, or `-`.
pub fn show_fairness(fairness: Option<f64>) -> String {
    fairness.map_or_else(|| "-".to_owned(), |f| format!("{f:.2}"))
}

/// `1.23M f0.97` (the median through `format`), or `DNF (drain > 3 s)`, with the
/// cell's marks.
pub fn short(cell: &Cell, format: fn(f64) -> String) -> String {
    match (cell.summary, cell.unfinished) {
        (Some(summary), None) => format!(
            "{} f{}{}",
            format(summary.median),
            show_fairness(fairness(cell)),
            cell.marks()
        ),
        _ => cell.short(format),
    }
}

/// `+12.3%`: how much more throughput `patched` had than `base`, by their medians.
pub fn change(base: &Cell, patched: &Cell) -> String {
    base.summary
        .zip(patched.summary)
        .filter(|(b, _)| b.median > 0.0)
        .map_or_else(
            || "-".to_owned(),
            |(b, p)| format!("{:+.1}%", (p.median / b.median - 1.0) * 100.0),
        )
}

/// A table row: the row's parameter columns, then the cell of each lock (`None`
/// where it did not run).
pub type MatrixRow<'a> = (Vec<String>, Vec<Option<&'a Cell>>);

/// `label_headers`, then one column per lock of `locks`: `1.23M f0.97` (the median
/// through `format`, and the fairness), `DNF ...`, or `-`.
pub fn matrix<'a, L: CellLock>(
    title: String,
    label_headers: &[&str],
    locks: &[L],
    rows: impl IntoIterator<Item = MatrixRow<'a>>,
    format: fn(f64) -> String,
) -> Table {
    let headers: Vec<&str> = label_headers
        .iter()
        .copied()
        .chain(locks.iter().map(|lock| lock.name()))
        .collect();
    let mut table = Table::new(
        format!(
            "{title}; f = fairness, the slowest thread's operations ÷ the mean (1.00 = \
             even)"
        ),
        &headers,
    );
    for (labels, cells) in rows {
        let entries = cells
            .into_iter()
            .map(|cell| cell.map_or_else(|| "-".to_owned(), |cell| short(cell, format)));
        table.row(labels.into_iter().chain(entries).collect());
    }
    table
}

/// A seed's before/after table: `headers` are the row's parameter columns, then
/// base, patched and change; each row gives its labels and the two cells, shown
/// through `show`.
pub fn comparison<'a>(
    title: String,
    headers: &[&str],
    rows: impl IntoIterator<Item = (Vec<String>, &'a Cell, &'a Cell)>,
    show: impl Fn(&Cell) -> String,
) -> Table {
    let mut table = Table::new(title, headers);
    for (labels, base, patched) in rows {
        let compared = [show(base), show(patched), change(base, patched)];
        table.row(labels.into_iter().chain(compared).collect());
    }
    table
}

/// Among `cells`, the one with the highest median throughput: (ops/s, lock).
pub fn fastest(cells: &[&Cell]) -> Option<(f64, &'static str)> {
    cells
        .iter()
        .filter_map(|cell| cell.summary.map(|s| (s.median, cell.lock)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// Among `cells`, the fairest: (min ÷ mean, lock).
pub fn fairest(cells: &[&Cell]) -> Option<(f64, &'static str)> {
    cells
        .iter()
        .filter_map(|cell| fairness(cell).map(|f| (f, cell.lock)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// One row per cell: `labels` (the cell's parameters, under `label_headers`; `None`
/// skips the cell), throughput in `unit` through `format` with its range, fairness
/// both ways, drain, conditions.
pub fn detail(
    title: &str,
    label_headers: &[&str],
    cells: &[Cell],
    labels: impl Fn(&Cell) -> Option<Vec<String>>,
    (unit, format): (&str, fn(f64) -> String),
) -> Table {
    let throughput = format!("{unit} median [min–max]");
    let headers: Vec<&str> = ["lock"]
        .into_iter()
        .chain(label_headers.iter().copied())
        .chain([
            throughput.as_str(),
            "ops/thread min/mean/max",
            "f min",
            "f max",
            "drain ms",
            "placement",
            "steal+others ms",
        ])
        .collect();
    let mut table = Table::new(
        format!(
            "{title}, per cell: ops/thread = the slowest thread's, the mean and the \
             fastest thread's operations in the window; f min/max = the slowest/fastest \
             thread's operations ÷ the mean; drain = from the stop flag to the last thread returning (medians \
             over the verified runs)"
        ),
        &headers,
    );
    let show = |value: Option<f64>, format: fn(f64) -> String| {
        value.map_or_else(|| "-".to_owned(), format)
    };
    for cell in cells {
        let Some(labels) = labels(cell) else {
            continue;
        };
        let conditions = cell.conditions.as_ref();
        let per_thread = |of: fn(&PerThread) -> f64| {
            show(
                cell.median_of(|run| run.per_thread.as_ref().map(of)),
                operations,
            )
        };
        let measured = [
            cell.long(format),
            format!(
                "{}/{}/{}",
                per_thread(|p| p.min as f64),
                per_thread(|p| p.mean),
                per_thread(|p| p.max as f64)
            ),
            show_fairness(fairness(cell)),
            show_fairness(cell.median_of(|run| run.per_thread.map(|p| p.max_per_mean()))),
            show(cell.median_of(|run| run.drain.map(|d| d.ms)), num),
            conditions.map_or_else(|| "-".to_owned(), Conditions::placement),
            conditions.map_or_else(
                || "-".to_owned(),
                |c| format!("{}+{}", num(c.steal_ms), num(c.others_ms)),
            ),
        ];
        table.row(
            [cell.lock.to_owned()]
                .into_iter()
                .chain(labels)
                .chain(measured)
                .collect(),
        );
    }
    table
}

/// A count of operations: `0`, `214`, `2.46k`.
fn operations(count: f64) -> String {
    if count < 1e3 {
        format!("{count:.0}")
    } else {
        si(count)
    }
}

/// The tables that apply (`None` for one that does not), each with the footnotes its
/// cells call for.
pub fn with_footnotes<L: CellLock>(
    tables: impl IntoIterator<Item = Option<Table>>,
    cells: &[Cell],
    plan: &Plan<L>,
) -> Vec<Table> {
    let mut tables: Vec<Table> = tables.into_iter().flatten().collect();
    for table in &mut tables {
        footnotes(table, cells, plan);
    }
    tables
}

/// The footnotes for undrained cells, short windows and the conditions' marks.
fn footnotes<L: CellLock>(table: &mut Table, cells: &[Cell], plan: &Plan<L>) {
    if cells
        .iter()
        .any(|cell| matches!(cell.unfinished, Some(Unfinished::Undrained { .. })))
    {
        table.note(format!(
            "DNF (drain > {} s): after the window the threads were still draining (each \
             waiter queued on a FIFO lock takes it once more, and each handoff to a \
             preempted waiter costs a time slice); the run's process was killed, so \
             nothing of it could be verified and the cell is not repeated",
            plan.drain_cap.as_secs_f64()
        ));
    }
    if plan.window < TRUSTED_WINDOW && L::READER_WRITER {
        table.note(format!(
            "windows under {} s leave each thread's share to the scheduler's first time \
             slices (with more threads than CPUs, some run late or not at all): use \
             --seed-scale or --window-ms 3000 for numbers to quote",
            TRUSTED_WINDOW.as_secs()
        ));
    } else if plan.window < TRUSTED_WINDOW {
        table.note(format!(
            "windows under {} s flatter collapsing FIFO locks (their first handoffs \
             happen before the scheduler interleaves the waiters): use --seed-scale or \
             --window-ms 3000 for numbers to quote",
            TRUSTED_WINDOW.as_secs()
        ));
    }
    watch::explain_marks(table, cells);
}
