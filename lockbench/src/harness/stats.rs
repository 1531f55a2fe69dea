//! `--stats`: what klocks' locks counted in each cell (klocks' `lock_events`-style
//! slow-path counters, `klocks::stats`), printed after a scenario's tables and kept in
//! the cell's `stats` field of `--json`.
//!
//! The counters exist only in a build with lockbench's cargo feature `stats` (which
//! turns on klocks' own): a default build measures the locks exactly as they ship.
//! Counts are per lock type, so a cell's counts are its lock's, taken around the cell
//! (in-process scenarios) or around each run in its child process and summed over
//! the runs (windowed scenarios). The locks of a row measured in rotating rounds
//! (sharded, rw-mix) are told apart by type: each appears in one cell of its row.

use crate::cells::Cell;
pub use crate::cells::Counts;

/// Whether this lockbench counts (was built with the `stats` feature).
pub const BUILT: bool = cfg!(feature = "stats");

/// The usage error for `--stats` in a build without the counters.
pub const NOT_BUILT: &str = "lockbench was built without the `stats` feature; rebuild with \
                             `cargo run --release -p lockbench --features stats -- ...`";

/// The counters when a cell (or a row of cells) started; inert unless `--stats` is on.
pub struct Counting {
    #[cfg(feature = "stats")]
    start: Option<klocks::stats::Snapshot>,
}

impl Counting {
    /// Starts counting if `enabled` (`--stats`, which only a build with the counters
    /// accepts).
    pub fn start(enabled: bool) -> Self {
        #[cfg(feature = "stats")]
        return Self {
            start: enabled.then(klocks::stats::snapshot),
        };
        #[cfg(not(feature = "stats"))]
        {
            let _ = enabled;
            Self {}
        }
    }

    /// What the lock named `lock` counted since the start: every event, zero or not
    /// (a klocks lock with no slow path at all has an empty map); `None` when not
    /// counting or when `lock` is not a klocks lock.
    pub fn counts(&self, lock: &str) -> Option<Counts> {
        #[cfg(feature = "stats")]
        {
            let start = self.start.as_ref()?;
            let lock = klocks::stats::Lock::from_name(lock)?;
            let delta = klocks::stats::snapshot() - start.clone();
            let counts = delta
                .of(lock)
                .map(|(event, n)| (event.name().to_owned(), n));
            Some(counts.collect())
        }
        #[cfg(not(feature = "stats"))]
        {
            let _ = lock;
            None
        }
    }

    /// Sets `cell.stats` to what its lock counted since the start.
    pub fn attach(&self, cell: &mut Cell) {
        cell.stats = self.counts(cell.lock);
    }
}

/// Adds `more` (one run's counts) into `total` (the cell's so far).
pub fn add(total: &mut Option<Counts>, more: Option<Counts>) {
    let Some(more) = more else { return };
    let total = total.get_or_insert_with(Counts::new);
    for (event, n) in more {
        *total.entry(event).or_default() += n;
    }
}

/// The counts of every cell that has them, one line each, in klocks' event order
/// (`lock_slowpath` first); empty when no cell has any.
pub fn lines(cells: &[Cell]) -> String {
    let mut text = String::new();
    for cell in cells {
        let Some(counts) = &cell.stats else { continue };
        if text.is_empty() {
            text += "klocks slow-path events per cell (--stats; summed over the cell's runs):\n";
        }
        let layout = cell.layout.map(|l| format!(" {l}")).unwrap_or_default();
        let mut events: Vec<(&String, &u64)> = counts.iter().collect();
        events.sort_by_key(|(event, _)| order(event));
        let events: Vec<String> = events
            .iter()
            .map(|(event, n)| format!("{event} {}", count(**n)))
            .collect();
        let events = if events.is_empty() {
            "no slow path".to_owned()
        } else {
            events.join(", ")
        };
        text += &format!(
            "  {} {} × {}{layout}: {events}\n",
            cell.scenario, cell.lock, cell.threads
        );
    }
    text
}

/// Where klocks lists `event` (unknown names last).
fn order(event: &str) -> usize {
    #[cfg(feature = "stats")]
    if let Some(event) = klocks::stats::Event::from_name(event) {
        return event as usize;
    }
    let _ = event;
    usize::MAX
}

/// A count, exact below 10,000, else with an SI suffix (`15.8k`, `1.20M`).
fn count(n: u64) -> String {
    if n < 10_000 {
        n.to_string()
    } else {
        crate::cells::si(n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pairs: &[(&str, u64)]) -> Counts {
        pairs.iter().map(|&(e, n)| (e.to_owned(), n)).collect()
    }

    #[test]
    fn runs_add_up_and_lines_name_the_cell() {
        let mut total = None;
        add(&mut total, None);
        assert_eq!(total, None, "a run without counts adds nothing");
        add(&mut total, Some(counts(&[("sleep", 2), ("wake", 1)])));
        add(&mut total, Some(counts(&[("sleep", 20_000)])));
        assert_eq!(total, Some(counts(&[("sleep", 20_002), ("wake", 1)])));

        let mut cell = Cell::of_runs("loop", "pvqspinlock", 2, None, "ms", Vec::new());
        assert_eq!(lines(std::slice::from_ref(&cell)), "");
        cell.stats = total;
        let text = lines(&[cell]);
        assert!(
            text.contains("loop pvqspinlock × 2: sleep 20.0k, wake 1"),
            "{text}"
        );
    }

    #[test]
    fn counting_is_inert_when_off() {
        let mut cell = Cell::of_runs("loop", "default", 2, None, "ms", Vec::new());
        Counting::start(false).attach(&mut cell);
        assert_eq!(cell.stats, None);
    }

    #[cfg(feature = "stats")]
    #[test]
    fn a_klocks_cell_gets_its_locks_counts_and_a_peer_none() {
        let counting = Counting::start(true);
        let lock = klocks::Mutex::new(());
        let guard = lock.lock();
        std::thread::scope(|s| {
            s.spawn(|| drop(lock.lock()));
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(guard);
        });
        let counts = counting
            .counts("default")
            .expect("klocks::Mutex is counted");
        assert!(
            counts.get("lock_slowpath").is_some_and(|&n| n >= 1),
            "{counts:?}"
        );
        assert_eq!(counting.counts("std"), None);
    }
}
