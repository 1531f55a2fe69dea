//! The `KLOCKS_*` settings: read once per process, validated, and never a reason for
//! a lock operation to panic or to wait.
//!
//! Two environment variables tune klocks: `KLOCKS_SPIN_NS` (the spin budget,
//! [`budget`](crate::budget)) and `KLOCKS_OWNER_PROBE` (the owner probe,
//! [`owner`](crate::owner)). A lock's slow path asks for them, often after it has
//! changed the lock's words (a ticket taken, a node queued), so asking must never
//! fail there: a panic between two state changes would leave a lock wedged or a
//! queued node on a dead stack. So:
//!
//! - **A bad value is reported, not fatal.** It is printed once on stderr, naming the
//!   variable, the value and what is accepted, and the automatic setting is used (the
//!   calibrated budget, the first probe that works). A forced probe that the system
//!   refuses (perf under seccomp) is reported the same way. A program that wants a
//!   bad setting to stop it calls [`check`] at start-up; lockbench does, and exits
//!   with status 2.
//! - **Resolving never blocks.** Each setting is resolved by the first thread that
//!   needs it (a `Resolved` cell); a thread that asks while another resolves, or a signal
//!   handler that interrupts the resolving thread, gets a provisional value at once
//!   instead of waiting (a `OnceLock` would make it wait, or deadlock in the handler).
//! - **Fork-safe.** A child forked while its parent was resolving a setting would
//!   wait forever for a thread it does not have; here the resolver's pid is in the
//!   state word, and a child sees that it is not its own and resolves again.

pub(crate) mod resolved;
pub(crate) mod settings;

pub use settings::{
    owner_probe, parse_owner_probe, parse_spin_ns, report, spin_ns, BadValue, ConfigError,
    ProbeKind, Problem, Var, MAX_SPIN_NS, OWNER_PROBE, SPIN_NS,
};

/// Checks every `KLOCKS_*` setting, including that a forced owner probe works here;
/// the first problem found. The locks themselves report a bad setting once on stderr
/// and use the automatic one (module doc); call this to refuse to run instead.
pub fn check() -> Result<(), ConfigError> {
    spin_ns()?;
    if let Some(kind) = owner_probe()? {
        #[cfg(not(loom))]
        kind.check().map_err(|err| ConfigError {
            message: format!("{OWNER_PROBE}={} is refused here: {err}", kind.name()),
        })?;
        #[cfg(loom)]
        let _ = kind;
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const CHILD: &str = "KLOCKS_CONFIG_TEST_CHILD";

    /// Every lock kind, contended, in a process whose settings are both invalid: each
    /// is reported once, and nothing panics or wedges (the child's locks complete and
    /// verify their counters).
    #[test]
    fn bad_settings_are_reported_once_and_every_lock_still_works() {
        use crate::reader_spin::{Adaptive, Always, Never};
        use crate::testing::{contend, contend_rw, Contention, RwContention};
        if std::env::var_os(CHILD).is_some() {
            let how = Contention::threads(6).iterations(3_000);
            contend::<crate::PvQSpinLock>(how).unwrap();
            contend::<crate::PvTicketLock>(how).unwrap();
            contend::<crate::SpinFutexMutex>(how).unwrap();
            contend::<crate::FutexMutex>(how).unwrap();
            let rw = RwContention {
                readers: 3,
                writers: 3,
                iterations: 2_000,
            };
            contend_rw::<crate::RwSem<Adaptive>>(rw).unwrap();
            contend_rw::<crate::RwSem<Always>>(rw).unwrap();
            contend_rw::<crate::RwSem<Never>>(rw).unwrap();
            // Whether a waiter spun above depends on the machine (one CPU never
            // spins, a lucky schedule never meets a running owner); ask as a spinning
            // waiter would, so that each setting is resolved at least once.
            crate::budget::SpinBudget::new().ns();
            crate::owner::Watch::new(crate::owner::current_tid());
            assert!(check().is_err());
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "config::tests::bad_settings_are_reported_once_and_every_lock_still_works",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .env(SPIN_NS.name(), "5us")
            .env(OWNER_PROBE.name(), "ebpf")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{:?}: {stderr}", out.status);
        for (needle, instead) in [
            ("KLOCKS_SPIN_NS=\"5us\"", "using the calibrated spin budget"),
            (
                "KLOCKS_OWNER_PROBE=\"ebpf\"",
                "choosing the owner probe automatically",
            ),
        ] {
            let lines: Vec<_> = stderr.lines().filter(|l| l.contains(needle)).collect();
            assert_eq!(lines.len(), 1, "{needle}: {stderr}");
            assert!(
                lines[0].starts_with("klocks: ") && lines[0].contains(instead),
                "{}",
                lines[0]
            );
        }
    }
}
