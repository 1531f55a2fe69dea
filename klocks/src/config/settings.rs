//! The `KLOCKS_*` variables that the locks themselves read, each named once, and
//! their validated readers. The parsers allocate nothing until their error is
//! printed, so the preload can check these settings where `malloc` may be in
//! progress. (The preload's own variables, `KLOCKS_LOCK` and the profile's, are
//! klocks-ffi's.)

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
    /// The variable called `name`, which must be ASCII.
    pub const fn new(name: &'static CStr) -> Var {
        Var(name)
    }

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
}
