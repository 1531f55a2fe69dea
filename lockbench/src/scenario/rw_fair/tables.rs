//! rw-fair's tables: per group, each role's per-thread sections in the seed's format, and the bars of the rwsem policies.

use crate::harness::rw::{self, per_role, reader_group, role_fairness, show, show_ratio, Role};
use crate::harness::windowed;
use crate::cells::{num, Cell, PerThread, Table};
use crate::rwlocks::{RwLockName, RW_ALTERNATIVES, RW_DEFAULT};
use crate::verdict::{self, Ledger, Settings};

use super::config::{Config, Group, POLICIES, SEED_GROUP, STARVATION};

pub(super) fn find(cells: &[Cell], lock: RwLockName, group: Group) -> Option<&Cell> {
    cells.iter().find(|cell| {
        cell.lock == lock.name()
            && cell
                .rw
                .is_some_and(|rw| rw.readers == group.readers && rw.writers == group.writers)
    })
}

/// One table per group in the seed's format, then the policies' bars.
pub fn tables(config: &Config, cells: &[Cell], pause_ns: f64) -> Vec<Table> {
    let scale = format!(
        "load {} ({} ns); iterations = each thread's sections in a {} ms window, medians \
         of up to {} runs",
        config.load,
        num(f64::from(config.load) * pause_ns),
        config.plan.window.as_millis(),
        config.plan.runs
    );
    let groups = config
        .groups
        .iter()
        .map(|&group| Some(group_table(config, cells, group, &scale)));
    let versus = default_versus_peers(config, cells, &scale);
    let tables: Vec<Option<Table>> = groups.chain([bars(config, cells)]).chain(versus).collect();
    windowed::with_footnotes(tables, cells, &config.plan)
}

/// default-rw (`klocks::RwLock`) against the best of the peers that ran, group by
/// group: throughput (reads + writes) against the fastest, fairness (the slower
/// role's slowest thread ÷ that role's mean) against the fairest.
pub(super) fn default_versus_peers(config: &Config, cells: &[Cell], scale: &str) -> [Option<Table>; 3] {
    let peers: Vec<RwLockName> = RW_ALTERNATIVES
        .into_iter()
        .filter(|peer| config.plan.locks.contains(peer))
        .collect();
    if !config.plan.locks.contains(&RW_DEFAULT) || peers.is_empty() {
        return [None, None, None];
    }
    let rows: Vec<windowed::VersusRow> = config
        .groups
        .iter()
        .filter_map(|&group| {
            let ours = find(cells, RW_DEFAULT, group)?;
            let found = peers.iter().filter_map(|&p| find(cells, p, group)).collect();
            Some((vec![group.name()], ours, found))
        })
        .collect();
    windowed::versus_peers(
        format!(
            "rw-fair, {} against the best of the peers that ran, kops/s (reads + writes): \
             {scale}",
            crate::verdict::titled(RW_DEFAULT.name())
        ),
        &["group"],
        RW_DEFAULT.name(),
        &rows,
        rw::kops,
    )
}

/// `a/b/c`: one role's median per-thread iterations, slowest, mean and fastest.
pub(super) fn iterations(cell: &Cell, role: Role) -> String {
    let of = |pick: fn(&PerThread) -> f64| show(per_role(cell, role, pick), |v| format!("{v:.0}"));
    format!(
        "{}/{}/{}",
        of(|p| p.min as f64),
        of(|p| p.mean),
        of(|p| p.max as f64)
    )
}

/// lock | kops/s | readers min/mean/max | f | writers min/mean/max | f | reader group.
pub(super) fn group_table(config: &Config, cells: &[Cell], group: Group, scale: &str) -> Table {
    let readers = format!("{} readers, Iterations Min/Mean/Max", group.readers);
    let writers = format!("{} writers, Iterations Min/Mean/Max", group.writers);
    let read_wait = format!("read {}", windowed::WAIT_HEADER);
    let write_wait = format!("write {}", windowed::WAIT_HEADER);
    let mut table = Table::new(
        format!(
            "rw-fair, {} readers + {} writers: {scale}; min÷mean = the slowest thread's \
             iterations ÷ its role's mean (1.00 = even); reader group = every read ÷ the \
             read phases (runs of readers between two writers)",
            group.readers, group.writers
        ),
        &[
            "lock",
            "kops/s",
            &readers,
            "min÷mean",
            &writers,
            "min÷mean",
            "reader group",
            &read_wait,
            &write_wait,
        ],
    );
    for &lock in &config.plan.locks {
        let Some(cell) = find(cells, lock, group) else {
            continue;
        };
        let finished = cell.unfinished.is_none();
        let role = |show_role: fn(&Cell, Role) -> String, role| {
            if finished {
                show_role(cell, role)
            } else {
                "-".to_owned()
            }
        };
        table.row(vec![
            lock.name().to_owned(),
            cell.short(rw::kops),
            role(iterations, Role::Reader),
            role(|c, r| show_ratio(role_fairness(c, r)), Role::Reader),
            role(iterations, Role::Writer),
            role(|c, r| show_ratio(role_fairness(c, r)), Role::Writer),
            show(reader_group(cell), num),
            windowed::waits(cell, |w| w.readers),
            windowed::waits(cell, |w| w.writers),
        ]);
    }
    table
}

/// The worst min ÷ mean over a cell's runs for `role`; `None` without runs.
pub(super) fn worst_fairness(cell: &Cell, role: Role) -> Option<f64> {
    cell.runs
        .iter()
        .filter_map(|run| {
            let rw = run.rw?;
            match role {
                Role::Reader => rw.readers,
                Role::Writer => rw.writers,
            }
        })
        .map(|p| rw::min_per_mean(&p))
        .min_by(f64::total_cmp)
}

/// `yes (0.81)` when no thread of `role` fell under a quarter of its role's mean in
/// any run, `no (0.12)` otherwise, with the worst min ÷ mean.
pub(super) fn starved(cell: &Cell, role: Role) -> String {
    match worst_fairness(cell, role) {
        Some(worst) if worst >= STARVATION => format!("yes ({worst:.2})"),
        Some(worst) => format!("no ({worst:.2})"),
        None => "-".to_owned(),
    }
}

/// One role's mean sections per thread, run by run, as log values (for [`verdict::judge`]).
fn role_means(cell: &Cell, role: Role) -> Vec<f64> {
    cell.runs
        .iter()
        .filter_map(|run| {
            let rw = run.rw?;
            let threads = match role {
                Role::Reader => rw.readers,
                Role::Writer => rw.writers,
            };
            verdict::log_throughput(threads?.mean, false)
        })
        .collect()
}

/// Per group and rwsem policy: no starvation in either role, and each role's mean
/// per thread against the best policy's (a ratio, above 1: more sections, with its
/// interval and verdict).
pub(super) fn bars(config: &Config, cells: &[Cell]) -> Option<Table> {
    let policies: Vec<RwLockName> = POLICIES
        .iter()
        .copied()
        .filter(|p| config.plan.locks.contains(p))
        .collect();
    if policies.is_empty() {
        return None;
    }
    let mut table = Table::new(
        format!(
            "rw-fair, bars for the rwsem policies: every reader's and every writer's \
             iterations ≥ {:.0}% of its role's mean in every run (yes/no, with the worst \
             min ÷ mean), and each role's mean iterations against the best policy's (above \
             1: more)",
            STARVATION * 100.0
        ),
        &[
            "group",
            "lock",
            "readers ≥ 25%",
            "writers ≥ 25%",
            "writers mean",
            "vs best",
            "readers mean",
            "vs best",
        ],
    );
    let mut ledger = Ledger::default();
    for &group in &config.groups {
        let found: Vec<&Cell> = policies
            .iter()
            .filter_map(|&p| find(cells, p, group))
            .filter(|c| c.unfinished.is_none())
            .collect();
        let mean = |cell: &Cell, role| per_role(cell, role, |p| p.mean);
        let best = |role| {
            found
                .iter()
                .copied()
                .filter_map(|c| Some((c, mean(c, role)?)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(c, _)| c)
        };
        let (best_writers, best_readers) = (best(Role::Writer), best(Role::Reader));
        let versus = |cell: &Cell, best: Option<&Cell>, role| {
            let best = best.filter(|b| b.lock != cell.lock)?;
            verdict::judge(&role_means(cell, role), &role_means(best, role), Settings::default())
        };
        let shown = |cell: &Cell, best: Option<&Cell>, role| match versus(cell, best, role) {
            Some(judgement) => judgement.worded("more", "fewer"),
            None if best.is_some_and(|b| b.lock == cell.lock) => "best".to_owned(),
            None => "-".to_owned(),
        };
        for cell in &found {
            for (role, best, name) in [
                (Role::Writer, best_writers, "writers"),
                (Role::Reader, best_readers, "readers"),
            ] {
                if let Some(judgement) = versus(cell, best, role) {
                    ledger.add(format!("{} {}, {name}", group.name(), cell.lock), judgement);
                }
            }
            let (writers, readers) = (mean(cell, Role::Writer), mean(cell, Role::Reader));
            table.row(vec![
                group.name(),
                cell.lock.to_owned(),
                starved(cell, Role::Reader),
                starved(cell, Role::Writer),
                show(writers, |v| format!("{v:.0}")),
                shown(cell, best_writers, Role::Writer),
                show(readers, |v| format!("{v:.0}")),
                shown(cell, best_readers, Role::Reader),
            ]);
        }
        let adaptive = found.iter().find(|c| c.lock == POLICIES[0].name());
        if let (true, Some(adaptive)) = (group == SEED_GROUP, adaptive) {
            let no_starvation = [Role::Reader, Role::Writer]
                .iter()
                .all(|&role| worst_fairness(adaptive, role).is_some_and(|w| w >= STARVATION));
            table.note(format!(
                "seed 001's bar, {}: {} starves {} thread; its writers' mean against the best \
                 policy's: {}, its readers': {}",
                group.name(),
                adaptive.lock,
                if no_starvation { "no" } else { "some" },
                shown(adaptive, best_writers, Role::Writer),
                shown(adaptive, best_readers, Role::Reader),
            ));
        }
    }
    let tally = ledger.tally();
    if tally.judged() + tally.too_few_runs > 0 {
        table.note(format!(
            "vs best: a policy's mean sections per thread ÷ the best policy's (above 1: more), \
             {}",
            tally.note_worded(Settings::default(), ("more", "fewer"))
        ));
    }
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::super::config::{parse_group, WINDOW};
    use super::*;
    use crate::cells::{Run, RwRun, RwSetup, Summary};
    use crate::harness::windowed::Plan;
    use klocks::catalog::RwLockKind;

    #[test]
    fn groups_parse_and_bad_ones_say_why() {
        assert_eq!(
            parse_group("40+40"),
            Ok(Group {
                readers: 40,
                writers: 40
            })
        );
        assert_eq!(parse_group("8+1").map(Group::name), Ok("8+1".to_owned()));
        for bad in [
            "8x8", "8", "+8", "8+", "0+8", "8+0", "513+1", "a+b", "8+8+8",
        ] {
            let err = parse_group(bad).expect_err(bad);
            assert!(err.contains("READERS+WRITERS"), "{err}");
        }
    }

    /// A one-run cell of `group` with these per-thread iterations.
    fn cell(lock: RwLockName, group: Group, readers: &[u64], writers: &[u64]) -> Cell {
        let (reads, writes): (u64, u64) = (readers.iter().sum(), writers.iter().sum());
        Cell {
            scenario: "rw-fair",
            lock: lock.name(),
            threads: group.threads(),
            layout: None,
            unit: "ops/s",
            summary: Summary::of([(reads + writes) as f64]),
            unfinished: None,
            handoff: None,
            conditions: None,
            overcommit: None,
            mutex_load: None,
            rw: Some(RwSetup {
                readers: group.readers,
                writers: group.writers,
                load_pauses: 1,
                outside_pauses: 0,
                window_ms: 1000.0,
            }),
            rw_mix: None,
            stats: None,
            repeated: None,
            runs: vec![Run {
                value: (reads + writes) as f64,
                wall_ns: 1_000_000_000,
                operations: reads + writes,
                target: None,
                handoffs: None,
                finished: true,
                per_thread: None,
                drain: None,
                last_start_ms: None,
                rw: Some(RwRun {
                    reads,
                    writes,
                    reads_per_s: reads as f64,
                    writes_per_s: writes as f64,
                    readers: PerThread::of(readers),
                    writers: PerThread::of(writers),
                    read_phases: 4,
                    reader_group: Some(reads as f64 / 4.0),
                }),
                wait: None,
            }],
        }
    }

    #[test]
    fn the_bars_flag_starvation_and_compare_means() {
        let group = Group {
            readers: 2,
            writers: 2,
        };
        let config = Config {
            plan: Plan {
                locks: POLICIES.to_vec(),
                window: WINDOW,
                drain_cap: windowed::DRAIN_CAP,
                runs: 1,
                stats: false,
                adaptive: crate::adaptive::Adaptive::new(crate::adaptive::Budget::Off),
                wait_every: 0,
            },
            groups: vec![group, SEED_GROUP],
            load: 1,
        };
        let cells = [
            cell(
                RwLockName::Klocks(RwLockKind::RwSemAdaptive),
                group,
                &[100, 100],
                &[50, 50],
            ),
            cell(
                RwLockName::Klocks(RwLockKind::RwSemAlways),
                group,
                &[190, 10],
                &[100, 100],
            ),
            cell(
                RwLockName::Klocks(RwLockKind::RwSemNever),
                group,
                &[50, 50],
                &[40, 60],
            ),
        ];
        let text = bars(&config, &cells).expect("bars").to_string();
        let row = |lock: &str| {
            text.lines()
                .find(|l| l.contains(lock))
                .unwrap_or_else(|| panic!("{lock}: {text}"))
        };
        assert!(row("rwsem-adaptive").contains("yes (1.00)"), "{text}");
        // Writers: 50 of the best 100; readers: 100 of the best 100.
        assert!(row("rwsem-adaptive").contains("0.50×"), "{text}");
        assert!(row("rwsem-adaptive").contains("1.00×"), "{text}");
        assert!(row("rwsem-always").contains("no (0.10)"), "{text}");
        assert!(row("rwsem-never").contains("yes (0.80)"), "{text}");
        let table = group_table(&config, &cells, group, "s").to_string();
        assert!(
            table.contains("2 readers, Iterations Min/Mean/Max"),
            "{table}"
        );
        assert!(table.contains("10/100/190"), "{table}");
        assert!(table.contains("0.10"), "{table}");
    }
}
