//! lockbench: re-runs the kernel seeds' lock experiments on klocks' userspace ports of
//! the kernel's locks, next to std, parking_lot, glibc and spin.
// The doc comments of the command-line types are clap's help text, printed as
// written: `<L>` there is text, not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

mod locks;
mod machine;
mod report;
mod results;
mod rwlocks;
mod scenario;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{CommandFactory, Parser, Subcommand};

use crate::locks::LockName;
use crate::machine::Machine;
use crate::report::{Cell, Progress, Table};
use crate::results::RunFile;
use crate::rwlocks::RwLockName;
use crate::scenario::{
    app, c2c, false_sharing, loop_, mutex_load, overcommit, owner_probe, rw_fair, rw_mix, rwsem,
    sharded, torture, uncontended, windowed, Common, Error,
};

/// The help's list of locks, from the catalog and the peers' tables.
fn locks_help() -> String {
    let mut help = String::from("Locks (--locks):\n");
    for lock in LockName::defaults() {
        help += &help_entry(lock.name(), lock.about());
    }
    help += "\nReader-writer locks (--rwlocks, for rwsem, rw-fair and rw-mix):\n";
    for lock in RwLockName::defaults() {
        help += &help_entry(lock.name(), lock.about());
    }
    help + LOCKS_HELP_TAIL
}

/// `name` and `about`, wrapped into a column beside it.
fn help_entry(name: &str, about: &str) -> String {
    const INDENT: usize = 23;
    const WIDTH: usize = 86;
    let mut text = format!("  {name:<width$}", width = INDENT - 2);
    let mut column = text.chars().count();
    if column > INDENT {
        text += &format!("\n{:INDENT$}", "");
        column = INDENT;
    }
    let mut first = true;
    for word in about.split(' ') {
        if !first && column + 1 + word.chars().count() > WIDTH {
            text += &format!("\n{:INDENT$}", "");
            column = INDENT;
            first = true;
        }
        if !first {
            text.push(' ');
            column += 1;
        }
        text += word;
        column += word.chars().count();
        first = false;
    }
    text + "\n"
}

const LOCKS_HELP_TAIL: &str = "
FIFO spinlocks (qspinlock*, ticket) collapse when threads outnumber CPUs: the lock is
handed to waiters that are not running. Contended loop runs are therefore capped
(--cap-secs) and reported as \"DNF x%\" instead of hanging; overcommit runs each cell
in a child process and reports one that cannot drain as \"DNF (drain > N s)\". The pv
locks are seed 003's fix: their spin budget (header: \"pv spin\") is calibrated once
per process as one futex sleep-to-wake handoff, or set with KLOCKS_SPIN_NS=<ns>.

Exit status: 0 success, 1 a result failed verification (or an output file could not
be written), 2 usage error.";

/// Re-runs the kernel seeds' lock experiments on klocks (the Linux kernel's lock
/// designs in userspace) next to std, parking_lot, glibc and spin.
///
/// Without a subcommand, runs the default suite (about a minute on a 2-CPU machine):
/// c2c, uncontended, loop (seeds 000 and 003), false-sharing (seed 002) and
/// overcommit (seed 003), printing every table and writing them as charts to
/// lockbench-report/index.html (--report DIR elsewhere). Every cell is repeated --runs times
/// and reported as the median with [min–max]; a loop cell whose run hits its time
/// cap, or an overcommit cell whose threads do not drain in time, is reported as not
/// finished and not repeated. Every run is verified: the lock-protected counters must match
/// the work done, or lockbench prints why on stderr and exits with status 1 without
/// reporting the wrong result. mutex-load (seed 004, several minutes), rwsem and
/// rw-fair (seed 001, reader-writer locks) are not in the suite: run them by name.
#[derive(Debug, Parser)]
#[command(name = "lockbench", version, after_help = locks_help())]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, clap::Args)]
struct GlobalArgs {
    /// Locks to measure, comma-separated [default: all the possible values; overcommit,
    /// mutex-load and sharded run their own sets, see their --help; rwsem, rw-fair and
    /// rw-mix take --rwlocks instead]
    #[arg(
        long,
        global = true,
        value_enum,
        value_delimiter = ',',
        value_name = "LOCK,..."
    )]
    locks: Vec<LockName>,

    /// Reader-writer locks for rwsem, rw-fair and rw-mix, comma-separated [default: all
    /// the possible values]
    #[arg(
        long,
        global = true,
        value_enum,
        value_delimiter = ',',
        value_name = "RWLOCK,..."
    )]
    rwlocks: Vec<RwLockName>,

    /// Repetitions of each cell; tables show the median with [min–max]. A loop cell
    /// whose run hits the cap, or a windowed cell (overcommit, mutex-load, rwsem,
    /// rw-fair) whose run does not drain, is not repeated
    #[arg(long, global = true, default_value_t = 3, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,

    /// Write every cell with all its repetitions, plus machine metadata, as JSON
    #[arg(long, global = true, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Write one CSV row per cell
    #[arg(long, global = true, value_name = "FILE")]
    csv: Option<PathBuf>,

    /// Write the charts of this run as an HTML page and one SVG per chart into DIR
    /// [default for the default suite: lockbench-report]
    #[arg(long, global = true, value_name = "DIR")]
    report: Option<PathBuf>,

    /// Use the seeds' sizes: loop with L = 5000000 pairs per thread, threads 1..8 and
    /// a 60 s cap; uncontended with 5000000 pairs; overcommit with 3 s windows (and
    /// its full grid in the default suite); mutex-load, rwsem and rw-fair with 3 s
    /// windows; explicit options still win
    #[arg(long, global = true)]
    seed_scale: bool,
}

impl GlobalArgs {
    fn common(&self) -> Common {
        Common {
            locks: deduplicated(&self.locks),
            rwlocks: deduplicated(&self.rwlocks),
            runs: self.runs,
            seed_scale: self.seed_scale,
        }
    }
}

/// `names` without repeats, in first-seen order; `None` when none were given.
fn deduplicated<T: Copy + PartialEq>(names: &[T]) -> Option<Vec<T>> {
    let mut unique: Vec<T> = Vec::new();
    for name in names {
        if !unique.contains(name) {
            unique.push(*name);
        }
    }
    (!unique.is_empty()).then_some(unique)
}

#[derive(Debug, Subcommand)]
enum Command {
    /// One thread, no contention: ns per lock + increment + unlock
    ///
    /// One thread takes and releases the lock in a loop, incrementing a counter
    /// inside. Measures the bare cost of an uncontended acquisition and release
    /// (atomic RMWs, fences, function calls), in ns per pair, with the ratio to
    /// std::sync::Mutex. Verified: the counter must equal the iterations.
    Uncontended(uncontended::Args),

    /// Seed 000's loop: N threads × L lock/unlock pairs on one lock, wall ms
    ///
    /// N threads start together from a gate and each does L lock/unlock pairs on one
    /// shared lock; the wall time runs from opening the gate to the last thread
    /// finishing. The critical section increments a plain (non-atomic) counter and
    /// records its owner, so every run counts handoffs (the lock passing to another
    /// thread) and reports ns per handoff and its ratio to the c2c one-way latency
    /// probed before and after the cell. Marks: * the c2c placement (near/far)
    /// changed during the cell; ! steal or other processes took over 5% of the CPU
    /// time; ~ serialized, the threads ran one after another instead of contending.
    /// A run that exceeds --cap-secs is stopped and reported as "DNF x%". Verified: the counter must equal the sum of the
    /// iterations the threads completed. Tables: the seed-000 comparison (before =
    /// qspinlock-cmpxchg, after = qspinlock), the seed-003 one (base = ticket,
    /// patched = pvticket; %gain = base ÷ patched wall - 1) and the same for
    /// qspinlock → pvqspinlock, all locks, and per-cell detail.
    Loop(loop_::Args),

    /// Seed 002: per-thread locks packed in one cache line vs padded, ops/s
    ///
    /// K threads each increment their OWN counter under their OWN lock, so no lock
    /// is contended; only the cache line is. "packed": the K lock_api::Mutex<L, u64>
    /// sit side by side in one cache line; "padded": lock_api::Mutex<klocks::Padded<L>,
    /// u64>, each lock alone on its line. Reports total ops/s for both layouts and
    /// the gain from padding, with the c2c placement probed around each cell (marks *
    /// and ! as in loop). Runs the lock_api raw locks (klocks, spin, parking_lot);
    /// std and pthread cannot be wrapped by Padded and are skipped.
    /// Verified: every counter must equal its own thread's operation count.
    FalseSharing(false_sharing::Args),

    /// Core-to-core latency: one cache line bounced between two pinned threads
    ///
    /// Two threads pinned to the first two CPUs this process may use pass a counter
    /// back and forth on one cache line, each waiting for its parity and answering
    /// with the next value. One-way latency = elapsed / (2 × round trips). On a VM the
    /// result depends on where the host placed the two vCPUs ("near" ≤ 80 ns, "far"
    /// above). Skipped on a single CPU. Verified: the line must end at 2 × round trips.
    C2c(c2c::Args),

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
    /// pvqspinlock bars (vs the better of parking_lot and pthread, short cs, 16–128
    /// threads) and per-cell detail. Default locks: default, ticket, pvticket, qspinlock,
    /// pvqspinlock, std, parking_lot, pthread, pthread-adaptive, spin. The full default
    /// grid takes several minutes; with --seed-scale (3 s windows) over an hour.
    Overcommit(overcommit::Args),

    /// Seed 004: throughput and fairness against the critical section's length
    ///
    /// Waiman Long's spinning-futex RFC (2014) timed a userspace mutex loop (lock; load
    /// pause instructions; unlock) with 2, 10 and 256 threads and loads of 1, 10, 50 and
    /// 100 pauses, and compared the waiting futex (the "before": a waiter sleeps at
    /// once) with the spinning futex (the "after": a waiter spins while the owner
    /// runs). For each lock × threads × load, T threads run that loop for a fixed
    /// window with no work outside the lock, as in the seed (--outside-pauses adds
    /// some); the critical section also increments a plain counter only the lock
    /// protects. The clock starts before the start gate opens; only operations
    /// finished inside the window count. Reports throughput in kops/s (all threads)
    /// and fairness f = the slowest thread's operations ÷ the mean (per-thread
    /// min/mean/max in --json); each load is also given in ns, from the pause measured
    /// at start-up (header: "pause").
    ///
    /// Every run happens in a child process: one whose threads do not drain within
    /// --drain-cap-secs is killed and its cell reported as "DNF (drain > N s)"; the
    /// others are verified: the counter must equal every operation, counted or late.
    ///
    /// Tables: the seed-004 comparison (base = futex, patched = spinfutex, %change);
    /// all locks (kops/s with f); the spinfutex bars; per-cell detail (range, f
    /// min/max, drain, c2c placement, foreign CPU time). The bars give each cell's
    /// ceiling, 1 ÷ (load × pause ns) critical sections per second, since no lock runs
    /// two at once; where the critical section is shorter than two cache-line
    /// transfers (load 1) the lock's own handoff bounds the cell instead (marked †).
    /// Then spinfutex as a % of the ceiling, the best peer (std, parking_lot, pthread,
    /// pthread-adaptive) and spinfutex ÷ best peer, spinfutex ÷ futex, the fairness of
    /// spinfutex and of the fairest peer, and a count of the cells where spinfutex ≥
    /// the best peer, with the lowest ratio.
    ///
    /// Default locks: futex, spinfutex, pvqspinlock, std, parking_lot, pthread,
    /// pthread-adaptive. The default grid (threads 2,10,64,256 × loads 1,10,50,100 × 7
    /// locks, 1 s windows, 3 runs) takes about six minutes on 2 CPUs; it is not part of
    /// the default suite.
    MutexLoad(mutex_load::Args),

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
    Rwsem(rwsem::Args),

    /// Seed 001's fairness check: R dedicated readers + W writers, does any starve?
    ///
    /// For each reader-writer lock and each R+W group (--groups, default 8+8,40+40),
    /// R reader threads and W writer threads loop lock; load; unlock on one lock for a
    /// fixed window (load default 1 pause), with the same verified critical sections
    /// and child processes as rwsem. Reports per lock and group, in the seed's format,
    /// "40 readers, Iterations Min/Mean/Max = a/b/c" and the same for the writers
    /// (each thread's sections in the window), each role's min ÷ mean, and the
    /// average reader group (reads ÷ read phases). Then the bars for the three rwsem
    /// policies: whether every reader and every writer reached 25% of its role's
    /// mean in every run (no starvation), and each role's mean ÷ the best policy's;
    /// a note gives seed 001's bar, rwsem-adaptive at 40+40. Marks * and ! as in
    /// rwsem. Default: 7 locks × 2 groups, 1 s windows, 3 runs: about a minute.
    RwFair(rw_fair::Args),

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
    OwnerProbe(owner_probe::Args),

    /// Torture: the kernel's locktorture in userspace. Threads loop on one lock for
    /// --secs per lock while faults are injected (long holds, yields and sleeps inside
    /// the critical section, stutter, CPU shuffling, thread exit and re-creation,
    /// signals); every critical section checks mutual exclusion, the counters are
    /// checked for lost updates at the end, and an acquisition waiting longer than
    /// --starvation-ms fails the run. Mutexes from --locks [default: every lock that
    /// sleeps or yields], reader-writer locks from --rwlocks [default: all]. Prints a
    /// table; exit status 1 if any lock failed. --minutes N is the soak run. The
    /// deliberately broken lock (hidden from the lists) must fail.
    Torture(torture::Args),

    /// An unmodified program under each klocks lock (LD_PRELOAD), against glibc
    ///
    /// Runs `CMD ARGS` as it is (glibc's pthread locks) and under
    /// LD_PRELOAD=libklocks.so KLOCKS_LOCK=<lock> for each --with lock, --runs rounds,
    /// interleaved. Reports wall time and, with --metric, a throughput the command
    /// prints, as median [min–max] and speed relative to glibc. Verified: every run
    /// must exit 0 and print the same stdout as the first glibc run (unless
    /// --output-varies), and no preloaded run may report that the preload failed or
    /// fell back to glibc. Needs libklocks.so: `cargo build --release -p klocks-ffi`.
    /// --locks and --rwlocks do not apply (use --with and --rwlock).
    App(app::Args),

    /// A hash map of mutexes: T threads × random operations on K locks, wall ms
    ///
    /// T threads each do --ops operations, each on a lock picked at random among K
    /// (--shards: 1, 2, 64 and 1000 by default), as a sharded map or a per-bucket
    /// cache does: a short critical section (--cs-pauses) increments that lock's
    /// counter, and some work follows outside (--outside-pauses). The K locks sit
    /// packed beside their counters, as in a Vec<Mutex<u64>>. Wall time from the start
    /// gate to the last thread's end; the locks of a row run interleaved, --runs
    /// times. Verified: the counters must add up to T × ops. Table: wall ms per lock
    /// and, with default among the locks, its ratio to the best of std, parking_lot,
    /// pthread and pthread-adaptive. Default locks: default, spinfutex, pvqspinlock and
    /// those four; threads 2,8,32.
    Sharded(sharded::Args),

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
    RwMix(rw_mix::Args),

    /// The default suite: c2c, uncontended, loop, false-sharing, overcommit (about a
    /// minute)
    ///
    /// What lockbench runs without a subcommand: every scenario with its defaults,
    /// except loop with a 1 s cap, false-sharing with 250 ms runs and overcommit on a
    /// reduced grid (threads 4,16,64;
    /// short cs; overcommit 1,2; 100 ms windows; 1 s drain cap; default, ticket,
    /// pvticket, pvqspinlock, std, parking_lot, pthread). Scaled by --seed-scale (then loop and
    /// overcommit run their full seed-scale grids), restricted by --locks, repeated
    /// --runs times. Not included: mutex-load (several minutes; run it by name).
    Suite,

    /// Charts from --json files: one HTML page and one SVG per chart
    ///
    /// Reads the result files lockbench wrote with --json and draws, per scenario, the
    /// chart that fits it: throughput or wall time against threads with one line per
    /// lock (loop, overcommit, sharded; mutex-load per load with the serialisation
    /// ceiling; rwsem per load; rw-mix per read fraction), the runs' min–max as error
    /// bars and cells that did not finish as a DNF cross on the top edge; fairness
    /// (slowest thread ÷ mean) as a second chart wherever it was measured; rw-fair as
    /// each lock's per-thread range per role; uncontended as bars. The page shows
    /// each file's machine and command, needs no network, and links each SVG.
    Report(ReportArgs),

    /// Compares two --json files cell by cell: B against A
    ///
    /// For each cell both files hold (same scenario, setup, lock and threads): both
    /// medians with their [min–max], how much better B is, and whether the change is
    /// real, which it is only when the two min–max ranges do not overlap (or one
    /// file's cell did not finish). With --fail-on-regression PCT, exits with status 1
    /// when a real change makes a cell worse by more than PCT percent, so a lock
    /// change can be guarded in CI. A machine drifts between runs, moving every lock
    /// together: --relative-to std (or any lock that did not change) first divides
    /// each cell by that lock's cell of its own run.
    Compare(CompareArgs),

    /// Runs one window of one cell in this process (the windowed scenarios' child
    /// processes)
    #[command(name = windowed::CELL_COMMAND, hide = true)]
    WindowCell(windowed::CellArgs),
}

#[derive(Debug, clap::Args)]
struct ReportArgs {
    /// Result files written with --json
    #[arg(required = true, value_name = "RUN.json")]
    files: Vec<PathBuf>,

    /// The directory to write index.html and the SVG files into
    #[arg(short, long, value_name = "DIR", default_value = "lockbench-report")]
    out: PathBuf,
}

#[derive(Debug, clap::Args)]
struct CompareArgs {
    /// The baseline result file (--json)
    #[arg(value_name = "A.json")]
    a: PathBuf,

    /// The result file to judge against it
    #[arg(value_name = "B.json")]
    b: PathBuf,

    /// Exit with status 1 if a real change makes a cell worse by more than PCT percent
    #[arg(long, value_name = "PCT", value_parser = percentage)]
    fail_on_regression: Option<f64>,

    /// Compare each cell as a ratio to LOCK's cell of the same scenario, setup and
    /// threads in the same file (a lock that did not change between A and B, e.g.
    /// std), so that a machine that got faster or slower between the runs cancels out
    #[arg(long, value_name = "LOCK")]
    relative_to: Option<String>,
}

/// A percentage from 0 to 1000.
fn percentage(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(pct) if (0.0..=1000.0).contains(&pct) => Ok(pct),
        _ => Err(format!("`{text}` is not a percentage from 0 to 1000")),
    }
}

/// One scenario, configured.
enum Step {
    C2c(c2c::Config),
    Uncontended(uncontended::Config),
    Loop(loop_::Config),
    FalseSharing(false_sharing::Config),
    Overcommit(overcommit::Config),
    MutexLoad(mutex_load::Config),
    Rwsem(rwsem::Config),
    RwFair(rw_fair::Config),
    OwnerProbe(owner_probe::Config),
    App(app::Config),
    Sharded(sharded::Config),
    RwMix(rw_mix::Config),
}

impl Step {
    fn cells(&self) -> u64 {
        match self {
            Step::C2c(config) => config.cells(),
            Step::Uncontended(config) => config.cells(),
            Step::Loop(config) => config.cells(),
            Step::FalseSharing(config) => config.cells(),
            Step::Overcommit(config) => config.cells(),
            Step::MutexLoad(config) => config.cells(),
            Step::Rwsem(config) => config.cells(),
            Step::RwFair(config) => config.cells(),
            Step::OwnerProbe(config) => config.cells(),
            Step::App(config) => config.cells(),
            Step::Sharded(config) => config.cells(),
            Step::RwMix(config) => config.cells(),
        }
    }

    fn run(&self, progress: &Progress) -> Result<Vec<Cell>, Error> {
        match self {
            Step::C2c(config) => c2c::run(config, progress),
            Step::Uncontended(config) => uncontended::run(config, progress),
            Step::Loop(config) => loop_::run(config, progress),
            Step::FalseSharing(config) => false_sharing::run(config, progress),
            Step::Overcommit(config) => overcommit::run(config, progress),
            Step::MutexLoad(config) => mutex_load::run(config, progress),
            Step::Rwsem(config) => rwsem::run(config, progress),
            Step::RwFair(config) => rw_fair::run(config, progress),
            Step::OwnerProbe(config) => owner_probe::run(config, progress),
            Step::App(config) => app::run(config, progress),
            Step::Sharded(config) => sharded::run(config, progress),
            Step::RwMix(config) => rw_mix::run(config, progress),
        }
    }

    fn tables(&self, cells: &[Cell], machine: &Machine) -> Vec<Table> {
        match self {
            Step::C2c(_) => c2c::tables(cells),
            Step::Uncontended(_) => uncontended::tables(cells),
            Step::Loop(config) => loop_::tables(config, cells),
            Step::FalseSharing(config) => false_sharing::tables(config, cells),
            Step::Overcommit(config) => overcommit::tables(config, cells, machine.pause_ns),
            Step::MutexLoad(config) => mutex_load::tables(config, cells, machine.pause_ns),
            Step::Rwsem(config) => rwsem::tables(config, cells, machine.pause_ns),
            Step::RwFair(config) => rw_fair::tables(config, cells, machine.pause_ns),
            Step::OwnerProbe(config) => owner_probe::tables(config, cells),
            Step::App(config) => app::tables(config, cells),
            Step::Sharded(config) => sharded::tables(config, cells),
            Step::RwMix(config) => rw_mix::tables(config, cells),
        }
    }
}

/// The steps of a measuring command (not the hidden cell subcommand, which `main`
/// runs before anything is printed).
fn plan(command: Option<Command>, common: &Common) -> Vec<Step> {
    match command {
        None | Some(Command::Suite) => vec![
            Step::C2c(c2c::Config::new(&Default::default(), common)),
            Step::Uncontended(uncontended::Config::new(&Default::default(), common)),
            Step::Loop(loop_::Config::suite(common)),
            Step::FalseSharing(false_sharing::Config::suite(common)),
            Step::Overcommit(overcommit::Config::suite(common)),
        ],
        Some(Command::Uncontended(args)) => {
            vec![Step::Uncontended(uncontended::Config::new(&args, common))]
        }
        Some(Command::Loop(args)) => vec![Step::Loop(loop_::Config::new(&args, common))],
        Some(Command::FalseSharing(args)) => {
            vec![Step::FalseSharing(false_sharing::Config::new(
                &args, common,
            ))]
        }
        Some(Command::C2c(args)) => vec![Step::C2c(c2c::Config::new(&args, common))],
        Some(Command::Overcommit(args)) => {
            vec![Step::Overcommit(overcommit::Config::new(&args, common))]
        }
        Some(Command::MutexLoad(args)) => {
            vec![Step::MutexLoad(mutex_load::Config::new(&args, common))]
        }
        Some(Command::Rwsem(args)) => vec![Step::Rwsem(rwsem::Config::new(&args, common))],
        Some(Command::RwFair(args)) => vec![Step::RwFair(rw_fair::Config::new(&args, common))],
        Some(Command::OwnerProbe(args)) => {
            vec![Step::OwnerProbe(owner_probe::Config::new(&args, common))]
        }
        Some(Command::Sharded(args)) => {
            vec![Step::Sharded(sharded::Config::new(&args, common))]
        }
        Some(Command::RwMix(args)) => vec![Step::RwMix(rw_mix::Config::new(&args, common))],
        Some(Command::Torture(_) | Command::Report(_) | Command::Compare(_)) => {
            unreachable!("`main` runs the commands that measure nothing before planning")
        }
        Some(Command::App(args)) => match app::Config::new(&args, common) {
            Ok(config) => vec![Step::App(config)],
            Err(message) => Cli::command()
                .error(clap::error::ErrorKind::ValueValidation, message)
                .exit(),
        },
        Some(Command::WindowCell(_)) => Vec::new(),
    }
}

/// Runs every step, printing its tables as soon as it is done.
fn measure(steps: &[Step], machine: &Machine) -> Result<Vec<Cell>, Error> {
    let progress = Progress::new(steps.iter().map(Step::cells).sum());
    let mut cells = Vec::new();
    for step in steps {
        let measured = step.run(&progress)?;
        let text: String = step
            .tables(&measured, machine)
            .iter()
            .map(|table| format!("{table}\n"))
            .collect();
        progress.print(&text);
        cells.extend(measured);
    }
    Ok(cells)
}

fn write_outputs(
    global: &GlobalArgs,
    report_dir: Option<&Path>,
    machine: &Machine,
    cells: &[Cell],
) -> Result<(), Error> {
    let failed = |path: &Path, err| Error::Io(format!("writing {}", path.display()), err);
    if let Some(path) = &global.json {
        report::write_json(path, machine, cells).map_err(|err| failed(path, err))?;
    }
    if let Some(path) = &global.csv {
        report::write_csv(path, cells).map_err(|err| failed(path, err))?;
    }
    if let Some(dir) = report_dir {
        let run = report::to_json(machine, cells)
            .and_then(RunFile::of_run)
            .map_err(|err| Error::Report(format!("the report: {err}")))?;
        let written = results::page::write(&[run], dir).map_err(Error::Report)?;
        println!(
            "report: {} ({} charts)",
            written.index.display(),
            written.charts.len()
        );
    }
    Ok(())
}

fn run(cli: Cli) -> Result<(), Error> {
    let report_dir = match (&cli.global.report, &cli.command) {
        (Some(dir), _) => Some(dir.clone()),
        (None, None | Some(Command::Suite)) => Some(PathBuf::from("lockbench-report")),
        (None, Some(_)) => None,
    };
    let steps = plan(cli.command, &cli.global.common());
    let started = Instant::now();
    let machine = Machine::probe();
    println!("{}\n", machine.header());
    let cells = measure(&steps, &machine)?;
    println!(
        "{} cells in {:.1} s",
        cells.len(),
        started.elapsed().as_secs_f64()
    );
    write_outputs(&cli.global, report_dir.as_deref(), &machine, &cells)
}

/// Refuses (usage error, exit 2) a lock list that the command would ignore: mutexes
/// for the reader-writer scenarios, reader-writer locks for the others.
fn check_lock_kinds(cli: &Cli) {
    let reader_writer = matches!(
        cli.command,
        Some(Command::Rwsem(_) | Command::RwFair(_) | Command::RwMix(_))
    );
    let app = matches!(cli.command, Some(Command::App(_)));
    let misplaced = if app && !(cli.global.locks.is_empty() && cli.global.rwlocks.is_empty()) {
        "app runs klocks' preloaded locks: choose them with --with and --rwlock (see --help)"
    } else if reader_writer && !cli.global.locks.is_empty() {
        "--locks names mutexes; rwsem, rw-fair and rw-mix measure reader-writer locks: choose \
         them with --rwlocks (see --help)"
    } else if !reader_writer && !app && !cli.global.rwlocks.is_empty() {
        "--rwlocks applies to rwsem, rw-fair and rw-mix only; the other scenarios take --locks"
    } else {
        return;
    };
    Cli::command()
        .error(clap::error::ErrorKind::ArgumentConflict, misplaced)
        .exit()
}

/// `lockbench report`: status 1 when a file cannot be read or the report written.
fn report(args: &ReportArgs) -> ExitCode {
    let loaded: Result<Vec<RunFile>, _> = args.files.iter().map(|f| RunFile::load(f)).collect();
    let written = loaded
        .map_err(|err| err.to_string())
        .and_then(|files| results::page::write(&files, &args.out));
    match written {
        Ok(written) => {
            println!(
                "report: {} ({} charts)",
                written.index.display(),
                written.charts.len()
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("lockbench: {err}");
            ExitCode::FAILURE
        }
    }
}

/// `lockbench compare`: status 1 on a regression beyond the limit or an unreadable file.
fn compare(args: &CompareArgs) -> ExitCode {
    let (a, b) = match (RunFile::load(&args.a), RunFile::load(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(err), _) | (_, Err(err)) => {
            eprintln!("lockbench: {err}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(lock) = &args.relative_to {
        if !a.cells.iter().chain(&b.cells).any(|c| &c.lock == lock) {
            eprintln!("lockbench: --relative-to {lock}: neither file measured {lock}");
            return ExitCode::from(2);
        }
    }
    let comparison = results::compare::compare(&a, &b, args.relative_to.as_deref());
    print!("{}", comparison.render());
    let Some(pct) = args.fail_on_regression else {
        return ExitCode::SUCCESS;
    };
    let regressions = comparison.regressions(pct);
    if regressions.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "lockbench: {} cell(s) worse by more than {pct}%: {}",
        regressions.len(),
        regressions
            .iter()
            .map(|row| row
                .cell
                .iter()
                .filter(|part| !part.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join(" "))
            .collect::<Vec<_>>()
            .join("; ")
    );
    ExitCode::FAILURE
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::WindowCell(args)) = &cli.command {
        windowed::cell(args);
        return ExitCode::SUCCESS;
    }
    if let Some(Command::Torture(args)) = &cli.command {
        if let Err(problem) = klocks::config::check() {
            eprintln!("lockbench: {problem}");
            return ExitCode::from(2);
        }
        let common = cli.global.common();
        return match torture::run(args, common.locks, common.rwlocks) {
            true => ExitCode::SUCCESS,
            false => ExitCode::FAILURE,
        };
    }
    if let Some(Command::Report(_) | Command::Compare(_)) = &cli.command {
        let g = &cli.global;
        if !g.locks.is_empty()
            || !g.rwlocks.is_empty()
            || g.json.is_some()
            || g.csv.is_some()
            || g.report.is_some()
        {
            Cli::command()
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    "report and compare read result files: --locks, --rwlocks, --json, --csv and --report do not apply",
                )
                .exit()
        }
    }
    match &cli.command {
        Some(Command::Report(args)) => return report(args),
        Some(Command::Compare(args)) => return compare(args),
        _ => {}
    }
    check_lock_kinds(&cli);
    // A bad KLOCKS_* setting would only be reported by the locks, which then use the
    // automatic one: a benchmark must not run on a setting other than the one asked.
    if let Err(problem) = klocks::config::check() {
        eprintln!("lockbench: {problem}");
        return ExitCode::from(2);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("lockbench: {err}");
            ExitCode::FAILURE
        }
    }
}
