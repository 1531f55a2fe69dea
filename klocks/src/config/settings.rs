//! The `KLOCKS_*` variables, each named once, and their validated readers. The
//! parsers allocate nothing until their error is printed, so the preload can check
//! its settings where `malloc` may be in progress.

use std::ffi::CStr;
use std::fmt;

/// The largest `KLOCKS_SPIN_NS` / override accepted: 10 ms. Spinning longer than a
/// scheduler tick never helps.
pub const MAX_SPIN_NS: u64 = 10_000_000;

/// The mechanism answering "is thread T on a CPU?" (see [`owner`](crate::owner)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// The owner's context switches, read from a perf ring.
    PerfSwitch,
    /// The owner's thread CPU clock, sampled.
    CpuClock,
    /// No probe: always unknown.
    Budget,
}

impl ProbeKind {
    /// Every mechanism, in the order automatic selection tries them.
    pub const ALL: [ProbeKind; 3] = [
        ProbeKind::PerfSwitch,
        ProbeKind::CpuClock,
        ProbeKind::Budget,
    ];

    /// The name `KLOCKS_OWNER_PROBE` takes: `perf`, `clock` or `budget`.
    pub fn name(self) -> &'static str {
        match self {
            ProbeKind::PerfSwitch => "perf",
            ProbeKind::CpuClock => "clock",
            ProbeKind::Budget => "budget",
        }
    }
}

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

/// The preload's contention profile: [`Profile`]'s values. Read with
/// [`parse_profile`].
pub const PROFILE: Var = Var(c"KLOCKS_PROFILE");
/// Where the preload's contention profile goes: a file path, appended to, with `%p`
/// replaced by the process id; unset, stderr.
pub const PROFILE_FILE: Var = Var(c"KLOCKS_PROFILE_FILE");
/// How many locks the contention profile lists: `1..=`[`MAX_PROFILE_TOP`]. Read with
/// [`parse_profile_top`].
pub const PROFILE_TOP: Var = Var(c"KLOCKS_PROFILE_TOP");
/// How the contention profile is written: `text`, `json` or `folded` (flame-graph
/// tools' folded stacks); unset, `text`.
pub const PROFILE_FORMAT: Var = Var(c"KLOCKS_PROFILE_FORMAT");
/// The most locks a profile lists.
pub const MAX_PROFILE_TOP: usize = 100;
/// How many live locks the contention profile's table holds at once:
/// `64..=`[`MAX_PROFILE_LOCKS`], rounded up to a power of two; unset,
/// [`DEFAULT_PROFILE_LOCKS`]. Read with [`parse_profile_locks`].
pub const PROFILE_LOCKS: Var = Var(c"KLOCKS_PROFILE_LOCKS");
/// The profile table's size unless [`PROFILE_LOCKS`] says.
pub const DEFAULT_PROFILE_LOCKS: usize = 1 << 16;
/// The largest profile table (512 bytes a lock: 8 GiB of address space reserved,
/// backed only as used).
pub const MAX_PROFILE_LOCKS: usize = 1 << 24;

/// When the preload prints its contention profile ([`PROFILE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// `0`: no profile (as unset).
    Off,
    /// `1`: at exit.
    AtExit,
    /// `sigusr2`: at exit and each time the process receives `SIGUSR2`.
    AtExitAndSigusr2,
}

impl Profile {
    /// Every value, with the name [`PROFILE`] takes for it.
    pub const ALL: [(Profile, &'static str); 3] = [
        (Profile::Off, "0"),
        (Profile::AtExit, "1"),
        (Profile::AtExitAndSigusr2, "sigusr2"),
    ];
}

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
    /// Not one of [`Profile::ALL`]'s names.
    NotAProfile,
    /// Not a whole number in `1..=`[`MAX_PROFILE_TOP`].
    NotATop,
    /// Not a whole number in `64..=`[`MAX_PROFILE_LOCKS`].
    NotALockCount,
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
            Problem::NotAProfile => write!(
                f,
                "{var}={text:?} is not a profile setting: use 0, 1 (at exit) or sigusr2 (at exit and on SIGUSR2)"
            ),
            Problem::NotATop => write!(
                f,
                "{var}={text:?} is not a number of locks in 1..={MAX_PROFILE_TOP}"
            ),
            Problem::NotALockCount => write!(
                f,
                "{var}={text:?} is not a number of locks in 64..={MAX_PROFILE_LOCKS}"
            ),
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

/// Parses a [`PROFILE`] value.
pub fn parse_profile(text: &str) -> Result<Profile, BadValue<'_>> {
    Profile::ALL
        .into_iter()
        .find(|(_, name)| *name == text.trim())
        .map(|(profile, _)| profile)
        .ok_or(BadValue {
            var: PROFILE,
            text,
            problem: Problem::NotAProfile,
        })
}

/// Parses a [`PROFILE_LOCKS`] value: the table's size, rounded up to a power of two.
pub fn parse_profile_locks(text: &str) -> Result<usize, BadValue<'_>> {
    match text.trim().parse::<usize>() {
        Ok(locks @ 64..=MAX_PROFILE_LOCKS) => Ok(locks.next_power_of_two()),
        _ => Err(BadValue {
            var: PROFILE_LOCKS,
            text,
            problem: Problem::NotALockCount,
        }),
    }
}

/// Parses a [`PROFILE_TOP`] value.
pub fn parse_profile_top(text: &str) -> Result<usize, BadValue<'_>> {
    match text.trim().parse::<usize>() {
        Ok(top @ 1..=MAX_PROFILE_TOP) => Ok(top),
        _ => Err(BadValue {
            var: PROFILE_TOP,
            text,
            problem: Problem::NotATop,
        }),
    }
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

/// Prints `problem` and what is done instead on stderr, with one `write` system
/// call (no stdio lock to deadlock on, no panic if stderr is closed).
pub fn report(problem: &ConfigError, instead: &str) {
    let line = format!("klocks: {problem}; {instead}\n");
    // SAFETY: writes `line`'s bytes, which live for the call, to fd 2. A short or
    // failed write loses (part of) a diagnostic, nothing else.
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

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

    #[test]
    fn profile_settings_parse_and_bad_ones_name_the_choices() {
        for (profile, name) in Profile::ALL {
            assert_eq!(parse_profile(name), Ok(profile));
        }
        assert_eq!(parse_profile(" sigusr2\n"), Ok(Profile::AtExitAndSigusr2));
        for bad in ["", "yes", "2", "SIGUSR2"] {
            let err = parse_profile(bad).unwrap_err().to_string();
            assert!(err.starts_with(&format!("KLOCKS_PROFILE={bad:?}")), "{err}");
            assert!(err.contains("use 0, 1 (at exit) or sigusr2"), "{err}");
        }
        assert_eq!(parse_profile_top("1"), Ok(1));
        assert_eq!(parse_profile_top(" 100 "), Ok(MAX_PROFILE_TOP));
        assert_eq!(parse_profile_locks("100000"), Ok(1 << 17));
        assert_eq!(parse_profile_locks("64"), Ok(64));
        for bad in ["63", "0", "x", "16777217"] {
            assert!(parse_profile_locks(bad).is_err(), "{bad}");
        }
        for bad in ["0", "101", "-3", "ten", ""] {
            let err = parse_profile_top(bad).unwrap_err().to_string();
            assert!(
                err.ends_with("is not a number of locks in 1..=100"),
                "{err}"
            );
        }
    }
}
