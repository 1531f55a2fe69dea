//! The profile's one-line suggestion per lock (or per site: its locks as one), from
//! the shape it measured. Each line
//! gives the measurements it rests on; the choices follow lockbench's results (the
//! lock table of `docs/design.md`). A suggestion to change a lock is marked unmeasured and
//! names the command that measures it, `lockbench app --profile --try`, which reads
//! the suggested setting from the JSON report's `try` field ([`Remedy`]).

use std::fmt::{self, Write};

use klocks_core::catalog::{MutexKind, RwLockKind};

use super::units::Time;
use crate::preload::settings::GLIBC;

/// What the profile measured of one lock.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Shape {
    pub(super) rwlock: bool,
    pub(super) acquisitions: u64,
    /// Read acquisitions (rwlocks).
    pub(super) reads: u64,
    pub(super) contended: u64,
    pub(super) wait_ns: f64,
    pub(super) max_wait_ns: f64,
    /// The mean of the timed holds, if any was timed.
    pub(super) mean_hold_ns: Option<f64>,
    pub(super) max_hold_ns: f64,
    /// The most threads seen waiting at once.
    pub(super) peak_waiting: u32,
    pub(super) cpus: usize,
}

/// The locks the program runs under: the `KLOCKS_LOCK` and `KLOCKS_RWLOCK` values in
/// force (`None`: glibc's).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct InUse {
    pub(super) lock: Option<&'static str>,
    pub(super) rwlock: Option<&'static str>,
}

/// A setting the advice suggests: `variable=value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Remedy {
    pub(super) variable: &'static str,
    pub(super) value: &'static str,
}

/// Fewer contended acquisitions than this are too few to tell one lock from
/// another: the shape (hold times, waiters at once, read share) of a handful of
/// waits changes from run to run, and so would the advice; unless they add up to
/// [`DECISIVE_WAIT_NS`] (a few long waits decide as well as many short ones).
const MIN_CONTENDED: u64 = 10;
/// Waits that add up to this much decide, however few.
const DECISIVE_WAIT_NS: f64 = 10e6;

/// A read share this close to the read-mostly line (90%), or a peak of waiters one
/// off the CPUs, puts an rwlock on the edge between two remedies: one run of the
/// program can fall on either side, and two runs advise different locks.
const READS_EDGE: f64 = 5.0;

/// Holds at least this long make spinning waiters a waste: they should sleep.
const LONG_HOLD_NS: f64 = 50_000.0;
/// Holds at most this long are over before a sleeper would wake.
const SHORT_HOLD_NS: f64 = 5_000.0;

/// Writes `VAR=value` as the remedy, unless it is already in force (then says that
/// only the code can help), with the command that would measure it against the
/// setting in force: the profile measured the lock's shape, not how the suggested
/// lock runs it.
fn suggest(
    out: &mut dyn Write,
    in_use: InUse,
    rwlock: bool,
    value: &'static str,
) -> Result<Option<Remedy>, fmt::Error> {
    let (variable, current) = if rwlock {
        ("KLOCKS_RWLOCK", in_use.rwlock)
    } else {
        ("KLOCKS_LOCK", in_use.lock)
    };
    if current.unwrap_or(GLIBC) == value {
        write!(
            out,
            "{variable}={value} is already in use: no other lock removes this wait; shorten the critical section or split the lock"
        )?;
        return Ok(None);
    }
    write!(
        out,
        "try {variable}={value} (unmeasured: measure it with `lockbench app --profile --try"
    )?;
    if let Some(lock) = in_use.lock {
        write!(out, " --with {lock}")?;
    }
    if let Some(rwlock) = in_use.rwlock {
        write!(out, " --rwlock {rwlock}")?;
    }
    write!(out, " -- PROGRAM`)")?;
    Ok(Some(Remedy { variable, value }))
}

/// Writes the suggestion for `shape` (one line, no newline), never one for the lock
/// already `in_use`; returns the setting it suggests, if any.
pub(super) fn advise(
    shape: &Shape,
    in_use: InUse,
    out: &mut dyn Write,
) -> Result<Option<Remedy>, fmt::Error> {
    let percent = |part: u64| 100.0 * part as f64 / shape.acquisitions.max(1) as f64;
    let waiting = shape.peak_waiting;
    let cpus = shape.cpus;
    if percent(shape.contended) < 1.0 {
        if shape.wait_ns < 1e6 {
            write!(
                out,
                "rarely waited for ({:.2}% of acquisitions, {} in all): no change needed",
                percent(shape.contended),
                Time(shape.wait_ns)
            )?;
        } else {
            write!(
                out,
                "rarely waited for ({} of {}) but long ({} in all, longest {}): a holder was held up (preempted or blocked) while holding it; only a shorter hold shortens the wait",
                shape.contended,
                shape.acquisitions,
                Time(shape.wait_ns),
                Time(shape.max_wait_ns)
            )?;
        }
        return Ok(None);
    }
    if shape.contended < MIN_CONTENDED && shape.wait_ns < DECISIVE_WAIT_NS {
        write!(
            out,
            "waited for in {:.0}% of acquisitions but only {} times: too few waits to decide which lock fits (profile a longer or busier run)",
            percent(shape.contended),
            shape.contended
        )?;
        return Ok(None);
    }
    if shape.rwlock {
        let reads = percent(shape.reads);
        let waiting_edge = (waiting as usize + 1).abs_diff(cpus) <= 1 && reads < 90.0;
        if (reads - 90.0).abs() < READS_EDGE || waiting_edge {
            write!(
                out,
                "undecided, on the edge between KLOCKS_RWLOCK={} and {GLIBC} ({reads:.1}% reads, up to {waiting} waiting on {cpus} CPUs: another run may advise the other); ",
                RwLockKind::Default.name()
            )?;
        }
        return if reads >= 90.0 {
            write!(
                out,
                "read-mostly ({reads:.1}% reads; readers share, and spin only behind a running writer): "
            )?;
            suggest(out, in_use, true, RwLockKind::Default.name())
        } else if waiting as usize + 1 > cpus {
            write!(
                out,
                "{:.0}% writes with up to {waiting} waiting on {cpus} CPUs (klocks' rwlocks trail glibc's with a tenth or more writes and more threads than CPUs): ",
                100.0 - reads
            )?;
            suggest(out, in_use, true, GLIBC)
        } else {
            write!(
                out,
                "{:.0}% writes, waiters fit the CPUs ({waiting} on {cpus}): ",
                100.0 - reads
            )?;
            suggest(out, in_use, true, RwLockKind::Default.name())
        };
    }
    let Some(mean) = shape.mean_hold_ns else {
        write!(
            out,
            "waited for in {:.0}% of acquisitions, no hold timed: ",
            percent(shape.contended)
        )?;
        return suggest(out, in_use, false, MutexKind::Default.name());
    };
    if mean >= LONG_HOLD_NS {
        write!(
            out,
            "long holds (mean {}, longest {}) with up to {waiting} waiting: waiters should sleep, not spin; the lasting fix is a shorter critical section; ",
            Time(mean),
            Time(shape.max_hold_ns)
        )?;
    } else if mean <= SHORT_HOLD_NS && waiting as usize + 1 > cpus {
        write!(
            out,
            "short holds (mean {}) with up to {waiting} waiting on {cpus} CPUs (spin only while the holder runs, sleep otherwise): ",
            Time(mean)
        )?;
    } else if mean <= SHORT_HOLD_NS {
        write!(
            out,
            "short holds (mean {}), waiters fit the CPUs ({waiting} on {cpus}), spinning pays: ",
            Time(mean)
        )?;
    } else {
        write!(
            out,
            "holds of {} on average, waited for in {:.0}% of acquisitions: ",
            Time(mean),
            percent(shape.contended)
        )?;
    }
    suggest(out, in_use, false, MutexKind::Default.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn advice(shape: Shape) -> String {
        advice_under(shape, InUse::default())
    }

    fn advice_under(shape: Shape, in_use: InUse) -> String {
        let mut line = String::new();
        let remedy = advise(&shape, in_use, &mut line).unwrap();
        // The remedy returned is the one the line suggests.
        let tried = remedy.map(|r| format!("try {}={} (unmeasured", r.variable, r.value));
        assert_eq!(
            tried.is_some(),
            line.contains("try KLOCKS_"),
            "{line}: {remedy:?}"
        );
        if let Some(tried) = tried {
            assert!(line.contains(&tried), "{line}: {remedy:?}");
        }
        line
    }

    const BUSY: Shape = Shape {
        rwlock: false,
        acquisitions: 10_000,
        reads: 0,
        contended: 4_000,
        wait_ns: 5e8,
        max_wait_ns: 1e6,
        mean_hold_ns: Some(300.0),
        max_hold_ns: 2_000.0,
        peak_waiting: 7,
        cpus: 2,
    };

    #[test]
    fn each_shape_gets_its_suggestion_with_its_numbers() {
        let quiet = Shape {
            contended: 3,
            wait_ns: 2e4,
            ..BUSY
        };
        assert!(advice(quiet).starts_with("rarely waited for (0.03% of acquisitions, 20.0 µs"));
        let held_up = Shape {
            contended: 1,
            wait_ns: 7.5e6,
            max_wait_ns: 7.5e6,
            ..BUSY
        };
        assert!(advice(held_up).starts_with(
            "rarely waited for (1 of 10000) but long (7.50 ms in all, longest 7.50 ms)"
        ));
        assert!(
            advice(BUSY).starts_with("short holds (mean 300 ns) with up to 7 waiting on 2 CPUs")
        );
        let fits = Shape {
            peak_waiting: 1,
            ..BUSY
        };
        assert!(advice(fits).contains("spinning pays"));
        let long = Shape {
            mean_hold_ns: Some(5e6),
            max_hold_ns: 1.2e7,
            ..BUSY
        };
        assert!(advice(long).starts_with("long holds (mean 5.00 ms, longest 12.0 ms)"));
        let read_mostly = Shape {
            rwlock: true,
            reads: 9_950,
            ..BUSY
        };
        assert!(advice(read_mostly).starts_with("read-mostly (99.5% reads;"));
        assert!(advice(read_mostly).ends_with(
            "try KLOCKS_RWLOCK=default-rw (unmeasured: measure it with `lockbench app --profile --try -- PROGRAM`)"
        ));
        let write_heavy = Shape {
            rwlock: true,
            reads: 5_000,
            ..BUSY
        };
        assert!(advice(write_heavy).contains("KLOCKS_RWLOCK=glibc is already in use"));
    }

    /// A handful of waits decides nothing: the line says so and suggests no lock.
    #[test]
    fn too_few_waits_cannot_decide() {
        let few = Shape {
            acquisitions: 200,
            contended: 6,
            wait_ns: 2e5,
            ..BUSY
        };
        let line = advice(few);
        assert!(
            line.starts_with(
                "waited for in 3% of acquisitions but only 6 times: too few waits to decide"
            ),
            "{line}"
        );
        assert!(!line.contains("try KLOCKS_"), "{line}");
        // As few waits that add up to long ones decide.
        let few_long = Shape {
            wait_ns: 1.5e8,
            ..few
        };
        assert!(
            advice(few_long).contains("try KLOCKS_LOCK=default"),
            "{}",
            advice(few_long)
        );
    }

    /// A shape on the line between two remedies says that another run may advise
    /// the other, before its suggestion; one well clear of it does not.
    #[test]
    fn a_shape_on_the_edge_says_runs_may_disagree() {
        let near_read_mostly = Shape {
            rwlock: true,
            reads: 8_800,
            peak_waiting: 7,
            ..BUSY
        };
        let line = advice(near_read_mostly);
        assert!(
            line.starts_with(
                "undecided, on the edge between KLOCKS_RWLOCK=default-rw and glibc (88.0% reads"
            ),
            "{line}"
        );
        let near_the_cpus = Shape {
            rwlock: true,
            reads: 5_000,
            peak_waiting: 2,
            ..BUSY
        };
        assert!(advice(near_the_cpus).starts_with("undecided, on the edge"));
        let clear = Shape {
            rwlock: true,
            reads: 9_990,
            ..BUSY
        };
        assert!(!advice(clear).contains("undecided"), "{}", advice(clear));
        assert!(!advice(BUSY).contains("undecided"), "{}", advice(BUSY));
    }

    /// What is in force is never the remedy: every shape, under the lock it would
    /// suggest, says so and suggests nothing.
    #[test]
    fn the_lock_in_use_is_never_suggested() {
        let shapes = [
            BUSY,
            Shape {
                peak_waiting: 1,
                ..BUSY
            },
            Shape {
                mean_hold_ns: Some(5e6),
                ..BUSY
            },
            Shape {
                mean_hold_ns: Some(2e4),
                ..BUSY
            },
            Shape {
                mean_hold_ns: None,
                ..BUSY
            },
        ];
        for shape in shapes {
            let glibc = advice(shape);
            assert!(
                glibc.ends_with("try KLOCKS_LOCK=default (unmeasured: measure it with `lockbench app --profile --try -- PROGRAM`)"),
                "{glibc}"
            );
            let under = InUse {
                lock: Some("default"),
                rwlock: None,
            };
            let line = advice_under(shape, under);
            assert!(
                line.contains("KLOCKS_LOCK=default is already in use"),
                "{line}"
            );
            assert!(!line.contains("try KLOCKS_LOCK=default"), "{line}");
        }
        let read_mostly = Shape {
            rwlock: true,
            reads: 9_950,
            ..BUSY
        };
        let under = InUse {
            lock: Some("default"),
            rwlock: Some("default-rw"),
        };
        let line = advice_under(read_mostly, under);
        assert!(
            line.contains("KLOCKS_RWLOCK=default-rw is already in use"),
            "{line}"
        );
    }
}
