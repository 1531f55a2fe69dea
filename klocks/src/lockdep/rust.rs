//! The validator for klocks' own Rust locks: the hooks their `lock_api` impls call
//! (each one relaxed load and a branch until [`crate::lockdep::enable`]), and the
//! Rust host, which prints each report on stderr as it is found.
//!
//! A Rust lock is known by its raw lock's address. `lock_api` gives no caller, so a
//! Rust lock's class is its global's (a `static`), a name given with
//! [`crate::lockdep::name`], or else the lock itself; stacks are walked with glibc's
//! `backtrace` and the report's current stack is printed with
//! `std::backtrace::Backtrace` (file and line with debug information).

use std::fmt::Write;

use super::class::{self, ClassKind};
use super::held;
use super::report::{Report, ReportKind};
use super::state::{rust_on, Host, Mode, FRAMES};

/// Before a wait for the Rust lock `lock`: the class for [`after`] (0: none).
#[inline(always)]
pub(crate) fn before(lock: *const (), mode: Mode) -> u32 {
    if rust_on() {
        held::wait(lock as usize, mode, 0)
    } else {
        0
    }
}

/// After the Rust lock `lock` was taken (`class` from [`before`], 0 for a try).
#[inline(always)]
pub(crate) fn after(lock: *const (), class: u32, mode: Mode) {
    if rust_on() {
        held::acquired(lock as usize, class, mode, 0);
    }
}

/// Before the Rust lock `lock` is released.
#[inline(always)]
pub(crate) fn release(lock: *const ()) {
    if rust_on() {
        held::released(lock as usize);
    }
}

extern "C" {
    /// glibc's `<execinfo.h>`.
    fn backtrace(buffer: *mut *mut libc::c_void, size: libc::c_int) -> libc::c_int;
}

/// Frames of the validator's own code above the lock call: `backtrace` itself, this
/// function, the dependency's slow path.
const OWN_FRAMES: usize = 3;

fn capture(_site: usize, frames: &mut [usize; FRAMES]) {
    let mut raw = [std::ptr::null_mut(); FRAMES + OWN_FRAMES];
    // SAFETY: `raw` has room for the count passed.
    let count = unsafe { backtrace(raw.as_mut_ptr(), raw.len() as libc::c_int) }.max(0) as usize;
    for (to, &from) in frames
        .iter_mut()
        .zip(raw.iter().take(count).skip(OWN_FRAMES))
    {
        *to = from as usize;
    }
}

/// The text of `report`, lockdep's shape (the current thread's stack is printed by
/// [`found`] after it).
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let headline = match report.kind {
        ReportKind::CircularDependency => "possible circular locking dependency detected",
        ReportKind::RecursiveLocking => "possible recursive locking detected",
        ReportKind::HeldAtThreadExit => "lock held when thread exited",
        ReportKind::DestroyedWhileHeld => "held lock destroyed",
    };
    let _ = writeln!(
        out,
        "======================================================"
    );
    let _ = writeln!(out, "WARNING: {headline}");
    let _ = writeln!(
        out,
        "------------------------------------------------------"
    );
    for (i, dependency) in report.chain().iter().enumerate() {
        let _ = write!(
            out,
            "#{i} thread {} holds {}",
            dependency.thread,
            class_name(dependency.from)
        );
        if dependency.to != 0 {
            let _ = write!(out, " and waits for {}", class_name(dependency.to));
        }
        let _ = writeln!(out);
        for &frame in dependency.waiter_stack.iter().take_while(|&&f| f != 0) {
            let _ = writeln!(out, "    {}", code_name(frame));
        }
    }
    if report.kind == ReportKind::CircularDependency && report.len >= 2 {
        let (a, b) = (report.chain[0].from, report.chain[0].to);
        let _ = writeln!(out, "\n possible unsafe scenario:\n");
        let _ = writeln!(out, "       Thread A                Thread B");
        let _ = writeln!(out, "       --------                --------");
        let _ = writeln!(out, "  lock({});", class_name(b));
        let _ = writeln!(
            out,
            "                               lock({});",
            class_name(a)
        );
        let _ = writeln!(
            out,
            "                               lock({});",
            class_name(b)
        );
        let _ = writeln!(out, "  lock({});", class_name(a));
        let _ = writeln!(out, "\n *** DEADLOCK ***");
    }
    out
}

/// A class as reports name it: its name, else its kind and site.
pub fn class_name(class: u32) -> String {
    let (kind, site, name) = class::info(class);
    match kind {
        ClassKind::Named => name,
        ClassKind::Global | ClassKind::Address => format!("lock {}", code_name(site)),
        ClassKind::Initialised | ClassKind::FirstUse => format!("class@{}", code_name(site)),
    }
}

/// An address as `symbol+offset`, else `module+offset`, else hexadecimal (`dladdr`:
/// the dynamic symbols only).
fn code_name(address: usize) -> String {
    // SAFETY: a zeroed Dl_info is valid; dladdr only reads the loader's tables.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::dladdr(address as *const libc::c_void, &mut info) } == 0 {
        return format!("{address:#x}");
    }
    // SAFETY: dladdr's strings are NUL-terminated and live while the module is loaded.
    let text =
        |name: *const libc::c_char| unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
    if !info.dli_sname.is_null() {
        return format!(
            "{}+{:#x}",
            text(info.dli_sname),
            address - info.dli_saddr as usize
        );
    }
    let module = if info.dli_fname.is_null() {
        "?".into()
    } else {
        text(info.dli_fname)
    };
    let module = module.rsplit('/').next().unwrap_or("?").to_owned();
    format!("{module}+{:#x}", address - info.dli_fbase as usize)
}

fn found(report: &Report) {
    eprint!("{}", render(report));
    eprintln!(
        "stack of this thread:\n{}",
        std::backtrace::Backtrace::force_capture()
    );
}

fn stopped(why: &str) {
    eprintln!("klocks: {why}");
}

/// The Rust host.
pub(super) static HOST: Host = Host {
    capture,
    found,
    stopped,
};
