//! An rw-mix cell's setup: the exact read fraction of its operations and where its
//! threads ran.

use serde::{Deserialize, Serialize};

/// An rw-mix cell's setup (files from before lockbench recorded it lack it: their
/// cells read their fraction from the layout, and let the scheduler place the threads).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct RwMix {
    /// Reads in a million operations: the exact fraction (999900 = 99.99%).
    pub reads_per_million: u32,
    /// Where the cell's threads ran.
    pub placement: ThreadPlacement,
}

/// Where a scenario's threads run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ThreadPlacement {
    /// Wherever the scheduler puts them, as every other scenario does.
    #[default]
    Free,
    /// Thread i pinned to the i-th CPU this process may use, modulo their number:
    /// every CPU runs the scenario's threads, so a line they all write moves between
    /// CPUs.
    Spread,
}

impl ThreadPlacement {
    /// `free` or `spread`.
    pub fn name(self) -> &'static str {
        match self {
            ThreadPlacement::Free => "free",
            ThreadPlacement::Spread => "spread",
        }
    }
}
