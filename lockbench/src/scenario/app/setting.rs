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
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

/// The locks a run uses through the preload: `KLOCKS_LOCK` (`None`: unset, glibc's
/// mutexes) and `KLOCKS_RWLOCK`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub(super) lock: Option<PreloadLock>,
    pub(super) rwlock: PreloadRwLock,
}

impl Setting {
    /// glibc's locks everywhere.
    pub(super) fn is_glibc(self) -> bool {
        self.lock.is_none() && self.rwlock.0.is_none()
    }

    /// As the variables that make it (`KLOCKS_LOCK=default KLOCKS_RWLOCK=glibc`).
    pub(super) fn name(self) -> String {
        match self.lock {
            Some(lock) => format!("{}={} {}={}", LOCK.name(), lock.name(), RWLOCK.name(), self.rwlock.name()),
            None if self.rwlock.0.is_none() => GLIBC.to_owned(),
            None => format!("{}={}", RWLOCK.name(), self.rwlock.name()),
        }
    }

    /// The `lockbench app` options that choose it.
    pub(super) fn options(self) -> String {
        let mut options = String::new();
        if let Some(lock) = self.lock {
            options += &format!(" --with {}", lock.name());
        }
        if self.rwlock.0.is_some() || self.lock.is_some() {
            options += &format!(" --rwlock {}", self.rwlock.name());
        }
        options
    }

    /// This setting changed as `remedy` says; `None` for a value lockbench does not
    /// know (a preload newer than this lockbench).
    pub(super) fn with(self, remedy: &Remedy) -> Option<Setting> {
        let glibc = remedy.value == GLIBC;
        match remedy.variable.as_str() {
            "KLOCKS_LOCK" if glibc => Some(Setting { lock: None, ..self }),
            "KLOCKS_LOCK" => Some(Setting {
                lock: Some(PreloadLock(MutexKind::from_name(&remedy.value)?)),
                ..self
            }),
            "KLOCKS_RWLOCK" if glibc => Some(Setting {
                rwlock: PreloadRwLock(None),
                ..self
            }),
            "KLOCKS_RWLOCK" => Some(Setting {
                rwlock: PreloadRwLock(Some(RwLockKind::from_name(&remedy.value)?)),
                ..self
            }),
            _ => None,
        }
    }

    /// Sets the variables of this setting on `command` (which has the preload).
    pub(super) fn apply(self, command: &mut Command) {
        if let Some(lock) = self.lock {
            // KLOCKS_RWLOCK is set whenever KLOCKS_LOCK is: `default` alone would
            // also change the rwlocks.
            command
                .env(LOCK.name(), lock.name())
                .env(RWLOCK.name(), self.rwlock.name());
        } else if self.rwlock.0.is_some() {
            command.env(RWLOCK.name(), self.rwlock.name());
        }
    }
}
