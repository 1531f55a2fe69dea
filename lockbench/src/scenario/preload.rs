//! `lockbench preload`: the cost of the LD_PRELOAD interposer itself.
//!
//! The interposer (klocks-ffi's `libklocks.so`) takes over `pthread_mutex_lock` and
//! `pthread_mutex_unlock` of the process it is preloaded into; even with
//! `KLOCKS_LOCK` unset, every call goes through it before reaching glibc. This
//! scenario runs a small program of lockbench's own, the hidden `pthread-pairs`
//! subcommand, through [`app`]'s runner: T threads each take and release one
//! statically initialised `pthread_mutex_t` N times around a counter increment. It
//! runs as it is (`glibc`, no preload), under the preload with glibc's locks
//! (`glibc+preload`: the interposer's pass-through alone) and under
//! `KLOCKS_LOCK=default` (and each `--with` lock), round after round, one table per
//! thread count; the verdicts compare each with glibc's pairs per second.
//!
//! The child calls libc's functions through the dynamic linker (the PLT or the GOT),
//! as a C program does, so the preload interposes them; Rust's std and parking_lot
//! use no pthread mutex, so nothing else in the child is affected. Verified: the
//! counter equals threads × pairs, and in a preloaded run both functions resolve to
//! the preloaded library (`dladdr`), so a row never shows glibc under a klocks name.
//!
//! The library is the `libklocks.so` beside the lockbench executable. Under `cargo
//! run` (`CARGO` is set), it is first rebuilt with that cargo, into the executable's
//! target directory and profile (a no-op when fresh), so a stale library is never
//! measured.

use std::ffi::{CStr, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{
    compiler_fence, AtomicU64,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::Barrier;
use std::time::Instant;

use regex::Regex;

use super::app::{self, PreloadLock, Variant};
use crate::harness::{verify_count, Common, Error};
use crate::machine::Machine;
use crate::cells::{self, Cell, Progress, Table};

/// pthread_mutex_lock/unlock through the LD_PRELOAD interposer, against glibc
///
/// Runs lockbench's own child program (each of T threads: --pairs times
/// pthread_mutex_lock, counter += 1, pthread_mutex_unlock on one
/// PTHREAD_MUTEX_INITIALIZER mutex, called through the dynamic linker as a C program
/// does) as it is (glibc), under LD_PRELOAD=libklocks.so with KLOCKS_LOCK unset
/// (glibc+preload: the interposer passing every call to glibc) and under
/// KLOCKS_LOCK=default and each --with lock, --runs rounds interleaved, as `app`
/// does. One table per thread count: pairs per second (all threads, wall time) and
/// wall time, each against glibc with a verdict. Verified: the counter equals threads
/// × pairs, and in every preloaded run both functions resolve to the preloaded
/// library. The library is the libklocks.so beside the lockbench executable; under
/// `cargo run` lockbench first runs `cargo build -p klocks-ffi` (same profile), a
/// no-op when it is fresh. --locks and --rwlocks do not apply (use --with).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Thread counts, comma-separated: one table each [default: 1,4]
    #[arg(long, value_delimiter = ',', value_name = "T,...",
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub threads: Vec<u64>,

    /// Lock/unlock pairs per thread per run [default: 2000000]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub pairs: Option<u64>,

    /// More klocks locks to run the child under (KLOCKS_LOCK values), comma-separated;
    /// glibc, glibc+preload and default always run
    #[arg(
        long = "with",
        value_enum,
        ignore_case = true,
        value_delimiter = ',',
        value_name = "LOCK,..."
    )]
    pub with: Vec<PreloadLock>,
}

/// The default `--threads`: the uncontended pair, and a contended one.
const THREADS: [u64; 2] = [1, 4];

/// The default `--pairs`: a few tens of milliseconds per run for one thread.
const PAIRS: u64 = 2_000_000;

/// The hidden subcommand that runs the child.
pub const PAIRS_COMMAND: &str = "pthread-pairs";

/// What the child prints and the tables read: pairs per second, all threads.
const METRIC: &str = r"pairs/s: (\S+)";

/// What to run: one `app` run per thread count, or why the library is missing.
#[derive(Debug, Clone)]
pub struct Config {
    runs: Result<Vec<app::Config>, String>,
}

impl Config {
    /// From the command line; a missing library is a usage error.
    pub fn new(args: &Args, common: &Common) -> Result<Self, String> {
        let library = library()?;
        Ok(Self {
            runs: Ok(Self::planned(args, common, library)?),
        })
    }

    /// In the default suite: a missing library skips the scenario with a line
    /// saying how to build it.
    pub fn suite(common: &Common) -> Self {
        let args = Args::default();
        Self {
            runs: library().and_then(|library| Self::planned(&args, common, library)),
        }
    }

    fn planned(args: &Args, common: &Common, library: PathBuf) -> Result<Vec<app::Config>, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find the lockbench executable: {e}"))?;
        let pairs = args.pairs.unwrap_or(PAIRS);
        let mut threads = if args.threads.is_empty() {
            THREADS.to_vec()
        } else {
            args.threads.clone()
        };
        threads.dedup();
        let mut locks = vec![PreloadLock::DEFAULT];
        locks.extend(args.with.iter().filter(|&&lock| lock != PreloadLock::DEFAULT));
        locks.dedup();
        let variants: Vec<Variant> = [Variant::Glibc, Variant::Preloaded]
            .into_iter()
            .chain(locks.into_iter().map(Variant::Lock))
            .collect();
        let metric = Regex::new(METRIC).expect("the metric is a valid regex");
        let configs = threads.into_iter().map(|threads| {
            let command: Vec<OsString> = vec![
                exe.clone().into(),
                PAIRS_COMMAND.into(),
                "--threads".into(),
                threads.to_string().into(),
                "--pairs".into(),
                pairs.to_string().into(),
            ];
            let plural = if threads == 1 { "" } else { "s" };
            let title = format!(
                "preload: pthread_mutex_lock/unlock through the interposer (LD_PRELOAD), {threads} \
                 thread{plural}"
            );
            app::Config::builtin(
                "preload",
                threads as usize,
                title,
                command,
                metric.clone(),
                variants.clone(),
                library.clone(),
                common,
            )
        });
        Ok(configs.collect())
    }

    /// Runs this config makes.
    pub fn cells(&self) -> u64 {
        self.runs
            .as_ref()
            .map_or(0, |runs| runs.iter().map(app::Config::cells).sum())
    }
}

/// Runs every thread count's rounds, or prints why they are skipped.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    let runs = match &config.runs {
        Ok(runs) => runs,
        Err(missing) => {
            let line = format!("preload: skipped, {missing}");
            progress.print(&format!("{}\n", cells::wrap(&line, cells::COLUMNS)));
            return Ok(Vec::new());
        }
    };
    let mut cells = Vec::new();
    for run in runs {
        cells.extend(app::run(run, progress)?);
    }
    Ok(cells)
}

/// `app`'s table per thread count, with what the child does and what was verified.
fn tables(config: &Config, cells: &[Cell], _: &Machine) -> Vec<Table> {
    let Ok(runs) = &config.runs else {
        return Vec::new();
    };
    let mut tables = Vec::new();
    for run in runs {
        for mut table in app::tables(run, cells) {
            table.note(
                "each thread: pthread_mutex_lock, counter += 1, pthread_mutex_unlock on one \
                 PTHREAD_MUTEX_INITIALIZER mutex (lockbench pthread-pairs); metric = pairs/s, all threads; \
                 glibc+preload = the interposer with KLOCKS_LOCK unset, passing each call to glibc",
            );
            table.note(
                "verified: the counter equals threads × pairs, and in every preloaded run \
                 pthread_mutex_lock/unlock resolved to the preloaded library",
            );
            tables.push(table);
        }
    }
    tables
}

scenario! {
    takes: Neither,
    configure: Config::new,
    tables: tables,
}

/// The preload library beside the lockbench executable, rebuilt first under `cargo
/// run`; `Err` says why there is none and how to build it.
fn library() -> Result<PathBuf, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the lockbench executable: {e}"))?;
    let library = exe.with_file_name("libklocks.so");
    if let Some(cargo) = std::env::var_os("CARGO") {
        build(&cargo, &exe)?;
    }
    match library.is_file() {
        true => Ok(library),
        false => Err(format!(
            "no preload library at {}: build it with `cargo build --release -p klocks-ffi` (`cargo \
             run --release -p lockbench` builds it first)",
            library.display()
        )),
    }
}

/// Runs `cargo build -p klocks-ffi` into the target directory and profile `exe` was
/// built in, when `exe` sits in the target directory of this workspace's build.
fn build(cargo: &OsStr, exe: &Path) -> Result<(), String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .filter(|dir| dir.join("Cargo.toml").is_file());
    // <target>/<profile>/lockbench, or <target>/<triple>/<profile>/lockbench: cargo
    // marks <target> with CACHEDIR.TAG.
    let profile_dir = exe.parent();
    let profile = profile_dir.and_then(Path::file_name).and_then(OsStr::to_str);
    let above = profile_dir.and_then(Path::parent);
    let (Some(workspace), Some(profile), Some(above)) = (workspace, profile, above) else {
        return Ok(());
    };
    let mut command = Command::new(cargo);
    command.args(["build", "--quiet", "-p", "klocks-ffi"]);
    match profile {
        "release" => command.arg("--release"),
        "debug" => &mut command,
        other => command.args(["--profile", other]),
    };
    let target = if above.join("CACHEDIR.TAG").is_file() {
        above
    } else {
        let triple = above.file_name().and_then(OsStr::to_str);
        match (triple, above.parent()) {
            (Some(triple), Some(target)) if target.join("CACHEDIR.TAG").is_file() => {
                command.args(["--target", triple]);
                target
            }
            _ => return Ok(()),
        }
    };
    command.arg("--target-dir").arg(target).current_dir(workspace);
    let shown = std::iter::once(OsStr::new("cargo"))
        .chain(command.get_args())
        .map(OsStr::to_string_lossy)
        .collect::<Vec<_>>()
        .join(" ");
    eprintln!("lockbench: building libklocks.so for the preload scenario: {shown}");
    let status = command
        .status()
        .map_err(|e| format!("`{shown}` did not start: {e}"))?;
    match status.success() {
        true => Ok(()),
        false => Err(format!("`{shown}` failed ({status})")),
    }
}

/// The child: T threads × N pairs on one statically initialised pthread mutex
#[derive(Debug, Clone, clap::Args)]
pub struct PairsArgs {
    /// Threads
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    threads: u64,

    /// Lock/unlock pairs per thread
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pairs: u64,

    /// Skip the lock and unlock: the negative control, whose lost updates the count
    /// check must catch
    #[arg(long)]
    unlocked: bool,
}

/// A `pthread_mutex_t` in a static, as C declares one.
struct StaticMutex(std::cell::UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: a pthread mutex is made to be shared between threads; it is only touched
// through pthread_mutex_lock/unlock, which synchronise its state themselves.
unsafe impl Sync for StaticMutex {}

/// The one mutex: statically initialised, so the interposer meets it first in
/// `pthread_mutex_lock`, as it meets a C program's.
static MUTEX: StaticMutex = StaticMutex(std::cell::UnsafeCell::new(
    libc::PTHREAD_MUTEX_INITIALIZER,
));

/// The counter the mutex protects.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Runs the child: prints `pairs/s: X`, or why it failed (exit status 1).
pub fn pairs(args: &PairsArgs) -> ExitCode {
    match measure_pairs(args) {
        Ok(rate) => {
            println!("pairs/s: {rate:.0}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("lockbench {PAIRS_COMMAND}: {err}");
            ExitCode::FAILURE
        }
    }
}

fn measure_pairs(args: &PairsArgs) -> Result<f64, Error> {
    check_interposed()?;
    let threads = args.threads as usize;
    let start = Barrier::new(threads + 1);
    // Each thread times its own pairs; the wall time runs from the first start to
    // the last end, so neither the spawning nor a late-scheduled main thread counts.
    let timed: Vec<Result<(Instant, Instant), String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    let started = Instant::now();
                    one_thread(args.pairs, args.unlocked)?;
                    Ok((started, Instant::now()))
                })
            })
            .collect();
        start.wait();
        let joined = workers.into_iter().map(|worker| worker.join());
        joined
            .map(|timed| timed.expect("a pairs thread panicked"))
            .collect()
    });
    let timed = timed
        .into_iter()
        .collect::<Result<Vec<_>, String>>()
        .map_err(Error::Verification)?;
    let first = timed.iter().map(|(started, _)| *started).min();
    let last = timed.iter().map(|(_, ended)| *ended).max();
    let elapsed = last.zip(first).map(|(last, first)| last - first);
    let elapsed = elapsed.expect("at least one thread");
    let done = args.threads * args.pairs;
    verify_count(
        || format!("{} threads × {} pairs", args.threads, args.pairs),
        COUNTER.load(Relaxed),
        done,
    )?;
    Ok(done as f64 / elapsed.as_secs_f64())
}

/// One thread's pairs; `Err` names a call that returned an error.
#[inline(never)]
fn one_thread(pairs: u64, unlocked: bool) -> Result<(), String> {
    let mutex = MUTEX.0.get();
    for _ in 0..pairs {
        if unlocked {
            bump_with_a_gap();
            continue;
        }
        // SAFETY: `mutex` is an initialised pthread mutex that lives for the whole
        // process, and this thread does not hold it (it unlocked it last pass).
        let err = unsafe { libc::pthread_mutex_lock(mutex) };
        if err != 0 {
            return Err(format!("pthread_mutex_lock returned {err}"));
        }
        // Relaxed: the mutex orders the increments (its lock acquires, its unlock
        // releases).
        COUNTER.store(COUNTER.load(Relaxed) + 1, Relaxed);
        // SAFETY: this thread locked `mutex` above and holds it.
        let err = unsafe { libc::pthread_mutex_unlock(mutex) };
        if err != 0 {
            return Err(format!("pthread_mutex_unlock returned {err}"));
        }
    }
    Ok(())
}

/// `--unlocked`'s increment: a load and a store with a gap between them, so that the
/// other threads' increments in that gap are overwritten, even where the two CPUs
/// take turns rather than run at once (a single read-modify-write instruction is
/// never cut by a preemption).
fn bump_with_a_gap() {
    // Relaxed: nothing orders these, which is the point: updates get lost.
    let seen = COUNTER.load(Relaxed);
    for _ in 0..4 {
        std::hint::spin_loop();
    }
    // Keeps the compiler from folding the loop's increments into one store.
    compiler_fence(SeqCst);
    COUNTER.store(seen + 1, Relaxed);
}

/// Under LD_PRELOAD, refuses to run when pthread_mutex_lock or _unlock resolve
/// elsewhere than to a preloaded library: the pairs would not measure it.
fn check_interposed() -> Result<(), Error> {
    let preloaded: Vec<PathBuf> = std::env::var_os("LD_PRELOAD")
        .map(|list| {
            let list = list.as_bytes().split(|&b| b == b':' || b == b' ');
            list.filter(|entry| !entry.is_empty())
                .map(|entry| PathBuf::from(OsStr::from_bytes(entry)))
                .collect()
        })
        .unwrap_or_default();
    if preloaded.is_empty() {
        return Ok(());
    }
    let functions = [
        ("pthread_mutex_lock", libc::pthread_mutex_lock as *const libc::c_void),
        ("pthread_mutex_unlock", libc::pthread_mutex_unlock as *const libc::c_void),
    ];
    for (name, address) in functions {
        let object = defining_object(address).ok_or_else(|| {
            Error::Verification(format!("dladdr finds no object defining {name}"))
        })?;
        if !preloaded.iter().any(|entry| same_file(entry, &object)) {
            return Err(Error::Verification(format!(
                "{name} resolves to {}, not to the preloaded {}: the calls would not go \
                 through the interposer",
                object.display(),
                preloaded[0].display()
            )));
        }
    }
    Ok(())
}

/// The file of the loaded object that holds `address`.
fn defining_object(address: *const libc::c_void) -> Option<PathBuf> {
    // SAFETY: Dl_info is plain data (pointers and integers); all zeroes is a valid
    // value, which dladdr overwrites.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables and writes `info`, which is valid
    // for writes.
    let found = unsafe { libc::dladdr(address, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr found the object, so dli_fname is its NUL-terminated path, owned
    // by the loader for as long as the object stays loaded (libc and a preloaded
    // library stay for the process's life); it is copied at once.
    let path = unsafe { CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(OsStr::from_bytes(path.to_bytes())))
}

/// Whether two paths name the same file: canonically where both resolve, else (a
/// bare `libfoo.so` the loader searched for) by file name.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a.file_name() == b.file_name(),
    }
}
