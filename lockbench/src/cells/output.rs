//! `--json` (every cell with all its runs, the machine, the command and the date) and
//! `--csv` (one row per cell).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde::Serialize;

use super::Cell;
use crate::machine::Machine;

#[derive(Serialize)]
struct JsonReport<'a> {
    machine: &'a Machine,
    command: Vec<String>,
    date: String,
    cells: &'a [Cell],
    /// `default` and `default-rw` against the best peer of each row, as the summary
    /// at the end of the run shows them.
    verdicts: Vec<super::summary::Versus>,
}

/// Every cell with all its runs, plus the machine, the command line, the date and the
/// verdicts of the summary: what `--json` writes.
pub fn to_json(machine: &Machine, cells: &[Cell]) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(JsonReport {
        machine,
        command: std::env::args().collect(),
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        cells,
        verdicts: super::summary::versus(cells),
    })
}

/// Writes [`to_json`] to `path`.
pub fn write_json(path: &Path, machine: &Machine, cells: &[Cell]) -> io::Result<()> {
    let report = to_json(machine, cells)?;
    let mut out = BufWriter::new(File::create(path)?);
    serde_json::to_writer_pretty(&mut out, &report)?;
    writeln!(out)?;
    out.flush()
}

const CSV_HEADER: &str = "scenario,lock,threads,layout,unit,median,min,max,runs,finished,\
progress_pct,ns_per_handoff,handoff_per_c2c,c2c_before_ns,c2c_after_ns,placement_changed,\
pause_before_ns,pause_after_ns,steal_ms,others_ms,noisy,cs,overcommit,load_pauses,min_per_mean,max_per_mean,drain_ms,\
readers,writers,reads_per_s,writes_per_s,reader_group,wait_every,wait_added_ns,wait_p50_ns,wait_p99_ns,\
wait_p999_ns,wait_max_ns,read_wait_p999_ns,write_wait_p999_ns";

fn opt(value: Option<f64>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

fn csv_row(cell: &Cell) -> String {
    let summary = cell.summary.as_ref();
    let conditions = cell.conditions.as_ref();
    // The waits' p50/p99/p99.9/max, medians over the runs.
    let all = cell.wait_quantiles(|w| w.all);
    let fields = [
        cell.scenario.to_owned(),
        cell.lock.to_owned(),
        cell.threads.to_string(),
        cell.layout.unwrap_or_default().to_owned(),
        cell.unit.to_owned(),
        opt(summary.map(|s| s.median)),
        opt(summary.map(|s| s.min)),
        opt(summary.map(|s| s.max)),
        cell.runs.len().to_string(),
        cell.unfinished.is_none().to_string(),
        opt(cell
            .unfinished
            .and_then(|u| u.progress())
            .map(|p| p * 100.0)),
        opt(cell.handoff.map(|h| h.ns_per_handoff)),
        opt(cell.handoff.and_then(|h| h.per_c2c)),
        opt(conditions.and_then(|c| c.c2c_before_ns)),
        opt(conditions.and_then(|c| c.c2c_after_ns)),
        conditions
            .map(|c| c.placement_changed.to_string())
            .unwrap_or_default(),
        opt(conditions.map(|c| c.pause_before_ns)),
        opt(conditions.map(|c| c.pause_after_ns)),
        opt(conditions.map(|c| c.steal_ms)),
        opt(conditions.map(|c| c.others_ms)),
        conditions.map(|c| c.noisy.to_string()).unwrap_or_default(),
        cell.overcommit.map(|o| o.cs).unwrap_or_default().to_owned(),
        cell.overcommit
            .map(|o| o.ratio.to_string())
            .unwrap_or_default(),
        cell.mutex_load
            .map(|m| m.load_pauses)
            .or(cell.rw.map(|rw| rw.load_pauses))
            .map(|pauses| pauses.to_string())
            .unwrap_or_default(),
        opt(cell.median_of(|run| run.per_thread.map(|p| p.min_per_mean()))),
        opt(cell.median_of(|run| run.per_thread.map(|p| p.max_per_mean()))),
        opt(cell.median_of(|run| run.drain.map(|d| d.ms))),
        cell.rw.map(|rw| rw.readers.to_string()).unwrap_or_default(),
        cell.rw.map(|rw| rw.writers.to_string()).unwrap_or_default(),
        opt(cell.median_of(|run| run.rw.map(|rw| rw.reads_per_s))),
        opt(cell.median_of(|run| run.rw.map(|rw| rw.writes_per_s))),
        opt(cell.median_of(|run| run.rw.and_then(|rw| rw.reader_group))),
        cell.runs
            .iter()
            .find_map(|run| run.wait.map(|w| w.every.to_string()))
            .unwrap_or_default(),
        opt(cell.median_of(|run| run.wait.map(|w| w.added_ns))),
        opt(all.map(|q| q[0])),
        opt(all.map(|q| q[1])),
        opt(all.map(|q| q[2])),
        opt(all.map(|q| q[3])),
        opt(cell.wait_quantiles(|w| w.readers).map(|q| q[2])),
        opt(cell.wait_quantiles(|w| w.writers).map(|q| q[2])),
    ];
    fields.map(|f| csv_field(&f)).join(",")
}

/// Quotes a field that needs it (RFC 4180).
fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

/// Writes one row per cell.
pub fn write_csv(path: &Path, cells: &[Cell]) -> io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(out, "{CSV_HEADER}")?;
    for cell in cells {
        writeln!(out, "{}", csv_row(cell))?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_only_what_needs_it() {
        assert_eq!(csv_field("std"), "std");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn every_row_has_a_field_per_header_and_the_waits_land_under_theirs() {
        let wait = crate::cells::Wait {
            samples: 10,
            p50_ns: 20,
            p99_ns: 300,
            p999_ns: 4_000,
            max_ns: 50_000,
        };
        let run = crate::cells::Run {
            wait: Some(crate::cells::Waits {
                every: 16,
                added_ns: 40.0,
                all: Some(wait),
                readers: None,
                writers: None,
            }),
            ..crate::cells::Run::timed(1.0, std::time::Duration::from_secs(1), 1)
        };
        let cell = Cell::of_runs("mutex-load", "std", 2, None, "ops/s", vec![run]);
        let headers: Vec<&str> = CSV_HEADER.split(',').collect();
        let row = csv_row(&cell);
        let fields: Vec<&str> = row.split(',').collect();
        assert_eq!(fields.len(), headers.len(), "{row}");
        let field = |name: &str| fields[headers.iter().position(|h| *h == name).unwrap()];
        assert_eq!(field("wait_every"), "16");
        assert_eq!(field("wait_p999_ns"), "4000");
        assert_eq!(field("wait_max_ns"), "50000");
        assert_eq!(field("write_wait_p999_ns"), "");
    }
}
