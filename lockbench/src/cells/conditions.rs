//! What surrounded a contended cell: where the host had placed our vCPUs, what a
//! `pause` cost and how much CPU time went to others (measured by the scenarios'
//! watch, stored with the cell).

use serde::{Deserialize, Serialize};

/// Largest one-way c2c latency that counts as "near". This host shows two clusters,
/// 32–42 ns (both vCPUs on one core complex) and about 170 ns (far apart); 80 ns
/// sits between them with room on both sides.
pub const NEAR_MAX_NS: f64 = 80.0;

/// Where the host had placed the two probe vCPUs relative to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// One-way latency up to [`NEAR_MAX_NS`].
    Near,
    /// Anything slower.
    Far,
}

impl Placement {
    /// Classifies a one-way latency.
    pub fn of(one_way_ns: f64) -> Self {
        if one_way_ns <= NEAR_MAX_NS {
            Placement::Near
        } else {
            Placement::Far
        }
    }

    /// `near` or `far`.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Near => "near",
            Placement::Far => "far",
        }
    }
}

/// What surrounded a cell (files from before lockbench probed the pause lack
/// those fields: 0).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Conditions {
    /// One-way c2c latency probed just before the cell (none on one CPU).
    pub c2c_before_ns: Option<f64>,
    /// ... and just after.
    pub c2c_after_ns: Option<f64>,
    /// Placement before.
    pub placement_before: Option<Placement>,
    /// Placement after.
    pub placement_after: Option<Placement>,
    /// The two placements differ: the host moved a vCPU during the cell.
    pub placement_changed: bool,
    /// Cost of one `pause` probed just before the cell.
    pub pause_before_ns: f64,
    /// ... and just after.
    pub pause_after_ns: f64,
    /// Wall time between the two /proc/stat reads.
    pub span_ms: f64,
    /// CPU time the hypervisor gave to others (steal).
    pub steal_ms: f64,
    /// CPU time other processes used.
    pub others_ms: f64,
    /// Steal plus others took more of the capacity than the watch tolerates.
    pub noisy: bool,
}

impl Conditions {
    /// The mean of the probes, the c2c latency the cell ran under.
    pub fn c2c_ns(&self) -> Option<f64> {
        match (self.c2c_before_ns, self.c2c_after_ns) {
            (Some(before), Some(after)) => Some((before + after) / 2.0),
            (one, other) => one.or(other),
        }
    }

    /// The mean of the pause probes, the cost of a `pause` the cell ran under.
    pub fn pause_ns(&self) -> f64 {
        (self.pause_before_ns + self.pause_after_ns) / 2.0
    }

    /// `*` for a placement change, `!` for noise.
    pub fn marks(&self) -> &'static str {
        match (self.placement_changed, self.noisy) {
            (true, true) => "*!",
            (true, false) => "*",
            (false, true) => "!",
            (false, false) => "",
        }
    }

    /// `near`, `far`, or `near→far`.
    pub fn placement(&self) -> String {
        match (self.placement_before, self.placement_after) {
            (Some(before), Some(after)) if before != after => {
                format!("{}→{}", before.name(), after.name())
            }
            (Some(place), _) | (None, Some(place)) => place.name().to_owned(),
            (None, None) => "-".to_owned(),
        }
    }
}
