//! Reader-writer locks: the default rwlock, its table of visible readers (the reader
//! bias, BRAVO), the rwsem (seed 001) and the wait queue the rwsem sleeps in (and
//! [`Condvar`](crate::Condvar)'s waiters).

mod bravo;
pub mod raw_rwlock;
pub mod rwsem;
pub mod unbiased;
pub(crate) mod wait_queue;

#[cfg(all(loom, test))]
mod loom_bias_models;
#[cfg(all(loom, test))]
mod loom_models;

#[cfg(all(test, not(loom)))]
mod fork_child_tests;
