//! `KLOCKS_LOCK` and `KLOCKS_RWLOCK`: the process's choice, read once.

use std::sync::atomic::{AtomicU16, Ordering::Relaxed};

use std::ffi::CStr;

use klocks_core::catalog::RwLockKind;
use klocks_core::config::{
    parse_owner_probe, parse_spin_ns, BadValue, Var, GLIBC, LOCK, OWNER_PROBE, RWLOCK, SPIN_NS,
};
use klocks_core::owner::ProbeKind;

use super::say;
use crate::mutex::Kind;

/// The reader-spin policy of the interposed rwlocks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum RwPolicy {
    Adaptive,
    Always,
    Never,
    /// The default rwlock (`klocks::RawRwLock`), not an rwsem policy.
    Default,
}

impl RwPolicy {
    /// In declaration order (the encoding of the choice relies on it).
    const ALL: [RwPolicy; 4] = [
        RwPolicy::Adaptive,
        RwPolicy::Always,
        RwPolicy::Never,
        RwPolicy::Default,
    ];

    /// The lock's entry in the catalog, which names it.
    fn catalog(self) -> RwLockKind {
        match self {
            RwPolicy::Default => RwLockKind::Default,
            RwPolicy::Adaptive => RwLockKind::RwSemAdaptive,
            RwPolicy::Always => RwLockKind::RwSemAlways,
            RwPolicy::Never => RwLockKind::RwSemNever,
        }
    }

    fn name(self) -> &'static str {
        self.catalog().name()
    }
}

/// What the process uses: `None` is glibc.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Choice {
    pub(super) mutex: Option<Kind>,
    pub(super) rwlock: Option<RwPolicy>,
}

/// The choice, encoded: 0 until made; else `0x8000 | mutex << 4 | rwlock`, with 0
/// for glibc in each field (the kind and policy numbers start at 1).
static CHOICE: AtomicU16 = AtomicU16::new(0);
const MADE: u16 = 0x8000;

fn encode(choice: Choice) -> u16 {
    let mutex = choice.mutex.map_or(0, |kind| kind as u16);
    let rwlock = choice.rwlock.map_or(0, |policy| policy as u16 + 1);
    MADE | mutex << 4 | rwlock
}

fn decode(raw: u16) -> Choice {
    let rwlock = match raw & 0xF {
        0 => None,
        n => Some(RwPolicy::ALL[usize::from(n) - 1]),
    };
    Choice {
        mutex: Kind::from_raw(u32::from(raw >> 4 & 0xF)),
        rwlock,
    }
}

/// The process's mutex kind, `None` for glibc's; the first call makes the choice.
#[inline(always)]
pub(super) fn mutex_kind() -> Option<Kind> {
    // Relaxed: see `choice`.
    match CHOICE.load(Relaxed) {
        0 => make_choice().mutex,
        raw => Kind::from_raw(u32::from(raw >> 4 & 0xF)),
    }
}

/// The process's choice; the first call makes it.
#[inline]
pub(super) fn choice() -> Choice {
    // Relaxed: the choice is a pure function of the environment, so every thread that
    // makes it makes the same one; nothing else is published through it.
    match CHOICE.load(Relaxed) {
        0 => make_choice(),
        raw => decode(raw),
    }
}

/// An environment variable's value, borrowed from the environment (no allocation).
pub(super) fn var(var: Var) -> Option<&'static str> {
    // SAFETY: the name is NUL-terminated. glibc's `getenv` returns null or a pointer
    // into the environment block; nothing in this process is expected to change the
    // variables that configure it while it starts.
    let value = unsafe { libc::getenv(var.c_name().as_ptr()) };
    if value.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string in the environment block, which lives as long
    // as the process.
    Some(
        unsafe { CStr::from_ptr(value) }
            .to_str()
            .unwrap_or("\u{FFFD}"),
    )
}

/// Makes the choice without allocating before it is stored: the first interposed call
/// may come from inside `malloc` (allocators lock pthread mutexes), and an allocation
/// here would re-enter `malloc` and this function. Complaints are rendered and
/// printed after the store, by the thread whose store won.
#[cold]
fn make_choice() -> Choice {
    let env = Env {
        lock: var(LOCK),
        rwlock: var(RWLOCK),
        spin_ns: var(SPIN_NS),
        probe: var(OWNER_PROBE),
    };
    let mut complaints = [None; 6];
    let mut count = 0;
    let choice = decide(&env, |complaint| {
        complaints[count] = Some(complaint);
        count += 1;
    });
    // Relaxed: see `choice`.
    match CHOICE.compare_exchange(0, encode(choice), Relaxed, Relaxed) {
        Ok(_) => {
            for complaint in complaints.into_iter().flatten() {
                for line in complaint.lines() {
                    say(&line);
                }
            }
            if choice.mutex.is_some() || choice.rwlock.is_some() {
                super::fork::install();
            }
            choice
        }
        Err(stored) => decode(stored),
    }
}

/// Readies what a klocks lock would otherwise set up inside its first contended
/// lock call: the spin budget's calibration (a thread and a millisecond) and the
/// owner probe (a perf event); and finds glibc's tid field for the mutex owner
/// fields (a thread), which only here may start a thread. Called from the library's constructor, where no lock
/// is held and `malloc` is not in progress.
pub(super) fn warm_up() {
    if choice() != GLIBC_ONLY {
        klocks_core::budget::SpinBudget::new().ns();
        klocks_core::owner::probe_kind();
        super::fork::calibrate_tid();
    }
}

const GLIBC_ONLY: Choice = Choice {
    mutex: None,
    rwlock: None,
};

/// The variables that configure the interposer.
struct Env<'a> {
    lock: Option<&'a str>,
    rwlock: Option<&'a str>,
    spin_ns: Option<&'a str>,
    probe: Option<&'a str>,
}

/// Something to tell the user about the environment (built without allocating).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Complaint<'a> {
    Help,
    UnknownLock(&'a str),
    UnknownRwLock(&'a str),
    BadSetting(BadValue<'a>),
    RefusedProbe(ProbeKind),
}

impl Complaint<'_> {
    /// The lines to print.
    fn lines(self) -> Vec<String> {
        match self {
            Complaint::Help => {
                let mutexes: Vec<_> = Kind::ALL.iter().map(|k| k.name()).collect();
                let rwlocks: Vec<_> = RwPolicy::ALL.iter().map(|p| p.name()).collect();
                vec![
                    format!("{LOCK}=<mutex>: {}, or {GLIBC} (the default)", mutexes.join(", ")),
                    format!(
                        "{RWLOCK}=<rwlock>: {}, or {GLIBC} (the default)",
                        rwlocks.join(", ")
                    ),
                ]
            }
            Complaint::UnknownLock(name) => vec![format!(
                "{LOCK}={name:?} is not a lock ({LOCK}=help lists them); using glibc's mutexes"
            )],
            Complaint::UnknownRwLock(name) => vec![format!(
                "{RWLOCK}={name:?} is not an rwlock ({RWLOCK}=help lists them); using glibc's rwlocks"
            )],
            Complaint::BadSetting(bad) => vec![format!("{bad}; using glibc's locks")],
            Complaint::RefusedProbe(kind) => vec![format!(
                "{OWNER_PROBE}={} is refused here ({}); using glibc's locks",
                kind.name(),
                kind.check().err().map_or_else(String::new, |e| e.to_string())
            )],
        }
    }
}

/// The choice `env` asks for; what is wrong with it goes to `complain`.
fn decide<'a>(env: &Env<'a>, mut complain: impl FnMut(Complaint<'a>)) -> Choice {
    let mut helped = false;
    let mut help = |complain: &mut dyn FnMut(Complaint<'a>)| {
        if !std::mem::replace(&mut helped, true) {
            complain(Complaint::Help);
        }
    };
    let mutex = match env.lock {
        None | Some(GLIBC) => None,
        Some("help") => {
            help(&mut complain);
            None
        }
        Some(name) => Kind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .or_else(|| {
                complain(Complaint::UnknownLock(name));
                None
            }),
    };
    let rwlock = match env.rwlock {
        None | Some(GLIBC) => None,
        Some("help") => {
            help(&mut complain);
            None
        }
        Some(name) => RwPolicy::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .or_else(|| {
                complain(Complaint::UnknownRwLock(name));
                None
            }),
    };
    // `default` names the default pair: its rwlock too, unless KLOCKS_RWLOCK is set.
    let rwlock = match (mutex, env.rwlock) {
        (Some(Kind::Default), None) => Some(RwPolicy::Default),
        _ => rwlock,
    };
    if mutex.is_none() && rwlock.is_none() {
        return GLIBC_ONLY;
    }
    // The klocks locks would panic on these later, inside a lock call. The checks
    // allocate nothing (an error message is made only when printed).
    let spin_ok = match env.spin_ns.map(parse_spin_ns) {
        Some(Err(bad)) => {
            complain(Complaint::BadSetting(bad));
            false
        }
        _ => true,
    };
    let probe_ok = match env.probe {
        None => true,
        Some(text) => match parse_owner_probe(text) {
            Err(bad) => {
                complain(Complaint::BadSetting(bad));
                false
            }
            Ok(kind) => {
                kind.check().is_ok() || {
                    complain(Complaint::RefusedProbe(kind));
                    false
                }
            }
        },
    };
    if spin_ok && probe_ok {
        Choice { mutex, rwlock }
    } else {
        GLIBC_ONLY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `decide` on these values, with its complaints rendered.
    fn run(
        lock: Option<&str>,
        rwlock: Option<&str>,
        spin_ns: Option<&str>,
        probe: Option<&str>,
    ) -> (Choice, Vec<String>) {
        let env = Env {
            lock,
            rwlock,
            spin_ns,
            probe,
        };
        let mut lines = Vec::new();
        let choice = decide(&env, |complaint| lines.extend(complaint.lines()));
        (choice, lines)
    }

    #[test]
    fn default_names_the_default_pair_unless_the_rwlock_is_named() {
        let (choice, lines) = run(Some("default"), None, None, None);
        assert_eq!(choice.mutex, Some(Kind::Default));
        assert_eq!(choice.rwlock, Some(RwPolicy::Default));
        assert!(lines.is_empty(), "{lines:?}");
        let (choice, _) = run(Some("default"), Some("glibc"), None, None);
        assert_eq!(choice.rwlock, None);
        let (choice, _) = run(Some("default"), Some("rwsem-never"), None, None);
        assert_eq!(choice.rwlock, Some(RwPolicy::Never));
        for choice in [
            Choice {
                mutex: Some(Kind::Default),
                rwlock: Some(RwPolicy::Default),
            },
            Choice {
                mutex: Some(Kind::SpinFutex),
                rwlock: Some(RwPolicy::Never),
            },
        ] {
            assert_eq!(decode(encode(choice)), choice);
        }
    }

    #[test]
    fn nothing_set_is_glibc_silently() {
        assert_eq!(run(None, None, None, None), (GLIBC_ONLY, vec![]));
    }

    #[test]
    fn each_family_is_chosen_by_its_own_variable() {
        let (choice, lines) = run(Some("spinfutex"), None, None, None);
        assert_eq!(choice.mutex, Some(Kind::SpinFutex));
        assert_eq!(choice.rwlock, None, "rwlocks stay glibc's unless asked");
        assert!(lines.is_empty());
        let (choice, _) = run(Some("ticket"), Some("rwsem-never"), None, None);
        assert_eq!(choice.rwlock, Some(RwPolicy::Never));
        let (choice, _) = run(Some("pvqspinlock"), Some("glibc"), None, None);
        assert_eq!(choice.rwlock, None);
        let (choice, _) = run(None, Some("rwsem-always"), None, None);
        assert_eq!(choice.mutex, None);
        assert_eq!(choice.rwlock, Some(RwPolicy::Always));
    }

    #[test]
    fn an_unknown_name_is_one_line_and_glibc() {
        let (choice, lines) = run(Some("pvqspin"), None, None, None);
        assert_eq!(choice, GLIBC_ONLY);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].contains("KLOCKS_LOCK=\"pvqspin\" is not a lock"),
            "{lines:?}"
        );
        let (choice, lines) = run(Some("futex"), Some("rwsem"), None, None);
        assert_eq!(choice.mutex, Some(Kind::Futex));
        assert_eq!(choice.rwlock, None);
        assert!(lines[0].contains("KLOCKS_RWLOCK=\"rwsem\""), "{lines:?}");
    }

    #[test]
    fn help_lists_every_name_once() {
        let (choice, lines) = run(Some("help"), Some("help"), None, None);
        assert_eq!(choice, GLIBC_ONLY);
        assert_eq!(lines.len(), 2, "{lines:?}");
        for kind in Kind::ALL {
            assert!(lines[0].contains(kind.name()));
        }
        for policy in RwPolicy::ALL {
            assert!(lines[1].contains(policy.name()));
        }
    }

    #[test]
    fn bad_klocks_variables_fall_back_to_glibc() {
        let (choice, lines) = run(Some("pvticket"), None, Some("12us"), None);
        assert_eq!(choice, GLIBC_ONLY);
        assert!(lines[0].contains("KLOCKS_SPIN_NS"), "{lines:?}");
        let (choice, lines) = run(Some("pvticket"), None, Some("99999999999"), None);
        assert_eq!(choice, GLIBC_ONLY);
        assert!(lines[0].contains("above the maximum"), "{lines:?}");
        let (choice, lines) = run(None, Some("rwsem-never"), None, Some("psychic"));
        assert_eq!(choice, GLIBC_ONLY);
        assert!(lines[0].contains("KLOCKS_OWNER_PROBE"), "{lines:?}");
        assert_eq!(
            run(Some("futex"), None, Some(" 2000 "), Some("budget"))
                .0
                .mutex,
            Some(Kind::Futex)
        );
        // Without a klocks lock they do not matter here.
        assert_eq!(run(None, None, Some("12us"), None), (GLIBC_ONLY, vec![]));
    }

    #[test]
    fn the_preload_offers_every_catalog_rwlock() {
        let offered: Vec<RwLockKind> = RwPolicy::ALL.iter().map(|p| p.catalog()).collect();
        for kind in RwLockKind::ALL {
            assert!(offered.contains(kind), "{}", kind.name());
        }
    }

    #[test]
    fn choices_round_trip_through_the_word() {
        for mutex in Kind::ALL.map(Some).into_iter().chain([None]) {
            for rwlock in RwPolicy::ALL.map(Some).into_iter().chain([None]) {
                let choice = Choice { mutex, rwlock };
                assert_eq!(decode(encode(choice)), choice);
            }
        }
    }
}
