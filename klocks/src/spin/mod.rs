//! Spinlocks: they never sleep.

pub(crate) mod mcs;
pub mod qspinlock;
pub mod ticket;

#[cfg(all(loom, test))]
mod loom_models;
