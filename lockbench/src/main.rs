//! lockbench: re-runs the kernel seeds' lock experiments on klocks' userspace ports of
//! the kernel's locks, next to std, parking_lot, glibc and spin.
// The doc comments of the command-line types are clap's help text, printed as
// written: `<L>` there is text, not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

mod adaptive;
mod bench_lock;
mod cells;
mod handicap;
mod harness;
mod html_report;
mod locks;
mod machine;
mod pthread;
mod rwlocks;
mod scenario;
mod sentence;
mod verdict;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::cells::{Cell, Progress, COLUMNS};
use crate::harness::{windowed, Common, Error};
use crate::html_report::RunFile;
use crate::locks::LockName;
use crate::machine::Machine;
use crate::rwlocks::RwLockName;
use crate::scenario::{
    c2c, false_sharing, loop_, overcommit, preload, rw_mix, torture, uncontended, Measure,
    Scenario, Takes,
};
use klocks::catalog::MutexKind;

/// The help's list of locks, from the catalog and the peers' tables.
fn locks_help() -> String {
    let mut help = String::from("Locks (--locks):\n");
    for lock in LockName::defaults() {
        help += &help_entry(lock.name(), lock.about());
    }
    help += &format!(
        "\nReader-writer locks (--rwlocks, for {}):\n",
        scenario::taking(&[Takes::RwLocks, Takes::Both])
    );
    for lock in RwLockName::defaults() {
        help += &help_entry(lock.name(), lock.about());
    }
    let spinlocks: Vec<&str> = MutexKind::ALL
        .iter()
        .filter(|kind| !kind.sleeps())
        .map(|kind| kind.name())
        .collect();
    let collapse = format!(
        "FIFO spinlocks ({}) collapse when threads outnumber CPUs: the lock is handed to \
         waiters that are not running.",
        spinlocks.join(", ")
    );
    help + "\n" + &wrap(&collapse, HELP_WIDTH) + LOCKS_HELP_TAIL + EXIT_STATUS
}

/// The width the help's own paragraphs are wrapped to.
const HELP_WIDTH: usize = 86;

/// `paragraph`, its words wrapped into lines of at most `width` characters (a longer
/// word gets a line of its own).
fn wrap(paragraph: &str, width: usize) -> String {
    let mut lines = vec![String::new()];
    for word in paragraph.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if line.is_empty() {
            *line += word;
        } else if line.chars().count() + 1 + word.chars().count() <= width {
            *line += " ";
            *line += word;
        } else {
            lines.push(word.to_owned());
        }
    }
    lines.join("\n")
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

/// The help's end, after its paragraph on the FIFO spinlocks (which names them).
const LOCKS_HELP_TAIL: &str = "
Contended loop runs are therefore capped (--cap-secs) and reported as \"DNF x%\"
instead of hanging; overcommit runs each cell in a child process and reports one that
cannot drain as \"DNF (drain > N s)\". The pv locks are seed 003's fix: their spin
budget (header: \"pv spin\") is calibrated once per process as one futex
sleep-to-wake handoff, or set with KLOCKS_SPIN_NS=<ns>.

";

/// Every command's exit statuses, at the end of its help: scripts branch on them, so
/// 1 means one thing (what was checked failed) and never a typo.
const EXIT_STATUS: &str = "\
Exit status:
  0  success
  1  a check failed: a run failed verification (its lock-protected counters did not
     match the work done, a child process crashed, torture caught a broken lock), or
     compare --fail-on-regression found a regression
  2  an input error, nothing judged: a bad option or value, an option the command
     does not read, a bad KLOCKS_* setting, a result file missing or not a lockbench
     --json file, an output file or directory that cannot be written";

/// The global options, by clap id, that the command `name` reads (`None` for the
/// top level, the default suite); `None` for the hidden commands, which lockbench
/// runs itself. The others are left out of its help and refused ([`refuse_unread`]).
fn reads(name: Option<&str>) -> Option<Vec<&'static str>> {
    const MEASURED: [&str; 5] = ["runs", "json", "csv", "report", "wide"];
    const ADAPTIVE: [&str; 2] = ["budget", "no_adaptive"];
    let mut ids = MEASURED.to_vec();
    match name {
        None | Some("suite") => {
            ids.extend(["locks", "seed_scale", "stats"].iter().chain(&ADAPTIVE))
        }
        Some("report" | "compare") => ids.clear(),
        Some("torture") => ids = vec!["locks", "rwlocks"],
        Some("c2c" | "owner-probe") => {}
        Some("app" | "preload") => ids.extend(ADAPTIVE),
        Some(name) => {
            let takes = scenario::takes_of(name)?;
            ids.extend(ADAPTIVE);
            ids.push("stats");
            if !["sharded", "rw-mix", "lock-bench"].contains(&name) {
                ids.push("seed_scale");
            }
            match takes {
                Takes::Mutexes => ids.push("locks"),
                Takes::RwLocks => ids.push("rwlocks"),
                Takes::Both => ids.extend(["locks", "rwlocks"]),
                Takes::Neither => {}
            }
        }
    }
    Some(ids)
}

/// The one line `-h` gives the global options whose `--help` is a paragraph.
const SHORT_HELP: &[(&str, &str)] = &[
    ("locks", "Locks to measure, comma-separated [default: the scenario's; see --help]"),
    ("rwlocks", "Reader-writer locks to measure, comma-separated [default: all]"),
    ("runs", "Repetitions of each cell (tables show the median with [min–max])"),
    ("budget", "Extra seconds a row may repeat its cells while klocks' verdict is undecided [default: auto; 0: off]"),
    ("seed_scale", "Use the seeds' sizes (longer runs; explicit options still win)"),
    ("stats", "Count klocks' slow-path events per cell (a --features stats build)"),
    ("wide", "Print every table in full, unwrapped"),
    ("report", "Write the charts as an HTML page and SVGs into DIR"),
];

/// torture's lock lists, whose defaults are its own.
const TORTURE_LOCKS_HELP: &str = "Mutexes to torture, comma-separated [default: every lock \
    whose waiters sleep or yield; with --spinlocks, the pure spinlocks; with --signals same \
    or --freeze, klocks' locks that lend their waiting roles]";
const TORTURE_RWLOCKS_HELP: &str = "Reader-writer locks to torture, comma-separated [default: \
    all; with --signals same or --freeze, klocks' that lend their waiting roles]";

/// The command line: each command's help lists the global options it reads, and
/// ends with [`EXIT_STATUS`].
fn command() -> clap::Command {
    let cli = Cli::command();
    let globals: Vec<clap::Arg> = cli
        .get_arguments()
        .filter(|arg| arg.is_global_set())
        .map(
            |arg| match SHORT_HELP.iter().find(|(id, _)| arg.get_id() == id) {
                // `-h` prints the short line, `--help` the paragraph.
                Some((_, short)) => {
                    let long = arg.get_long_help().or(arg.get_help()).cloned();
                    let arg = arg.clone().help(*short);
                    match long {
                        Some(long) => arg.long_help(long),
                        None => arg,
                    }
                }
                None => arg.clone(),
            },
        )
        .collect();
    // A subcommand that has its own copy of a global option keeps it (clap copies a
    // global into the subcommands that lack it): a hidden copy leaves the option out
    // of that subcommand's help, still one option, whose value `refuse_unread` sees.
    // Every subcommand gets its own copies, so that one hidden at the top level (the
    // suite's) is not hidden below.
    let own_copies = |mut command: clap::Command, name: Option<&str>| {
        let Some(reads) = reads(name) else {
            return command;
        };
        for global in &globals {
            let id = global.get_id().as_str();
            let copy = match (name, id) {
                (Some("torture"), "locks") => global
                    .clone()
                    .help(TORTURE_LOCKS_HELP)
                    .long_help(TORTURE_LOCKS_HELP),
                (Some("torture"), "rwlocks") => global
                    .clone()
                    .help(TORTURE_RWLOCKS_HELP)
                    .long_help(TORTURE_RWLOCKS_HELP),
                _ if reads.contains(&id) => global.clone(),
                _ => global.clone().hide(true),
            };
            command = match name {
                Some(_) => command.arg(copy),
                None => command.mut_arg(id, |_| copy),
            };
        }
        command.after_help(EXIT_STATUS)
    };
    let names: Vec<String> = cli
        .get_subcommands()
        .map(|sub| sub.get_name().to_owned())
        .collect();
    let mut cli = own_copies(cli, None);
    for name in &names {
        cli = cli.mut_subcommand(name, |sub| own_copies(sub, Some(name)));
    }
    cli
}

/// Refuses (usage error, exit 2) a global option given to a command that does not
/// read it, saying what to use instead where there is something.
fn refuse_unread(matches: &clap::ArgMatches) {
    let (name, given) = match matches.subcommand() {
        Some((name, sub)) => (Some(name), sub),
        None => (None, matches),
    };
    let Some(reads) = reads(name) else {
        return;
    };
    let command_name = name.unwrap_or("the default suite");
    let rw_only = scenario::taking(&[Takes::RwLocks]);
    let rw_any = scenario::taking(&[Takes::Both, Takes::RwLocks]);
    for arg in GlobalArgs::augment_args(clap::Command::new("globals")).get_arguments() {
        let id = arg.get_id().as_str();
        if reads.contains(&id)
            || given.value_source(id) != Some(clap::parser::ValueSource::CommandLine)
        {
            continue;
        }
        let flag = format!("--{}", arg.get_long().unwrap_or(id));
        let preloaded = matches!(name, Some("app" | "preload"));
        let why = match id {
            "stats" if preloaded => "--stats counts the locks lockbench runs itself; app and \
                preload run klocks' locks in the preloaded library of their child processes, \
                which does not count"
                .to_owned(),
            "locks" | "rwlocks" if preloaded => "app and preload run klocks' preloaded locks: \
                choose them with --with (and app's --rwlock; see --help)"
                .to_owned(),
            "locks" if reads.contains(&"rwlocks") => format!(
                "--locks names mutexes; {rw_only} measure reader-writer locks: choose them \
                 with --rwlocks (see --help)"
            ),
            "rwlocks" if reads.contains(&"locks") && name != Some("torture") => {
                format!("--rwlocks applies to {rw_any} only; the other scenarios take --locks")
            }
            _ => format!(
                "{flag} does not apply to {command_name} (`lockbench {} --help` lists the \
                 options it reads)",
                name.unwrap_or("")
            )
            .replace("lockbench  --help", "lockbench --help"),
        };
        command()
            .error(clap::error::ErrorKind::ArgumentConflict, why)
            .exit()
    }
}

/// Re-runs the kernel seeds' lock experiments on klocks (the Linux kernel's lock
/// designs in userspace) next to std, parking_lot, glibc and spin.
///
/// Without a subcommand, runs the default suite (about a minute and a quarter on a
/// 2-CPU machine): c2c, uncontended, preload (the LD_PRELOAD interposer's pthread mutex
/// against glibc's, skipped with a line saying how to build libklocks.so when it is
/// missing), loop (seeds 000 and 003), false-sharing (seed 002), overcommit (seed
/// 003) and rw-mix (klocks::RwLock read-mostly and write-heavy), printing every table
/// that fits in 120 columns, a summary that opens with which lock to use and a
/// sentence per lock (klocks::Mutex, klocks::RwLock) and then judges each against its
/// peers cell by cell, and writing the charts to lockbench-report/index.html (--report
/// DIR elsewhere). Every cell is repeated --runs times,
/// the locks of a row interleaved, and more while klocks' verdict is too wide to decide
/// (--budget), and reported as the median with [min–max]; a loop cell whose run hits its time
/// cap, or an overcommit cell whose threads do not drain in time, is reported as not
/// finished and not repeated. Every run is verified: the lock-protected counters must match
/// the work done, or lockbench prints why on stderr and exits with status 1 without
/// reporting the wrong result. mutex-load (seed 004, several minutes), rwsem and
/// rw-fair (seed 001, reader-writer locks) are not in the suite: run them by name.
#[derive(Debug, Parser)]
#[command(name = "lockbench", version, after_long_help = locks_help())]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, clap::Args)]
struct GlobalArgs {
    /// Locks to measure, comma-separated [default: all the possible values; overcommit,
    /// mutex-load and sharded run their own sets, see their --help; the reader-writer
    /// scenarios take --rwlocks instead]
    #[arg(
        long,
        help = format!(
            "Locks to measure, comma-separated [default: all the possible values; overcommit, \
             mutex-load and sharded run their own sets, see their --help; {} take --rwlocks \
             instead]",
            scenario::taking(&[Takes::RwLocks])
        ),
        global = true,
        value_enum,
        ignore_case = true,
        value_delimiter = ',',
        value_name = "LOCK,..."
    )]
    locks: Vec<LockName>,

    /// Reader-writer locks for the reader-writer scenarios, comma-separated [default:
    /// all the possible values]; the scenarios that take both lists measure them beside
    /// their mutexes when given
    #[arg(
        long,
        help = format!(
            "Reader-writer locks for {}, comma-separated [default: all the possible values]; \
             {} measures them beside its mutexes when given",
            scenario::taking(&[Takes::RwLocks]),
            scenario::taking(&[Takes::Both])
        ),
        global = true,
        value_enum,
        ignore_case = true,
        value_delimiter = ',',
        value_name = "RWLOCK,..."
    )]
    rwlocks: Vec<RwLockName>,

    /// Repetitions of each cell; tables show the median with [min–max], and every
    /// comparison's verdict needs at least 4 runs a side for its 95% interval (5 give
    /// a narrower one). A loop cell whose run hits the cap, or a windowed cell
    /// (overcommit, mutex-load, rwsem, rw-fair) whose run does not drain, is not
    /// repeated
    #[arg(long, global = true, default_value_t = 5, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,

    #[arg(long, global = true, value_name = "SECONDS", value_parser = adaptive::parse_budget,
          help = adaptive::BUDGET_HELP)]
    budget: Option<adaptive::Budget>,

    /// Run every cell exactly --runs times: no adaptive repetition (as --budget 0)
    #[arg(long, global = true, conflicts_with = "budget")]
    no_adaptive: bool,

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

    /// Count klocks' slow-path events (lock_slowpath, queued, sleep, wake, steal,
    /// spin_failed, handoff, ...) per cell of klocks' locks, print them after each
    /// scenario's tables and store them in --json. Needs a build with the counters:
    /// `cargo run --release -p lockbench --features stats -- ...` (not app or preload,
    /// whose locks run in the preloaded library)
    #[arg(long, global = true)]
    stats: bool,

    /// Print every table in full; without it, titles and notes wrap at 120 columns, a
    /// note already printed under an earlier table is not repeated, and the tables whose
    /// columns are wider (every lock side by side, each cell in detail) are left out of
    /// the printed text (--json, --csv and the report keep every cell)
    #[arg(long, global = true)]
    wide: bool,
}

impl GlobalArgs {
    fn common(&self) -> Common {
        Common {
            locks: deduplicated(&self.locks),
            rwlocks: deduplicated(&self.rwlocks),
            runs: self.runs,
            seed_scale: self.seed_scale,
            stats: self.stats,
            adaptive: adaptive::Adaptive::new(match self.no_adaptive {
                true => adaptive::Budget::Off,
                false => self.budget.unwrap_or(adaptive::Budget::Auto),
            }),
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
    #[command(flatten)]
    Measure(Measure),

    Torture(torture::Args),

    /// The default suite: c2c, uncontended, preload, loop, false-sharing, overcommit,
    /// rw-mix (about a minute and a quarter)
    ///
    /// What lockbench runs without a subcommand: every scenario with its defaults,
    /// except loop with a 1 s cap on threads 1,2,4 and the locks its tables compare
    /// (default, the seeds' pairs, std, parking_lot, glibc, glibc-adaptive),
    /// false-sharing with 100 ms runs, overcommit on a reduced grid (threads 4,32;
    /// short cs; overcommit 1,2; 100 ms windows; 1 s drain cap; default, ticket,
    /// pvticket, pvqspinlock, std, parking_lot, glibc) and rw-mix on 99.9% and 50% reads
    /// at threads 2,8 with 50000 operations per thread (default-rw, std-rw,
    /// parking_lot-rw, glibc-rw). Scaled by --seed-scale (then loop, overcommit and
    /// rw-mix run their full grids), restricted by --locks and --rwlocks, repeated
    /// --runs times. Not included: mutex-load (several minutes; run it by name).
    Suite,

    Report(html_report::commands::ReportArgs),

    Compare(html_report::commands::CompareArgs),

    /// Runs one window of one cell in this process (the windowed scenarios' child
    /// processes)
    #[command(name = windowed::CELL_COMMAND, hide = true)]
    WindowCell(windowed::CellArgs),

    /// Runs preload's child: threads × pairs of pthread_mutex_lock/unlock
    #[command(name = preload::PAIRS_COMMAND, hide = true)]
    PthreadPairs(preload::PairsArgs),
}

/// The scenarios of a measuring command (not the hidden cell subcommand, which
/// `main` runs before anything is printed).
fn plan(command: Option<Command>, common: &Common) -> Vec<Box<dyn Scenario>> {
    match command {
        None | Some(Command::Suite) => vec![
            Box::new(c2c::Config::new(&Default::default(), common)),
            Box::new(uncontended::Config::new(&Default::default(), common)),
            Box::new(preload::Config::suite(common)),
            Box::new(loop_::Config::suite(common)),
            Box::new(false_sharing::Config::suite(common)),
            Box::new(overcommit::Config::suite(common)),
            Box::new(rw_mix::Config::suite(common)),
        ],
        Some(Command::Measure(measure)) => match measure.configure(common) {
            Ok(scenario) => vec![scenario],
            Err(message) => crate::command()
                .error(clap::error::ErrorKind::ValueValidation, message)
                .exit(),
        },
        Some(Command::Torture(_) | Command::Report(_) | Command::Compare(_)) => {
            unreachable!("`main` runs the commands that measure nothing before planning")
        }
        Some(Command::WindowCell(_) | Command::PthreadPairs(_)) => Vec::new(),
    }
}

/// How the tables are printed: in full (`--wide`), or wrapped at [`COLUMNS`] with the
/// wider ones left out and named, and each note printed once.
struct Printing {
    wide: bool,
    left_out: std::cell::RefCell<Vec<String>>,
    /// The notes printed so far: each (the noise marks, DNF, ...) is printed once.
    explained: std::cell::RefCell<Vec<String>>,
}

impl Printing {
    /// `table` as printed, or nothing (and its name remembered) when it is left out.
    fn show(&self, table: &cells::Table) -> String {
        if self.wide {
            return format!("{table}\n");
        }
        // A one-column table is a text report (app's contention profile): its lines
        // are the program's, printed whole.
        if table.width() > COLUMNS && table.columns() > 1 {
            self.left_out.borrow_mut().push(table.name().to_owned());
            return String::new();
        }
        format!(
            "{}\n",
            table.wrapped(COLUMNS, &mut self.explained.borrow_mut())
        )
    }

    /// The summary, with every note of its own even where a table above had it.
    fn summary(&self, table: &cells::Table) -> String {
        match self.wide {
            true => format!("{table}\n"),
            false => format!("{}\n", table.wrapped(COLUMNS, &mut Vec::new())),
        }
    }

    /// The line naming the tables left out, if any.
    fn left_out(&self) -> Option<String> {
        let left_out = self.left_out.borrow();
        (!left_out.is_empty()).then(|| {
            let line = format!(
                "left out, wider than {COLUMNS} columns (--wide prints them): {}",
                left_out.join("; ")
            );
            cells::wrap(&line, COLUMNS)
        })
    }
}

/// Runs every step, printing its tables (and, with `--stats`, its cells' counts) as
/// soon as it is done.
fn measure(
    steps: &[Box<dyn Scenario>],
    machine: &Machine,
    printing: &Printing,
) -> Result<Vec<Cell>, Error> {
    let progress = Progress::new(steps.iter().map(|step| step.cells()).sum());
    let mut cells = Vec::new();
    for step in steps {
        let measured = step.run(&progress)?;
        let mut text: String = step
            .tables(&measured, machine)
            .iter()
            .map(|table| printing.show(table))
            .collect();
        let counts = harness::stats::lines(&measured);
        if !counts.is_empty() {
            text += &format!("{counts}\n");
        }
        text += &adaptive::lines(&measured);
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
        cells::output::write_json(path, machine, cells).map_err(|err| failed(path, err))?;
    }
    if let Some(path) = &global.csv {
        cells::output::write_csv(path, cells).map_err(|err| failed(path, err))?;
    }
    if let Some(dir) = report_dir {
        let run = cells::output::to_json(machine, cells)
            .and_then(RunFile::of_run)
            .map_err(|err| Error::Report(format!("the report: {err}")))?;
        let written = html_report::page::write(&[run], dir).map_err(Error::Report)?;
        println!(
            "report: {} ({} charts)",
            written.index.display(),
            written.charts.len()
        );
    }
    Ok(())
}

/// The summary's opening: the headline, then a sentence per lock of ours, each
/// wrapped at [`COLUMNS`]; empty when neither of ours ran beside a peer.
fn opening(cells: &[Cell]) -> String {
    let lines = sentence::lines(cells);
    let Some((headline, sentences)) = lines.split_first() else {
        return String::new();
    };
    let mut text = cells::wrap(headline, COLUMNS);
    for line in sentences {
        text += &cells::wrap(&format!("  {line}"), COLUMNS);
    }
    text + "\n"
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
    match cli.global.wide {
        true => println!("{}\n", machine.header()),
        false => println!("{}", cells::wrap(&machine.header(), COLUMNS)),
    }
    let printing = Printing {
        wide: cli.global.wide,
        left_out: Default::default(),
        explained: Default::default(),
    };
    let cells = measure(&steps, &machine, &printing)?;
    print!("{}", opening(&cells));
    if let Some(summary) = cells::summary::table(&cells) {
        print!("{}", printing.summary(&summary));
    }
    if let Some(left_out) = printing.left_out() {
        println!("{left_out}");
    }
    println!(
        "{} cells in {:.1} s",
        cells.len(),
        started.elapsed().as_secs_f64()
    );
    write_outputs(&cli.global, report_dir.as_deref(), &machine, &cells)
}

/// One line on stderr per older lock name on the command line (the program's own
/// arguments, after `--`, aside): it is read as the current name.
fn note_renamed_locks() {
    let args = std::env::args_os().skip(1);
    let ours = args.take_while(|arg| arg != "--");
    let mut noted = Vec::new();
    for arg in ours {
        let arg = arg.to_string_lossy().into_owned();
        for word in arg.split([',', '=']) {
            if let Some(new) = locks::renamed(word) {
                if !noted.contains(&word.to_owned()) {
                    eprintln!("lockbench: note: `{word}` is now `{new}`");
                    noted.push(word.to_owned());
                }
            }
        }
    }
}

fn main() -> ExitCode {
    let matches = command().get_matches();
    note_renamed_locks();
    refuse_unread(&matches);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    if cli.global.stats && !harness::stats::BUILT {
        command()
            .error(
                clap::error::ErrorKind::InvalidValue,
                harness::stats::NOT_BUILT,
            )
            .exit()
    }
    if let Some(Command::PthreadPairs(args)) = &cli.command {
        return preload::pairs(args);
    }
    if let Some(Command::WindowCell(args)) = &cli.command {
        windowed::cell(args, cli.global.stats);
        return ExitCode::SUCCESS;
    }
    if let Err(err) = handicap::announce() {
        eprintln!("lockbench: {err}");
        return ExitCode::from(2);
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
    match &cli.command {
        Some(Command::Report(args)) => return html_report::commands::report(args),
        Some(Command::Compare(args)) => return html_report::commands::compare(args),
        _ => {}
    }
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
            ExitCode::from(err.exit_status())
        }
    }
}
