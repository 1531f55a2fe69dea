//! `app --profile --try`: the advice measured. The locks in use ([`Setting`]) are
//! profiled once; each setting the advice suggests is the locks in use changed as
//! its `try` field says, and runs against them through app's rounds; the tables are
//! the profile, short ([`super::profile`]), and the timing table of the settings.

use std::process::Command;
use std::sync::{Arc, Mutex};

use klocks::catalog::{MutexKind, RwLockKind};
use super::{LOCK, PROFILE, RWLOCK};

use super::profile::{Profile, Remedy};
use super::runs::{run_once, run_rounds, Variant};
use super::tables::timing_table;
use super::{Config, PreloadLock, PreloadRwLock, GLIBC};
use crate::harness::Error;
use crate::cells::{wrap, Cell, Progress, Table};
use crate::verdict::{self, Settings, Verdict};

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
    profile: Profile,
    /// With `--try`: the locks in use, then each advised setting (empty if none ran).
    tried: Vec<Variant>,
    /// Why `--try` ran no rounds, if it did not.
    no_rounds: Option<String>,
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
/// `--profile`: the profiled run, then with `--try` the rounds of the locks in use and
/// each advised setting (unless there is nothing to gain or nothing advised), its
/// stdout the reference for theirs.
pub(super) fn run_profile(
    config: &Config,
    profiling: &Profiling,
    progress: &Progress,
) -> Result<Vec<Cell>, Error> {
    let context = format!("app: `{}` under the profile", config.shown());
    progress.start(format!("app profile ({})", profiling.current.name()));
    let outcome = run_once(config, Variant::ProfiledJson(profiling.current), 1)?;
    progress.done();
    let text = config.profile.as_ref().map_or(String::new(), |report| {
        report.lock().unwrap_or_else(|e| e.into_inner()).clone()
    });
    let profile = Profile::parse(&text)
        .map_err(|e| Error::Verification(format!("{context}: reading its profile: {e}")))?;
    let mut tried = Vec::new();
    let mut no_rounds = None;
    if profiling.try_advice {
        let current = profiling.current;
        let mut advised = Vec::new();
        let remedies = match &profiling.test_advice {
            Some(remedy) => vec![remedy.clone()],
            None => profile.remedies(),
        };
        for remedy in remedies {
            let setting = current.with(&remedy).ok_or_else(|| {
                Error::Verification(format!(
                    "{context}: the profile advises {}={}, which this lockbench does not know",
                    remedy.variable, remedy.value
                ))
            })?;
            if setting != current && !advised.contains(&setting) {
                advised.push(setting);
            }
        }
        if profile.negligible() {
            no_rounds = Some("no --try rounds run: there is nothing to gain".to_owned());
        } else if advised.is_empty() {
            no_rounds = Some(
                "the advice suggests no other lock (only the code can shorten these waits): no --try rounds run"
                    .to_owned(),
            );
        } else {
            tried = std::iter::once(current)
                .chain(advised)
                .map(Variant::of)
                .collect();
        }
    }
    let cells = match tried.is_empty() {
        true => Vec::new(),
        false => run_rounds(config, &tried, Some(outcome.stdout), progress)?,
    };
    let profiled = Profiled {
        profile,
        tried,
        no_rounds,
    };
    *profiling.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(profiled);
    Ok(cells)
}

/// `--profile`'s tables: the report, short; then with `--try` the advice measured
/// against the locks in use, or why it was not.
pub(super) fn profile_tables(config: &Config, profiling: &Profiling, cells: &[Cell]) -> Vec<Table> {
    let outcome = profiling.outcome.lock().unwrap_or_else(|e| e.into_inner());
    let Some(profiled) = outcome.as_ref() else {
        return Vec::new();
    };
    let current = profiling.current;
    let mut report = Table::new(
        format!(
            "contention profile: `{}` under {}, timed by LD_PRELOAD={} {}=1",
            config.shown(),
            current.name(),
            config.preload.display(),
            PROFILE.name()
        ),
        &["report"],
    );
    for line in profiled.profile.lines() {
        report.row(vec![line]);
    }
    if let Some(remedy) = &profiling.test_advice {
        report.row(vec![format!(
            "--test-advice: --try measures {}={} instead of the advice (for tests)",
            remedy.variable, remedy.value
        )]);
    }
    let last = match (&profiled.no_rounds, profiling.try_advice) {
        (Some(why), _) => Some(why.clone()),
        (None, false) if !profiled.profile.remedies().is_empty() => Some(format!(
            "measure the advice: lockbench app --profile --try{} -- {}",
            current.options(),
            config.shown()
        )),
        _ => None,
    };
    for line in last.iter().flat_map(|last| wrap(last, 120).lines().map(str::to_owned).collect::<Vec<_>>()) {
        report.row(vec![line]);
    }
    let mut tables = vec![report];
    if !profiled.tried.is_empty() {
        let mut table = timing_table(config, &profiled.tried, cells);
        table.note(if config.output_varies {
            "output not compared (the command prints timings); every run exited 0".to_owned()
        } else {
            "every run exited 0 and printed the same output as the profiled run".to_owned()
        });
        tables.push(table);
        tables.push(effect_table(config, &profiled.tried, cells));
    }
    tables
}

/// The advice measured, in words: each advised setting against the locks in use, by
/// the program's `--metric` if it has one, else by wall time; a win only when the
/// runs say faster.
fn effect_table(config: &Config, tried: &[Variant], cells: &[Cell]) -> Table {
    let layout = config.metric.as_ref().map(|_| "metric");
    let measure = match layout {
        Some(_) => "by its --metric",
        None => "by wall time",
    };
    let current = tried[0].name();
    let mut table = Table::new(
        format!("the advice measured against {current}, {measure}"),
        &["effect"],
    );
    let of = |lock: &str| {
        cells
            .iter()
            .find(|c| c.lock == lock && c.layout == layout)
    };
    for variant in &tried[1..] {
        let name = variant.name();
        let judged = of(name).zip(of(current)).and_then(|(cell, base)| {
            verdict::judge(&cell.log_throughputs(), &base.log_throughputs(), Settings::default())
        });
        let effect = match judged {
            None => format!("{name}: not measured (a run is missing)"),
            Some(judged) => match judged.verdict {
                Verdict::Faster => format!("{name}: {judged}: the advice pays for this program"),
                Verdict::Slower => format!(
                    "{name}: {judged}: the advice does not hold here; keep {current}"
                ),
                Verdict::NoClearDifference => format!(
                    "{name}: no clear difference {judged}: the advice wins nothing measurable here"
                ),
                Verdict::TooFewRuns => format!("{name}: {judged}: too few runs to tell"),
            },
        };
        table.row(vec![effect]);
    }
    table
}
