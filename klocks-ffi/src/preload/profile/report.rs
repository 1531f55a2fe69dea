//! The profile's report: first the share of the threads' time spent waiting for
//! locks, then the locks that made threads wait longest, one row each (two for an
//! rwlock: its reads and its writes) and a line naming where it comes from, then the
//! locks waited for most often that the first list leaves out, the sites whose locks
//! waited longest (destroyed locks included, ranked `s1`, `s2`, ...), then a
//! suggestion per lock and one per site, a site's for its locks, live and destroyed,
//! as one lock of their summed counts (none when locks cost a negligible share).
//! Every line is wrapped at 120 columns ([`out`]). Here: what every format reports
//! ([`Summary`], in `summary.rs`); the text is written by `text.rs`, JSON by `json.rs`, folded stacks
//! by `folded.rs`, the pprof profile by `pprof.rs`.
//!
//! # Two rankings
//!
//! Wait time ranks the locks, since it is what a lock costs the threads. But a lock
//! waited for very often and very briefly (a queue's lock taken on every request)
//! sinks in that ranking below locks with a few long waits, while it is the one whose
//! waits a faster handoff shortens, and the one a count-ranking tool such as mutrace
//! puts near the top. So the report also ranks by number of waits, keeps the same
//! `top`, and lists under "most often waited for" the locks of that ranking that the
//! first list leaves out, one line each with its rank by waits; the first list's
//! `waited` column gives the count of the others.
//!
//! Written without allocating, from fixed buffers, with the raw `write` system call,
//! so that a `SIGUSR2` handler may print it; only resolving sites to files and lines
//! allocates, which the report at exit does and the signal's does not.

use std::ffi::c_int;
use std::sync::atomic::{
    AtomicBool,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::OnceLock;

use crate::preload::settings::MAX_PROFILE_TOP;

mod folded;
mod json;
mod out;
mod points;
mod pprof;
mod pprof_mappings;
mod pprof_proto;
mod summary;
mod symbols;
mod text;

use out::Out;
pub(super) use summary::Sites;
pub(in crate::preload) use summary::DEFAULT_TOP;
use summary::{Summary, CPUS, IN_USE, TOP};
pub(super) use symbols::{write_code, write_data_symbol};

use super::advice::InUse;
use super::format::Format;

/// How the report is written (`KLOCKS_PROFILE_FORMAT`).
static FORMAT: OnceLock<Format> = OnceLock::new();
/// Whether a report is being written (a second one, from a signal, is skipped).
static WRITING: AtomicBool = AtomicBool::new(false);

/// Sets the report's length, destination (`None`: stderr) and format, and the locks
/// in use.
pub(super) fn configure(top: usize, file: Option<&str>, in_use: InUse, format: Format) {
    let _ = IN_USE.set(in_use);
    let _ = FORMAT.set(format);
    // Relaxed: set before the profile is switched on, whose Release publishes them.
    TOP.store(top.min(MAX_PROFILE_TOP), Relaxed);
    CPUS.store(
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        Relaxed,
    );
    out::set_destination(file);
}

/// Makes `SIGUSR2` print the report (sites unresolved).
pub(super) fn on_sigusr2() {
    extern "C" fn handler(_: c_int) {
        // SAFETY: the calling thread's errno, saved and restored around the report's
        // system calls, as a signal handler must.
        let errno = unsafe { *libc::__errno_location() };
        print(Sites::Raw);
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
    }
    // SAFETY: a zeroed sigaction is valid; the handler is a plain function that
    // lives as long as the process and does only async-signal-safe work (atomics,
    // formatting into fixed buffers, open/write/close system calls).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as extern "C" fn(c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut()) != 0 {
            super::super::stderr::say(
                "could not install the SIGUSR2 handler: the profile prints at exit only",
            );
        }
    }
}

/// Prints the report. A report asked for while another is being printed (a signal's
/// on another thread, or one interrupted by a signal on this thread) waits up to a
/// second for it and then goes ahead when `sites` is [`Sites::Resolved`] (the one at
/// exit, which must not be lost), and is skipped otherwise (a signal handler must not
/// wait).
pub(super) fn print(sites: Sites) {
    let patience = if sites == Sites::Resolved { 100 } else { 0 };
    // Acquire: pairs with the Release below, after the previous report.
    let mut busy = WRITING.swap(true, Acquire);
    for _ in 0..patience {
        if !busy {
            break;
        }
        super::super::nap(std::time::Duration::from_millis(10));
        busy = WRITING.swap(true, Acquire);
    }
    if busy && sites == Sites::Raw {
        return;
    }
    write_report(sites);
    // Release: pairs with the Acquire of the next report's swap.
    WRITING.store(false, Release);
}

/// Writes the report in its format: the text ones through [`Out`] (the machine
/// formats unwrapped), the pprof profile to a file of its own.
fn write_report(sites: Sites) {
    let summary = Summary::take();
    let format = FORMAT.get().copied().unwrap_or(Format::Text);
    let write = match format {
        Format::Text => text::write,
        Format::Json => json::write,
        Format::Folded => folded::write,
        Format::Pprof => return pprof::write(&summary, sites),
    };
    let mut out = Out::open();
    if format != Format::Text {
        out.columns = usize::MAX;
    }
    let _ = write(&mut out, &summary, sites);
}
