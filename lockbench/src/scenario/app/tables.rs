//! `lockbench app`'s tables: the timing table (each variant's wall time, and metric,
//! against the first variant's, with verdicts), with `--peer` each klocks lock against
//! the best of glibc and the peers, and, with `--profile-cost`, the
//! profile's report under it.

use super::config::{Config, Profiling};
use super::runs::peer_names;
use super::setting::{GLIBC, LOCKDEP, PROFILE};
use super::variant::Variant;
use crate::cells::{num, si, wrap, Cell, Table};
use crate::harness::versus::against_best;
use crate::verdict::{self, Ledger, Settings, Verdict};

/// lock | wall s | against glibc [| metric | against glibc]: each "vs glibc" column is
/// the lock's throughput (1 ÷ wall time, or the metric) ÷ glibc's, with its interval
/// and verdict ([`crate::verdict`]); then the profile's report, with
/// `--profile-cost`. With `--profile`: the profile, then the advice's table, if
/// measured.
pub fn tables(config: &Config, cells: &[Cell]) -> Vec<Table> {
    if let Some(profiling) = &config.profiling {
        return profile_tables(config, profiling, cells);
    }
    let mut table = timing_table(config, &config.variants, cells);
    table.note(if config.output_varies {
        "output not compared (the command prints timings); every run exited 0".to_owned()
    } else {
        "every run exited 0 and printed the same output as glibc's first run".to_owned()
    });
    let mut tables = vec![table];
    tables.extend(best_peer_table(config, &config.variants, cells));
    let report = config
        .profile
        .as_ref()
        .map(|r| r.lock().unwrap_or_else(|e| e.into_inner()).clone());
    if let Some(report) = report {
        let mut profile = Table::new(
            format!(
                "contention profile (glibc+profile's last run): `{}`, glibc's locks timed by LD_PRELOAD={} {}=1",
                config.shown(),
                config.preload.display(),
                PROFILE.name()
            ),
            &["report"],
        );
        for line in report.lines() {
            profile.row(vec![line.to_owned()]);
        }
        tables.push(profile);
    }
    if let Some(reports) = &config.lockdep {
        let reports = reports.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut cost = timing_table(config, &[Variant::Preloaded, Variant::Validated], cells);
        cost.note("the lock validator's cost: glibc+lockdep against glibc+preload".to_owned());
        tables.push(cost);
        let found = reports.matches("WARNING: ").count();
        let mut table = Table::new(
            format!(
                "lock validator (glibc+lockdep's last run): `{}`, LD_PRELOAD={} {}=1: {}",
                config.shown(),
                config.preload.display(),
                LOCKDEP.name(),
                match found {
                    0 => "nothing to report".to_owned(),
                    1 => "1 report".to_owned(),
                    n => format!("{n} reports"),
                }
            ),
            &["report"],
        );
        for line in reports.lines() {
            table.row(vec![line.to_owned()]);
        }
        tables.push(table);
    }
    tables
}

/// lock | wall s | against the first variant [| metric | against it].
pub(super) fn timing_table(config: &Config, variants: &[Variant], cells: &[Cell]) -> Table {
    let of = |lock: &str, layout: Option<&str>| {
        cells.iter().find(|c| {
            (c.scenario, c.threads) == (config.scenario, config.threads)
                && c.lock == lock
                && c.layout == layout
        })
    };
    let baseline = variants.first().map_or(GLIBC, |v| v.name());
    let speed = format!("speed vs {baseline}");
    let metric_vs = format!("metric vs {baseline}");
    let mut headers = vec!["lock", "wall s median [min–max]", speed.as_str()];
    if config.metric.is_some() {
        headers.extend(["metric median [min–max]", metric_vs.as_str()]);
    }
    let mut table = Table::new(config.title.clone(), &headers);
    let mut ledger = Ledger::default();
    let mut against_baseline = |cell: Option<&Cell>, layout: Option<&str>| {
        let base = of(baseline, layout);
        let judged = cell
            .zip(base)
            .filter(|(cell, base)| cell.lock != base.lock)
            .and_then(|(cell, base)| {
                let judged = verdict::judge(
                    &cell.log_throughputs(),
                    &base.log_throughputs(),
                    Settings::default(),
                )?;
                let what = layout.map_or(String::new(), |layout| format!(" {layout}"));
                ledger.add(format!("{}{what}", cell.lock), judged);
                Some(judged)
            });
        judged.map_or("-".to_owned(), |judged| judged.to_string())
    };
    let show = |cell: Option<&Cell>, format: fn(f64) -> String| {
        cell.and_then(|c| c.summary)
            .map_or("-".to_owned(), |s| s.show(format))
    };
    for variant in variants {
        let name = variant.name();
        let wall = of(name, None);
        let mut row = vec![name.to_owned(), show(wall, num), against_baseline(wall, None)];
        if config.metric.is_some() {
            let metric = of(name, Some("metric"));
            row.push(show(metric, si));
            row.push(against_baseline(metric, Some("metric")));
        }
        table.row(row);
    }
    let settings = match config.profiling {
        Some(_) => "and the variables each row names".to_owned(),
        None => match config.rwlock {
            Some(rwlock) => format!("KLOCKS_RWLOCK={}", rwlock.name()),
            None => format!(
                "KLOCKS_RWLOCK unset (under KLOCKS_LOCK={} the rwlocks run on {}, under the \
                 other locks on glibc's)",
                klocks::catalog::MutexKind::Default.name(),
                klocks::catalog::RwLockKind::Default.name()
            ),
        },
    };
    let repeated = cells.iter().find_map(|cell| cell.repeated.as_ref());
    let runs = match repeated {
        Some(repeated) => format!(
            "{} runs per lock (--runs {} and adaptive rounds, {})",
            repeated.rounds,
            config.runs,
            repeated.ended.words()
        ),
        None => format!("{} runs per lock", config.runs),
    };
    table.note(format!(
        "{runs}, interleaved; speed = the lock's throughput (1 ÷ wall) ÷ {baseline}'s (above \
         1: faster); klocks runs: LD_PRELOAD={} {settings}",
        config.preload.display(),
    ));
    table.note(ledger.tally().note(Settings::default()));
    table
}

/// With `--peer`: each klocks lock against the best of glibc and the peers on the
/// table's measure (the metric when there is one), as lock | best peer | verdict.
fn best_peer_table(config: &Config, variants: &[Variant], cells: &[Cell]) -> Option<Table> {
    let peers = peer_names(variants);
    if peers.len() < 2 {
        return None;
    }
    let measure = config.metric.as_ref().map(|_| "metric");
    let of = |lock: &str| {
        cells.iter().find(|c| {
            (c.scenario, c.threads, c.layout) == (config.scenario, config.threads, measure)
                && c.lock == lock
        })
    };
    let peer_cells: Vec<&Cell> = peers.iter().filter_map(|p| of(p)).collect();
    let what = measure.unwrap_or("speed (1 ÷ wall)");
    let mut table = Table::new(
        format!("{}: klocks against the best of {} ({what})", config.title, peers.join(", ")),
        &["lock", "best peer", "lock ÷ best peer"],
    );
    let mut ledger = Ledger::default();
    for variant in variants.iter().filter(|v| matches!(v, Variant::Lock(_))) {
        let judged = of(variant.name()).and_then(|cell| {
            against_best(cell, peer_cells.iter().copied(), Settings::default())
        });
        let (best, shown) = match judged {
            Some((best, judged)) => {
                ledger.add(variant.name(), judged);
                (best.lock.to_owned(), judged.to_string())
            }
            None => ("-".to_owned(), "-".to_owned()),
        };
        table.row(vec![variant.name().to_owned(), best, shown]);
    }
    let libraries: Vec<String> = variants
        .iter()
        .filter_map(|v| match v {
            Variant::Peer(peer) => Some(format!("{}: LD_PRELOAD={}", peer.name, peer.library.display())),
            _ => None,
        })
        .collect();
    table.note(format!(
        "the best peer is the one with the highest median in the same rounds; {}",
        libraries.join(", ")
    ));
    table.note(ledger.tally().note(Settings::default()));
    Some(table)
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
