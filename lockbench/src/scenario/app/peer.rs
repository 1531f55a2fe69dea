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
//! verdict ([`crate::harness::versus::against_best`], as every table against the
//! best peer).

use std::path::{Path, PathBuf};

use clap::ValueEnum;

use super::setting::{PreloadLock, GLIBC};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
