//! The adaptive first pause of a waiter that spins on a lock word, shared by the
//! default mutex's spinner and the default rwlock's waiters (each keeps its own
//! per-thread value: their regimes differ).
//!
//! Each look at the word can take its cache line from a holder that re-takes the
//! lock at once, so looking early costs a tight loop; but with short sections and
//! work outside the lock, a late look leaves the lock idle. A thread therefore keeps
//! its first pause between [`MIN_FIRST`] and [`MAX_FIRST`] `cpu_relax`es: a wait that
//! ended at the first or second look ([`QUICK_LOOKS`]) halves the next first pause,
//! a longer one doubles it. Within one wait, the caller doubles each later pause up
//! to its own limit. The measurements that chose this are in each lock's docs.

/// The shortest first pause, in `cpu_relax`es.
pub(crate) const MIN_FIRST: u32 = 1;
/// The longest first pause, in `cpu_relax`es.
pub(crate) const MAX_FIRST: u32 = 64;
/// Looks after which a wait counts as long (doubling the next first pause).
pub(crate) const QUICK_LOOKS: u32 = 2;

/// The next first pause after a wait with first pause `first` that came true at its
/// `looks`-th look.
pub(crate) fn next_first(first: u32, looks: u32) -> u32 {
    if looks <= QUICK_LOOKS {
        (first / 2).max(MIN_FIRST)
    } else {
        (first * 2).min(MAX_FIRST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_pause_halves_after_quick_waits_and_doubles_after_long_ones() {
        assert_eq!(next_first(16, 1), 8);
        assert_eq!(next_first(16, QUICK_LOOKS), 8);
        assert_eq!(next_first(16, QUICK_LOOKS + 1), 32);
        assert_eq!(next_first(MIN_FIRST, 1), MIN_FIRST);
        assert_eq!(next_first(MAX_FIRST, 50), MAX_FIRST);
    }
}
