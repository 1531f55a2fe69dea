//! `lockbench app -- CMD ARGS`: an unmodified program under each klocks lock. Here:
//! what it does; its options and what they configure are in `app/config.rs`, the runs
//! in `app/runs.rs`, the tables in `app/tables.rs`, the profile it reads with
//! `--profile` in `app/profile.rs`, the advice measured in `app/advice.rs`.
//!
//! The command runs once per lock and round: first as it is (glibc's locks, no
//! preload), then under `LD_PRELOAD=libklocks.so KLOCKS_LOCK=<lock>` for each
//! chosen lock, round after round, so that drift in the machine spreads over every
//! lock alike. Reported: wall time, and with `--metric` a number the command prints
//! (a throughput: higher is better), each as median [min–max] and as speed relative
//! to glibc in the same run.
//!
//! With `--peer NAME=LIBRARY` ([`peer`]), another interposer (FlexGuard's, an older
//! libklocks.so) runs as a row beside glibc, and each klocks lock is also judged
//! against the best of glibc and the peers.
//!
//! With `--profile-cost`, two more variants run in every round: glibc's locks through
//! the preload (`glibc+preload`), and the same under its contention profile
//! (`glibc+profile`, `KLOCKS_PROFILE=1`, written to a file). The ratio of their rows
//! is the profile's cost; the last round's report is printed under the table.
//!
//! With `--profile`, the command runs once under the contention profile with the
//! locks in use (glibc's, or `--with LOCK` and `--rwlock`), its JSON report is read
//! ([`profile`]) and printed short: the share of the threads' time spent waiting,
//! the locks by wait time and by number of waits, and the advice. With `--try` the
//! advice is measured: each setting it suggests runs against the locks in use,
//! `--runs` rounds interleaved, judged as the table's rows are, and what it came to
//! is said in words (a win only when faster). No rounds run when
//! locks cost under 1% of the threads' time ("nothing to gain here"; the plain table,
//! `app --with LOCK`, measures a lock anyway) or when the advice suggests nothing.
//!
//! Verified, or no table: every run must exit 0; its stdout must be byte-identical
//! to the first run's (glibc's, or the profiled run's; unless `--output-varies`:
//! programs that print timings);
//! `--metric` must match in every run; and a preloaded run's stderr must carry no
//! word from the dynamic linker or klocks that the preload failed or fell back to
//! glibc, so a table never shows glibc under a klocks name.
//!
//! The files, each importing only those below it: `setting.rs` (the variables, the
//! locks they name, a setting of both), `peer.rs`, `variant.rs` (how a run is made),
//! `config.rs` (the options and what they configure), `runs.rs`, `tables.rs`,
//! `advice.rs`; `profile.rs` reads the profile's report.

use crate::cells::{Cell, Progress};
use crate::harness::Error;

mod advice;
mod config;
mod peer;
mod profile;
mod runs;
mod setting;
mod tables;
mod variant;
use advice::run_profile;
pub use config::{Args, Config};
use runs::run_rounds;
pub use setting::PreloadLock;
pub use tables::tables;
pub use variant::Variant;

/// Runs every round and returns one cell per lock (and one more per lock for the
/// metric); with `--profile`, the profile and the advice's rounds.
pub fn run(config: &Config, progress: &Progress) -> Result<Vec<Cell>, Error> {
    match &config.profiling {
        Some(profiling) => run_profile(config, profiling, progress),
        None => run_rounds(config, &config.variants, None, progress),
    }
}

scenario! {
    takes: Neither,
    configure: |args, common| Config::new(args, common),
    tables: |config, cells, _| tables(config, cells),
}

