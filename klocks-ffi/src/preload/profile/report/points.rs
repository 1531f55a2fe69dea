//! The contention points of one lock (or of a site's destroyed locks) in the text
//! report: each stack kept, longest total wait first, as a line of counts and its
//! frames one a line, innermost (the lock call) first:
//!
//! ```text
//!      waited 12 times, 4.20 ms (80% of its wait), longest 1.10 ms, at:
//!          profile.c:57 (hot_worker)
//!          profile.c:103 (run)
//! ```

use std::fmt::{self, Write};

use super::super::stacks::Stacks;
use super::super::units::Time;
use super::out::Out;
use super::summary::Sites;
use super::symbols;

/// How far a frame is indented, under its stack's line (at 5).
const FRAME_INDENT: &str = "         ";

/// Writes the stacks of `stacks` (nothing if none was kept).
pub(super) fn write(
    out: &mut Out,
    stacks: &Stacks,
    ns: impl Fn(u64) -> f64,
    sites: Sites,
) -> fmt::Result {
    let kept = stacks.ranked();
    let (others, others_wait) = stacks.others();
    let total = kept
        .iter()
        .flatten()
        .map(|stack| stack.wait)
        .fold(others_wait, u64::saturating_add);
    for stack in kept.iter().flatten() {
        writeln!(
            out,
            "     waited {} times, {} ({:.0}% of its wait), longest {}, at:",
            stack.waits,
            Time(ns(stack.wait)),
            100.0 * stack.wait as f64 / total.max(1) as f64,
            Time(ns(stack.wait_max)),
        )?;
        for frame in stack.frames() {
            out.write_str(FRAME_INDENT)?;
            symbols::write_code(out, frame, sites)?;
            writeln!(out)?;
        }
    }
    if others > 0 && kept.iter().any(Option::is_some) {
        writeln!(
            out,
            "     waited {others} times, {} ({:.0}% of its wait), at other stacks",
            Time(ns(others_wait)),
            100.0 * others_wait as f64 / total.max(1) as f64,
        )?;
    }
    Ok(())
}
