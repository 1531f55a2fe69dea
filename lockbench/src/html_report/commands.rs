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
/// its 95% interval from the runs of both files (Hodges–Lehmann with the Mann–Whitney
/// interval; at least 4 runs a side): "faster" or "slower" when the interval lies
/// wholly beyond ±5%, "≈" (no clear difference) otherwise. With --fail-on-regression
/// PCT, exits with status 1 when a cell's interval lies wholly below 1 ÷ (1 + PCT/100)
/// (or the cell stopped finishing), so a lock change can be guarded in CI. A machine
/// drifts between runs, moving every lock together: --relative-to std (or any lock
/// that did not change) divides each cell's change by that lock's change in the same
/// file pair, with an interval that holds the noise of both.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline result file (--json)
    #[arg(value_name = "A.json")]
    a: PathBuf,

    /// The result file to judge against it
    #[arg(value_name = "B.json")]
    b: PathBuf,

    /// Exit with status 1 if a cell is slower by more than PCT percent: the interval of
    /// B ÷ A (as throughput) lies wholly below 1 ÷ (1 + PCT/100)
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
        if !a.cells.iter().chain(&b.cells).any(|c| c.lock == lock) {
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
        "lockbench: {} cell(s) slower by more than {pct}%: {}",
        regressions.len(),
        regressions
            .iter()
            .map(|row| row
                .cell
                .iter()
                .filter(|part| !part.is_empty())
                .map(|part| crate::verdict::label(part).to_owned())
                .collect::<Vec<_>>()
                .join(" "))
            .collect::<Vec<_>>()
            .join("; ")
    );
    ExitCode::FAILURE
}
