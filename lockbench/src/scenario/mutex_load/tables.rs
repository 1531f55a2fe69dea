//! mutex-load's tables: the seed-004 comparison, all locks, the spinfutex bars against the ceiling and the best peer, default against the peers.

use crate::harness::versus::{against_best, judge_cells};
use crate::harness::watch::Conditions;
use crate::harness::windowed::{self, fairest, fairness, show_fairness, Grid};
use crate::locks::{LockName, DEFAULT};
use crate::cells::{num, Cell, Table};
use crate::verdict::{Judgement, Ledger, Settings};

use super::config::{Config, Row, AFTER, BEFORE, PEERS};

/// Throughput in the seed's unit: ops/s shown as kops/s.
pub(super) fn kops(ops_per_sec: f64) -> String {
    num(ops_per_sec / 1e3)
}

/// The seed-004 table, all locks, the spinfutex bars, default against the peers and
/// the per-cell detail.
pub fn tables(config: &Config, cells: &[Cell], pause_ns: f64) -> Vec<Table> {
    let outside = match config.outside {
        0 => "no work outside the lock".to_owned(),
        n => format!("{n} pauses outside the lock"),
    };
    let scale = format!(
        "{}; load = pause instructions in the critical section, one pause = \
         {pause_ns:.1} ns; {outside}",
        config.plan.scale("kops/s"),
    );
    let [versus, fairness, wait] = default_versus_peers(config, cells, pause_ns, &scale);
    let tables = [
        seed_table(config, cells, pause_ns, &scale),
        Some(matrix(config, cells, pause_ns, &scale)),
        bars(config, cells, pause_ns),
        versus,
        fairness,
        wait,
        Some(windowed::detail(
            "mutex-load",
            &["threads", "load"],
            cells,
            |cell| {
                let setup = cell.mutex_load?;
                Some(vec![
                    cell.threads.to_string(),
                    setup.load_pauses.to_string(),
                ])
            },
            ("kops/s", kops),
        )),
    ];
    windowed::with_footnotes(tables, cells, &config.plan)
}

pub(super) fn find<'a>(cells: &'a [Cell], lock: LockName, row: &Row) -> Option<&'a Cell> {
    cells.iter().find(|cell| {
        cell.lock == lock.name()
            && cell.threads == row.threads
            && cell.mutex_load.is_some_and(|m| m.load_pauses == row.load)
    })
}

/// threads | load | cs | base | patched | patched vs base, when both seed-004 locks
/// ran.
pub(super) fn seed_table(config: &Config, cells: &[Cell], pause_ns: f64, scale: &str) -> Option<Table> {
    if !(config.plan.locks.contains(&BEFORE) && config.plan.locks.contains(&AFTER)) {
        return None;
    }
    let rows = config.rows().into_iter().filter_map(|row| {
        let base = find(cells, BEFORE, &row)?;
        let patched = find(cells, AFTER, &row)?;
        Some((row.labels(pause_ns), base, patched))
    });
    Some(windowed::comparison(
        format!(
            "mutex-load, seed 004 (base = {}, the waiting futex; patched = {}, the \
             spinning futex): {scale}",
            BEFORE.name(),
            AFTER.name()
        ),
        &[
            "threads",
            "load",
            "cs",
            "base kops/s",
            "patched kops/s",
        ],
        (BEFORE.name(), AFTER.name()),
        rows,
        |cell| cell.long(kops),
    ))
}

/// threads | load | cs | one column per lock.
pub(super) fn matrix(config: &Config, cells: &[Cell], pause_ns: f64, scale: &str) -> Table {
    let rows = config.rows().into_iter().map(|row| {
        let row_cells = config.plan.locks.iter().map(|&l| find(cells, l, &row));
        (row.labels(pause_ns), row_cells.collect())
    });
    windowed::matrix(
        format!("mutex-load, all locks: {scale}"),
        &["threads", "load", "cs"],
        &config.plan.locks,
        rows,
        kops,
    )
}

/// Marks a ceiling that the lock's own handoff, not the critical section, bounds.
pub(super) const OVERHEAD_MARK: &str = "†";

/// The cost of a `pause` around `cell`: its own probes, or the start-up `pause_ns`
/// for a cell without them.
pub(super) fn cell_pause_ns(cell: &Cell, pause_ns: f64) -> f64 {
    cell.conditions
        .as_ref()
        .map_or(pause_ns, Conditions::pause_ns)
}

/// Whether a critical section of `load_ns` is too short for its ceiling to mean
/// anything: under two cache-line transfers (the lock's line and the data's line move
/// to the next owner's CPU), at the c2c latency probed around `cell`, or at the "near"
/// bound where there was no probe.
pub(super) fn overhead_bound(load_ns: f64, cell: &Cell) -> bool {
    let c2c = cell
        .conditions
        .as_ref()
        .and_then(|c| c.c2c_ns())
        .unwrap_or(crate::harness::watch::NEAR_MAX_NS);
    load_ns < 2.0 * c2c
}

/// default (`klocks::Mutex`) against the best of the peers that ran, cell by cell:
/// throughput, fairness, then the tail of the waits.
pub(super) fn default_versus_peers(
    config: &Config,
    cells: &[Cell],
    pause_ns: f64,
    scale: &str,
) -> [Option<Table>; 3] {
    let rows: Vec<windowed::VersusRow> = config
        .rows()
        .into_iter()
        .filter_map(|row| {
            let ours = find(cells, DEFAULT, &row)?;
            let peers = PEERS.iter().filter_map(|&p| find(cells, p, &row)).collect();
            Some((row.labels(pause_ns), ours, peers))
        })
        .collect();
    windowed::versus_peers(
        format!(
            "mutex-load, {} against the best of the peers that ran: {scale}",
            crate::verdict::titled(DEFAULT.name())
        ),
        &["threads", "load", "cs"],
        DEFAULT.name(),
        &rows,
        kops,
    )
}

/// spinfutex per cell against the ceiling, the best peer and futex, with fairness.
pub(super) fn bars(config: &Config, cells: &[Cell], pause_ns: f64) -> Option<Table> {
    let peers: Vec<LockName> = PEERS
        .iter()
        .copied()
        .filter(|peer| config.plan.locks.contains(peer))
        .collect();
    if !config.plan.locks.contains(&AFTER) || peers.is_empty() {
        return None;
    }
    let after = AFTER.name();
    let ratio_header = format!("{after} vs best");
    let before_header = format!("vs {}", BEFORE.name());
    let fairness_header = format!("f {after}");
    let mut table = Table::new(
        format!(
            "mutex-load, bars: {after} against the ceiling 1 ÷ (load × pause ns), with \
             the pause probed before and after the row (its locks run interleaved; \
             start-up: {pause_ns:.1} ns), the best peer ({}) and {}; f = fairness, min ÷ mean \
             per-thread operations",
            peers
                .iter()
                .map(|peer| peer.name())
                .collect::<Vec<_>>()
                .join(", "),
            BEFORE.name()
        ),
        &[
            "threads",
            "load",
            "pause ns",
            "ceiling kops/s",
            after,
            "% ceiling",
            "best peer",
            ratio_header.as_str(),
            before_header.as_str(),
            fairness_header.as_str(),
            "fairest peer",
        ],
    );
    let (mut versus_best, mut versus_before) = (Ledger::default(), Ledger::default());
    let mut overhead_marked = false;
    for row in config.rows() {
        let Some(after_cell) = find(cells, AFTER, &row) else {
            continue;
        };
        let peer_cells: Vec<&Cell> = peers.iter().filter_map(|&p| find(cells, p, &row)).collect();
        let best = against_best(after_cell, peer_cells.iter().copied(), Settings::default());
        let before = find(cells, BEFORE, &row).and_then(|cell| judge_cells(after_cell, cell));
        let name = format!("threads {}, load {}", row.threads, row.load);
        if let Some((_, judgement)) = best {
            versus_best.add(name.clone(), judgement);
        }
        if let Some(judgement) = before {
            versus_before.add(name, judgement);
        }
        let cell_pause = cell_pause_ns(after_cell, pause_ns);
        let ceiling = row.ceiling(cell_pause);
        let median = after_cell.summary.map(|s| s.median);
        let bound = overhead_bound(row.load_ns(cell_pause), after_cell);
        overhead_marked |= bound;
        let mark = if bound { OVERHEAD_MARK } else { "" };
        let judged = |j: Option<Judgement>| j.map_or_else(|| "-".to_owned(), |j| j.to_string());
        table.row(vec![
            row.threads.to_string(),
            row.load.to_string(),
            format!("{cell_pause:.1}"),
            format!("{}{mark}", kops(ceiling)),
            after_cell.short(kops),
            median.map_or_else(
                || "-".to_owned(),
                |m| format!("{:.1}%", m / ceiling * 100.0),
            ),
            best.and_then(|(cell, _)| Some((cell.summary?.median, cell.lock)))
                .map_or_else(|| "-".to_owned(), |(ops, lock)| format!("{} {lock}", kops(ops))),
            judged(best.map(|(_, j)| j)),
            judged(before),
            show_fairness(fairness(after_cell)),
            fairest(&peer_cells)
                .map_or_else(|| "-".to_owned(), |(f, lock)| format!("{f:.2} {lock}")),
        ]);
    }
    for (ledger, against) in [(versus_best, "the best peer"), (versus_before, BEFORE.name())] {
        for note in ledger.notes(after, against, Settings::default()) {
            table.note(note);
        }
    }
    if overhead_marked {
        table.note(format!(
            "{OVERHEAD_MARK} the critical section is shorter than two cache-line transfers \
         (c2c probed around the cell): the lock's own handoff, not the ceiling, bounds \
         the cell"
        ));
    }
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::super::config::Args;
    use super::*;
    use crate::cells::{MutexLoad, PerThread, Run, Summary};
    use crate::harness::Common;

    /// A finished one-run cell at `ops` ops/s.
    fn cell(lock: LockName, row: Row, ops: f64, per_thread: &[u64]) -> Cell {
        Cell {
            scenario: "mutex-load",
            lock: lock.name(),
            threads: row.threads,
            layout: None,
            unit: "ops/s",
            summary: Summary::of([ops]),
            unfinished: None,
            handoff: None,
            conditions: None,
            overcommit: None,
            mutex_load: Some(MutexLoad {
                load_pauses: row.load,
                outside_pauses: 0,
                window_ms: 1000.0,
            }),
            rw: None,
            rw_mix: None,
            stats: None,
            repeated: None,
            runs: vec![Run {
                value: ops,
                wall_ns: 1_000_000_000,
                operations: per_thread.iter().sum(),
                target: None,
                handoffs: None,
                finished: true,
                per_thread: PerThread::of(per_thread),
                drain: None,
                last_start_ms: None,
                rw: None,
                wait: None,
            }],
        }
    }

    #[test]
    fn the_ceiling_is_one_critical_section_after_another() {
        let row = Row {
            threads: 2,
            load: 100,
        };
        assert_eq!(row.ceiling(25.0), 400_000.0);
        assert_eq!(row.labels(25.0), ["2", "100", "2500 ns"]);
    }

    #[test]
    fn the_bars_compare_with_the_best_peer_and_count_the_wins() {
        let common = Common {
            locks: Some(vec![AFTER, BEFORE, LockName::Std, LockName::ParkingLot]),
            rwlocks: None,
            runs: 1,
            seed_scale: false,
            stats: false,
            adaptive: crate::adaptive::Adaptive::new(crate::adaptive::Budget::Off),
        };
        let args = Args {
            threads: vec![2],
            load: vec![1, 100],
            ..Args::default()
        };
        let config = Config::new(&args, &common);
        let (short, long) = (
            Row {
                threads: 2,
                load: 1,
            },
            Row {
                threads: 2,
                load: 100,
            },
        );
        let cells = [
            cell(AFTER, short, 10e6, &[5, 5]),
            cell(BEFORE, short, 1e6, &[5, 5]),
            cell(LockName::Std, short, 20e6, &[2, 8]),
            cell(LockName::ParkingLot, short, 5e6, &[4, 6]),
            cell(AFTER, long, 200e3, &[3, 7]),
            cell(BEFORE, long, 100e3, &[5, 5]),
            cell(LockName::Std, long, 100e3, &[5, 5]),
            cell(LockName::ParkingLot, long, 150e3, &[1, 9]),
        ];
        let text = bars(&config, &cells, 25.0).expect("bars").to_string();
        let lines: Vec<&str> = text.lines().collect();
        // Load 1 at 25 ns: 40M ceiling, marked (one pause is shorter than two c2c
        // transfers); spinfutex at 25% of it, half the best peer (std).
        assert!(lines[3].contains("40000†"), "{text}");
        assert!(lines[3].contains("25.0%"), "{text}");
        assert!(lines[3].contains("20000 std"), "{text}");
        assert!(lines[3].contains("0.50×"), "{text}");
        assert!(lines[3].contains("10.00×"), "{text}");
        // Load 100: 400k ceiling, unmarked; spinfutex 1.33× parking_lot, 2× futex.
        assert!(lines[4].contains(" 400 "), "{text}");
        assert!(lines[4].contains("150 parking_lot"), "{text}");
        assert!(lines[4].contains("1.33×"), "{text}");
        assert!(lines[4].contains("2.00×"), "{text}");
        assert!(lines[4].contains("0.60"), "{text}");
        assert!(
            text.contains("geometric mean 0.82× over 2 cells; lowest 0.50×, too few runs (1+1) (threads 2, load 1)"),
            "{text}"
        );
        assert!(text.contains("† the critical section is shorter"), "{text}");
    }

    #[test]
    fn the_ceiling_uses_the_pause_probed_around_the_cell() {
        let common = Common {
            locks: Some(vec![AFTER, LockName::Std]),
            rwlocks: None,
            runs: 1,
            seed_scale: false,
            stats: false,
            adaptive: crate::adaptive::Adaptive::new(crate::adaptive::Budget::Off),
        };
        let args = Args {
            threads: vec![2],
            load: vec![100],
            ..Args::default()
        };
        let config = Config::new(&args, &common);
        let row = Row {
            threads: 2,
            load: 100,
        };
        let probed = Conditions {
            c2c_before_ns: Some(40.0),
            c2c_after_ns: Some(40.0),
            placement_before: None,
            placement_after: None,
            placement_changed: false,
            pause_before_ns: 24.0,
            pause_after_ns: 26.0,
            span_ms: 1000.0,
            steal_ms: 0.0,
            others_ms: 0.0,
            noisy: false,
        };
        let cells = [
            Cell {
                conditions: Some(probed),
                ..cell(AFTER, row, 380e3, &[5, 5])
            },
            cell(LockName::Std, row, 300e3, &[5, 5]),
        ];
        // Start-up pause 20 ns (ceiling 500k) is ignored for the probed 25 ns: 400k.
        let text = bars(&config, &cells, 20.0).expect("bars").to_string();
        let line = text.lines().nth(3).unwrap();
        assert!(line.contains(" 25.0 ") && line.contains(" 400 "), "{text}");
        assert!(line.contains("95.0%"), "{text}");
    }
}
