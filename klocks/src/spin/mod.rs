//! Spinlocks: they never sleep.
//!
//! Each lock is a module, one algorithm per file, whose lock type is re-exported
//! here; the crate root re-exports what this module does, so a new spinlock is its
//! file and its two lines below (and its catalog entry, `crate::catalog`).

pub(crate) mod fork_child;
#[doc(hidden)]
pub use fork_child::install as install_fork_repair;
pub(crate) mod mcs;
// The queue's slot limit, for lockbench and the tests: plumbing, not API.
#[doc(hidden)]
pub use mcs::MAX_SLOTS;
mod pv_qspinlock;
pub use pv_qspinlock::PvQSpinLock;
mod pv_ticket;
pub use pv_ticket::PvTicketLock;
pub(crate) mod qspinlock;
#[cfg(all(feature = "x86-byte-store", target_arch = "x86_64", not(loom)))]
pub use qspinlock::QSpinLockByteStore;
pub use qspinlock::{Flavor, QSpinLock, QSpinLockCmpxchgHandoff, RawQSpinLock};
mod shared_futex_spin;
pub use shared_futex_spin::SharedFutexSpinLock;
mod ticket;
pub use ticket::TicketLock;

#[cfg(all(loom, test))]
mod loom_models;
