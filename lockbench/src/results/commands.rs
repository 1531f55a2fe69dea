//! `lockbench report` and `lockbench compare`: the commands that read result files.

use std::path::PathBuf;
use std::process::ExitCode;

use super::RunFile;

/// Charts from --json files: one HTML page and one SVG per chart
///
/// Reads the result files lockbench wrote with --json and draws, per scenario, the
/// chart that fits it: throughput or wall time against threads with one line per
/// lock (loop, overcommit, sharded; mutex-load per load with the serialisation
/// ceiling; rwsem per load; rw-mix per read fraction), the runs' min–max as error
/// bars and cells that did not finish as a DNF cross on the top edge; fairness
/// (slowest thread ÷ mean) as a second chart wherever it was measured; rw-fair as
/// each lock's per-thread range per role; uncontended as bars. The page shows
/// each file's machine and command, needs no network, and links each SVG.
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
/// medians with their [min–max], how much better B is, and whether the change is
/// real, which it is only when the two min–max ranges do not overlap (or one
/// file's cell did not finish). With --fail-on-regression PCT, exits with status 1
/// when a real change makes a cell worse by more than PCT percent, so a lock
/// change can be guarded in CI. A machine drifts between runs, moving every lock
/// together: --relative-to std (or any lock that did not change) first divides
/// each cell by that lock's cell of its own run.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline result file (--json)
    #[arg(value_name = "A.json")]
    a: PathBuf,

    /// The result file to judge against it
    #[arg(value_name = "B.json")]
    b: PathBuf,

    /// Exit with status 1 if a real change makes a cell worse by more than PCT percent
    #[arg(long, value_name = "PCT", value_parser = percentage)]
    fail_on_regression: Option<f64>,

    /// Compare each cell as a ratio to LOCK's cell of the same scenario, setup and
    /// threads in the same file (a lock that did not change between A and B, e.g.
    /// std), so that a machine that got faster or slower between the runs cancels out
    #[arg(long, value_name = "LOCK")]
    relative_to: Option<String>,
}

/// A percentage from 0 to 1000.
fn percentage(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(pct) if (0.0..=1000.0).contains(&pct) => Ok(pct),
        _ => Err(format!("`{text}` is not a percentage from 0 to 1000")),
    }
}

/// `lockbench report`: status 1 when a file cannot be read or the report written.
pub fn report(args: &ReportArgs) -> ExitCode {
    let loaded: Result<Vec<RunFile>, _> = args.files.iter().map(|f| RunFile::load(f)).collect();
    let written = loaded
        .map_err(|err| err.to_string())
        .and_then(|files| super::page::write(&files, &args.out));
    match written {
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
            ExitCode::FAILURE
        }
    }
}

/// `lockbench compare`: status 1 on a regression beyond the limit or an unreadable file.
pub fn compare(args: &CompareArgs) -> ExitCode {
    let (a, b) = match (RunFile::load(&args.a), RunFile::load(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(err), _) | (_, Err(err)) => {
            eprintln!("lockbench: {err}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(lock) = &args.relative_to {
        if !a.cells.iter().chain(&b.cells).any(|c| &c.lock == lock) {
            eprintln!("lockbench: --relative-to {lock}: neither file measured {lock}");
            return ExitCode::from(2);
        }
    }
    let comparison = super::compare::compare(&a, &b, args.relative_to.as_deref());
    print!("{}", comparison.render());
    let Some(pct) = args.fail_on_regression else {
        return ExitCode::SUCCESS;
    };
    let regressions = comparison.regressions(pct);
    if regressions.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "lockbench: {} cell(s) worse by more than {pct}%: {}",
        regressions.len(),
        regressions
            .iter()
            .map(|row| row
                .cell
                .iter()
                .filter(|part| !part.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join(" "))
            .collect::<Vec<_>>()
            .join("; ")
    );
    ExitCode::FAILURE
}
