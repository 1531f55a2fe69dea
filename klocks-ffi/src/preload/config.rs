//! `KLOCKS_LOCK`, `KLOCKS_RWLOCK` and `KLOCKS_SPIN`: the process's choice, read
//! once; and `KLOCKS_VERBOSE`, the line that names it.
//!
//! Names are matched ignoring ASCII case and surrounding blanks, and an empty value
//! is the variable unset: people type `KLOCKS_LOCK=Default`, and scripts write
//! `KLOCKS_LOCK=$CHOICE` with `CHOICE` empty. A name that is not a lock is answered
//! with one line that suggests the nearest name, and that family stays glibc's.

use std::sync::atomic::{AtomicU16, Ordering::Relaxed};

use std::ffi::CStr;

use klocks_core::catalog::RwLockKind;
use klocks_core::config::{parse_owner_probe, parse_spin_ns, BadValue, Var, OWNER_PROBE, SPIN_NS};
use klocks_core::owner::ProbeKind;

use super::settings::{GLIBC, LOCK, RWLOCK};
use super::stderr::say;
use klocks_core::catalog::MutexKind;

/// The policy `name` names: a catalog name, or `default` for the default rwlock
/// (the name `KLOCKS_LOCK` gives the pair), ignoring ASCII case.
fn policy_named(name: &str) -> Option<RwLockKind> {
    if name.eq_ignore_ascii_case(DEFAULT_ALIAS) {
        return Some(RwLockKind::Default);
    }
    RwLockKind::ALL
        .iter()
        .copied()
        .find(|policy| policy.name().eq_ignore_ascii_case(name))
}

/// `KLOCKS_RWLOCK=default`: the default rwlock, whose catalog name is `default-rw`;
/// `KLOCKS_SPIN=default`: `pvqspinlock`. The default mutex's name, which
/// `KLOCKS_LOCK` takes for the default pair.
const DEFAULT_ALIAS: &str = MutexKind::Default.name();

/// `KLOCKS_SPIN`: the spinlock that runs `pthread_spin_*` (see `spin`), `glibc` or
/// `help`; unset, glibc's. (Declared here, as `KLOCKS_VERBOSE`: only the preload
/// reads it.)
const SPIN: &CStr = c"KLOCKS_SPIN";
/// [`SPIN`]'s name, for messages.
const SPIN_NAME: &str = match SPIN.to_str() {
    Ok(name) => name,
    Err(_) => panic!("a variable's name is ASCII"),
};

/// The spinlocks `KLOCKS_SPIN` names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum SpinKind {
    /// `PvQSpinLock`, the kernel's answer (the [`spin`](super::spin) module doc).
    PvQSpin = 1,
    /// `QSpinLock`, for threads ≤ CPUs.
    QSpin = 2,
}

impl SpinKind {
    /// Every kind, the one to pick first (the encoding of the choice relies on the
    /// numbers).
    pub(super) const ALL: [SpinKind; 2] = [SpinKind::PvQSpin, SpinKind::QSpin];

    /// The lock's entry in the catalog, which names it.
    pub(super) fn catalog(self) -> MutexKind {
        match self {
            SpinKind::PvQSpin => MutexKind::PvQSpinLock,
            SpinKind::QSpin => MutexKind::QSpinLock,
        }
    }

    pub(super) fn name(self) -> &'static str {
        self.catalog().name()
    }

    /// What to pick it for, in a few words.
    pub(super) fn use_it_for(self) -> &'static str {
        match self {
            SpinKind::PvQSpin => "any spinlock, any number of threads (the kernel's answer)",
            SpinKind::QSpin => "no more threads than CPUs (never sleeps)",
        }
    }

    /// The kind whose number is `raw` (0 is glibc's: `None`).
    pub(super) fn from_raw(raw: u16) -> Option<SpinKind> {
        SpinKind::ALL.into_iter().find(|&kind| kind as u16 == raw)
    }
}

/// The spinlock `KLOCKS_SPIN=default` names.
const DEFAULT_SPIN: SpinKind = SpinKind::PvQSpin;

/// The spinlock `name` names, ignoring ASCII case: a catalog name, or `default`.
fn spin_named(name: &str) -> Option<SpinKind> {
    if name.eq_ignore_ascii_case(DEFAULT_ALIAS) {
        return Some(DEFAULT_SPIN);
    }
    SpinKind::ALL
        .into_iter()
        .find(|kind| kind.name().eq_ignore_ascii_case(name))
}

/// `KLOCKS_RWLOCK=glibc-rw`: glibc's rwlocks, under the name lockbench's
/// `--rwlocks` gives them (one name per lock, in every tool).
pub(super) const GLIBC_RW: &str = "glibc-rw";

/// The value that lists the names instead of choosing one.
const HELP: &str = "help";

/// The mutex kind `name` names, ignoring ASCII case.
fn mutex_named(name: &str) -> Option<MutexKind> {
    MutexKind::C_KINDS
        .into_iter()
        .find(|kind| kind.name().eq_ignore_ascii_case(name))
}

/// A variable's value as a choice: blanks around it ignored, empty as unset.
pub(super) fn setting(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|value| !value.is_empty())
}

/// The name among `names` that `typed` most likely misspells, if one is close
/// enough (Jaro-Winkler similarity, which favours a shared beginning: `pvqspin`
/// finds `pvqspinlock`, `defualt` finds `default`).
fn nearest(typed: &str, names: impl IntoIterator<Item = &'static str>) -> Option<&'static str> {
    /// Below this, the names share too little for the suggestion to help.
    const CLOSE_ENOUGH: f64 = 0.8;
    let typed = typed.trim().to_ascii_lowercase();
    names
        .into_iter()
        .map(|name| (strsim::jaro_winkler(&typed, name), name))
        .filter(|&(similarity, _)| similarity >= CLOSE_ENOUGH)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name)
}

/// `; did you mean `name`?`, or nothing when no name is close.
pub(super) fn did_you_mean(typed: &str, names: impl IntoIterator<Item = &'static str>) -> String {
    nearest(typed, names).map_or_else(String::new, |name| format!("; did you mean `{name}`?"))
}

/// What the process uses: `None` is glibc.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Choice {
    pub(super) mutex: Option<MutexKind>,
    pub(super) rwlock: Option<RwLockKind>,
    pub(super) spin: Option<SpinKind>,
}

/// The choice, encoded: 0 until made; else `0x8000 | spin << 8 | mutex << 4 |
/// rwlock`, with 0 for glibc in each field (the kind numbers start at 1, and the
/// rwlock's is its place in the catalog's list, from 1).
static CHOICE: AtomicU16 = AtomicU16::new(0);
const MADE: u16 = 0x8000;
// The mutex's field holds a C kind number, the rwlock's a place in the list, each 4
// bits wide.
const _: () = assert!(MutexKind::C_KINDS.len() < 16);
const _: () = assert!(RwLockKind::ALL.len() < 16);

fn encode(choice: Choice) -> u16 {
    let mutex = choice
        .mutex
        .and_then(MutexKind::c_kind)
        .map_or(0, |raw| raw as u16);
    let rwlock = choice.rwlock.map_or(0, |policy| {
        let place = RwLockKind::ALL.iter().position(|&kind| kind == policy);
        place.map_or_else(
            || unreachable!("every rwlock is in the list"),
            |place| place as u16 + 1,
        )
    });
    let spin = choice.spin.map_or(0, |kind| kind as u16);
    MADE | spin << 8 | mutex << 4 | rwlock
}

fn decode(raw: u16) -> Choice {
    let rwlock = match raw & 0xF {
        0 => None,
        n => RwLockKind::ALL.get(usize::from(n) - 1).copied(),
    };
    Choice {
        mutex: MutexKind::from_c_kind(u32::from(raw >> 4 & 0xF)),
        rwlock,
        spin: SpinKind::from_raw(raw >> 8 & 0xF),
    }
}

/// The process's mutex kind, `None` for glibc's; the first call makes the choice.
#[inline(always)]
pub(super) fn mutex_kind() -> Option<MutexKind> {
    // Relaxed: see `choice`.
    match CHOICE.load(Relaxed) {
        0 => make_choice().mutex,
        raw => MutexKind::from_c_kind(u32::from(raw >> 4 & 0xF)),
    }
}

/// The process's choice; the first call makes it.
#[inline]
pub(super) fn choice() -> Choice {
    // Relaxed: the choice is a pure function of the environment, so every thread that
    // makes it makes the same one; nothing else is published through it.
    match CHOICE.load(Relaxed) {
        0 => make_choice(),
        raw => decode(raw),
    }
}

/// An environment variable's value, borrowed from the environment (no allocation).
pub(super) fn var(var: Var) -> Option<&'static str> {
    env_value(var.c_name())
}

/// The value of the environment variable `name` (see [`var`]).
fn env_value(name: &CStr) -> Option<&'static str> {
    // SAFETY: the name is NUL-terminated. glibc's `getenv` returns null or a pointer
    // into the environment block; nothing in this process is expected to change the
    // variables that configure it while it starts.
    let value = unsafe { libc::getenv(name.as_ptr()) };
    if value.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string in the environment block, which lives as long
    // as the process.
    Some(
        unsafe { CStr::from_ptr(value) }
            .to_str()
            .unwrap_or("\u{FFFD}"),
    )
}

/// Makes the choice without allocating before it is stored: the first interposed call
/// may come from inside `malloc` (allocators lock pthread mutexes), and an allocation
/// here would re-enter `malloc` and this function. Complaints are rendered and
/// printed after the store, by the thread whose store won.
#[cold]
fn make_choice() -> Choice {
    let env = Env {
        lock: var(LOCK),
        rwlock: var(RWLOCK),
        spin: env_value(SPIN),
        spin_ns: var(SPIN_NS),
        probe: var(OWNER_PROBE),
    };
    let mut complaints = [None; 7];
    let mut count = 0;
    let choice = decide(&env, |complaint| {
        complaints[count] = Some(complaint);
        count += 1;
    });
    // Relaxed: see `choice`.
    match CHOICE.compare_exchange(0, encode(choice), Relaxed, Relaxed) {
        Ok(_) => {
            for complaint in complaints.into_iter().flatten() {
                for line in complaint.lines() {
                    say(&line);
                }
            }
            if choice.mutex.is_some() || choice.rwlock.is_some() {
                super::fork::install();
            }
            choice
        }
        Err(stored) => decode(stored),
    }
}

/// Readies what a klocks lock would otherwise set up inside its first contended
/// lock call: the spin budget's calibration (a thread and a millisecond) and the
/// owner probe (a perf event); and finds glibc's tid field for the lock words and
/// owner fields (a thread), which only here may start a thread. Called from the library's constructor, where no lock
/// is held and `malloc` is not in progress.
pub(super) fn warm_up() {
    // The fork generations of the C API's mutexes, whether or not the interposer
    // serves pthread's locks (and its own, which `choice` installs otherwise).
    super::fork::install();
    if choice() != GLIBC_ONLY {
        klocks_core::budget::SpinBudget::new().ns();
        klocks_core::owner::probe_kind();
        klocks_core::owner::calibrate_glibc_tid();
    }
}

/// `KLOCKS_VERBOSE`: `1` prints one line at start naming what is active, `0` (as
/// unset or empty) nothing.
const VERBOSE: &CStr = c"KLOCKS_VERBOSE";

/// Whether `KLOCKS_VERBOSE`'s value asks for the line; the complaint for a value
/// that is neither `0` nor `1`.
fn verbose(value: Option<&str>) -> Result<bool, String> {
    match setting(value) {
        None | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(format!(
            "{}={other:?} is not a verbosity: use 1 (one line at start naming the locks) or 0; quiet",
            VERBOSE.to_str().unwrap_or("KLOCKS_VERBOSE")
        )),
    }
}

/// The line `KLOCKS_VERBOSE=1` prints: the mutex, rwlock and spinlock of `choice`,
/// the owner probe (`None`: glibc's locks only, which use none) and whether the
/// contention profile is on.
fn active_line(choice: Choice, probe: Option<ProbeKind>, profile: bool) -> String {
    format!(
        "active: mutexes {}, rwlocks {}, spinlocks {}, owner probe {}, profile {}",
        choice.mutex.map_or(GLIBC, MutexKind::name),
        choice.rwlock.map_or(GLIBC, RwLockKind::name),
        choice.spin.map_or(GLIBC, SpinKind::name),
        probe.map_or("unused (glibc's locks)", ProbeKind::name),
        if profile { "on" } else { "off" }
    )
}

/// Prints what `KLOCKS_VERBOSE` asks for: the active line, or why its value is not
/// understood. Called from the library's constructor, after [`warm_up`] and the
/// profile's start, so that the probe is picked and the profile decided.
pub(super) fn announce(profile: bool) {
    match verbose(env_value(VERBOSE)) {
        Ok(false) => {}
        Ok(true) => {
            let choice = choice();
            let probe = (choice != GLIBC_ONLY).then(klocks_core::owner::probe_kind);
            say(&active_line(choice, probe, profile));
        }
        Err(complaint) => say(&complaint),
    }
}

/// `KLOCKS_LOCKDEP`: the lock validator (`lockdep`): `1` reports in text, `json` in
/// JSON lines, `0` (as unset or empty) is off.
pub(super) const LOCKDEP: Var = Var::new(c"KLOCKS_LOCKDEP");
/// Where the validator's reports go: a file path, appended to, `%p` replaced by the
/// process id; unset, stderr.
pub(super) const LOCKDEP_FILE: Var = Var::new(c"KLOCKS_LOCKDEP_FILE");

/// What [`LOCKDEP`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lockdep {
    Off,
    Text,
    Json,
}

/// [`LOCKDEP`]'s value read; the complaint for one it does not take.
pub(super) fn parse_lockdep(value: Option<&str>) -> Result<Lockdep, String> {
    match setting(value) {
        None | Some("0") => Ok(Lockdep::Off),
        Some("1") => Ok(Lockdep::Text),
        Some(json) if json.eq_ignore_ascii_case("json") => Ok(Lockdep::Json),
        Some(other) => Err(format!(
            "KLOCKS_LOCKDEP={other:?} is not a setting: use 1 (reports in text), json or 0; no validation"
        )),
    }
}

/// Whether `KLOCKS_VERBOSE=1` (the validator then prints its usage at exit).
pub(super) fn verbose_on() -> bool {
    verbose(env_value(VERBOSE)) == Ok(true)
}

const GLIBC_ONLY: Choice = Choice {
    mutex: None,
    rwlock: None,
    spin: None,
};

/// The variables that configure the interposer.
struct Env<'a> {
    lock: Option<&'a str>,
    rwlock: Option<&'a str>,
    spin: Option<&'a str>,
    spin_ns: Option<&'a str>,
    probe: Option<&'a str>,
}

/// Something to tell the user about the environment (built without allocating).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Complaint<'a> {
    Help,
    UnknownLock(&'a str),
    UnknownRwLock(&'a str),
    UnknownSpin(&'a str),
    BadSetting(BadValue<'a>),
    RefusedProbe(ProbeKind),
}

impl Complaint<'_> {
    /// The lines to print.
    fn lines(self) -> Vec<String> {
        match self {
            Complaint::Help => help_lines(),
            Complaint::UnknownLock(name) => {
                let names = MutexKind::C_KINDS
                    .map(MutexKind::name)
                    .into_iter()
                    .chain([GLIBC, HELP]);
                vec![format!(
                    "{LOCK}={name:?} is not a lock{} ({LOCK}=help lists them); using glibc's mutexes",
                    did_you_mean(name, names)
                )]
            }
            Complaint::UnknownRwLock(name) => {
                let names = RwLockKind::ALL.iter().map(|kind| kind.name());
                let names = names.chain([DEFAULT_ALIAS, GLIBC, HELP]);
                vec![format!(
                    "{RWLOCK}={name:?} is not an rwlock{} ({RWLOCK}=help lists them); using glibc's rwlocks",
                    did_you_mean(name, names)
                )]
            }
            Complaint::UnknownSpin(name) => {
                let names = SpinKind::ALL.map(SpinKind::name).into_iter();
                let names = names.chain([DEFAULT_ALIAS, GLIBC, HELP]);
                vec![format!(
                    "{SPIN_NAME}={name:?} is not a spinlock{} ({SPIN_NAME}=help lists them); using glibc's spinlocks",
                    did_you_mean(name, names)
                )]
            }
            Complaint::BadSetting(bad) => vec![format!("{bad}; using glibc's locks")],
            Complaint::RefusedProbe(kind) => vec![format!(
                "{OWNER_PROBE}={} is refused here ({}); using glibc's locks",
                kind.name(),
                kind.check()
                    .err()
                    .map_or_else(String::new, |e| e.to_string())
            )],
        }
    }
}

/// `help`'s answer: every name of both variables (the default first), what to pick
/// it for and what it is.
fn help_lines() -> Vec<String> {
    let entry = |name: &str, use_it_for: &str, about: &str| {
        format!("  {name:<15} use for {use_it_for}. {about}")
    };
    let glibc = entry(
        GLIBC,
        "what the program runs without klocks",
        "glibc's own locks (as unset)",
    );
    let mut lines = vec![format!(
        "{LOCK}=<name> runs the program's mutexes and condvars on a klocks lock (`{DEFAULT_ALIAS}`: its rwlocks too, unless {RWLOCK} is set); names ignore case:"
    )];
    let others = MutexKind::C_KINDS
        .into_iter()
        .filter(|&kind| kind != MutexKind::Default);
    lines.extend(
        [MutexKind::Default]
            .into_iter()
            .chain(others)
            .map(|kind| entry(kind.name(), kind.use_when(), kind.about())),
    );
    lines.push(glibc.clone());
    lines.push(format!(
        "{RWLOCK}=<name> runs the program's rwlocks on a klocks rwlock (`{DEFAULT_ALIAS}` is {}); names ignore case:",
        RwLockKind::Default.name()
    ));
    let others = RwLockKind::ALL
        .iter()
        .copied()
        .filter(|&policy| policy != RwLockKind::Default);
    lines.extend(
        [RwLockKind::Default]
            .into_iter()
            .chain(others)
            .map(|policy| entry(policy.name(), policy.use_when(), policy.about())),
    );
    lines.push(glibc.clone());
    lines.push(format!(
        "{SPIN_NAME}=<name> runs the program's pthread spinlocks on a klocks spinlock (`{DEFAULT_ALIAS}` is {}); names ignore case:",
        DEFAULT_SPIN.name()
    ));
    lines.extend(
        SpinKind::ALL
            .into_iter()
            .map(|kind| entry(kind.name(), kind.use_it_for(), kind.catalog().about())),
    );
    lines.push(glibc);
    lines
}

/// The choice `env` asks for; what is wrong with it goes to `complain`.
fn decide<'a>(env: &Env<'a>, mut complain: impl FnMut(Complaint<'a>)) -> Choice {
    let mut helped = false;
    let mut help = |complain: &mut dyn FnMut(Complaint<'a>)| {
        if !std::mem::replace(&mut helped, true) {
            complain(Complaint::Help);
        }
    };
    let mutex = match setting(env.lock) {
        None => None,
        Some(name) if name.eq_ignore_ascii_case(GLIBC) => None,
        Some(name) if name.eq_ignore_ascii_case(HELP) => {
            help(&mut complain);
            None
        }
        Some(name) => mutex_named(name).or_else(|| {
            complain(Complaint::UnknownLock(name));
            None
        }),
    };
    let rwlock = match setting(env.rwlock) {
        None => None,
        // `glibc-rw`: glibc's rwlock as lockbench's `--rwlocks` names it.
        Some(name) if name.eq_ignore_ascii_case(GLIBC) || name.eq_ignore_ascii_case(GLIBC_RW) => {
            None
        }
        Some(name) if name.eq_ignore_ascii_case(HELP) => {
            help(&mut complain);
            None
        }
        Some(name) => policy_named(name).or_else(|| {
            complain(Complaint::UnknownRwLock(name));
            None
        }),
    };
    let spin = match setting(env.spin) {
        None => None,
        Some(name) if name.eq_ignore_ascii_case(GLIBC) => None,
        Some(name) if name.eq_ignore_ascii_case(HELP) => {
            help(&mut complain);
            None
        }
        Some(name) => spin_named(name).or_else(|| {
            complain(Complaint::UnknownSpin(name));
            None
        }),
    };
    // `default` names the default pair: its rwlock too, unless KLOCKS_RWLOCK is set.
    let rwlock = match (mutex, setting(env.rwlock)) {
        (Some(MutexKind::Default), None) => Some(RwLockKind::Default),
        _ => rwlock,
    };
    if mutex.is_none() && rwlock.is_none() && spin.is_none() {
        return GLIBC_ONLY;
    }
    // The klocks locks would panic on these later, inside a lock call. The checks
    // allocate nothing (an error message is made only when printed).
    let spin_ok = match env.spin_ns.map(parse_spin_ns) {
        Some(Err(bad)) => {
            complain(Complaint::BadSetting(bad));
            false
        }
        _ => true,
    };
    let probe_ok = match env.probe {
        None => true,
        Some(text) => match parse_owner_probe(text) {
            Err(bad) => {
                complain(Complaint::BadSetting(bad));
                false
            }
            Ok(kind) => {
                kind.check().is_ok() || {
                    complain(Complaint::RefusedProbe(kind));
                    false
                }
            }
        },
    };
    if spin_ok && probe_ok {
        Choice {
            mutex,
            rwlock,
            spin,
        }
    } else {
        GLIBC_ONLY
    }
}

#[cfg(test)]
mod tests;
