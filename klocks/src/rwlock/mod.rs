//! Reader-writer locks: the default rwlock, the rwsem (seed 001) and the wait queue
//! the rwsem sleeps in.

pub mod raw_rwlock;
pub mod rwsem;
mod wait_queue;

#[cfg(all(loom, test))]
mod loom_models;
