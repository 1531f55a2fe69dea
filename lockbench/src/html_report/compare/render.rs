//! The table `lockbench compare` prints: every shared cell with its change, what it
//! was judged against, the verdicts' counts, and each lock's change pooled over its
//! cells.

use std::fmt::Write as _;

use super::{Against, Change, Comparison, Drift, Row};
use crate::adaptive::{self, Standing};
use crate::cells::{num, si, Summary, Table};
use crate::verdict::drift::Correction;
use crate::verdict::executions;
use crate::verdict::many_cells;
use crate::verdict::{self, Settings, Tally};

impl Against {
    /// The table's "against" column: `others, per round`, `std, per round`, `alone`.
    fn short(&self, drift: &Drift) -> String {
        let how = |correction: &Correction| match correction {
            Correction::PerRound => "per round",
            Correction::PerGroup => "per group",
            Correction::Absolute => "directly",
        };
        match (self, drift) {
            (Against::Nothing, _) => "-".to_owned(),
            (Against::Alone, _) => "alone: directly".to_owned(),
            (Against::Locks(correction, _), Drift::Lock(lock)) => {
                format!("{}, {}", verdict::label(lock), how(correction))
            }
            (Against::Locks(correction, locks), _) => {
                format!("{} others, {}", locks.len(), how(correction))
            }
        }
    }
}

impl Comparison {
    /// The verdicts of the judged rows.
    pub(super) fn tally(&self) -> Tally {
        Tally::of(self.rows.iter().filter_map(|row| match &row.change {
            Change::Judged(judgement) => Some(judgement),
            _ => None,
        }))
    }

    fn title(&self) -> String {
        match &self.drift {
            Drift::Absolute => {
                "compare: B against A, cell by cell, directly (--absolute)".to_owned()
            }
            Drift::OtherLocks => "compare: B against A, each lock's change relative to the other \
                                  locks of its cell (same scenario, setup and threads): a change \
                                  of the machine cancels out"
                .to_owned(),
            Drift::Lock(lock) => format!(
                "compare: B against A, each cell's change relative to {lock}'s in the same \
                 scenario, setup and threads (a change of the machine cancels out)"
            ),
        }
    }

    /// The table of every shared cell, then a summary line and each lock's pooled
    /// change.
    pub fn render(&self) -> String {
        let mut table = Table::new(
            self.title(),
            &[
                "scenario",
                "setup",
                "lock",
                "threads",
                "A median [min–max]",
                "B median [min–max]",
                "against",
                "B vs A (throughput)",
            ],
        );
        let show = |s: Option<Summary>, unit_format: fn(f64) -> String| {
            s.map_or("DNF".to_owned(), |s| s.show(unit_format))
        };
        let settings = Settings::default();
        for row in &self.rows {
            let format = if row.a.or(row.b).is_some_and(|s| s.median >= 1000.0) {
                si
            } else {
                num
            };
            let mut cells: Vec<String> = row.cell.to_vec();
            cells[2] = verdict::label(&cells[2]).to_owned();
            cells.extend([
                show(row.a, format),
                show(row.b, format),
                row.against.short(&self.drift),
                change_text(row, settings),
            ]);
            table.row(cells);
        }
        table.note(self.tally_note(settings));
        let too_wide = self
            .rows
            .iter()
            .filter(|row| match &row.change {
                Change::Judged(judgement) => {
                    adaptive::standing(judgement, settings) == Standing::TooWide
                }
                _ => false,
            })
            .count();
        if too_wide > 0 {
            table.note(format!(
                "too wide to decide: {too_wide} of the ≈ cells, whose interval straddles ±{:.0}% \
                 and is wider than the whole ±{:.0}% band; more runs in both files may decide \
                 them (the rule of --budget, see lockbench --help), unless the spread between \
                 executions makes them wide: more runs do not shrink it",
                settings.min_effect * 100.0,
                settings.min_effect * 100.0
            ));
        }
        for note in self.against_notes() {
            table.note(note);
        }
        let mut out = table.to_string();
        out += &self.summary_line();
        out += &self.pooled_lines();
        out
    }

    /// The verdicts' counts, with the bound on the wrong ones and the condition it
    /// holds under: the spread between executions estimated from these files.
    fn tally_note(&self, settings: Settings) -> String {
        let tally = self.tally();
        let ratios: Vec<f64> = self.executions.iter().filter_map(|(_, r)| *r).collect();
        let (Some(low), Some(high)) = (
            ratios.iter().copied().reduce(f64::min),
            ratios.iter().copied().reduce(f64::max),
        ) else {
            return tally.note_if(
                settings,
                "if two executions of the suite differ by no more than the runs of one do: too \
                 few cells to estimate the spread between executions, which these intervals \
                 leave out (see lockbench compare --help)",
            );
        };
        let ratio = match (high - low) < 0.005 {
            true => format!("{high:.2}×"),
            false => format!("{low:.2}–{high:.2}× (by lock)"),
        };
        let unestimated = self.executions.len() - ratios.len();
        let unestimated = match unestimated {
            0 => String::new(),
            n => format!("; {n} lock(s) with too few other cells keep the runs' intervals"),
        };
        tally.note_if(
            settings,
            &format!(
                "if two executions of the suite differ as these files show: each interval \
                 widened by a spread between executions of {ratio} the cell's spread within \
                 one (MAD, or inner range where two modes make it wider), and by the \
                 disagreement of its references' own changes, the least at which the other \
                 locks' cells' {:.0}% intervals so widened leave out no change only as often \
                 as they state (see lockbench compare --help){unestimated}",
                executions::TAIL * 100.0
            ),
        )
    }

    /// What each cell group was judged against, one line per group.
    fn against_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let mut seen: Vec<[&str; 3]> = Vec::new();
        let mut alone = Vec::new();
        for row in &self.rows {
            let group = super::group(&row.cell);
            let name = match (row.cell[1].as_str(), row.cell[3].as_str()) {
                ("", threads) => format!("{} ·{threads}", row.cell[0]),
                (setup, threads) => format!("{} {setup} ·{threads}", row.cell[0]),
            };
            match (&row.against, &self.drift) {
                (Against::Alone, _) => alone.push(name),
                (Against::Locks(correction, _), Drift::OtherLocks) if !seen.contains(&group) => {
                    seen.push(group);
                    let locks: Vec<&str> = self
                        .rows
                        .iter()
                        .filter(|r| super::group(&r.cell) == group)
                        .filter(|r| matches!(r.against, Against::Locks(..)))
                        .map(|r| verdict::label(&r.cell[2]))
                        .collect();
                    let how = match correction {
                        Correction::PerRound => "the median of the others in the same round",
                        _ => "the others' pooled change",
                    };
                    notes.push(format!(
                        "{name}: each of {} relative to the other locks of its cell ({how})",
                        locks.join(", ")
                    ));
                }
                _ => {}
            }
        }
        if matches!(self.drift, Drift::OtherLocks) && !notes.is_empty() {
            notes.insert(
                0,
                "relative to the other locks of each cell, never the judged lock itself; per \
                 round: run i of each lock, measured in the same round, taken relative to the \
                 others' run i, so the interval holds the others' noise too"
                    .to_owned(),
            );
        }
        if !alone.is_empty() {
            notes.push(format!(
                "alone in its cell group, judged directly (no other lock finished in both \
                 files): {}",
                alone.join("; ")
            ));
        }
        notes
    }

    fn summary_line(&self) -> String {
        let count = |change: fn(&Change) -> bool| {
            self.rows.iter().filter(|row| change(&row.change)).count()
        };
        let tally = self.tally();
        let mut out = format!(
            "{} cells in both: B {} faster, {} no clear difference, {} slower, {} too few runs; \
             {} stopped finishing, {} started; {} only in A, {} only in B\n",
            self.rows.len(),
            tally.faster,
            tally.no_clear_difference,
            tally.slower,
            tally.too_few_runs,
            count(|c| *c == Change::OnlyAFinished),
            count(|c| *c == Change::OnlyBFinished),
            self.only_a,
            self.only_b
        );
        if let Drift::Lock(lock) = &self.drift {
            if self.unreferenced > 0 {
                let _ = writeln!(
                    out,
                    "{} shared cells left out: {lock}'s own, or a run has no finished {lock} \
                     cell beside them",
                    self.unreferenced
                );
            }
        }
        if let Some(machines) = &self.machines {
            let _ = writeln!(out, "note: {machines}");
        }
        out
    }

    /// Each lock's change pooled over its cells, the fail rule's first half.
    fn pooled_lines(&self) -> String {
        let pooled = self.pooled();
        if pooled.is_empty() {
            return String::new();
        }
        let judged = self
            .rows
            .iter()
            .filter(|r| r.evidence.is_some() && !r.second_measure)
            .count();
        let mut out = format!(
            "each lock over its cells (B ÷ A as throughput: the shift common to its cells, with \
             the stratified Mann–Whitney interval widened by the spread between executions, at \
             {:.2}% a side, the family's {:.0}% split over {} locks and the single cells; a single \
             cell alone needs p ≤ {:.5} among {judged}, its interval so widened; second measures \
             of the same runs (metric) left out):\n",
            many_cells::lock_error(pooled.len()) * 100.0,
            many_cells::FAMILY_ERROR * 100.0,
            pooled.len(),
            many_cells::single_cell_level(judged),
        );
        for lock in &pooled {
            let _ = writeln!(out, "  {:<20} {lock}", verdict::label(&lock.lock));
        }
        out
    }
}

/// A row's change in words.
fn change_text(row: &Row, settings: Settings) -> String {
    match row.change {
        Change::Judged(judgement) if judgement.ratio.is_nan() => "no runs in a file".to_owned(),
        Change::Judged(judgement) => match adaptive::standing(&judgement, settings) {
            Standing::TooWide => format!("{judgement}, too wide to decide"),
            _ => judgement.to_string(),
        },
        Change::OnlyAFinished => "only A finished".to_owned(),
        Change::OnlyBFinished => "only B finished".to_owned(),
        Change::NeitherFinished => "neither finished".to_owned(),
    }
}
