//! `lockbench app`'s options and what they configure: the variants to run, the
//! command, and with `--profile` what to profile and what came of it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use regex::Regex;

use super::peer::{self, parse_peer, Peer};
use super::profile::{Profile, Remedy};
use super::setting::{PreloadLock, PreloadRwLock, Setting, LOCK, RWLOCK};
use super::variant::Variant;
use crate::adaptive::Adaptive;
use crate::harness::Common;

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
        ignore_case = true,
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

    /// KLOCKS_RWLOCK for the klocks runs [default: unset, as KLOCKS_LOCK alone: the
    /// preload runs the rwlocks on default-rw under `default`, on glibc's under any
    /// other lock]
    #[arg(long, value_enum, ignore_case = true, value_name = "RWLOCK")]
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

    /// Run the command with glibc's locks, through the preload, and under its lock
    /// validator (KLOCKS_LOCKDEP=1): the validator's cost is its row against the
    /// preloaded one, and its reports (the deadlocks the program's lock orders make
    /// possible) are printed under the table. Other locks run only if --with names them
    #[arg(long, conflicts_with = "profile")]
    pub lockdep: bool,

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

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The scenario its cells and progress lines are named after, and their thread
    /// count: `app` and 0, or the scenario that runs a built-in command.
    pub(super) scenario: &'static str,
    pub(super) threads: usize,
    /// The table's title.
    pub(super) title: String,
    /// The baseline (glibc, no preload) first.
    pub(super) variants: Vec<Variant>,
    /// `--rwlock`: `KLOCKS_RWLOCK` for the klocks runs; `None`, unset.
    pub(super) rwlock: Option<PreloadRwLock>,
    pub(super) metric: Option<Regex>,
    pub(super) output_varies: bool,
    pub(super) preload: PathBuf,
    pub(super) command: Vec<OsString>,
    pub(super) runs: u32,
    pub(super) adaptive: Adaptive,
    /// With `--profile-cost` or `--profile`: the last profiled run's report.
    pub(super) profile: Option<Arc<Mutex<String>>>,
    /// With `--profile`: what to profile, and what came of it.
    pub(super) profiling: Option<Profiling>,
    /// With `--lockdep`: the last validated run's reports.
    pub(super) lockdep: Option<Arc<Mutex<String>>>,
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
        let mut locks = if args.lockdep {
            args.with.clone()
        } else if args.with.is_empty() {
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
            .chain([Variant::Preloaded, Variant::Validated].into_iter().filter(|_| args.lockdep && !args.profile_cost))
            .chain([Variant::Validated].into_iter().filter(|_| args.lockdep && args.profile_cost))
            .collect();
        let shown = shown(&args.command);
        Ok(Self {
            scenario: "app",
            threads: 0,
            title: format!("app: {shown}"),
            variants,
            rwlock: args.rwlock,
            metric: args.metric.clone(),
            output_varies: args.output_varies,
            preload,
            command: args.command.clone(),
            runs: common.runs,
            adaptive: common.adaptive.clone(),
            profile: args.profile_cost.then(Default::default),
            lockdep: args.lockdep.then(Default::default),
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
            rwlock: args.rwlock,
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
            lockdep: None,
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
            rwlock: None,
            metric: Some(metric),
            output_varies: true,
            preload,
            command,
            runs: common.runs,
            adaptive: common.adaptive.clone(),
            profile: None,
            lockdep: None,
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

    pub(super) fn shown(&self) -> String {
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

/// `--profile`: the locks in use, whether to measure the advice, and (once run) the
/// report and the variants the advice added.
#[derive(Debug, Clone)]
pub(super) struct Profiling {
    pub(super) current: Setting,
    pub(super) try_advice: bool,
    /// `--test-advice`: the setting `--try` measures instead of the advice's.
    pub(super) test_advice: Option<Remedy>,
    pub(super) outcome: Arc<Mutex<Option<Profiled>>>,
}

/// What `--profile` found.
#[derive(Debug)]
pub(super) struct Profiled {
    pub(super) profile: Profile,
    /// With `--try`: the locks in use, then each advised setting (empty if none ran).
    pub(super) tried: Vec<Variant>,
    /// Why `--try` ran no rounds, if it did not.
    pub(super) no_rounds: Option<String>,
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
    fn programs_are_found_on_path_or_by_path() {
        assert!(find_program(&"sh".into()).is_some());
        assert!(find_program(&"/bin/sh".into()).is_some());
        assert!(find_program(&"no-such-program-klocks".into()).is_none());
        assert!(find_program(&"./no/such/file".into()).is_none());
    }
}
