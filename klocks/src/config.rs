//! The `KLOCKS_*` settings: read once per process, validated, and never a reason for
//! a lock operation to panic or to wait.
//!
//! Two environment variables tune klocks: `KLOCKS_SPIN_NS` (the spin budget,
//! [`budget`](crate::budget)) and `KLOCKS_OWNER_PROBE` (the owner probe,
//! [`owner`](crate::owner)). A lock's slow path asks for them, often after it has
//! changed the lock's words (a ticket taken, a node queued), so asking must never
//! fail there: a panic between two state changes would leave a lock wedged or a
//! queued node on a dead stack. So:
//!
//! - **A bad value is reported, not fatal.** It is printed once on stderr, naming the
//!   variable, the value and what is accepted, and the automatic setting is used (the
//!   calibrated budget, the first probe that works). A forced probe that the system
//!   refuses (perf under seccomp) is reported the same way. A program that wants a
//!   bad setting to stop it calls [`check`] at start-up; lockbench does, and exits
//!   with status 2.
//! - **Resolving never blocks.** Each setting is resolved by the first thread that
//!   needs it (a `Resolved` cell); a thread that asks while another resolves, or a signal
//!   handler that interrupts the resolving thread, gets a provisional value at once
//!   instead of waiting (a `OnceLock` would make it wait, or deadlock in the handler).
//! - **Fork-safe.** A child forked while its parent was resolving a setting would
//!   wait forever for a thread it does not have; here the resolver's pid is in the
//!   state word, and a child sees that it is not its own and resolves again.

use std::ffi::CStr;
use std::fmt;

use crate::budget::MAX_SPIN_NS;
use crate::owner::ProbeKind;

/// A `KLOCKS_*` environment variable. The name is NUL-terminated, so that the
/// preload can look it up with `getenv` without allocating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Var(&'static CStr);

impl Var {
    /// The variable's name.
    pub const fn name(self) -> &'static str {
        match self.0.to_str() {
            Ok(name) => name,
            Err(_) => panic!("a variable's name is ASCII"),
        }
    }

    /// The variable's name as a C string.
    pub const fn c_name(self) -> &'static CStr {
        self.0
    }
}

impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The spin budget of every pv lock and spinning waiter ([`budget`](crate::budget)):
/// whole nanoseconds, `0..=`[`MAX_SPIN_NS`]. Read with [`parse_spin_ns`].
pub const SPIN_NS: Var = Var(c"KLOCKS_SPIN_NS");
/// The owner probe ([`owner`](crate::owner)): a [`ProbeKind`] name. Read with
/// [`parse_owner_probe`].
pub const OWNER_PROBE: Var = Var(c"KLOCKS_OWNER_PROBE");
/// The preload's mutex: a [`MutexKind`](crate::catalog::MutexKind) name, `glibc` or
/// `help`.
pub const LOCK: Var = Var(c"KLOCKS_LOCK");
/// The preload's reader-writer lock: a [`RwLockKind`](crate::catalog::RwLockKind)
/// name, `glibc` or `help`.
pub const RWLOCK: Var = Var(c"KLOCKS_RWLOCK");

/// The value of [`LOCK`] and [`RWLOCK`] that keeps glibc's locks (as unset does).
pub const GLIBC: &str = "glibc";

/// A value that a variable does not accept. Building one allocates nothing (the
/// preload checks its settings where `malloc` may be in progress); the message is
/// made when it is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadValue<'a> {
    /// The variable.
    pub var: Var,
    /// The value, as given.
    pub text: &'a str,
    /// What is wrong with it.
    pub problem: Problem,
}

/// What is wrong with a [`BadValue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// Not a whole number of nanoseconds.
    NotNanoseconds,
    /// A number of nanoseconds above [`MAX_SPIN_NS`].
    AboveMaximum,
    /// Not the name of a [`ProbeKind`].
    NotAProbe,
}

impl fmt::Display for BadValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let BadValue { var, text, .. } = *self;
        match self.problem {
            Problem::NotNanoseconds => write!(
                f,
                "{var}={text:?} is not a whole number of nanoseconds (0..={MAX_SPIN_NS})"
            ),
            Problem::AboveMaximum => write!(
                f,
                "{var}={} is above the maximum of {MAX_SPIN_NS} ns (10 ms)",
                text.trim()
            ),
            Problem::NotAProbe => {
                write!(f, "{var}={text:?} is not a probe: use ")?;
                for (i, kind) in ProbeKind::ALL.into_iter().enumerate() {
                    let sep = match i {
                        0 => "",
                        _ if i + 1 == ProbeKind::ALL.len() => " or ",
                        _ => ", ",
                    };
                    write!(f, "{sep}{}", kind.name())?;
                }
                Ok(())
            }
        }
    }
}

/// Parses a [`SPIN_NS`] value.
pub fn parse_spin_ns(text: &str) -> Result<u64, BadValue<'_>> {
    let bad = |problem| BadValue {
        var: SPIN_NS,
        text,
        problem,
    };
    match text.trim().parse::<u64>() {
        Err(_) => Err(bad(Problem::NotNanoseconds)),
        Ok(ns) if ns > MAX_SPIN_NS => Err(bad(Problem::AboveMaximum)),
        Ok(ns) => Ok(ns),
    }
}

/// Parses an [`OWNER_PROBE`] value.
pub fn parse_owner_probe(text: &str) -> Result<ProbeKind, BadValue<'_>> {
    ProbeKind::ALL
        .into_iter()
        .find(|kind| kind.name() == text.trim())
        .ok_or(BadValue {
            var: OWNER_PROBE,
            text,
            problem: Problem::NotAProbe,
        })
}

/// A `KLOCKS_*` variable whose value klocks does not accept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// What is wrong, naming the variable, the value and what is accepted.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

impl From<BadValue<'_>> for ConfigError {
    fn from(bad: BadValue<'_>) -> Self {
        ConfigError {
            message: bad.to_string(),
        }
    }
}

/// A variable's value: `None` when unset; an error for text that is not UTF-8.
fn var(var: Var) -> Result<Option<String>, ConfigError> {
    match std::env::var(var.name()) {
        Ok(text) => Ok(Some(text)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(raw)) => Err(ConfigError {
            message: format!("{var}={raw:?} is not valid text"),
        }),
    }
}

/// [`SPIN_NS`], parsed: `None` when unset.
pub fn spin_ns() -> Result<Option<u64>, ConfigError> {
    var(SPIN_NS)?
        .map(|text| parse_spin_ns(&text).map_err(ConfigError::from))
        .transpose()
}

/// [`OWNER_PROBE`], parsed: `None` when unset (automatic).
pub fn owner_probe() -> Result<Option<ProbeKind>, ConfigError> {
    var(OWNER_PROBE)?
        .map(|text| parse_owner_probe(&text).map_err(ConfigError::from))
        .transpose()
}

/// Checks every `KLOCKS_*` setting, including that a forced owner probe works here;
/// the first problem found. The locks themselves report a bad setting once on stderr
/// and use the automatic one (module doc); call this to refuse to run instead.
pub fn check() -> Result<(), ConfigError> {
    spin_ns()?;
    if let Some(kind) = owner_probe()? {
        #[cfg(not(loom))]
        kind.check().map_err(|err| ConfigError {
            message: format!("{OWNER_PROBE}={} is refused here: {err}", kind.name()),
        })?;
        #[cfg(loom)]
        let _ = kind;
    }
    Ok(())
}

/// Prints `problem` and what is done instead on stderr, with one `write` system
/// call (no stdio lock to deadlock on, no panic if stderr is closed).
pub fn report(problem: &ConfigError, instead: &str) {
    let line = format!("klocks: {problem}; {instead}\n");
    // SAFETY: writes `line`'s bytes, which live for the call, to fd 2. A short or
    // failed write loses (part of) a diagnostic, nothing else.
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
}

/// A value resolved once per process by whichever thread needs it first, without
/// making any other thread wait (module doc).
#[cfg(not(loom))]
pub(crate) struct Resolved {
    /// [`UNRESOLVED`], [`READY`], or `pid + 1` of the process whose thread resolves.
    state: std::sync::atomic::AtomicU64,
    value: std::sync::atomic::AtomicU64,
}

#[cfg(not(loom))]
const UNRESOLVED: u64 = 0;
#[cfg(not(loom))]
const READY: u64 = u64::MAX;

#[cfg(not(loom))]
impl Resolved {
    pub(crate) const fn new() -> Self {
        Self {
            state: std::sync::atomic::AtomicU64::new(UNRESOLVED),
            value: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The value, and whether it is final: `resolve()` runs on the first caller;
    /// callers that come while it runs get `(provisional, false)` at once.
    #[inline]
    pub(crate) fn get(&self, resolve: impl FnOnce() -> u64, provisional: u64) -> (u64, bool) {
        use std::sync::atomic::Ordering::{Acquire, Relaxed};
        // Acquire: pairs with the Release in `resolve_from`, which publishes `value`.
        match self.state.load(Acquire) {
            // Relaxed: ordered by the Acquire above.
            READY => (self.value.load(Relaxed), true),
            seen => self.resolve_from(seen, resolve, provisional),
        }
    }

    #[cold]
    fn resolve_from(
        &self,
        seen: u64,
        resolve: impl FnOnce() -> u64,
        provisional: u64,
    ) -> (u64, bool) {
        use std::sync::atomic::Ordering::{Relaxed, Release};
        let mine = u64::from(std::process::id()) + 1;
        // Another thread of this process resolves (or this thread, interrupted by a
        // signal handler that takes a lock): do not wait for it.
        if seen == mine {
            return (provisional, false);
        }
        // Unresolved, or left half-resolved by a parent's thread before a fork: ours.
        // Relaxed: the CAS only elects a resolver; nothing is published yet.
        if self
            .state
            .compare_exchange(seen, mine, Relaxed, Relaxed)
            .is_err()
        {
            return (provisional, false);
        }
        let value = resolve();
        // Relaxed: published by the Release store of the state.
        self.value.store(value, Relaxed);
        // Release: pairs with the Acquire in `get`.
        self.state.store(READY, Release);
        (value, true)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_value_resolves_once_and_racers_get_the_provisional_one() {
        let cell = Resolved::new();
        // A caller that comes while the resolver runs (here: from inside it).
        let (value, done) = cell.get(
            || {
                assert_eq!(cell.get(|| unreachable!(), 7), (7, false));
                42
            },
            7,
        );
        assert_eq!((value, done), (42, true));
        assert_eq!(cell.get(|| unreachable!(), 7), (42, true));
    }

    #[test]
    fn a_resolver_left_behind_by_another_process_is_replaced() {
        let cell = Resolved::new();
        // The state a fork child inherits from a parent (another pid) mid-resolution.
        let parent = u64::from(std::process::id()) + 2;
        cell.state
            .store(parent, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(cell.get(|| 5, 1), (5, true));
    }

    const CHILD: &str = "KLOCKS_CONFIG_TEST_CHILD";

    /// Every lock kind, contended, in a process whose settings are both invalid: each
    /// is reported once, and nothing panics or wedges (the child's locks complete and
    /// verify their counters).
    #[test]
    fn bad_settings_are_reported_once_and_every_lock_still_works() {
        use crate::reader_spin::{Adaptive, Always, Never};
        use crate::testing::{contend, contend_rw, Contention, RwContention};
        if std::env::var_os(CHILD).is_some() {
            let how = Contention::threads(6).iterations(3_000);
            contend::<crate::PvQSpinLock>(how).unwrap();
            contend::<crate::PvTicketLock>(how).unwrap();
            contend::<crate::SpinFutexMutex>(how).unwrap();
            contend::<crate::FutexMutex>(how).unwrap();
            let rw = RwContention {
                readers: 3,
                writers: 3,
                iterations: 2_000,
            };
            contend_rw::<crate::RwSem<Adaptive>>(rw).unwrap();
            contend_rw::<crate::RwSem<Always>>(rw).unwrap();
            contend_rw::<crate::RwSem<Never>>(rw).unwrap();
            // Whether a waiter spun above depends on the machine (one CPU never
            // spins, a lucky schedule never meets a running owner); ask as a spinning
            // waiter would, so that each setting is resolved at least once.
            crate::budget::SpinBudget::new().ns();
            crate::owner::Watch::new(crate::owner::current_tid());
            assert!(check().is_err());
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "config::tests::bad_settings_are_reported_once_and_every_lock_still_works",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .env(SPIN_NS.name(), "5us")
            .env(OWNER_PROBE.name(), "ebpf")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{:?}: {stderr}", out.status);
        for (needle, instead) in [
            ("KLOCKS_SPIN_NS=\"5us\"", "using the calibrated spin budget"),
            (
                "KLOCKS_OWNER_PROBE=\"ebpf\"",
                "choosing the owner probe automatically",
            ),
        ] {
            let lines: Vec<_> = stderr.lines().filter(|l| l.contains(needle)).collect();
            assert_eq!(lines.len(), 1, "{needle}: {stderr}");
            assert!(
                lines[0].starts_with("klocks: ") && lines[0].contains(instead),
                "{}",
                lines[0]
            );
        }
    }

    #[test]
    fn errors_name_the_variable_the_value_and_the_range() {
        let err = ConfigError::from(parse_spin_ns("abc").unwrap_err());
        assert!(err.to_string().contains("KLOCKS_SPIN_NS=\"abc\""));
    }

    #[test]
    fn spin_ns_accepts_whole_nanoseconds_in_range() {
        assert_eq!(parse_spin_ns("0"), Ok(0));
        assert_eq!(parse_spin_ns(" 2500 "), Ok(2500));
        assert_eq!(parse_spin_ns("10000000"), Ok(MAX_SPIN_NS));
    }

    #[test]
    fn spin_ns_rejects_garbage_with_the_variable_name() {
        for bad in ["", "abc", "-5", "1.5", "1e3", "18446744073709551616"] {
            let err = parse_spin_ns(bad).unwrap_err();
            assert_eq!(err.problem, Problem::NotNanoseconds, "{bad:?}");
            assert!(err.to_string().contains("KLOCKS_SPIN_NS"), "{bad:?}: {err}");
        }
        let err = parse_spin_ns(" 20000000 ").unwrap_err();
        assert_eq!(
            err.to_string(),
            "KLOCKS_SPIN_NS=20000000 is above the maximum of 10000000 ns (10 ms)"
        );
    }

    #[test]
    fn probe_names_parse_back() {
        for kind in ProbeKind::ALL {
            assert_eq!(parse_owner_probe(kind.name()), Ok(kind));
        }
        assert_eq!(parse_owner_probe(" clock\n"), Ok(ProbeKind::CpuClock));
    }

    #[test]
    fn bad_probe_names_are_rejected_with_the_variable_and_the_choices() {
        for bad in ["", "PERF", "auto", "perf,clock", "spin"] {
            let err = parse_owner_probe(bad).unwrap_err().to_string();
            assert!(
                err.ends_with("is not a probe: use perf, clock or budget"),
                "{err}"
            );
            assert!(
                err.starts_with(&format!("KLOCKS_OWNER_PROBE={bad:?}")),
                "{err}"
            );
        }
    }
}
