//! `KLOCKS_LOCK` and `KLOCKS_RWLOCK`: the process's choice, read once.

use std::sync::atomic::{AtomicU16, Ordering::Relaxed};

use klocks_core::budget::{parse_spin_ns, SPIN_NS_VAR};
use klocks_core::owner::{parse_probe_kind, OWNER_PROBE_VAR};

use super::say;
use crate::mutex::Kind;

/// The variable that picks the mutex.
pub(super) const LOCK_VAR: &str = "KLOCKS_LOCK";
/// The variable that picks the rwlock.
pub(super) const RWLOCK_VAR: &str = "KLOCKS_RWLOCK";

/// The reader-spin policy of the interposed rwlocks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum RwPolicy {
    Adaptive,
    Always,
    Never,
}

impl RwPolicy {
    const ALL: [RwPolicy; 3] = [RwPolicy::Adaptive, RwPolicy::Always, RwPolicy::Never];

    /// lockbench's name for the same lock.
    fn name(self) -> &'static str {
        match self {
            RwPolicy::Adaptive => "rwsem-adaptive",
            RwPolicy::Always => "rwsem-always",
            RwPolicy::Never => "rwsem-never",
        }
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

#[cold]
fn make_choice() -> Choice {
    let var = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    let (choice, lines) = decide(
        var(LOCK_VAR).as_deref(),
        var(RWLOCK_VAR).as_deref(),
        var(SPIN_NS_VAR).as_deref(),
        var(OWNER_PROBE_VAR).as_deref(),
    );
    // Relaxed: see `choice`. Only the thread that stores first prints, so a message
    // appears once per process however many threads race here.
    if CHOICE
        .compare_exchange(0, encode(choice), Relaxed, Relaxed)
        .is_ok()
    {
        for line in lines {
            say(&line);
        }
        if choice.mutex.is_some() || choice.rwlock.is_some() {
            super::fork::install();
        }
    }
    choice
}

/// The names `help` lists.
fn help() -> Vec<String> {
    let mutexes: Vec<_> = Kind::ALL.iter().map(|k| k.name()).collect();
    let rwlocks: Vec<_> = RwPolicy::ALL.iter().map(|p| p.name()).collect();
    vec![
        format!(
            "{LOCK_VAR}=<mutex>: {}, or glibc (the default)",
            mutexes.join(", ")
        ),
        format!(
            "{RWLOCK_VAR}=<rwlock>: {}, or glibc (default: rwsem-adaptive when {LOCK_VAR} names a klocks mutex)",
            rwlocks.join(", ")
        ),
    ]
}

/// The choice the environment asks for, and the lines to print about it.
fn decide(
    lock: Option<&str>,
    rwlock: Option<&str>,
    spin_ns: Option<&str>,
    probe: Option<&str>,
) -> (Choice, Vec<String>) {
    let mut lines = Vec::new();
    let mut helped = false;
    let mut ask_help = |lines: &mut Vec<String>| {
        if !std::mem::replace(&mut helped, true) {
            lines.extend(help());
        }
    };
    let mutex = match lock {
        None | Some("glibc") => None,
        Some("help") => {
            ask_help(&mut lines);
            None
        }
        Some(name) => match Kind::ALL.into_iter().find(|k| k.name() == name) {
            Some(kind) => Some(kind),
            None => {
                lines.push(format!(
                    "{LOCK_VAR}={name:?} is not a lock ({LOCK_VAR}=help lists them); using glibc's mutexes"
                ));
                None
            }
        },
    };
    let rwlock = match rwlock {
        None => mutex.map(|_| RwPolicy::Adaptive),
        Some("glibc") => None,
        Some("help") => {
            ask_help(&mut lines);
            None
        }
        Some(name) => match RwPolicy::ALL.into_iter().find(|p| p.name() == name) {
            Some(policy) => Some(policy),
            None => {
                lines.push(format!(
                    "{RWLOCK_VAR}={name:?} is not an rwlock ({RWLOCK_VAR}=help lists them); using glibc's rwlocks"
                ));
                None
            }
        },
    };
    let mut choice = Choice { mutex, rwlock };
    if choice.mutex.is_some() || choice.rwlock.is_some() {
        // The klocks locks would panic on these later, inside a lock call.
        let bad = [
            spin_ns.and_then(|v| parse_spin_ns(v).err()),
            probe.and_then(|v| parse_probe_kind(v).err()),
        ];
        for error in bad.into_iter().flatten() {
            lines.push(format!("{error}; using glibc's locks"));
            choice = Choice {
                mutex: None,
                rwlock: None,
            };
        }
    }
    (choice, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glibc() -> Choice {
        Choice {
            mutex: None,
            rwlock: None,
        }
    }

    #[test]
    fn nothing_set_is_glibc_silently() {
        assert_eq!(decide(None, None, None, None), (glibc(), vec![]));
    }

    #[test]
    fn a_lock_name_picks_it_and_the_adaptive_rwsem() {
        let (choice, lines) = decide(Some("spinfutex"), None, None, None);
        assert_eq!(choice.mutex, Some(Kind::SpinFutex));
        assert_eq!(choice.rwlock, Some(RwPolicy::Adaptive));
        assert!(lines.is_empty());
        let (choice, _) = decide(Some("ticket"), Some("rwsem-never"), None, None);
        assert_eq!(choice.rwlock, Some(RwPolicy::Never));
        let (choice, _) = decide(Some("pvqspinlock"), Some("glibc"), None, None);
        assert_eq!(choice.rwlock, None);
        let (choice, _) = decide(None, Some("rwsem-always"), None, None);
        assert_eq!(choice.mutex, None);
        assert_eq!(choice.rwlock, Some(RwPolicy::Always));
    }

    #[test]
    fn an_unknown_name_is_one_line_and_glibc() {
        let (choice, lines) = decide(Some("pvqspin"), None, None, None);
        assert_eq!(choice, glibc());
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].contains("KLOCKS_LOCK=\"pvqspin\" is not a lock"),
            "{lines:?}"
        );
        let (choice, lines) = decide(Some("futex"), Some("rwsem"), None, None);
        assert_eq!(choice.mutex, Some(Kind::Futex));
        assert_eq!(choice.rwlock, None);
        assert!(lines[0].contains("KLOCKS_RWLOCK=\"rwsem\""), "{lines:?}");
    }

    #[test]
    fn help_lists_every_name_once() {
        let (choice, lines) = decide(Some("help"), Some("help"), None, None);
        assert_eq!(choice, glibc());
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
        let (choice, lines) = decide(Some("pvticket"), None, Some("12us"), None);
        assert_eq!(choice, glibc());
        assert!(lines[0].contains("KLOCKS_SPIN_NS"), "{lines:?}");
        let (choice, lines) = decide(Some("pvticket"), None, None, Some("psychic"));
        assert_eq!(choice, glibc());
        assert!(lines[0].contains("KLOCKS_OWNER_PROBE"), "{lines:?}");
        // Without a klocks lock they do not matter here.
        assert_eq!(decide(None, None, Some("12us"), None), (glibc(), vec![]));
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
