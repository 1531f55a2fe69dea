//! `lockbench app`'s runs: how each variant runs the command ([`Variant`],
//! [`run_once`], with the checks the module doc of `app` lists), and the interleaved
//! rounds that make its cells ([`run_rounds`]).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use regex::Regex;

use super::config::Config;
use super::setting::{
    GLIBC, LOCK, LOCKDEP, LOCKDEP_FILE, PROFILE, PROFILE_FILE, PROFILE_FORMAT, PROFILE_TOP, RWLOCK,
};
use super::variant::Variant;
use crate::adaptive::Drive;
use crate::cells::{Cell, Progress, Run};
use crate::harness::rounds::{self, rounds, Plan};
use crate::harness::Error;

/// One run's result.
pub(super) struct Outcome {
    wall: Duration,
    pub(super) stdout: Vec<u8>,
    metric: Option<f64>,
}

/// Runs the command once, and checks what the module doc lists (except the output
/// comparison, which needs the baseline).
pub(super) fn run_once(config: &Config, variant: Variant, round: u32) -> Result<Outcome, Error> {
    let name = variant.name();
    let context = || {
        let scenario = config.scenario;
        format!("{scenario}: `{}` under {name}, run {round}", config.shown())
    };
    let mut command = Command::new(&config.command[0]);
    command
        .args(&config.command[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in [
        LOCK,
        RWLOCK,
        PROFILE,
        PROFILE_FILE,
        PROFILE_FORMAT,
        PROFILE_TOP,
        LOCKDEP,
        LOCKDEP_FILE,
    ] {
        command.env_remove(var.name());
    }
    command.env_remove("LD_PRELOAD");
    let report = std::env::temp_dir().join(format!("lockbench-profile-{}.txt", std::process::id()));
    let reports = std::env::temp_dir().join(format!("lockbench-lockdep-{}.txt", std::process::id()));
    match variant {
        Variant::Glibc => {}
        Variant::Lock(lock) => {
            command
                .env("LD_PRELOAD", &config.preload)
                .env(LOCK.name(), lock.name());
            if let Some(rwlock) = config.rwlock {
                command.env(RWLOCK.name(), rwlock.name());
            }
        }
        Variant::Peer(peer) => {
            command.env("LD_PRELOAD", peer.library);
        }
        Variant::Preloaded => {
            command.env("LD_PRELOAD", &config.preload);
        }
        Variant::Profiled => {
            let _ = std::fs::remove_file(&report);
            command
                .env("LD_PRELOAD", &config.preload)
                .env(PROFILE.name(), "1")
                .env(PROFILE_FILE.name(), &report);
        }
        Variant::Validated => {
            let _ = std::fs::remove_file(&reports);
            command
                .env("LD_PRELOAD", &config.preload)
                .env(LOCKDEP.name(), "1")
                .env(LOCKDEP_FILE.name(), &reports);
        }
        Variant::Setting(setting, _) => {
            command.env("LD_PRELOAD", &config.preload);
            setting.apply(&mut command);
        }
        Variant::ProfiledJson(setting) => {
            let _ = std::fs::remove_file(&report);
            command
                .env("LD_PRELOAD", &config.preload)
                .env(PROFILE.name(), "1")
                .env(PROFILE_FORMAT.name(), "json")
                .env(PROFILE_FILE.name(), &report);
            setting.apply(&mut command);
        }
    }
    let start = Instant::now();
    let output = command
        .output()
        .map_err(|e| Error::Io(format!("{}: starting the command", context()), e))?;
    let wall = start.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(Error::Verification(format!(
            "{}: exited with {}; its stderr ends:\n{}",
            context(),
            output.status,
            tail(&stderr)
        )));
    }
    if matches!(variant, Variant::Profiled | Variant::ProfiledJson(_)) {
        let text = std::fs::read_to_string(&report);
        let _ = std::fs::remove_file(&report);
        let text = text.map_err(|e| Error::Io(format!("{}: reading its profile", context()), e))?;
        if let Some(last) = &config.profile {
            *last.lock().unwrap_or_else(|e| e.into_inner()) = text;
        }
    }
    if variant == Variant::Validated {
        // No file: the validator found nothing to report.
        let text = std::fs::read_to_string(&reports).unwrap_or_default();
        let _ = std::fs::remove_file(&reports);
        if let Some(last) = &config.lockdep {
            *last.lock().unwrap_or_else(|e| e.into_inner()) = text;
        }
    }
    if variant != Variant::Glibc {
        // The validator's own lines announce its reports, which the table shows.
        let validator = |l: &str| variant == Variant::Validated && l.contains(": lockdep: ");
        if let Some(line) = stderr
            .lines()
            .find(|l| (is_preload_line(l) && !validator(l)) || l.contains("cannot be preloaded"))
        {
            return Err(Error::Verification(format!(
                "{}: the preload did not take (or klocks fell back to glibc): {line}",
                context()
            )));
        }
    }
    let metric = match &config.metric {
        None => None,
        Some(regex) => Some(
            capture(regex, &output.stdout, &output.stderr).ok_or_else(|| {
                Error::Verification(format!(
                    "{}: --metric {:?} matched no number in the output",
                    context(),
                    regex.as_str()
                ))
            })?,
        ),
    };
    Ok(Outcome {
        wall,
        stdout: output.stdout,
        metric,
    })
}

/// The last lines of a command's stderr, for an error message.
fn tail(stderr: &str) -> String {
    let lines: Vec<_> = stderr.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

/// The number `regex` captures in stdout, else in stderr.
pub(super) fn capture(regex: &Regex, stdout: &[u8], stderr: &[u8]) -> Option<f64> {
    [stdout, stderr].into_iter().find_map(|bytes| {
        let text = String::from_utf8_lossy(bytes);
        let captures = regex.captures(&text)?;
        captures.get(1)?.as_str().trim().parse().ok()
    })
}

/// Runs `variants` in interleaved rounds, one run each per round ([`rounds`](fn@rounds)), each
/// run's stdout compared with `reference` (else the first run's); rounds go on past
/// `--runs` while a variant's wall time against the first variant's is too wide to
/// decide ([`crate::adaptive`]).
pub(super) fn run_rounds(
    config: &Config,
    variants: &[Variant],
    mut reference: Option<Vec<u8>>,
    progress: &Progress,
) -> Result<Vec<Cell>, Error> {
    let names: Vec<&str> = variants.iter().map(|v| v.name()).collect();
    let baseline = names.first().copied().unwrap_or(GLIBC);
    let plan = Plan {
        runs: config.runs,
        adaptive: &config.adaptive,
        drives: names
            .iter()
            .filter_map(|name| Drive::pair(&names, name, &baseline))
            .filter(|drive| !matches!(drive, Drive::Pair { x, y } if x == y))
            .chain(best_peer_drives(variants))
            .collect(),
        row: match config.threads {
            0 => format!("{}: `{}`", config.scenario, config.shown()),
            threads => format!("{}, {threads} threads", config.scenario),
        },
        lower_is_better: true,
    };
    let measured = rounds(variants.len(), &plan, |at, round| {
        let variant = variants[at];
        progress.start(format!("{} {} run {round}", config.scenario, variant.name()));
        let outcome = run_once(config, variant, round)?;
        // The bar counts the planned runs; extra rounds only name theirs.
        if round <= config.runs {
            progress.done();
        }
        let expected = reference.get_or_insert_with(|| outcome.stdout.clone());
        if !config.output_varies && outcome.stdout != *expected {
            return Err(Error::Verification(format!(
                "app: `{}` printed different output under {} (run {round}) than under {}; \
                 pass --output-varies if it prints timings",
                config.shown(),
                variant.name(),
                match &config.profiling {
                    Some(_) => "the profile",
                    None => GLIBC,
                }
            )));
        }
        Ok(Some(outcome))
    })?;
    let mut cells = Vec::new();
    for (variant, outcomes) in variants.iter().zip(&measured.results) {
        let name = variant.name();
        cells.push(cell(config, name, None, "s", outcomes, |o| {
            Some(o.wall.as_secs_f64())
        }));
        if config.metric.is_some() {
            cells.push(cell(config, name, Some("metric"), "metric", outcomes, |o| {
                o.metric
            }));
        }
    }
    for cell in &mut cells {
        cell.repeated = measured.repeated.clone();
    }
    Ok(cells)
}

/// With `--peer`: each klocks lock against the best of glibc and the peers, as
/// [`super::tables`](fn@super::tables) judges it (on wall time: the rounds see no metric).
fn best_peer_drives(variants: &[Variant]) -> Vec<Drive> {
    let names: Vec<&str> = variants.iter().map(|v| v.name()).collect();
    let peers = peer_names(variants);
    if peers.len() < 2 {
        return Vec::new();
    }
    variants
        .iter()
        .filter(|v| matches!(v, Variant::Lock(_)))
        .filter_map(|v| Drive::best_peer(&names, &v.name(), &peers))
        .collect()
}

/// glibc and the `--peer`s: the rows a klocks lock is judged against.
pub(super) fn peer_names(variants: &[Variant]) -> Vec<&'static str> {
    variants
        .iter()
        .filter(|v| matches!(v, Variant::Glibc | Variant::Peer(_)))
        .map(|v| v.name())
        .collect()
}

/// The rounds judge a run by its wall time, and no run ends its lock's series.
impl rounds::Outcome for Outcome {
    fn ends(&self) -> bool {
        false
    }

    fn value(&self) -> f64 {
        self.wall.as_secs_f64()
    }
}

fn cell(
    config: &Config,
    lock: &'static str,
    layout: Option<&'static str>,
    unit: &'static str,
    outcomes: &[Outcome],
    value: impl Fn(&Outcome) -> Option<f64>,
) -> Cell {
    let runs: Vec<Run> = outcomes
        .iter()
        .filter_map(|o| Some(Run::timed(value(o)?, o.wall, 1)))
        .collect();
    Cell::of_runs(config.scenario, lock, config.threads, layout, unit, runs)
}

/// Whether `line` is one of the preload's diagnostics: `klocks[PID] PROG: ...` (an
/// older library's: `klocks: ...`).
fn is_preload_line(line: &str) -> bool {
    line.contains("klocks:")
        || line.split("klocks[").skip(1).any(|rest| {
            rest.split_once(']')
                .is_some_and(|(pid, _)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metric_is_read_from_stdout_then_stderr() {
        let regex = Regex::new(r"rate: *([0-9.]+)").unwrap();
        assert_eq!(capture(&regex, b"x\nrate: 12.5\n", b""), Some(12.5));
        assert_eq!(capture(&regex, b"nothing", b"rate: 3"), Some(3.0));
        assert_eq!(capture(&regex, b"nothing", b"none"), None);
    }
}
