//! loop's tables: the seed-000 and seed-003 comparisons, qspinlock → pvqspinlock, all locks, default against the peers and per-cell detail.

use klocks::catalog::MutexKind;

use crate::harness::watch::{self, Conditions};
use crate::harness::versus::{judge_cells, Versus};
use crate::locks::{LockName, ALTERNATIVES, DEFAULT};
use crate::verdict::{Ledger, Settings};
use crate::cells::{num, Cell, Table, Unfinished};

use super::config::Config;

/// Footnote for `~`.
const SERIALIZED_NOTE: &str = "~ serialized: under 10 handoffs per thread, so the threads \
ran one after another rather than contending (the scheduler did not run them side by side)";

/// The seed tables, the all-locks matrix, default against the peers and the per-cell
/// detail.
pub fn tables(config: &Config, cells: &[Cell]) -> Vec<Table> {
    let scale = format!(
        "N threads × {} lock/unlock pairs each on one lock, wall ms (median of up to {} \
         runs, cap {} s per run)",
        config.iterations,
        config.runs,
        config.cap.as_secs_f64()
    );
    let mut tables: Vec<Table> = [
        seed_000_table(config, cells, &scale),
        pv_table(config, cells, &scale, &SEED_003),
        pv_table(config, cells, &scale, &PV_QSPINLOCK),
        Some(matrix(config, cells, &scale)),
        default_versus_peers(config, cells, &scale),
    ]
    .into_iter()
    .flatten()
    .collect();
    tables.push(detail(cells));
    for table in &mut tables {
        footnotes(table, cells);
    }
    tables
}

/// The locks the comparison tables show: `klocks::Mutex`, each pair's two (the seeds'
/// and the queued lock's pv fix) and the alternatives, in that order, once each.
pub(super) fn shown_locks() -> Vec<LockName> {
    let pairs = [SEED_000, SEED_003, PV_QSPINLOCK];
    let mut locks = vec![DEFAULT];
    for lock in pairs
        .iter()
        .flat_map(|pair| [pair.base, pair.patched])
        .chain(ALTERNATIVES)
    {
        if !locks.contains(&lock) {
            locks.push(lock);
        }
    }
    locks
}

pub(super) fn find<'a>(cells: &'a [Cell], lock: &str, threads: usize) -> Option<&'a Cell> {
    cells
        .iter()
        .find(|cell| cell.lock == lock && cell.threads == threads)
}

/// A base and a patched lock, compared row by row, when both ran.
pub(super) struct Pair {
    /// What the comparison is, for the table's title.
    what: &'static str,
    pub(super) base: LockName,
    pub(super) patched: LockName,
}

impl Pair {
    fn ran(&self, config: &Config) -> bool {
        config.locks.contains(&self.base) && config.locks.contains(&self.patched)
    }

    /// (threads, base cell, patched cell) for every thread count both measured.
    fn rows<'a>(
        &self,
        config: &'a Config,
        cells: &'a [Cell],
    ) -> impl Iterator<Item = (usize, &'a Cell, &'a Cell)> + 'a {
        let (base, patched) = (self.base.name(), self.patched.name());
        config.threads.iter().filter_map(move |&threads| {
            Some((
                threads,
                find(cells, base, threads)?,
                find(cells, patched, threads)?,
            ))
        })
    }
}

/// Seed 000: the queue head's cmpxchg (before) against a plain write (after).
pub(super) const SEED_000: Pair = Pair {
    what: "seed 000",
    base: LockName::Klocks(MutexKind::QSpinLockCmpxchg),
    patched: LockName::Klocks(MutexKind::QSpinLock),
};
/// Seed 003: the ticket lock (base) against the pv ticket lock (patched).
pub(super) const SEED_003: Pair = Pair {
    what: "seed 003",
    base: LockName::Klocks(MutexKind::Ticket),
    patched: LockName::Klocks(MutexKind::PvTicket),
};
/// The same fix on the queued lock: qspinlock against pvqspinlock.
pub(super) const PV_QSPINLOCK: Pair = Pair {
    what: "seed 003's fix on the queued lock",
    base: LockName::Klocks(MutexKind::QSpinLock),
    patched: LockName::Klocks(MutexKind::PvQSpinLock),
};

/// threads | before | after | after vs before: the throughput verdict of after
/// against before ([`judge_cells`]).
pub(super) fn seed_000_table(config: &Config, cells: &[Cell], scale: &str) -> Option<Table> {
    if !SEED_000.ran(config) {
        return None;
    }
    let (before, after) = (SEED_000.base.name(), SEED_000.patched.name());
    let judged = format!("{after} vs {before}");
    let mut table = Table::new(
        format!(
            "loop, {} (before = {before}, after = {after}): {scale}",
            SEED_000.what
        ),
        &["threads", "before ms", "after ms", &judged],
    );
    let mut ledger = Ledger::default();
    for (threads, before_cell, after_cell) in SEED_000.rows(config, cells) {
        let judgement = judge_cells(after_cell, before_cell);
        if let Some(judgement) = judgement {
            ledger.add(format!("threads {threads}"), judgement);
        }
        table.row(vec![
            threads.to_string(),
            before_cell.short(num),
            after_cell.short(num),
            judgement.map_or_else(|| "-".to_owned(), |j| j.to_string()),
        ]);
    }
    for note in ledger.notes(after, before, Settings::default()) {
        table.note(note);
    }
    Some(table)
}

/// threads | base | patched | patched vs base, seed 003's pairs: the throughput
/// verdict of patched against base ([`judge_cells`]). A base that hit its cap took
/// longer than the cap, so patched is at least cap ÷ patched wall times faster,
/// shown as `> 3.20× faster (base DNF)`.
pub(super) fn pv_table(config: &Config, cells: &[Cell], scale: &str, pair: &Pair) -> Option<Table> {
    if !pair.ran(config) {
        return None;
    }
    let (base, patched) = (pair.base.name(), pair.patched.name());
    let judged = format!("{patched} vs {base}");
    let mut table = Table::new(
        format!(
            "loop, {} (base = {base}, patched = {patched}): {scale}",
            pair.what
        ),
        &["threads", "base ms", "patched ms", &judged],
    );
    let mut ledger = Ledger::default();
    for (threads, base_cell, patched_cell) in pair.rows(config, cells) {
        let judgement = judge_cells(patched_cell, base_cell);
        let finished = patched_cell.summary.filter(|_| patched_cell.unfinished.is_none());
        let shown = match (judgement, base_cell.unfinished, finished) {
            (Some(judgement), _, _) => {
                ledger.add(format!("threads {threads}"), judgement);
                judgement.to_string()
            }
            (None, Some(Unfinished::Capped { after_secs, .. }), Some(p)) => {
                format!("> {:.2}× faster (base DNF)", after_secs * 1e3 / p.median)
            }
            _ => "-".to_owned(),
        };
        table.row(vec![
            threads.to_string(),
            base_cell.short(num),
            patched_cell.short(num),
            shown,
        ]);
    }
    for note in ledger.notes(patched, base, Settings::default()) {
        table.note(note);
    }
    Some(table)
}

/// threads | one column per lock.
pub(super) fn matrix(config: &Config, cells: &[Cell], scale: &str) -> Table {
    let names: Vec<&str> = config.locks.iter().map(|lock| lock.name()).collect();
    let headers: Vec<&str> = std::iter::once("threads")
        .chain(names.iter().copied())
        .collect();
    let mut table = Table::new(format!("loop, all locks: {scale}"), &headers);
    for &threads in &config.threads {
        let row = std::iter::once(threads.to_string())
            .chain(names.iter().map(|&lock| {
                find(cells, lock, threads).map_or_else(|| "-".to_owned(), |cell| cell.short(num))
            }))
            .collect();
        table.row(row);
    }
    table
}

/// default (`klocks::Mutex`) against the best of the peers that ran, per thread
/// count, when both ran.
pub(super) fn default_versus_peers(config: &Config, cells: &[Cell], scale: &str) -> Option<Table> {
    let ran = |lock: &LockName| config.locks.contains(lock);
    if !ran(&DEFAULT) || !ALTERNATIVES.iter().any(ran) {
        return None;
    }
    let mut versus = Versus::new(DEFAULT.name(), ALTERNATIVES.map(LockName::name).to_vec());
    let [best, ratio] = versus.headers();
    let mut table = Table::new(
        format!(
            "loop, {} against the best of the peers that ran: {scale}",
            crate::verdict::titled(DEFAULT.name())
        ),
        &["threads", DEFAULT.name(), &best, &ratio],
    );
    for &threads in &config.threads {
        let Some(ours) = find(cells, DEFAULT.name(), threads) else {
            continue;
        };
        let row: Vec<&Cell> = cells.iter().filter(|c| c.threads == threads).collect();
        let compared = versus.row(&format!("threads {threads}"), &row);
        table.row([threads.to_string(), ours.short(num)].into_iter().chain(compared).collect());
    }
    for note in versus.notes() {
        table.note(note);
    }
    Some(table)
}

/// One row per cell: the time with its range, the handoff cost, the conditions.
pub(super) fn detail(cells: &[Cell]) -> Table {
    let mut table = Table::new(
        "loop, per cell: handoff = the lock passed to another thread; c2c = one-way \
         latency probed before/after the cell",
        &[
            "lock",
            "threads",
            "wall ms median [min–max]",
            "handoffs",
            "ns/handoff",
            "÷ c2c",
            "c2c ns",
            "placement",
            "steal+others ms",
        ],
    );
    for cell in cells {
        let handoff = cell.handoff.as_ref();
        let conditions = cell.conditions.as_ref();
        table.row(vec![
            cell.lock.to_owned(),
            cell.threads.to_string(),
            cell.long(num),
            handoff.map_or_else(|| "0".to_owned(), |h| h.handoffs.to_string()),
            handoff.map_or_else(|| "-".to_owned(), |h| num(h.ns_per_handoff)),
            handoff
                .and_then(|h| h.per_c2c)
                .map_or_else(|| "-".to_owned(), |ratio| format!("{ratio:.1}×")),
            conditions
                .and_then(Conditions::c2c_ns)
                .map_or_else(|| "-".to_owned(), num),
            conditions.map_or_else(|| "-".to_owned(), Conditions::placement),
            conditions.map_or_else(
                || "-".to_owned(),
                |c| format!("{}+{}", num(c.steal_ms), num(c.others_ms)),
            ),
        ]);
    }
    table
}

pub(super) fn footnotes(table: &mut Table, cells: &[Cell]) {
    if cells.iter().any(|cell| cell.unfinished.is_some()) {
        table.note(
            "DNF x%: the run hit its cap with x% of its pairs done (counter still verified); \
             a capped cell is not repeated",
        );
    }
    if cells
        .iter()
        .any(|cell| cell.handoff.is_some_and(|h| h.serialized))
    {
        table.note(SERIALIZED_NOTE);
    }
    watch::explain_marks(table, cells);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shown_locks_are_every_compared_lock_once() {
        let locks = shown_locks();
        assert_eq!(locks[0], DEFAULT);
        for pair in [SEED_000, SEED_003, PV_QSPINLOCK] {
            assert!(locks.contains(&pair.base) && locks.contains(&pair.patched));
        }
        assert!(ALTERNATIVES.iter().all(|lock| locks.contains(lock)));
        for (i, lock) in locks.iter().enumerate() {
            assert!(!locks[i + 1..].contains(lock), "{} listed twice", lock.name());
        }
    }
}
