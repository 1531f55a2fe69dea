//! What a run sets for the preload: the interposer's variables, the locks
//! `KLOCKS_LOCK` and `KLOCKS_RWLOCK` accept, and a setting of both.

use std::process::Command;
use std::sync::LazyLock;

use klocks::catalog::{MutexKind, RwLockKind};
use klocks::config::Var;

use super::profile::Remedy;

/// The interposer's variables this command sets (docs/preload.md names them).
pub(super) const LOCK: Var = Var::new(c"KLOCKS_LOCK");
pub(super) const RWLOCK: Var = Var::new(c"KLOCKS_RWLOCK");
pub(super) const PROFILE: Var = Var::new(c"KLOCKS_PROFILE");
pub(super) const PROFILE_FILE: Var = Var::new(c"KLOCKS_PROFILE_FILE");
pub(super) const PROFILE_FORMAT: Var = Var::new(c"KLOCKS_PROFILE_FORMAT");
pub(super) const PROFILE_TOP: Var = Var::new(c"KLOCKS_PROFILE_TOP");
pub(super) const LOCKDEP: Var = Var::new(c"KLOCKS_LOCKDEP");
pub(super) const LOCKDEP_FILE: Var = Var::new(c"KLOCKS_LOCKDEP_FILE");

/// The baseline's name in the tables, and the value that keeps glibc's locks.
pub(super) const GLIBC: &str = "glibc";

/// A lock `KLOCKS_LOCK` accepts: a mutex of klocks' catalog that the preload offers
/// (condvars follow it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreloadLock(pub(super) MutexKind);

impl PreloadLock {
    /// `KLOCKS_LOCK=default`.
    pub const DEFAULT: Self = PreloadLock(MutexKind::Default);

    /// The name `KLOCKS_LOCK` takes and the table prints.
    pub(super) fn name(self) -> &'static str {
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
pub struct PreloadRwLock(pub(super) Option<RwLockKind>);

impl PreloadRwLock {
    pub(super) fn name(self) -> &'static str {
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
        // glibc's rwlock is `glibc-rw` in `--rwlocks`; KLOCKS_RWLOCK takes both.
        let value = clap::builder::PossibleValue::new(self.name());
        Some(match self.0 {
            None => value.alias("glibc-rw"),
            Some(_) => value,
        })
    }
}

/// The locks a run uses through the preload: `KLOCKS_LOCK` (`None`: unset, glibc's
/// mutexes) and `KLOCKS_RWLOCK` (`None`: unset, so the rwlocks follow `KLOCKS_LOCK` as
/// the preload reads it alone: `default` moves them to `default-rw`, every other
/// lock leaves them glibc's). A setting sets exactly the variables it names, so that
/// a run measures the environment a user (or the advice) writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub(super) lock: Option<PreloadLock>,
    pub(super) rwlock: Option<PreloadRwLock>,
}

impl Setting {
    /// glibc's locks everywhere.
    pub(super) fn is_glibc(self) -> bool {
        self.lock.is_none() && self.rwlock.is_none_or(|rwlock| rwlock.0.is_none())
    }

    /// As the variables that make it (`KLOCKS_LOCK=default`, `KLOCKS_LOCK=futex
    /// KLOCKS_RWLOCK=default-rw`).
    pub(super) fn name(self) -> String {
        let lock = self.lock.map(|lock| format!("{}={}", LOCK.name(), lock.name()));
        let rwlock = self
            .rwlock
            .map(|rwlock| format!("{}={}", RWLOCK.name(), rwlock.name()));
        match (lock, rwlock) {
            _ if self.is_glibc() => GLIBC.to_owned(),
            (Some(lock), Some(rwlock)) => format!("{lock} {rwlock}"),
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => GLIBC.to_owned(),
        }
    }

    /// The `lockbench app` options that choose it.
    pub(super) fn options(self) -> String {
        let mut options = String::new();
        if let Some(lock) = self.lock {
            options += &format!(" --with {}", lock.name());
        }
        if let Some(rwlock) = self.rwlock {
            options += &format!(" --rwlock {}", rwlock.name());
        }
        options
    }

    /// This setting changed as `remedy` says (the other variable as it was, set or
    /// unset); `None` for a value lockbench does not know (a preload newer than this
    /// lockbench).
    pub(super) fn with(self, remedy: &Remedy) -> Option<Setting> {
        let glibc = remedy.value.eq_ignore_ascii_case(GLIBC);
        match remedy.variable.as_str() {
            "KLOCKS_LOCK" if glibc => Some(Setting { lock: None, ..self }),
            "KLOCKS_LOCK" => Some(Setting {
                lock: Some(PreloadLock(MutexKind::from_name(&remedy.value)?)),
                ..self
            }),
            "KLOCKS_RWLOCK" if glibc => Some(Setting {
                rwlock: Some(PreloadRwLock(None)),
                ..self
            }),
            "KLOCKS_RWLOCK" => Some(Setting {
                rwlock: Some(PreloadRwLock(Some(RwLockKind::from_name(&remedy.value)?))),
                ..self
            }),
            _ => None,
        }
    }

    /// Sets the variables of this setting on `command` (which has the preload), and
    /// only those.
    pub(super) fn apply(self, command: &mut Command) {
        if let Some(lock) = self.lock {
            command.env(LOCK.name(), lock.name());
        }
        if let Some(rwlock) = self.rwlock {
            command.env(RWLOCK.name(), rwlock.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The advice's `KLOCKS_LOCK=default` runs as written: `KLOCKS_RWLOCK` unset (the
    /// preload then moves the rwlocks to `default-rw`), not pinned to glibc's.
    #[test]
    fn an_advised_lock_sets_only_its_variable() {
        let glibc = Setting {
            lock: None,
            rwlock: None,
        };
        let remedy = Remedy {
            variable: "KLOCKS_LOCK".to_owned(),
            value: "default".to_owned(),
        };
        let advised = glibc.with(&remedy).expect("a known lock");
        assert_eq!(advised.name(), "KLOCKS_LOCK=default");
        assert_eq!(advised.options(), " --with default");
        let mut command = Command::new("true");
        command.env_remove(RWLOCK.name());
        advised.apply(&mut command);
        let set: Vec<_> = command
            .get_envs()
            .filter_map(|(var, value)| Some((var.to_str()?, value?.to_str()?)))
            .collect();
        assert_eq!(set, [("KLOCKS_LOCK", "default")]);
        // An rwlock set by the user stays set.
        let pinned = Setting {
            lock: None,
            rwlock: Some(PreloadRwLock(None)),
        };
        let advised = pinned.with(&remedy).expect("a known lock");
        assert_eq!(advised.name(), "KLOCKS_LOCK=default KLOCKS_RWLOCK=glibc");
    }
}
