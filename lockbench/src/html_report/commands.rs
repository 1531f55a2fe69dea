//! `lockbench report` and `lockbench compare`: the commands that read result files.

use std::path::PathBuf;
use std::process::ExitCode;

use super::compare::{Change, Drift};
use super::RunFile;
use crate::verdict::label;

/// Charts from --json files: one HTML page and one SVG per chart
///
/// Reads the result files lockbench wrote with --json and draws, per scenario, the
/// chart that fits it: throughput or wall time against threads with one line per
/// lock (loop, overcommit, sharded; mutex-load per load with the serialisation
/// ceiling; rwsem per load; rw-mix per read fraction), the runs' min–max as error
/// bars and the cells that did not finish as one DNF cross per thread count on the
/// top edge (the page lists their locks); fairness (slowest thread ÷ mean) as a second chart
/// wherever it was measured; rw-fair as each lock's per-thread range per role;
/// uncontended, and any scenario measured at one thread count, as bars. Two files
/// are drawn over each other, one chart per panel on one scale (A solid, B dashed).
/// The page shows each file's machine and command, needs no network, and links each
/// SVG.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Result files written with --json
    #[arg(required = true, value_name = "RUN.json")]
    files: Vec<PathBuf>,

    /// The directory to write index.html and the SVG files into
    #[arg(short, long, value_name = "DIR", default_value = "lockbench-report")]
    out: PathBuf,
}

/// Compares two --json files cell by cell: B against A
///
/// For each cell both files hold (same scenario, setup, lock and threads): both
/// medians with their [min–max], and B ÷ A as throughput (above 1: B is faster) with
/// its 95% interval (Hodges–Lehmann with the Mann–Whitney interval; at least 4 runs a
/// side): "faster" or "slower" when the interval lies wholly beyond ±5%, "≈" (no clear
/// difference) otherwise. A machine drifts between runs, moving every lock together,
/// so each lock's change is judged relative to the other locks of its cell (same
/// scenario, setup and threads; run i of each lock paired, as the rounds ran them):
/// --relative-to LOCK takes one lock as the reference instead, --absolute none. Two
/// executions of a suite differ by more than the runs of one do (a contended lock can
/// run 1.6× faster in every run of one process than in the next), so each interval is
/// widened by a spread between executions estimated from the two files: a ratio to
/// each cell's own run spread, the smallest at which the other locks' cells' 90%
/// intervals, so widened, leave out "no change" no more often than they state; with
/// fewer than 20 such cells, the intervals hold the runs' noise alone and the note
/// under the table says so. Under the table,
/// each lock's changes pooled over its cells. With --fail-on-regression
/// PCT, exits with status 1 when a lock is slower by more than PCT percent over its
/// cells (its pooled interval wholly below 1 ÷ (1 + PCT/100)) or a single cell is, after
/// Holm's correction over all cells, each test widened by the same spread between
/// executions as the intervals (and by the disagreement of a cell's references'
/// own changes), and each set of runs counted once (a metric row is not a second
/// cell): two executions of the same build fail at most 5% of the time, if they differ
/// as the files show. A cell that stopped finishing is reported, not failed: cells
/// near their cap (overcommit) flip between finishing and not from run to run.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline result file (--json)
    #[arg(value_name = "A.json")]
    a: PathBuf,

    /// The result file to judge against it
    #[arg(value_name = "B.json")]
    b: PathBuf,

    /// Exit with status 1 if a lock is slower by more than PCT percent over its cells,
    /// or a single cell is after Holm's correction (a family-wise error of 5%)
    #[arg(long, value_name = "PCT", value_parser = percentage)]
    fail_on_regression: Option<f64>,

    /// Judge each cell relative to LOCK's cell of the same scenario, setup and threads
    /// only (a lock that did not change between A and B, e.g. std), instead of
    /// relative to all the other locks of the cell
    #[arg(long, value_name = "LOCK", conflicts_with = "absolute")]
    relative_to: Option<String>,

    /// Judge B against A directly, with no correction for a machine that got faster
    /// or slower between the runs
    #[arg(long)]
    absolute: bool,
}

/// A percentage from 0 to 1000.
fn percentage(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(pct) if (0.0..=1000.0).contains(&pct) => Ok(pct),
        _ => Err(format!("`{text}` is not a percentage from 0 to 1000")),
    }
}

/// `lockbench report`: status 2 when a file cannot be read (missing, or not a result
/// file: an input error, as a bad option is) or the report cannot be written.
pub fn report(args: &ReportArgs) -> ExitCode {
    let loaded: Result<Vec<RunFile>, _> = args.files.iter().map(|f| RunFile::load(f)).collect();
    let files = match loaded {
        Ok(files) => files,
        Err(err) => {
            eprintln!("lockbench: {err}");
            return ExitCode::from(2);
        }
    };
    match super::page::write(&files, &args.out) {
        Ok(written) => {
            println!(
                "report: {} ({} charts)",
                written.index.display(),
                written.charts.len()
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("lockbench: {err}");
            ExitCode::from(2)
        }
    }
}

/// `lockbench compare`: status 1 on a regression beyond the limit (the one failure it
/// detects), 2 when a file cannot be read (missing, or not a result file): a script
/// gating on status 1 must not read a typo in a path as a regression.
pub fn compare(args: &CompareArgs) -> ExitCode {
    let (a, b) = match (RunFile::load(&args.a), RunFile::load(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(err), _) | (_, Err(err)) => {
            eprintln!("lockbench: {err}");
            return ExitCode::from(2);
        }
    };
    // An older name reads as the current one, as the files' cells do.
    let relative_to = args
        .relative_to
        .as_deref()
        .map(|lock| crate::locks::renamed(lock).unwrap_or(lock).to_owned());
    if let Some(lock) = &relative_to {
        if !a.cells.iter().chain(&b.cells).any(|c| c.lock == lock) {
            eprintln!("lockbench: --relative-to {lock}: neither file measured {lock}");
            return ExitCode::from(2);
        }
    }
    let drift = match (&relative_to, args.absolute) {
        (Some(lock), _) => Drift::Lock(lock.clone()),
        (None, true) => Drift::Absolute,
        (None, false) => Drift::OtherLocks,
    };
    let comparison = super::compare::compare(&a, &b, &drift);
    print!("{}", comparison.render());
    let Some(pct) = args.fail_on_regression else {
        return ExitCode::SUCCESS;
    };
    let failures = comparison.failures(pct);
    let stopped: Vec<String> = comparison
        .rows
        .iter()
        .filter(|row| row.change == Change::OnlyAFinished)
        .map(|row| cell_name(&row.cell))
        .collect();
    if !stopped.is_empty() {
        eprintln!(
            "lockbench: note: {} cell(s) stopped finishing (not a failure on its own): {}",
            stopped.len(),
            stopped.join("; ")
        );
    }
    if failures.is_empty() {
        return ExitCode::SUCCESS;
    }
    for (pooled, slower) in &failures.locks {
        let cells: Vec<String> = slower.iter().map(|row| cell_name(&row.cell)).collect();
        eprintln!(
            "lockbench: {} slower by more than {pct}% over its cells: {pooled}; its cells \
             whose own verdict is slower ({}): {}",
            label(&pooled.lock),
            cells.len(),
            match cells.is_empty() {
                true => "none alone".to_owned(),
                false => cells.join("; "),
            }
        );
    }
    if !failures.cells.is_empty() {
        let judged = comparison
            .rows
            .iter()
            .filter(|r| r.evidence.is_some() && !r.second_measure)
            .count();
        eprintln!(
            "lockbench: {} cell(s) slower by more than {pct}% on their own (Holm over {judged} \
             cells): {}",
            failures.cells.len(),
            failures
                .cells
                .iter()
                .map(|row| cell_name(&row.cell))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    if !failures.also.is_empty() {
        eprintln!(
            "lockbench: the same locks' other cells whose own verdict is slower (each at 95%, \
             none significant alone after the correction): {}",
            failures
                .also
                .iter()
                .map(|row| cell_name(&row.cell))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    ExitCode::FAILURE
}

/// A cell as the failure lines name it: `mutex-load 10 pauses glibc 10`.
fn cell_name(cell: &[String; 4]) -> String {
    cell.iter()
        .filter(|part| !part.is_empty())
        .map(|part| label(part).to_owned())
        .collect::<Vec<_>>()
        .join(" ")
}
