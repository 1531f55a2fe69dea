//! What a fork child forgets: each module of the owner probe that keeps per-process
//! or per-thread state (the cached tid, the perf watchers, the chosen probe's
//! watched threads, and the reader bias's ids, `rwlock::bravo`) registers its own
//! `forget` with `pthread_atfork`, once, through [`at_fork_child`].

use crate::config::resolved::Resolved;

/// Registers `forget`, which resets one module's per-process or per-thread state, to
/// run in every fork child (between `fork` and the child's own code, on its only
/// thread: `forget` may do only async-signal-safe work), once per `installed`.
/// Whether it is in place; a thread that asks while another installs it is told
/// "not yet". Each module forgets its own state, so none calls into another's.
pub(crate) fn at_fork_child(installed: &'static Resolved, forget: extern "C" fn()) -> bool {
    let (done, _) = installed.get(
        || {
            // SAFETY: `forget` is a plain function that lives as long as the process
            // and does only what is allowed between fork and exec (its contract).
            let rc = unsafe { libc::pthread_atfork(None, None, Some(forget)) };
            u64::from(rc == 0)
        },
        0,
    );
    done == 1
}
