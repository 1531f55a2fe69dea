//! `decide`, the names, the encoding of the choice and the verbose line.

use super::*;

/// `decide` on these values (`KLOCKS_SPIN` unset), with its complaints rendered.
fn run(
    lock: Option<&str>,
    rwlock: Option<&str>,
    spin_ns: Option<&str>,
    probe: Option<&str>,
) -> (Choice, Vec<String>) {
    run_env(Env {
        lock,
        rwlock,
        spin: None,
        spin_ns,
        probe,
    })
}

/// `decide` on `env`, with its complaints rendered.
fn run_env(env: Env) -> (Choice, Vec<String>) {
    let mut lines = Vec::new();
    let choice = decide(&env, |complaint| lines.extend(complaint.lines()));
    (choice, lines)
}

/// `decide` with only `KLOCKS_SPIN` set.
fn run_spin(spin: &str) -> (Choice, Vec<String>) {
    run_env(Env {
        lock: None,
        rwlock: None,
        spin: Some(spin),
        spin_ns: None,
        probe: None,
    })
}

#[test]
fn default_names_the_default_pair_unless_the_rwlock_is_named() {
    let (choice, lines) = run(Some("default"), None, None, None);
    assert_eq!(choice.mutex, Some(MutexKind::Default));
    assert_eq!(choice.rwlock, Some(RwLockKind::Default));
    assert!(lines.is_empty(), "{lines:?}");
    let (choice, _) = run(Some("default"), Some("glibc"), None, None);
    assert_eq!(choice.rwlock, None);
    // lockbench's `--rwlocks` name for glibc's rwlock is taken too, in any case.
    for glibc_rw in ["glibc-rw", "Glibc-RW"] {
        let (choice, lines) = run(Some("default"), Some(glibc_rw), None, None);
        assert_eq!(choice.rwlock, None, "{glibc_rw}");
        assert!(lines.is_empty(), "{glibc_rw}: {lines:?}");
    }
    let (choice, _) = run(Some("default"), Some("rwsem-never"), None, None);
    assert_eq!(choice.rwlock, Some(RwLockKind::RwSemNever));
    for choice in [
        Choice {
            mutex: Some(MutexKind::Default),
            rwlock: Some(RwLockKind::Default),
            spin: None,
        },
        Choice {
            mutex: Some(MutexKind::SpinFutex),
            rwlock: Some(RwLockKind::RwSemNever),
            spin: Some(SpinKind::QSpin),
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
    assert_eq!(choice.mutex, Some(MutexKind::SpinFutex));
    assert_eq!(choice.rwlock, None, "rwlocks stay glibc's unless asked");
    assert!(lines.is_empty());
    let (choice, _) = run(Some("ticket"), Some("rwsem-never"), None, None);
    assert_eq!(choice.rwlock, Some(RwLockKind::RwSemNever));
    let (choice, _) = run(Some("pvqspinlock"), Some("glibc"), None, None);
    assert_eq!(choice.rwlock, None);
    let (choice, _) = run(None, Some("rwsem-always"), None, None);
    assert_eq!(choice.mutex, None);
    assert_eq!(choice.rwlock, Some(RwLockKind::RwSemAlways));
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
    assert_eq!(choice.mutex, Some(MutexKind::Futex));
    assert_eq!(choice.rwlock, None);
    assert!(lines[0].contains("KLOCKS_RWLOCK=\"rwsem\""), "{lines:?}");
}

#[test]
fn help_lists_every_name_once_with_its_description_and_use() {
    let (choice, lines) = run(Some("help"), Some("HELP"), None, None);
    assert_eq!(choice, GLIBC_ONLY);
    let text = lines.join("\n");
    for kind in MutexKind::C_KINDS {
        let line = lines
            .iter()
            .find(|line| line.split_whitespace().next() == Some(kind.name()))
            .unwrap_or_else(|| panic!("{} not listed: {text}", kind.name()));
        assert!(line.contains(kind.about()), "{line}");
        assert!(line.contains(kind.use_when()), "{line}");
    }
    for policy in RwLockKind::ALL {
        let listed: Vec<_> = lines
            .iter()
            .filter(|line| line.split_whitespace().next() == Some(policy.name()))
            .collect();
        assert_eq!(listed.len(), 1, "{}: {text}", policy.name());
        assert!(listed[0].contains(policy.about()), "{text}");
        assert!(listed[0].contains(policy.use_when()), "{text}");
    }
    assert_eq!(
        lines.iter().filter(|line| line.contains("=<name>")).count(),
        3,
        "every variable, once: {text}"
    );
    let spin_help = lines
        .iter()
        .position(|line| line.starts_with("KLOCKS_SPIN=<name>"))
        .unwrap_or_else(|| panic!("no KLOCKS_SPIN section: {text}"));
    for kind in SpinKind::ALL {
        let line = lines[spin_help..]
            .iter()
            .find(|line| line.split_whitespace().next() == Some(kind.name()))
            .unwrap_or_else(|| panic!("{} not listed for KLOCKS_SPIN: {text}", kind.name()));
        assert!(line.contains(kind.catalog().about()), "{line}");
        assert!(line.contains(kind.use_it_for()), "{line}");
    }
    let (choice, helped) = run_spin("Help");
    assert_eq!(choice, GLIBC_ONLY);
    assert_eq!(helped, lines, "KLOCKS_SPIN=help prints the same list");
}

#[test]
fn spin_names_the_pthread_spinlock_alone() {
    for (name, kind) in [
        ("pvqspinlock", SpinKind::PvQSpin),
        (" Default ", SpinKind::PvQSpin),
        ("QSPINLOCK", SpinKind::QSpin),
    ] {
        let (choice, lines) = run_spin(name);
        assert_eq!(
            choice,
            Choice {
                mutex: None,
                rwlock: None,
                spin: Some(kind),
            },
            "{name}"
        );
        assert!(lines.is_empty(), "{lines:?}");
    }
    for unset in ["", "  ", "glibc", "GLIBC"] {
        assert_eq!(run_spin(unset), (GLIBC_ONLY, vec![]), "{unset:?}");
    }
    // `KLOCKS_LOCK=default` names the mutex and rwlock, never the spinlock.
    assert_eq!(run(Some("default"), None, None, None).0.spin, None);
}

#[test]
fn an_unknown_spinlock_is_one_line_with_the_nearest_name() {
    let (choice, lines) = run_spin("pvqspinlok");
    assert_eq!(choice, GLIBC_ONLY);
    assert_eq!(
        lines,
        [
            "KLOCKS_SPIN=\"pvqspinlok\" is not a spinlock; did you mean `pvqspinlock`? \
          (KLOCKS_SPIN=help lists them); using glibc's spinlocks"
        ]
    );
    let (_, lines) = run_spin("zzz");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(!lines[0].contains("did you mean"), "{lines:?}");
    // The other families are chosen as if it were unset.
    let (choice, lines) = run_env(Env {
        lock: Some("futex"),
        rwlock: None,
        spin: Some("ticket"),
        spin_ns: None,
        probe: None,
    });
    assert_eq!(choice.mutex, Some(MutexKind::Futex));
    assert_eq!(choice.spin, None);
    assert!(lines[0].contains("KLOCKS_SPIN=\"ticket\""), "{lines:?}");
    // A bad spin budget keeps the spinlocks glibc's too.
    let (choice, _) = run_env(Env {
        lock: None,
        rwlock: None,
        spin: Some("pvqspinlock"),
        spin_ns: Some("12us"),
        probe: None,
    });
    assert_eq!(choice, GLIBC_ONLY);
}

#[test]
fn names_ignore_case_and_blanks() {
    assert_eq!(
        run(Some("Default"), None, None, None).0.mutex,
        Some(MutexKind::Default)
    );
    assert_eq!(
        run(Some(" PVTICKET "), None, None, None).0.mutex,
        Some(MutexKind::PvTicket)
    );
    let (choice, lines) = run(Some("GLIBC"), Some("Rwsem-Never"), None, None);
    assert_eq!(choice.mutex, None);
    assert_eq!(choice.rwlock, Some(RwLockKind::RwSemNever));
    assert!(lines.is_empty(), "{lines:?}");
}

#[test]
fn an_empty_value_is_unset() {
    assert_eq!(run(Some(""), Some(" "), None, None), (GLIBC_ONLY, vec![]));
    // An empty KLOCKS_RWLOCK does not hold `default`'s rwlock back.
    let (choice, lines) = run(Some("default"), Some(""), None, None);
    assert_eq!(choice.rwlock, Some(RwLockKind::Default));
    assert!(lines.is_empty(), "{lines:?}");
}

#[test]
fn default_names_the_default_rwlock_too() {
    for name in ["default", "DEFAULT", "default-rw"] {
        let (choice, lines) = run(None, Some(name), None, None);
        assert_eq!(choice.rwlock, Some(RwLockKind::Default), "{name}");
        assert!(lines.is_empty(), "{lines:?}");
    }
}

#[test]
fn a_misspelling_gets_the_nearest_name() {
    for (typed, meant) in [
        ("defualt", "default"),
        ("pvqspin", "pvqspinlock"),
        ("Spinfutx", "spinfutex"),
    ] {
        let (choice, lines) = run(Some(typed), None, None, None);
        assert_eq!(choice, GLIBC_ONLY);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains(&format!("is not a lock; did you mean `{meant}`?")),
            "{typed}: {lines:?}"
        );
    }
    let (_, lines) = run(None, Some("rwsem-nevr"), None, None);
    assert!(
        lines[0].contains("did you mean `rwsem-never`?"),
        "{lines:?}"
    );
    let (_, lines) = run(None, Some("defualt"), None, None);
    assert!(lines[0].contains("did you mean `default`?"), "{lines:?}");
    // Nothing close: no suggestion.
    let (_, lines) = run(Some("zzz"), None, None, None);
    assert!(!lines[0].contains("did you mean"), "{lines:?}");
}

#[test]
fn verbose_is_0_or_1_and_anything_else_is_one_complaint() {
    assert_eq!(verbose(None), Ok(false));
    assert_eq!(verbose(Some("")), Ok(false));
    assert_eq!(verbose(Some("0")), Ok(false));
    assert_eq!(verbose(Some(" 1 ")), Ok(true));
    let complaint = verbose(Some("yes")).unwrap_err();
    assert!(
        complaint.starts_with("KLOCKS_VERBOSE=\"yes\" is not"),
        "{complaint}"
    );
    assert!(!complaint.contains('\n'));
}

#[test]
fn the_active_line_names_both_locks_the_probe_and_the_profile() {
    let choice = Choice {
        mutex: Some(MutexKind::PvTicket),
        rwlock: Some(RwLockKind::RwSemNever),
        spin: Some(SpinKind::PvQSpin),
    };
    assert_eq!(
        active_line(choice, Some(ProbeKind::CpuClock), true),
        "active: mutexes pvticket, rwlocks rwsem-never, spinlocks pvqspinlock, owner probe clock, profile on"
    );
    assert_eq!(
        active_line(GLIBC_ONLY, None, false),
        "active: mutexes glibc, rwlocks glibc, spinlocks glibc, owner probe unused (glibc's locks), profile off"
    );
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
        Some(MutexKind::Futex)
    );
    // Without a klocks lock they do not matter here.
    assert_eq!(run(None, None, Some("12us"), None), (GLIBC_ONLY, vec![]));
}

#[test]
fn choices_round_trip_through_the_word() {
    for mutex in MutexKind::C_KINDS.map(Some).into_iter().chain([None]) {
        for rwlock in RwLockKind::ALL.iter().copied().map(Some).chain([None]) {
            for spin in SpinKind::ALL.map(Some).into_iter().chain([None]) {
                let choice = Choice {
                    mutex,
                    rwlock,
                    spin,
                };
                assert_eq!(decode(encode(choice)), choice);
            }
        }
    }
}

/// Every mutex and rwlock of the catalog reaches every consumer in this crate: a
/// mutex with a C kind number is a `klocks_kind` constant of `include/klocks.h` with
/// that value, works through the C API's functions, is a `KLOCKS_LOCK` name listed by
/// `help`; one without is offered by neither; every rwlock is a `KLOCKS_RWLOCK` name;
/// every lock is a row of `docs/design.md`'s lock table, under its name. (lockbench's
/// lists: `lockbench/src/locks.rs`'s `every_catalog_lock_is_a_lock_name`.)
#[test]
fn every_catalog_mutex_reaches_every_consumer() {
    use crate::mutex::tests::{c_name, header_kinds};
    use crate::mutex::{
        klocks_mutex_destroy, klocks_mutex_init, klocks_mutex_lock, klocks_mutex_t,
        klocks_mutex_unlock,
    };
    let header = header_kinds(include_str!("../../../../include/klocks.h"));
    let design = include_str!("../../../../docs/design.md");
    let in_lock_table = |name: &str| {
        let cell = format!(" | `{name}` | ");
        design
            .lines()
            .any(|line| line.starts_with("| ") && line.contains(&cell))
    };
    let (_, help) = run(Some("help"), None, None, None);
    for &kind in MutexKind::ALL {
        let name = kind.name();
        assert!(
            in_lock_table(name),
            "docs/design.md's lock table lacks {name}"
        );
        let (choice, complaints) = run(Some(name), None, None, None);
        let listed = help
            .iter()
            .any(|line| line.split_whitespace().next() == Some(name));
        let Some(number) = kind.c_kind() else {
            assert_eq!(
                choice.mutex, None,
                "{name}: KLOCKS_LOCK takes a C kind only"
            );
            assert!(!listed, "help lists {name}, which is not a C kind");
            continue;
        };
        assert!(
            header.contains(&(c_name(kind), number)),
            "include/klocks.h's klocks_kind lacks {} = {number}",
            c_name(kind)
        );
        assert_eq!(
            choice.mutex,
            Some(kind),
            "KLOCKS_LOCK={name}: {complaints:?}"
        );
        assert!(listed, "KLOCKS_LOCK=help does not list {name}");
        let mut m = std::mem::MaybeUninit::<klocks_mutex_t>::zeroed();
        // SAFETY: `m` is a local `klocks_mutex_t` that only this thread uses.
        unsafe {
            assert_eq!(
                klocks_mutex_init(m.as_mut_ptr(), number as i32),
                0,
                "{name}"
            );
            assert_eq!(klocks_mutex_lock(m.as_mut_ptr()), 0, "{name}");
            assert_eq!(klocks_mutex_unlock(m.as_mut_ptr()), 0, "{name}");
            assert_eq!(klocks_mutex_destroy(m.as_mut_ptr()), 0, "{name}");
        }
    }
    for &kind in RwLockKind::ALL {
        let name = kind.name();
        assert!(
            in_lock_table(name),
            "docs/design.md's lock table lacks {name}"
        );
        let (choice, complaints) = run(None, Some(name), None, None);
        assert_eq!(
            choice.rwlock,
            Some(kind),
            "KLOCKS_RWLOCK={name}: {complaints:?}"
        );
    }
}

/// `KLOCKS_LOCKDEP`: `1`, `json` (any case), `0` and unset; anything else is a
/// complaint that names the values it takes.
#[test]
fn lockdep_takes_one_json_and_zero() {
    assert_eq!(parse_lockdep(None), Ok(Lockdep::Off));
    assert_eq!(parse_lockdep(Some(" 0 ")), Ok(Lockdep::Off));
    assert_eq!(parse_lockdep(Some("")), Ok(Lockdep::Off));
    assert_eq!(parse_lockdep(Some("1")), Ok(Lockdep::Text));
    assert_eq!(parse_lockdep(Some("JSON")), Ok(Lockdep::Json));
    let complaint = parse_lockdep(Some("yes")).unwrap_err();
    assert!(
        complaint.contains("KLOCKS_LOCKDEP=\"yes\"") && complaint.contains("json"),
        "{complaint}"
    );
}
