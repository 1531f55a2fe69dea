//! `lockbench app -- CMD ARGS`: an unmodified program under each klocks lock. Here:
//! its options and what they configure; the runs are in `app/runs.rs`, the tables in
//! `app/tables.rs`, the profile it reads with `--profile` in `app/profile.rs`, the
//! advice measured in `app/advice.rs`.
//!
//! The command runs once per lock and round: first as it is (glibc's locks, no
//! preload), then under `LD_PRELOAD=libklocks.so KLOCKS_LOCK=<lock>` for each
//! chosen lock, round after round, so that drift in the machine spreads over every
//! lock alike. Reported: wall time, and with `--metric` a number the command prints
//! (a throughput: higher is better), each as median [min–max] and as speed relative
//! to glibc in the same run.
//!
//! With `--peer NAME=LIBRARY` ([`peer`]), another interposer (FlexGuard's, an older
//! libklocks.so) runs as a row beside glibc, and each klocks lock is also judged
//! against the best of glibc and the peers.
//!
//! With `--profile-cost`, two more variants run in every round: glibc's locks through
//! the preload (`glibc+preload`), and the same under its contention profile
//! (`glibc+profile`, `KLOCKS_PROFILE=1`, written to a file). The ratio of their rows
//! is the profile's cost; the last round's report is printed under the table.
//!
//! With `--profile`, the command runs once under the contention profile with the
//! locks in use (glibc's, or `--with LOCK` and `--rwlock`), its JSON report is read
//! ([`profile`]) and printed short: the share of the threads' time spent waiting,
//! the locks by wait time and by number of waits, and the advice. With `--try` the
//! advice is measured: each setting it suggests runs against the locks in use,
//! `--runs` rounds interleaved, judged as the table's rows are, and what it came to
//! is said in words (a win only when faster). No rounds run when
//! locks cost under 1% of the threads' time ("nothing to gain here"; the plain table,
//! `app --with LOCK`, measures a lock anyway) or when the advice suggests nothing.
//!
//! Verified, or no table: every run must exit 0; its stdout must be byte-identical
//! to the first run's (glibc's, or the profiled run's; unless `--output-varies`:
//! programs that print timings);
//! `--metric` must match in every run; and a preloaded run's stderr must carry no
//! word from the dynamic linker or klocks that the preload failed or fell back to
//! glibc, so a table never shows glibc under a klocks name.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use klocks::catalog::{MutexKind, RwLockKind};
use klocks::config::Var;
use regex::Regex;

use crate::adaptive::Adaptive;
use crate::cells::{Cell, Progress};
use crate::harness::{Common, Error};

/// The interposer's variables this command sets (docs/preload.md names them).
const LOCK: Var = Var::new(c"KLOCKS_LOCK");
const RWLOCK: Var = Var::new(c"KLOCKS_RWLOCK");
const PROFILE: Var = Var::new(c"KLOCKS_PROFILE");
const PROFILE_FILE: Var = Var::new(c"KLOCKS_PROFILE_FILE");
const PROFILE_FORMAT: Var = Var::new(c"KLOCKS_PROFILE_FORMAT");
const PROFILE_TOP: Var = Var::new(c"KLOCKS_PROFILE_TOP");

mod advice;
mod peer;
mod profile;
mod runs;
mod tables;
use advice::{run_profile, Profiling, Setting};
use peer::{parse_peer, Peer};
use profile::Remedy;
use runs::run_rounds;
pub use runs::Variant;
pub use tables::tables;

/// A lock `KLOCKS_LOCK` accepts: a mutex of klocks' catalog that the preload offers
/// (condvars follow it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreloadLock(MutexKind);

impl PreloadLock {
    /// `KLOCKS_LOCK=default`.
    pub const DEFAULT: Self = PreloadLock(MutexKind::Default);

    /// The name `KLOCKS_LOCK` takes and the table prints.
    fn name(self) -> &'static str {
        self.0.name()
    }
}

impl clap::ValueEnum for PreloadLock {
    fn value_variants<'a>() -> &'a [Self] {
        static OFFERED: LazyLock<Vec<PreloadLock>> = LazyLock::new(|| {
            let offered = MutexKind::ALL.iter().filter(|k| !k.is_experiment_variant());
            offered.map(|&kind| PreloadLock(kind)).collect()
        });
        &OFFERED
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

/// What `KLOCKS_RWLOCK` is set to: a reader-writer lock of klocks' catalog, or
/// `None` for glibc's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreloadRwLock(Option<RwLockKind>);

impl PreloadRwLock {
    fn name(self) -> &'static str {
        self.0.map_or(GLIBC, RwLockKind::name)
    }
}

impl clap::ValueEnum for PreloadRwLock {
    fn value_variants<'a>() -> &'a [Self] {
        static OFFERED: LazyLock<Vec<PreloadRwLock>> = LazyLock::new(|| {
            let klocks = RwLockKind::ALL
                .iter()
                .map(|&kind| PreloadRwLock(Some(kind)));
            klocks.chain([PreloadRwLock(None)]).collect()
        });
        &OFFERED
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

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
///
/// With --profile, runs CMD once under the contention profile instead, with the locks
/// in use (glibc's, or one --with LOCK and --rwlock), and prints where its threads
/// waited and the advice; --profile --try then measures the advice: each setting it
/// suggests against the locks in use, --runs rounds, with verdicts.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// klocks locks to run the command under (KLOCKS_LOCK values), comma-separated;
    /// glibc (no preload) always runs too, as the baseline [default: every lock
    /// KLOCKS_LOCK offers whose waiters sleep]
    #[arg(
        long = "with",
        value_enum,
        value_delimiter = ',',
        value_name = "LOCK,..."
    )]
    pub with: Vec<PreloadLock>,

    /// Another interposer to run the command under, as a peer of glibc: its row runs
    /// `LD_PRELOAD=LIBRARY` (e.g. flexguard=/path/to/interpose.so); repeatable. A
    /// second table judges each klocks lock against the best of glibc and the peers
    #[arg(
        long = "peer",
        value_parser = parse_peer,
        value_name = "NAME=LIBRARY",
        conflicts_with = "profile"
    )]
    pub peers: Vec<Peer>,

    /// KLOCKS_RWLOCK for the klocks runs [default: glibc, as with KLOCKS_LOCK alone]
    #[arg(long, value_enum, value_name = "RWLOCK")]
    pub rwlock: Option<PreloadRwLock>,

    /// A regular expression with one capture group: the number it captures in the
    /// command's stdout (else stderr) is reported beside the wall time, as a
    /// throughput (higher is better)
    #[arg(long, value_parser = parse_metric, value_name = "REGEX")]
    pub metric: Option<Regex>,

    /// The command's stdout differs from run to run (it prints timings): do not
    /// require it to be identical under every lock
    #[arg(long)]
    pub output_varies: bool,

    /// Instead of the table: run the command once under the preload's contention
    /// profile (KLOCKS_PROFILE=1) with the locks in use (glibc's, or one --with LOCK
    /// and --rwlock), and print the share of the threads' time spent waiting, the
    /// locks that made them wait longest and most often, and the advice
    #[arg(long, conflicts_with = "profile_cost")]
    pub profile: bool,

    /// With --profile: measure the advice. Each setting it suggests runs against the
    /// locks in use, --runs rounds interleaved, with its speed and verdict. No rounds
    /// when locks cost under 1% of the threads' time ("nothing to gain here"; plain
    /// `app --with LOCK` measures a lock anyway) or when nothing is advised
    #[arg(long = "try", requires = "profile")]
    pub try_advice: bool,

    /// Test-only, hidden: with --try, measure VAR=VALUE instead of the settings the
    /// advice suggests (the report says so), so that a test can make --try measure a
    /// setting that is slower for its program; the runs are real
    #[arg(long, hide = true, requires = "try_advice", value_parser = parse_remedy, value_name = "VAR=VALUE")]
    pub test_advice: Option<Remedy>,

    /// Also run the command with glibc's locks through the preload and under its
    /// contention profile (KLOCKS_PROFILE=1): the ratio of their rows is the profile's
    /// cost, and the report is printed under the table
    #[arg(long)]
    pub profile_cost: bool,

    /// The preload library [default: libklocks.so next to the lockbench executable;
    /// build it with `cargo build --release -p klocks-ffi`]
    #[arg(long, value_name = "FILE")]
    pub preload: Option<PathBuf>,

    /// The command and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// `--metric`: a regex with exactly one capture group.
fn parse_metric(text: &str) -> Result<Regex, String> {
    let regex = Regex::new(text).map_err(|e| e.to_string())?;
    match regex.captures_len() {
        2 => Ok(regex),
        n => Err(format!(
            "it needs exactly one capture group around the number, it has {}",
            n - 1
        )),
    }
}

/// `--test-advice`: `KLOCKS_LOCK=VALUE` or `KLOCKS_RWLOCK=VALUE`.
fn parse_remedy(text: &str) -> Result<Remedy, String> {
    match text.split_once('=') {
        Some((variable, value)) if [LOCK.name(), RWLOCK.name()].contains(&variable) => Ok(Remedy {
            variable: variable.to_owned(),
            value: value.to_owned(),
        }),
        _ => Err(format!("{text:?} is not KLOCKS_LOCK=VALUE or KLOCKS_RWLOCK=VALUE")),
    }
}

/// The default `--with`: every lock `KLOCKS_LOCK` offers whose waiters sleep (a
/// pure spinlock collapses once a program runs more threads than CPUs), in catalog
/// order.
fn default_locks() -> Vec<PreloadLock> {
    let offered = <PreloadLock as clap::ValueEnum>::value_variants().iter().copied();
    offered.filter(|lock| lock.0.sleeps()).collect()
}

/// The baseline's name in the tables, and the value that keeps glibc's locks.
const GLIBC: &str = "glibc";

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The scenario its cells and progress lines are named after, and their thread
    /// count: `app` and 0, or the scenario that runs a built-in command.
    scenario: &'static str,
    threads: usize,
    /// The table's title.
    title: String,
    /// The baseline (glibc, no preload) first.
    variants: Vec<Variant>,
    rwlock: PreloadRwLock,
    metric: Option<Regex>,
    output_varies: bool,
    preload: PathBuf,
    command: Vec<OsString>,
    runs: u32,
    adaptive: Adaptive,
    /// With `--profile-cost` or `--profile`: the last profiled run's report.
    profile: Option<Arc<Mutex<String>>>,
    /// With `--profile`: what to profile, and what came of it.
    profiling: Option<Profiling>,
}


impl Config {
    /// From the command line; `Err` is a usage error (a missing program or library).
    pub fn new(args: &Args, common: &Common) -> Result<Self, String> {
        let preload = match &args.preload {
            Some(path) => path.clone(),
            None => std::env::current_exe()
                .map_err(|e| format!("cannot find the lockbench executable: {e}"))?
                .with_file_name("libklocks.so"),
        };
        if !preload.is_file() {
            return Err(format!(
                "no preload library at {}: build it with `cargo build --release -p klocks-ffi`, or pass --preload",
                preload.display()
            ));
        }
        let program = &args.command[0];
        if find_program(program).is_none() {
            return Err(format!(
                "no program {:?} (not a file, and not found on PATH)",
                program
            ));
        }
        if args.profile {
            return Self::profiling(args, common, preload);
        }
        let mut locks = if args.with.is_empty() {
            default_locks()
        } else {
            args.with.clone()
        };
        locks.dedup();
        peer::check_distinct(&args.peers)?;
        let profiled = [Variant::Preloaded, Variant::Profiled];
        let variants = std::iter::once(Variant::Glibc)
            .chain(args.peers.iter().copied().map(Variant::Peer))
            .chain(locks.into_iter().map(Variant::Lock))
            .chain(profiled.into_iter().filter(|_| args.profile_cost))
            .collect();
        let shown = shown(&args.command);
        Ok(Self {
            scenario: "app",
            threads: 0,
            title: format!("app: {shown}"),
            variants,
            rwlock: args.rwlock.unwrap_or(PreloadRwLock(None)),
            metric: args.metric.clone(),
            output_varies: args.output_varies,
            preload,
            command: args.command.clone(),
            runs: common.runs,
            adaptive: common.adaptive.clone(),
            profile: args.profile_cost.then(Default::default),
            profiling: None,
        })
    }

    /// `--profile`: the locks in use are one `--with` lock (or none: glibc's) and
    /// `--rwlock`.
    fn profiling(args: &Args, common: &Common, preload: PathBuf) -> Result<Self, String> {
        let lock = match args.with[..] {
            [] => None,
            [lock] => Some(lock),
            _ => {
                return Err(
                    "--profile profiles the locks in use: give at most one --with lock (the advice says what to try)"
                        .to_owned(),
                )
            }
        };
        let current = Setting {
            lock,
            rwlock: args.rwlock.unwrap_or(PreloadRwLock(None)),
        };
        let shown = shown(&args.command);
        Ok(Self {
            scenario: "app",
            threads: 0,
            title: format!("measured advice: `{shown}`"),
            variants: Vec::new(),
            rwlock: current.rwlock,
            metric: args.metric.clone(),
            output_varies: args.output_varies,
            preload,
            command: args.command.clone(),
            runs: common.runs,
            adaptive: common.adaptive.clone(),
            profile: Some(Default::default()),
            profiling: Some(Profiling {
                current,
                try_advice: args.try_advice,
                test_advice: args.test_advice.clone(),
                outcome: Default::default(),
            }),
        })
    }

    /// A command of lockbench's own, run the way `app --output-varies --metric METRIC`
    /// runs a program, its cells named after `scenario` and `threads`: each of
    /// `variants` (the baseline, [`Variant::Glibc`], first) with the library `preload`,
    /// `common`'s rounds.
    #[allow(clippy::too_many_arguments)]
    pub fn builtin(
        scenario: &'static str,
        threads: usize,
        title: String,
        command: Vec<OsString>,
        metric: Regex,
        variants: Vec<Variant>,
        preload: PathBuf,
        common: &Common,
    ) -> Self {
        Self {
            scenario,
            threads,
            title,
            variants,
            rwlock: PreloadRwLock(None),
            metric: Some(metric),
            output_varies: true,
            preload,
            command,
            runs: common.runs,
            adaptive: common.adaptive.clone(),
            profile: None,
            profiling: None,
        }
    }

    /// Runs this config makes (the progress bar counts runs here): with `--profile`,
    /// the profiled run and, with `--try`, rounds of the locks in use and one advised
    /// setting (the count is known after the profile).
    pub fn cells(&self) -> u64 {
        match &self.profiling {
            Some(profiling) => 1 + u64::from(profiling.try_advice) * 2 * u64::from(self.runs),
            None => self.variants.len() as u64 * u64::from(self.runs),
        }
    }

    fn shown(&self) -> String {
        shown(&self.command)
    }
}

/// A command line as it is printed.
fn shown(command: &[OsString]) -> String {
    command
        .iter()
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Where `program` is: a path with a slash as it is, else the first match on PATH.
fn find_program(program: &OsString) -> Option<PathBuf> {
    let path = Path::new(program);
    if path.components().count() > 1 {
        return path.is_file().then(|| path.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(path))
        .find(|candidate| candidate.is_file())
}

/// Runs every round and returns one cell per lock (and one more per lock for the
/// metric); with `--profile`, the profile and the advice's rounds.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    match &config.profiling {
        Some(profiling) => run_profile(config, profiling, progress),
        None => run_rounds(config, &config.variants, None, progress),
    }
}

scenario! {
    takes: Neither,
    configure: |args, common| Config::new(args, common),
    tables: |config, cells, _| tables(config, cells),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metric_needs_one_group() {
        assert!(parse_metric(r"events/s: ([0-9.]+)").is_ok());
        assert!(parse_metric(r"events/s: [0-9.]+")
            .unwrap_err()
            .contains("has 0"));
        assert!(parse_metric(r"(a)(b)").unwrap_err().contains("has 2"));
        assert!(parse_metric(r"(unclosed").is_err());
    }

    #[test]
    fn the_metric_is_read_from_stdout_then_stderr() {
        use runs::capture;
        let regex = parse_metric(r"rate: *([0-9.]+)").unwrap();
        assert_eq!(capture(&regex, b"x\nrate: 12.5\n", b""), Some(12.5));
        assert_eq!(capture(&regex, b"nothing", b"rate: 3"), Some(3.0));
        assert_eq!(capture(&regex, b"nothing", b"none"), None);
    }

    #[test]
    fn programs_are_found_on_path_or_by_path() {
        assert!(find_program(&"sh".into()).is_some());
        assert!(find_program(&"/bin/sh".into()).is_some());
        assert!(find_program(&"no-such-program-klocks".into()).is_none());
        assert!(find_program(&"./no/such/file".into()).is_none());
    }
}
