//! rwsem's tables: the seed-001 comparison, all locks, the rwsem-adaptive bars and per-cell detail.

use crate::harness::rw::{geometric_mean, kops, reader_group, role_fairness, show, show_ratio, times, Role};
use crate::harness::versus::{against_best, judge_cells};
use crate::harness::watch::Conditions;
use crate::harness::windowed::{self, Grid};
use crate::cells::{num, si, Cell, RwRun, Table};
use crate::rwlocks::RwLockName;
use crate::verdict::{self, Judgement, Ledger, Settings};

use super::config::{Config, Row, AFTER, BEFORE, NEVER, PEERS};

/// The seed-001 table, all locks, the rwsem-adaptive bars and the per-cell detail.
pub fn tables(config: &Config, cells: &[Cell], pause_ns: f64) -> Vec<Table> {
    let outside = match config.outside {
        0 => "no work outside the lock".to_owned(),
        n => format!("{n} pauses outside the lock"),
    };
    let scale = format!(
        "{}; threads = half readers, half writers; load = pause instructions in every \
         read and write section, one pause = {pause_ns:.1} ns; {outside}",
        config.plan.scale("kops/s (reads + writes)"),
    );
    let tables = [
        seed_table(config, cells, pause_ns, &scale),
        Some(matrix(config, cells, pause_ns, &scale)),
        bars(config, cells),
        Some(detail(cells)),
    ];
    windowed::with_footnotes(tables, cells, &config.plan)
}

pub(super) fn find<'a>(cells: &'a [Cell], lock: RwLockName, row: &Row) -> Option<&'a Cell> {
    cells.iter().find(|cell| {
        cell.lock == lock.name()
            && cell.threads == row.threads
            && cell.rw.is_some_and(|rw| rw.load_pauses == row.load)
    })
}

/// threads | load | cs | before | after | after vs before (the throughput verdict) |
/// never, when the seed's two policies ran.
pub(super) fn seed_table(config: &Config, cells: &[Cell], pause_ns: f64, scale: &str) -> Option<Table> {
    if !(config.has(BEFORE) && config.has(AFTER)) {
        return None;
    }
    let before = format!("before: {} kops/s", BEFORE.name());
    let after = format!("after: {} kops/s", AFTER.name());
    let never = format!("{} kops/s", NEVER.name());
    let judged = format!("{} vs {}", AFTER.name(), BEFORE.name());
    let mut headers = vec!["threads", "load", "cs", &before, &after, &judged];
    if config.has(NEVER) {
        headers.push(&never);
    }
    let mut table = Table::new(
        format!(
            "rwsem, seed 001 (before = {}, reader spinning without the adaptive bits; \
             after = {}, seed 001's adaptive reader spinning; {}: Linux 5.11, no \
             reader spinning): {scale}",
            BEFORE.name(),
            AFTER.name(),
            NEVER.name()
        ),
        &headers,
    );
    let mut ledger = Ledger::default();
    for row in config.rows() {
        let (Some(base), Some(patched)) = (find(cells, BEFORE, &row), find(cells, AFTER, &row))
        else {
            continue;
        };
        let judgement = judge_cells(patched, base);
        if let Some(judgement) = judgement {
            ledger.add(format!("threads {}, load {}", row.threads, row.load), judgement);
        }
        let mut entries = row.labels(pause_ns);
        entries.extend([
            base.long(kops),
            patched.long(kops),
            judgement.map_or_else(|| "-".to_owned(), |j| j.to_string()),
        ]);
        if config.has(NEVER) {
            entries.push(find(cells, NEVER, &row).map_or_else(|| "-".to_owned(), |c| c.long(kops)));
        }
        table.row(entries);
    }
    for note in ledger.notes(AFTER.name(), BEFORE.name(), Settings::default()) {
        table.note(note);
    }
    Some(table)
}

/// threads | load | cs | one column per lock, kops/s.
pub(super) fn matrix(config: &Config, cells: &[Cell], pause_ns: f64, scale: &str) -> Table {
    let headers: Vec<&str> = ["threads", "load", "cs"]
        .into_iter()
        .chain(config.plan.locks.iter().map(|lock| lock.name()))
        .collect();
    let mut table = Table::new(format!("rwsem, all locks: {scale}"), &headers);
    for row in config.rows() {
        let entries = config.plan.locks.iter().map(|&lock| {
            find(cells, lock, &row).map_or_else(|| "-".to_owned(), |cell| cell.short(kops))
        });
        table.row(row.labels(pause_ns).into_iter().chain(entries).collect());
    }
    table
}

/// rwsem-adaptive per cell against the better of the other two policies and against
/// the best peer, with the geometric means over the thread grid per load.
pub(super) fn bars(config: &Config, cells: &[Cell]) -> Option<Table> {
    let policies: Vec<RwLockName> = [BEFORE, NEVER]
        .into_iter()
        .filter(|&lock| config.has(lock))
        .collect();
    let peers: Vec<RwLockName> = PEERS.iter().copied().filter(|&p| config.has(p)).collect();
    if !config.has(AFTER) || (policies.is_empty() && peers.is_empty()) {
        return None;
    }
    let after = AFTER.name();
    let versus_policy = format!("{after} vs policy");
    let versus_peer = format!("{after} vs peer");
    let mut table = Table::new(
        format!(
            "rwsem, bars: {after} against the better of the other policies ({}) and the \
             best peer ({}), kops/s",
            policies
                .iter()
                .map(|l| l.name())
                .collect::<Vec<_>>()
                .join(", "),
            peers
                .iter()
                .map(|l| verdict::label(l.name()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        &[
            "threads",
            "load",
            after,
            "best policy",
            versus_policy.as_str(),
            "best peer",
            versus_peer.as_str(),
        ],
    );
    let mut ratios: Vec<Versus> = Vec::new();
    let (mut policy_ledger, mut peer_ledger) = (Ledger::default(), Ledger::default());
    for row in config.rows() {
        let Some(after_cell) = find(cells, AFTER, &row) else {
            continue;
        };
        let best_of = |locks: &[RwLockName]| {
            let found: Vec<&Cell> = locks.iter().filter_map(|&l| find(cells, l, &row)).collect();
            against_best(after_cell, found, Settings::default())
        };
        let (policy, peer) = (best_of(&policies), best_of(&peers));
        let name = format!("threads {}, load {}", row.threads, row.load);
        for (ledger, judged) in [(&mut policy_ledger, policy), (&mut peer_ledger, peer)] {
            if let Some((_, judgement)) = judged {
                ledger.add(name.clone(), judgement);
            }
        }
        ratios.push(Versus {
            load: row.load,
            policy: policy.map(|(_, j)| j.ratio),
            peer: peer.map(|(_, j)| j.ratio),
        });
        let best = |best: Option<(&Cell, Judgement)>| {
            best.map_or_else(
                || "-".to_owned(),
                |(cell, _)| {
                    let median = cell.summary.map_or(0.0, |s| s.median);
                    format!("{} {}", kops(median), verdict::label(cell.lock))
                },
            )
        };
        let judged = |best: Option<(&Cell, Judgement)>| {
            best.map_or_else(|| "-".to_owned(), |(_, j)| j.to_string())
        };
        table.row(vec![
            row.threads.to_string(),
            row.load.to_string(),
            after_cell.short(kops),
            best(policy),
            judged(policy),
            best(peer),
            judged(peer),
        ]);
    }
    for &load in &config.loads {
        let of = |pick: fn(&Versus) -> Option<f64>| {
            let values: Vec<f64> = ratios
                .iter()
                .filter(|r| r.load == load)
                .filter_map(pick)
                .collect();
            (geometric_mean(&values), values.len())
        };
        let ((policy, policy_cells), (peer, peer_cells)) = (of(|r| r.policy), of(|r| r.peer));
        if policy_cells + peer_cells > 0 {
            table.note(format!(
                "load {load}, geometric mean over the thread counts: {after} ÷ best peer \
                 {} ({peer_cells} cells), ÷ best policy {} ({policy_cells} cells), as \
                 throughput (above 1: {after} is faster)",
                times(peer),
                times(policy)
            ));
        }
    }
    for (ledger, against) in [(policy_ledger, "the best policy"), (peer_ledger, "the best peer")] {
        if let Some(note) = ledger.notes(after, against, Settings::default()).pop() {
            table.note(format!("against {against}: {note}"));
        }
    }
    Some(table)
}

/// rwsem-adaptive ÷ the best other policy and ÷ the best peer in one row, where both
/// finished.
pub(super) struct Versus {
    load: u32,
    policy: Option<f64>,
    peer: Option<f64>,
}

/// One row per cell: throughput, each role's rate and fairness, the reader group.
pub(super) fn detail(cells: &[Cell]) -> Table {
    let mut table = Table::new(
        "rwsem, per cell: reads/s and writes/s inside the window; f = the slowest \
         thread's sections ÷ the mean of its role (1.00 = even); reader group = every \
         read ÷ the read phases (runs of readers between two writers); drain = from the \
         stop flag to the last thread returning (medians over the verified runs)",
        &[
            "lock",
            "threads",
            "load",
            "kops/s median [min–max]",
            "reads/s",
            "writes/s",
            "f readers",
            "f writers",
            "reader group",
            "drain ms",
            "placement",
            "steal+others ms",
        ],
    );
    for cell in cells {
        let Some(setup) = cell.rw else {
            continue;
        };
        table.row(
            [
                cell.lock.to_owned(),
                cell.threads.to_string(),
                setup.load_pauses.to_string(),
            ]
            .into_iter()
            .chain(rw_columns(cell))
            .collect(),
        );
    }
    table
}

/// A cell's throughput with its range, each role's rate and fairness, the reader
/// group, the drain and the conditions.
pub(super) fn rw_columns(cell: &Cell) -> [String; 9] {
    let rate = |of: fn(&RwRun) -> f64| show(cell.median_of(|run| run.rw.as_ref().map(of)), si);
    let conditions = cell.conditions.as_ref();
    [
        cell.long(kops),
        rate(|rw| rw.reads_per_s),
        rate(|rw| rw.writes_per_s),
        show_ratio(role_fairness(cell, Role::Reader)),
        show_ratio(role_fairness(cell, Role::Writer)),
        show(reader_group(cell), num),
        show(cell.median_of(|run| run.drain.map(|d| d.ms)), num),
        conditions.map_or_else(|| "-".to_owned(), Conditions::placement),
        conditions.map_or_else(
            || "-".to_owned(),
            |c| format!("{}+{}", num(c.steal_ms), num(c.others_ms)),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::config::{parse_threads, Args};
    use super::*;
    use crate::cells::{PerThread, Run, RwSetup, Summary};
    use crate::harness::Common;

    /// A finished one-run cell at `ops` ops/s, half reads.
    fn cell(lock: RwLockName, row: Row, ops: f64) -> Cell {
        let half = (ops / 2.0) as u64;
        Cell {
            scenario: "rwsem",
            lock: lock.name(),
            threads: row.threads,
            layout: None,
            unit: "ops/s",
            summary: Summary::of([ops]),
            unfinished: None,
            handoff: None,
            conditions: None,
            overcommit: None,
            mutex_load: None,
            rw: Some(RwSetup {
                readers: row.threads / 2,
                writers: row.threads / 2,
                load_pauses: row.load,
                outside_pauses: 0,
                window_ms: 1000.0,
            }),
            rw_mix: None,
            stats: None,
            repeated: None,
            runs: vec![Run {
                value: ops,
                wall_ns: 1_000_000_000,
                operations: 2 * half,
                target: None,
                handoffs: None,
                finished: true,
                per_thread: PerThread::of(&[half, half]),
                drain: None,
                last_start_ms: None,
                rw: Some(RwRun {
                    reads: half,
                    writes: half,
                    reads_per_s: half as f64,
                    writes_per_s: half as f64,
                    readers: PerThread::of(&[half]),
                    writers: PerThread::of(&[half]),
                    read_phases: 10,
                    reader_group: Some(half as f64 / 10.0),
                }),
                wait: None,
            }],
        }
    }

    #[test]
    fn odd_or_zero_threads_are_refused() {
        assert_eq!(parse_threads("80"), Ok(80));
        for bad in ["0", "1", "3", "2048", "two"] {
            assert!(parse_threads(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_bars_compare_with_the_best_policy_and_peer() {
        let common = Common {
            locks: None,
            rwlocks: Some(vec![
                AFTER,
                BEFORE,
                NEVER,
                RwLockName::Std,
                RwLockName::ParkingLot,
            ]),
            runs: 1,
            seed_scale: false,
            stats: false,
            adaptive: crate::adaptive::Adaptive::new(crate::adaptive::Budget::Off),
        };
        let args = Args {
            threads: vec![2, 4],
            load: vec![1],
            ..Args::default()
        };
        let config = Config::new(&args, &common);
        let (two, four) = (
            Row {
                threads: 2,
                load: 1,
            },
            Row {
                threads: 4,
                load: 1,
            },
        );
        let cells = [
            cell(AFTER, two, 200e3),
            cell(BEFORE, two, 100e3),
            cell(NEVER, two, 50e3),
            cell(RwLockName::Std, two, 400e3),
            cell(RwLockName::ParkingLot, two, 100e3),
            cell(AFTER, four, 200e3),
            cell(BEFORE, four, 100e3),
            cell(NEVER, four, 400e3),
            cell(RwLockName::Std, four, 100e3),
            cell(RwLockName::ParkingLot, four, 25e3),
        ];
        let text = bars(&config, &cells).expect("bars").to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[3].contains("100 rwsem-always") && lines[3].contains("2.00×"),
            "{text}"
        );
        assert!(
            lines[3].contains("400 std-rw") && lines[3].contains("0.50×"),
            "{text}"
        );
        assert!(
            lines[4].contains("400 rwsem-never") && lines[4].contains("0.50×"),
            "{text}"
        );
        assert!(
            lines[4].contains("100 std-rw") && lines[4].contains("2.00×"),
            "{text}"
        );
        // Geometric means: √(0.5 × 2) = 1 both ways.
        assert!(
            text.contains(
                "load 1, geometric mean over the thread counts: rwsem-adaptive ÷ \
                           best peer 1.00× (2 cells), ÷ best policy 1.00× (2 cells)"
            ),
            "{text}"
        );
        let seed = seed_table(&config, &cells, 25.0, "s")
            .expect("seed table")
            .to_string();
        assert!(seed.contains("2.00×, too few runs (1+1)"), "{seed}");
        let detail = detail(&cells).to_string();
        assert!(
            detail.contains("10000"),
            "reader group 100000 ÷ 10: {detail}"
        );
    }
}
