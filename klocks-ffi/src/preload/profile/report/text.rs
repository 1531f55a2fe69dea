//! The report as text (`KLOCKS_PROFILE_FORMAT=text`, the default): the headline, the
//! locks by wait time (a row per kind of hold, the line naming the lock and its site,
//! its contention points), the locks most often waited for beyond them, the sites
//! (`s1`, `s2`, ...), and a suggestion per lock and per site. Wrapped at 120 columns
//! by [`Out`].

use std::fmt::{self, Write};
use std::sync::atomic::Ordering::Relaxed;

use super::super::advice::advise;
use super::super::table::{self, sites, Counters, Seen};
use super::super::units::Buffer;
use super::super::units::Time;
use super::super::SAMPLE_EVERY;
use super::out::Out;
use super::summary::{
    acquisitions, lock_shape, program, site_shape, Sites, Summary, Top, NEGLIGIBLE_SHARE,
};
use super::{points, symbols};

pub(super) fn write(out: &mut Out, summary: &Summary, sites: Sites) -> fmt::Result {
    let ns = |ticks: u64| summary.ns(ticks);
    let Summary {
        all_wait,
        share,
        cpus,
        ..
    } = *summary;
    let rows = &summary.rows;
    // SAFETY: no preconditions.
    let pid = unsafe { libc::getpid() };
    writeln!(
        out,
        "klocks profile of pid {pid} ({}), {} on {cpus} CPUs",
        program(),
        Time(summary.elapsed as f64),
    )?;
    writeln!(
        out,
        "threads spent {:.2}% of their time waiting for locks: {} waiting, {} on CPU",
        100.0 * share,
        Time(ns(all_wait)),
        Time(summary.cpu_ns),
    )?;
    if share < NEGLIGIBLE_SHARE {
        writeln!(
            out,
            "that share is negligible: no lock would win back more than it, no change needed"
        )?;
    }
    writeln!(
        out,
        "the {} of {} live tracked locks that made threads wait longest (share: of all locks' wait):",
        rows.iter().count(),
        summary.seen,
    )?;
    writeln!(
        out,
        "{:>3}  {:<16} {:<9} {:>11} {:>16} {:>10} {:>6} {:>10} {:>10} {:>10} {:>7}",
        "#",
        "lock",
        "held as",
        "acquired",
        "waited",
        "wait sum",
        "share",
        "wait max",
        "hold mean",
        "hold max",
        "waiters"
    )?;
    for (rank, row) in rows.iter().enumerate() {
        write_lock(out, rank + 1, row.seen, ns, all_wait, sites)?;
    }
    writeln!(
        out,
        "holds: every contended acquisition's is timed, and 1 in {SAMPLE_EVERY} of the others' (hold mean and max are over those)"
    )?;
    write_often(out, summary, sites)?;
    if summary.untracked > 0 {
        writeln!(
            out,
            "not tracked: {} acquisitions of locks the table (of {} live locks) had no room for; KLOCKS_PROFILE_LOCKS sets its size",
            summary.untracked,
            table::slots()
        )?;
    }
    if let Some(by_site) = &summary.sites {
        writeln!(
            out,
            "sites by their locks' total wait (destroyed locks included):"
        )?;
        for (rank, site) in by_site.iter().enumerate() {
            let tally = site.tally;
            write!(
                out,
                "{:>3}  {} locks ({} destroyed): {} acquired, {} waited, {} waiting in all ({:.1}%), ",
                SiteRank(rank + 1),
                tally.locks,
                site.destroyed,
                tally.acquisitions,
                tally.contended,
                Time(ns(tally.wait)),
                100.0 * tally.wait as f64 / all_wait.max(1) as f64,
            )?;
            if sites::is_other(site.site) {
                out.write_str("at sites beyond the profile's table of sites")?;
            } else {
                // Relaxed: a snapshot for the report.
                let is_init = site.site.is_init.load(Relaxed);
                symbols::write_site(out, site.site.address(), is_init, sites)?;
            }
            writeln!(out)?;
            points::write(out, &site.site.stacks, ns, sites)?;
        }
    }
    if share >= NEGLIGIBLE_SHARE {
        for (rank, row) in rows.iter().enumerate() {
            write!(out, "{:>3}  ", rank + 1)?;
            advise(&lock_shape(row.seen.entry, summary), summary.in_use, out)?;
            writeln!(out)?;
        }
        for (rank, site) in summary.sites.iter().flat_map(Top::iter).enumerate() {
            write!(out, "{:>3}  ", SiteRank(rank + 1))?;
            advise(&site_shape(site, summary), summary.in_use, out)?;
            writeln!(out)?;
        }
    }
    Ok(())
}

/// A site's rank in the report's list of sites: `s1`, `s2`, ...
struct SiteRank(usize);

impl fmt::Display for SiteRank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buffer = Buffer::<8>::new();
        write!(buffer, "s{}", self.0)?;
        f.pad(buffer.as_str())
    }
}

/// The locks in the top by number of waits that the list by wait time leaves out,
/// one line each: rank by waits, address, waits, wait sum and mean, name and site.
fn write_often(out: &mut Out, summary: &Summary, sites: Sites) -> fmt::Result {
    let ns = |ticks: u64| summary.ns(ticks);
    for (i, (waits_rank, row)) in summary.often().enumerate() {
        if i == 0 {
            writeln!(
                out,
                "most often waited for, beyond the list above (# by number of waits, of the top {}):",
                summary.top
            )?;
        }
        let entry = row.seen.entry;
        write!(
            out,
            " w{waits_rank:<2}  {:<#16x} {} {} waited ({:.0}%), {} in all ({:.1}%), mean {}: ",
            row.seen.address,
            // Relaxed: a snapshot for the report.
            if entry.rwlock.load(Relaxed) {
                "rwlock"
            } else {
                "mutex"
            },
            row.waits,
            100.0 * row.waits as f64 / acquisitions(entry).max(1) as f64,
            Time(ns(row.wait)),
            100.0 * row.wait as f64 / summary.all_wait.max(1) as f64,
            Time(ns(row.wait) / row.waits.max(1) as f64),
        )?;
        if sites == Sites::Resolved && symbols::write_data_symbol(out, row.seen.address)? {
            out.write_str(", ")?;
        }
        // Relaxed: as above.
        let site = entry.site.load(Relaxed);
        symbols::write_site(out, site, entry.site_is_init.load(Relaxed), sites)?;
        writeln!(out)?;
    }
    Ok(())
}

/// One lock's rows: one for a mutex, reads and writes for an rwlock; then its name
/// and site.
fn write_lock(
    out: &mut Out,
    rank: usize,
    lock: Seen,
    ns: impl Fn(u64) -> f64,
    all_wait: u64,
    sites: Sites,
) -> fmt::Result {
    let entry = lock.entry;
    // Relaxed: a snapshot for the report.
    let parts: &[(&str, &Counters)] = if entry.rwlock.load(Relaxed) {
        &[("rw read", &entry.shared), ("rw write", &entry.exclusive)]
    } else {
        &[("mutex", &entry.exclusive)]
    };
    for (i, (held_as, counters)) in parts.iter().enumerate() {
        let get = |counter| Counters::get(counter);
        let (acquired, contended) = (get(&counters.acquisitions), get(&counters.contended));
        let timed = get(&counters.timed_holds);
        let mut waited = Buffer::<24>::new();
        write!(
            waited,
            "{contended} ({:.0}%)",
            100.0 * contended as f64 / acquired.max(1) as f64
        )?;
        let mut mean = Buffer::<24>::new();
        if timed > 0 {
            write!(
                mean,
                "{}",
                Time(ns(get(&counters.hold_total)) / timed as f64)
            )?;
        } else {
            mean.write_str("-")?;
        }
        let mut share = Buffer::<16>::new();
        write!(
            share,
            "{:.1}%",
            100.0 * get(&counters.wait_total) as f64 / all_wait.max(1) as f64
        )?;
        if i == 0 {
            write!(out, "{rank:>3}  {:<#16x} ", lock.address)?;
        } else {
            write!(out, "{:>3}  {:<16} ", "", "")?;
        }
        write!(
            out,
            "{held_as:<9} {acquired:>11} {:>16} {:>10} {:>6} {:>10} {:>10} {:>10}",
            waited.as_str(),
            Time(ns(get(&counters.wait_total))),
            share.as_str(),
            Time(ns(get(&counters.wait_max))),
            mean.as_str(),
            Time(ns(get(&counters.hold_max))),
        )?;
        if i == 0 {
            // Relaxed: as above.
            write!(out, " {:>7}", entry.peak_waiting.load(Relaxed))?;
        }
        writeln!(out)?;
    }
    out.write_str("     ")?;
    if sites == Sites::Resolved && symbols::write_data_symbol(out, lock.address)? {
        out.write_str(", ")?;
    }
    // Relaxed: as above.
    let site = entry.site.load(Relaxed);
    symbols::write_site(out, site, entry.site_is_init.load(Relaxed), sites)?;
    let get = |counter| Counters::get(counter);
    let longest = if get(&entry.shared.wait_max) > get(&entry.exclusive.wait_max) {
        &entry.shared
    } else {
        &entry.exclusive
    };
    // Relaxed: as above.
    let wait_site = longest.wait_site.load(Relaxed);
    if wait_site != 0 {
        out.write_str("; longest wait at ")?;
        symbols::write_code(out, wait_site, sites)?;
    }
    writeln!(out)?;
    points::write(out, &entry.stacks, ns, sites)
}
