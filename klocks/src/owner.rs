//! Is the lock owner on a CPU right now? The userspace `owner_on_cpu()`.
//!
//! The kernel's mutex and rwsem waiters spin only while the owner is running
//! (`mutex_spin_on_owner` polls `owner->on_cpu`): a running owner will release soon,
//! and a waiter that spins for it saves a sleep and a wake-up (hundreds of times a
//! cache-line handoff: `docs/decisions/waiting.md`, budget-is-a-handoff); a preempted or blocked
//! owner will not, and spinning for it only takes a CPU it may need. Userspace cannot
//! read another thread's `on_cpu`, so this module offers the closest answers Linux
//! gives without kernel patches.
//!
//! **Use.** The owner publishes its [`current_tid`] (in the lock word, as PI futexes
//! do). An owner that learns it has waiters calls [`watch_current`] (once per thread;
//! later calls are a thread-local check). A waiter makes one [`Watch::new`]`(owner)`
//! per spin episode and calls [`Watch::owner_running`] every ~100 ns of spinning:
//! `Some(true)` keep spinning, `Some(false)` go to sleep, `None` unknown, fall back
//! to the time budget ([`crate::budget`]). Let one waiter poll (the kernel's rule:
//! only the head of the queue spins on the owner): perf checks write a per-owner
//! reader count, and every clock read disturbs the owner (below).
//!
//! # Mechanisms
//!
//! | [`ProbeKind`] | how | cost per check | agreement | cost to the watched thread | limits |
//! |---|---|---|---|---|---|
//! | `PerfSwitch` (`perf`) | the owner opened a perf event on itself that logs its context switches in a ring; the waiter reads the newest record (`perf.rs`) | a few ns (two uncontended RMWs and three loads) | near total | every context switch writes a record (about doubles a yield ping-pong's switch), so a thread that switches more than once per 50 µs of CPU is moved to `CpuClock` (`perf/price.rs`); one fd and 2 locked pages per registered thread, at most [`MAX_WATCHED_THREADS`] (32) at once | `perf_event_open` allowed (refused under seccomp, `perf_event_paranoid` ≥ 3, fd or locked-memory limits); registered owners only, the first 32 alive at once |
//! | `CpuClock` (`clock`) | the waiter reads the owner's thread CPU clock at most every 2 µs; advanced = ran (`cpu_clock.rs`) | tens of ns: a clock read is a system call, amortised over 2 µs | most samples | none while it has its CPU alone; **when another task waits for its CPU, the reads make the kernel send it reschedule IPIs and slow it down** (see below) | threads of this process |
//! | `Budget` (`budget`) | nothing: always `None` | under a ns | — | none | — |
//!
//! `lockbench owner-probe` measures the cost per check and the agreement with a
//! heartbeat the owner advances while it runs, the owner sharing its CPU with a hog so
//! that it is preempted about half the time (the figures: `docs/decisions/waiting.md`,
//! perf-probe-price).
//!
//! Reading the CPU clock of a thread that is on a CPU makes the kernel lock that
//! CPU's runqueue and bring the thread's runtime up to date (`task_sched_runtime` →
//! `update_curr`). With another task runnable there, that update often decides the
//! owner should yield (as the tick would, every 4 ms) and sends its CPU a reschedule
//! IPI: tens of thousands per second with a read every few µs, the owner slowed to
//! little more than half its speed and seen running in fewer samples than it ran
//! (`docs/decisions/waiting.md`: cpu-clock-disturbs). So
//! `CpuClock` is a fallback: it disturbs exactly the owners a waiter most needs to
//! judge. The perf probe costs nothing at read time; its price is paid at every
//! context switch of a registered thread, for the rest of its life.
//!
//! # Selection
//!
//! One mechanism per process, chosen on first use ([`probe_kind`]):
//! `KLOCKS_OWNER_PROBE=perf|clock|budget` forces one (any other value, or a mechanism
//! the system refuses, is reported once on stderr and automatic selection is used:
//! [`crate::config`]), otherwise the first that works of `PerfSwitch` (a
//! context-switch event opened and mapped on the calling thread), `CpuClock` (the
//! calling thread's CPU clock read), `Budget`. [`ProbeKind::watch`] and
//! [`ProbeKind::watch_current`] use a mechanism explicitly (benchmarks, tests).
//!
//! # Lifetimes
//!
//! A tid names a thread only while it lives; then the kernel may give it to another.
//! The perf rings therefore live in a type-stable registry and a thread's exit retires
//! its ring under a Dekker protocol (in `perf.rs`): a waiter never reads an unmapped
//! ring, and a waiter that watched the thread reads "not running" once it exited,
//! never the state of a newer thread with the same tid. The CPU clock of an exited
//! thread reads EINVAL, also "not running"; a tid reused *during* one [`Watch`] (the
//! kernel hands tids out cyclically, 32768 or more apart) would go unnoticed.
//! [`current_tid`] is cached per thread, and a fork child (whose only thread has a
//! new tid, and no perf mappings: the kernel does not copy them) drops the cache and
//! the registry in a `pthread_atfork` handler.
//!
//! # Caveats
//!
//! - Every answer is a snapshot: the owner may be switched out right after (the
//!   kernel's `owner_on_cpu()` is as racy, by design). Waiters re-check as they spin.
//! - A vCPU preempted by the hypervisor is invisible: its thread still reads as
//!   running (the kernel asks `vcpu_is_preempted()`, which userspace cannot).
//! - `PerfSwitch` knows only threads that called [`watch_current`], and at most
//!   [`MAX_WATCHED_THREADS`] of them alive at once (later ones read `None`, unknown);
//!   a thread that exits while it holds a lock reads "not running".
//!
//! Under `--cfg loom` the module is a model: [`Watch::owner_running`] answers what a
//! model thread last set with `set_model_answer` (a loom atomic, so every answer a
//! concurrent setter makes possible is explored).

#[cfg(not(loom))]
mod cpu_clock;
#[cfg(not(loom))]
mod perf;

#[cfg(not(loom))]
pub use perf::MAX_WATCHED as MAX_WATCHED_THREADS;

pub use crate::config::settings::ProbeKind;

#[cfg(loom)]
pub use model::*;
#[cfg(not(loom))]
pub use native::*;

#[cfg(not(loom))]
mod native;
#[cfg(not(loom))]
mod tid;
#[cfg(not(loom))]
pub use tid::{current_tid, forking_thread_in_parent};
// The interposer's fast path (klocks-ffi): plumbing, not API.
#[cfg(not(loom))]
#[doc(hidden)]
pub use tid::current_tid_inline;

#[cfg(not(loom))]
mod fork_child;
#[cfg(not(loom))]
pub(crate) use fork_child::at_fork_child;

#[cfg(all(
    feature = "glibc-tid",
    not(loom),
    target_os = "linux",
    target_env = "gnu"
))]
mod glibc_tid;
#[cfg(all(
    feature = "glibc-tid",
    not(loom),
    target_os = "linux",
    target_env = "gnu"
))]
pub use glibc_tid::calibrate as calibrate_glibc_tid;

#[cfg(loom)]
mod model;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_model;
