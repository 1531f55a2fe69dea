//! The conditions around a contended cell: where the host had placed our vCPUs (a
//! c2c probe before and after the cell), what a `pause` cost (probed likewise) and
//! how much CPU time went to others.

use std::time::Instant;

use super::{ping_pong, Error};
use crate::cells::{Cell, Table};
pub use crate::cells::{Conditions, Placement, NEAR_MAX_NS};
use crate::machine::{self, CpuTimes};

/// Share of the cell's CPU capacity (span × online CPUs) that steal plus other
/// processes may take before the cell is flagged noisy.
const NOISY_SHARE: f64 = 0.05;

/// /proc/stat counts whole ticks and rusage does not, so a few ticks of apparent
/// foreign load are sampling error: below this many, a cell is never noisy.
const NOISE_FLOOR_TICKS: u32 = 3;

/// Footnote for `*`.
const PLACEMENT_NOTE: &str =
    "* the c2c placement (near/far) changed between the probes before and after the cell";
/// Footnote for `!`.
const NOISY_NOTE: &str =
    "! noisy: steal plus other processes took over 5% of the CPU time during the cell";

/// Watches one cell: start it before the cell's first run, finish it after its last.
pub struct CellWatch {
    c2c_before_ns: Option<f64>,
    pause_before_ns: f64,
    cpu_before: Option<CpuTimes>,
    start: Instant,
}

impl CellWatch {
    /// Probes c2c and the pause, then snapshots the CPU times.
    pub fn start() -> Result<Self, Error> {
        let c2c_before_ns = ping_pong::probe()?;
        Ok(Self {
            c2c_before_ns,
            pause_before_ns: machine::pause_probe_ns(),
            cpu_before: CpuTimes::now(),
            start: Instant::now(),
        })
    }

    /// Snapshots the CPU times, then probes the pause and c2c again.
    pub fn finish(self) -> Result<Conditions, Error> {
        let span = self.start.elapsed();
        let load = CpuTimes::now()
            .zip(self.cpu_before)
            .map(|(after, before)| after.since(&before));
        let pause_after_ns = machine::pause_probe_ns();
        let c2c_after_ns = ping_pong::probe()?;
        let (steal, others) = load.map_or((Default::default(), Default::default()), |l| {
            (l.steal, l.others)
        });
        let foreign = steal + others;
        let capacity = span.as_secs_f64() * machine::online_cpus() as f64;
        let placement_before = self.c2c_before_ns.map(Placement::of);
        let placement_after = c2c_after_ns.map(Placement::of);
        Ok(Conditions {
            c2c_before_ns: self.c2c_before_ns,
            c2c_after_ns,
            placement_before,
            placement_after,
            placement_changed: placement_before
                .zip(placement_after)
                .is_some_and(|(before, after)| before != after),
            pause_before_ns: self.pause_before_ns,
            pause_after_ns,
            span_ms: span.as_secs_f64() * 1e3,
            steal_ms: steal.as_secs_f64() * 1e3,
            others_ms: others.as_secs_f64() * 1e3,
            noisy: foreign.as_secs_f64() > NOISY_SHARE * capacity
                && foreign >= machine::tick() * NOISE_FLOOR_TICKS,
        })
    }
}

/// Adds the footnotes for the `*` and `!` marks that `cells` carry.
pub fn explain_marks(table: &mut Table, cells: &[Cell]) {
    let conditions = || cells.iter().filter_map(|cell| cell.conditions.as_ref());
    if conditions().any(|c| c.placement_changed) {
        table.note(PLACEMENT_NOTE);
    }
    if conditions().any(|c| c.noisy) {
        table.note(NOISY_NOTE);
    }
}
