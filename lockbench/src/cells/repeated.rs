//! What adaptive repetition ([`crate::adaptive`]) did to a row: how many rounds it
//! ran and why they ended. Kept in each of the row's cells, so it is part of the cell
//! format.

use serde::{Deserialize, Serialize};

/// Why a row's rounds ended, when it had something to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ended {
    /// Every driving verdict is decided.
    Decided,
    /// Every driving verdict is decided or its interval narrow enough.
    Narrow,
    /// The next round would have overrun the row's budget (or the run's cap).
    BudgetSpent,
    /// The row ran [`MAX_ROUNDS_PER_RUN`](crate::adaptive::MAX_ROUNDS_PER_RUN) × `--runs` rounds.
    RoundCap,
}

impl Ended {
    /// As the note prints it.
    pub fn words(self) -> &'static str {
        match self {
            Ended::Decided => "decided",
            Ended::Narrow => "interval narrow enough",
            Ended::BudgetSpent => "budget spent, still undecided",
            Ended::RoundCap => "round cap reached, still undecided",
        }
    }
}

/// What adaptive repetition did to a row, kept in each of its cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repeated {
    /// The row, as the note names it (`loop, threads 4`).
    pub row: String,
    /// `--runs`.
    pub planned: u32,
    /// Rounds the row ran.
    pub rounds: u32,
    /// Why they ended.
    pub ended: Ended,
}
