//! `app --profile --try`: the advice measured. The locks in use
//! ([`Setting`](super::setting::Setting)) are profiled once; each setting the advice
//! suggests is the locks in use changed as its `try` field says, and runs against them
//! through app's rounds; the tables (in `tables.rs`) are the profile, short
//! ([`super::profile`]), and the timing table of the settings.

use super::config::{Config, Profiled, Profiling};
use super::profile::Profile;
use super::runs::{run_once, run_rounds};
use super::variant::Variant;
use crate::harness::Error;
use crate::cells::{Cell, Progress};

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
