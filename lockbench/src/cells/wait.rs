//! What a run recorded of its lock waits: each sampled acquisition's time from just
//! before the lock call to just after it returned, as quantiles of the run's merged
//! histogram ([`crate::harness::wait`] records them).

use serde::{Deserialize, Serialize};

/// The quantiles of one histogram of waits, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Wait {
    /// Acquisitions recorded.
    pub samples: u64,
    /// The median wait.
    pub p50_ns: u64,
    /// The 99th percentile.
    pub p99_ns: u64,
    /// The 99.9th percentile: the tail the verdicts judge.
    pub p999_ns: u64,
    /// The longest wait recorded.
    pub max_ns: u64,
}

impl Wait {
    /// p50, p99, p99.9 and max, in that order, in nanoseconds.
    pub fn quantiles(&self) -> [f64; 4] {
        [self.p50_ns, self.p99_ns, self.p999_ns, self.max_ns].map(|ns| ns as f64)
    }
}

/// A run's waits: every thread's, and with readers and writers each role's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Waits {
    /// One acquisition in `every` was timed (1: every acquisition), the intervals
    /// drawn at random around that mean so that no period of the lock aliases them.
    pub every: u32,
    /// What timing one acquisition added, uncontended, in ns: the same code times
    /// every lock, and this says what it cost this one (median of batches of timed
    /// pairs against untimed ones, in the run's process before its window).
    #[serde(default)]
    pub added_ns: f64,
    /// Every thread's waits; `None` when none was recorded.
    pub all: Option<Wait>,
    /// Reader-writer runs: the readers' waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readers: Option<Wait>,
    /// Reader-writer runs: the writers' waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writers: Option<Wait>,
}

impl Waits {
    /// The tail the verdicts judge: the p99.9 wait, or with readers and writers the
    /// longer of the roles' (a role kept waiting is not hidden by the other's many
    /// short waits).
    pub fn tail_ns(&self) -> Option<f64> {
        match (self.readers, self.writers) {
            (None, None) => self.all.map(|w| w.p999_ns as f64),
            (readers, writers) => [readers, writers]
                .into_iter()
                .flatten()
                .map(|w| w.p999_ns as f64)
                .reduce(f64::max),
        }
    }
}
