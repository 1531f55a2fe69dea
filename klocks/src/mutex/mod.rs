//! Sleeping mutexes on a futex word (seed 004): waiters sleep in the kernel instead of
//! queueing in userspace.

pub mod fair_mutex;
pub mod futex_mutex;
pub mod raw_mutex;
pub mod reentrant;
pub mod spin_futex_mutex;

#[cfg(all(loom, test))]
mod loom_models;
