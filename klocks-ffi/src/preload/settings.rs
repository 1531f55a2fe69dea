//! The preload's own `KLOCKS_*` variables, each named once, and the readers of its
//! contention profile's settings. The settings every klocks lock reads
//! (`KLOCKS_SPIN_NS`, `KLOCKS_OWNER_PROBE`) are the core's, in `klocks::config`; the
//! ones here only the interposer reads. The parsers allocate nothing until their
//! error is printed, so that the preload can check its settings where `malloc` may be
//! in progress.

use std::fmt;

use klocks_core::config::Var;

/// The preload's mutex: a `MutexKind` name of the C API's kinds, `glibc` or `help`.
pub(super) const LOCK: Var = Var::new(c"KLOCKS_LOCK");
/// The preload's reader-writer lock: an `RwLockKind` name, `default`, `glibc` or
/// `help`.
pub(super) const RWLOCK: Var = Var::new(c"KLOCKS_RWLOCK");

/// The value of [`LOCK`] and [`RWLOCK`] that keeps glibc's locks (as unset does).
pub(super) const GLIBC: &str = "glibc";

/// The contention profile: [`Profile`]'s values. Read with [`parse_profile`].
pub(super) const PROFILE: Var = Var::new(c"KLOCKS_PROFILE");
/// Where the contention profile goes: a file path, appended to, with `%p` replaced
/// by the process id; unset, stderr.
pub(super) const PROFILE_FILE: Var = Var::new(c"KLOCKS_PROFILE_FILE");
/// How many locks the contention profile lists: `1..=`[`MAX_PROFILE_TOP`]. Read with
/// [`parse_profile_top`].
pub(super) const PROFILE_TOP: Var = Var::new(c"KLOCKS_PROFILE_TOP");
/// How the contention profile is written: `text`, `json`, `folded` (flame-graph
/// tools' folded stacks) or `pprof` (a gzipped `profile.proto`); unset, `text`.
pub(super) const PROFILE_FORMAT: Var = Var::new(c"KLOCKS_PROFILE_FORMAT");
/// The most locks a profile lists.
pub(super) const MAX_PROFILE_TOP: usize = 100;
/// How many live locks the contention profile's table holds at once:
/// `64..=`[`MAX_PROFILE_LOCKS`], rounded up to a power of two; unset,
/// [`DEFAULT_PROFILE_LOCKS`]. Read with [`parse_profile_locks`].
pub(super) const PROFILE_LOCKS: Var = Var::new(c"KLOCKS_PROFILE_LOCKS");
/// The profile table's size unless [`PROFILE_LOCKS`] says.
pub(super) const DEFAULT_PROFILE_LOCKS: usize = 1 << 16;
/// The largest profile table (512 bytes a lock: 8 GiB of address space reserved,
/// backed only as used).
pub(super) const MAX_PROFILE_LOCKS: usize = 1 << 24;

/// When the preload prints its contention profile ([`PROFILE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Profile {
    /// `0`: no profile (as unset).
    Off,
    /// `1`: at exit.
    AtExit,
    /// `sigusr2`: at exit and each time the process receives `SIGUSR2`.
    AtExitAndSigusr2,
}

impl Profile {
    /// Every value, with the name [`PROFILE`] takes for it.
    pub(super) const ALL: [(Profile, &'static str); 3] = [
        (Profile::Off, "0"),
        (Profile::AtExit, "1"),
        (Profile::AtExitAndSigusr2, "sigusr2"),
    ];
}

/// A profile setting that its variable does not accept. Building one allocates
/// nothing; the message is made when it is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BadSetting<'a> {
    var: Var,
    text: &'a str,
    problem: Problem,
}

/// What is wrong with a [`BadSetting`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Problem {
    /// Not one of [`Profile::ALL`]'s names.
    UnknownProfile,
    /// Not a whole number in `1..=`[`MAX_PROFILE_TOP`].
    TopOutOfRange,
    /// Not a whole number in `64..=`[`MAX_PROFILE_LOCKS`].
    LockCountOutOfRange,
}

impl fmt::Display for BadSetting<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let BadSetting { var, text, .. } = *self;
        match self.problem {
            Problem::UnknownProfile => write!(
                f,
                "{var}={text:?} is not a profile setting: use 0, 1 (at exit) or sigusr2 (at exit and on SIGUSR2)"
            ),
            Problem::TopOutOfRange => write!(
                f,
                "{var}={text:?} is not a number of locks in 1..={MAX_PROFILE_TOP}"
            ),
            Problem::LockCountOutOfRange => write!(
                f,
                "{var}={text:?} is not a number of locks in 64..={MAX_PROFILE_LOCKS}"
            ),
        }
    }
}

/// Parses a [`PROFILE`] value.
pub(super) fn parse_profile(text: &str) -> Result<Profile, BadSetting<'_>> {
    Profile::ALL
        .into_iter()
        .find(|(_, name)| *name == text.trim())
        .map(|(profile, _)| profile)
        .ok_or(BadSetting {
            var: PROFILE,
            text,
            problem: Problem::UnknownProfile,
        })
}

/// Parses a [`PROFILE_LOCKS`] value: the table's size, rounded up to a power of two.
pub(super) fn parse_profile_locks(text: &str) -> Result<usize, BadSetting<'_>> {
    match text.trim().parse::<usize>() {
        Ok(locks @ 64..=MAX_PROFILE_LOCKS) => Ok(locks.next_power_of_two()),
        _ => Err(BadSetting {
            var: PROFILE_LOCKS,
            text,
            problem: Problem::LockCountOutOfRange,
        }),
    }
}

/// Parses a [`PROFILE_TOP`] value.
pub(super) fn parse_profile_top(text: &str) -> Result<usize, BadSetting<'_>> {
    match text.trim().parse::<usize>() {
        Ok(top @ 1..=MAX_PROFILE_TOP) => Ok(top),
        _ => Err(BadSetting {
            var: PROFILE_TOP,
            text,
            problem: Problem::TopOutOfRange,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let err = parse_profile_locks(bad).unwrap_err().to_string();
            assert!(
                err.ends_with("is not a number of locks in 64..=16777216"),
                "{err}"
            );
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
