//! `--peer NAME=LIBRARY`: another interposer as a row of `app`'s table, so that
//! klocks is judged against the locks a user would otherwise preload (FlexGuard's
//! `interpose.so`, an older `libklocks.so`) in the same interleaved rounds, not in a
//! separate run on a machine that has drifted since.
//!
//! A peer's row runs the command under `LD_PRELOAD=LIBRARY` and nothing else (no
//! `KLOCKS_*` variable). Its runs are checked as every preloaded run is: exit 0, the
//! same output, and no word from the dynamic linker that the library was not
//! loaded. With peers the table gains one column: each klocks lock against the best
//! of glibc and the peers (the one with the highest median throughput on the
//! table's measure: `--metric` when given, else 1 ÷ wall time), with its interval and
//! verdict ([`crate::verdict`]).

use std::path::{Path, PathBuf};

use clap::ValueEnum;

use super::{PreloadLock, GLIBC};
use crate::cells::Cell;
use crate::verdict::{self, Judgement, Settings};

/// One `--peer`: its row's name and the library preloaded for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub name: &'static str,
    pub library: &'static Path,
}

/// Names `app` gives its own rows, which a peer may not take.
const OWN_ROWS: [&str; 4] = [GLIBC, "glibc+preload", "glibc+profile", "profile"];

/// `--peer NAME=LIBRARY`: a name of letters, digits and `-_+.` that no row of `app`
/// has, and a library that exists. Leaked: a cell names its lock by a
/// `&'static str`, and a command line gives a few peers at most.
pub fn parse_peer(text: &str) -> Result<Peer, String> {
    let Some((name, library)) = text.split_once('=') else {
        return Err("expected NAME=LIBRARY, e.g. flexguard=/path/to/interpose.so".to_owned());
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-_+.".contains(c);
    if name.is_empty() || !name.chars().all(allowed) {
        return Err(format!(
            "the peer's name `{name}` must be letters, digits and -_+. (it names the row)"
        ));
    }
    let taken = OWN_ROWS.contains(&name)
        || PreloadLock::value_variants()
            .iter()
            .any(|lock| lock.name() == name);
    if taken {
        return Err(format!(
            "`{name}` already names a row of app's table: give the peer another name"
        ));
    }
    let path = PathBuf::from(library);
    if !path.is_file() {
        return Err(format!("no library at `{library}`"));
    }
    Ok(Peer {
        name: Box::leak(name.to_owned().into_boxed_str()),
        library: Box::leak(path.into_boxed_path()),
    })
}

/// Two `--peer`s with one name would merge their rows.
pub fn check_distinct(peers: &[Peer]) -> Result<(), String> {
    for (at, peer) in peers.iter().enumerate() {
        if peers[..at].iter().any(|earlier| earlier.name == peer.name) {
            return Err(format!("--peer {} is given twice", peer.name));
        }
    }
    Ok(())
}

/// `cell` against the best of `peers` (glibc's cell and the peers' cells on the same
/// measure): the judgement and the best peer's name; `None` when a side has no runs.
pub fn against_best(cell: &Cell, peers: &[&Cell]) -> Option<(Judgement, &'static str)> {
    let median = |c: &Cell| {
        let logs = c.log_throughputs();
        crate::cells::Summary::of(logs.iter().copied()).map(|s| s.median)
    };
    let best = peers
        .iter()
        .filter_map(|&peer| Some((peer, median(peer)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?
        .0;
    let judged = verdict::judge(
        &cell.log_throughputs(),
        &best.log_throughputs(),
        Settings::default(),
    )?;
    Some((judged, best.lock))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::Run;
    use std::time::Duration;

    #[test]
    fn a_peer_needs_a_free_name_and_an_existing_library() {
        let lib = std::env::current_exe().unwrap();
        let lib = lib.display();
        let peer = parse_peer(&format!("flexguard={lib}")).unwrap();
        assert_eq!(peer.name, "flexguard");
        assert!(parse_peer("flexguard").unwrap_err().contains("NAME=LIBRARY"));
        assert!(parse_peer(&format!("={lib}")).is_err());
        assert!(parse_peer(&format!("a b={lib}")).is_err());
        assert!(parse_peer(&format!("glibc={lib}"))
            .unwrap_err()
            .contains("already names a row"));
        assert!(parse_peer(&format!("default={lib}"))
            .unwrap_err()
            .contains("already names a row"));
        assert!(parse_peer("fg=/no/such/library.so")
            .unwrap_err()
            .contains("no library"));
        assert!(check_distinct(&[peer, peer]).unwrap_err().contains("twice"));
        assert!(check_distinct(&[peer]).is_ok());
    }

    fn metric_cell(lock: &'static str, values: &[f64]) -> Cell {
        let runs = values
            .iter()
            .map(|&v| Run::timed(v, Duration::from_secs(1), 1))
            .collect();
        Cell::of_runs("app", lock, 0, Some("metric"), "metric", runs)
    }

    #[test]
    fn the_best_peer_is_the_one_with_the_highest_median_throughput() {
        let glibc = metric_cell("glibc", &[100.0, 101.0, 99.0, 100.5, 99.5]);
        let flexguard = metric_cell("flexguard", &[150.0, 151.0, 149.0, 150.5, 149.5]);
        let ours = metric_cell("default", &[120.0, 121.0, 119.0, 120.5, 119.5]);
        let (judged, best) = against_best(&ours, &[&glibc, &flexguard]).unwrap();
        assert_eq!(best, "flexguard");
        assert_eq!(judged.verdict, verdict::Verdict::Slower);
        let (judged, best) = against_best(&ours, &[&glibc]).unwrap();
        assert_eq!(best, "glibc");
        assert_eq!(judged.verdict, verdict::Verdict::Faster);
    }
}
