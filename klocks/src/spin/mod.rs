//! Spinlocks: they never sleep.

pub(crate) mod mcs;
pub mod pv_qspinlock;
pub mod pv_ticket;
pub mod qspinlock;
pub mod shared_futex_spin;
pub mod ticket;

#[cfg(all(loom, test))]
mod loom_models;
