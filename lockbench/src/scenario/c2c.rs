//! Core-to-core latency: two threads pinned to two CPUs bounce one cache line, each
//! waiting for its parity and answering with the next value
//! ([`ping_pong`](crate::harness::ping_pong)).

use crate::harness::ping_pong::{cpu_pair, one_way_ns, ping_pong};
use crate::harness::watch::{Placement, NEAR_MAX_NS};
use crate::harness::{Common, Error};
use crate::cells::{num, Cell, Progress, Run, Table};

/// Core-to-core latency: one cache line bounced between two pinned threads
///
/// Two threads pinned to the first two CPUs this process may use pass a counter
/// back and forth on one cache line, each waiting for its parity and answering
/// with the next value. One-way latency = elapsed / (2 × round trips). On a VM the
/// result depends on where the host placed the two vCPUs ("near" ≤ 80 ns, "far"
/// above). Skipped on a single CPU. Verified: the line must end at 2 × round trips.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Round trips per run, two one-way cache-line transfers each [default: 100000]
    #[arg(long, value_parser = clap::value_parser!(u64).range(100..=1_000_000_000))]
    pub round_trips: Option<u64>,
}

/// Default round trips per run: 7 ms near, 35 ms far.
const ROUND_TRIPS: u64 = 100_000;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    round_trips: u64,
    runs: u32,
}

impl Config {
    /// From the command line.
    pub fn new(args: &Args, common: &Common) -> Self {
        Self {
            round_trips: args.round_trips.unwrap_or(ROUND_TRIPS),
            runs: common.runs,
        }
    }

    /// Cells this config measures.
    pub fn cells(&self) -> u64 {
        1
    }
}

/// Measures the cell; no cells when there are fewer than two usable CPUs.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    let Some(cpus) = cpu_pair() else {
        progress.done();
        return Ok(Vec::new());
    };
    progress.start(format!("c2c cpu{}↔cpu{}", cpus[0], cpus[1]));
    // One thread pair for all runs: each run is one burst of the ping-pong.
    let runs: Vec<Run> = ping_pong(cpus, config.round_trips, config.runs.into())?
        .into_iter()
        .map(|elapsed| {
            Run::timed(
                one_way_ns(elapsed, config.round_trips),
                elapsed,
                config.round_trips,
            )
        })
        .collect();
    progress.done();
    Ok(vec![Cell::of_runs("c2c", "-", 2, None, "ns one-way", runs)])
}

/// The c2c table.
pub fn tables(cells: &[Cell]) -> Vec<Table> {
    let mut table = Table::new(
        "c2c: one-way cache-line transfer between two pinned threads",
        &["CPUs", "one-way ns", "placement"],
    );
    let pair = cpu_pair().map_or_else(|| "-".to_owned(), |[a, b]| format!("cpu{a}↔cpu{b}"));
    for summary in cells.iter().filter_map(|cell| cell.summary) {
        table.row(vec![
            pair.clone(),
            summary.show(num),
            Placement::of(summary.median).name().to_owned(),
        ]);
    }
    if cells.is_empty() {
        table.note("skipped: c2c needs two CPUs and this process may use only one");
    }
    table.note(format!(
        "near: one-way ≤ {NEAR_MAX_NS} ns (vCPUs close on the host); far: slower"
    ));
    vec![table]
}

scenario! {
    takes: Neither,
    configure: |args, common| Ok(Config::new(args, common)),
    tables: |_, cells, _| tables(cells),
}
