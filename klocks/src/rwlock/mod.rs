//! Reader-writer locks: the rwsem (seed 001) and the wait queue it sleeps in.

pub mod rwsem;
mod wait_queue;

#[cfg(all(loom, test))]
mod loom_models;
