//! The per-thread blocks of counters and their registry (`stats.rs`'s module doc,
//! "Per-thread blocks"): counting into the calling thread's block, folding an exited
//! thread's block into the retired sums, and summing for a snapshot.

use super::events::SLOTS;
use std::cell::{Cell, OnceCell};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One thread's counters. Only the owning thread writes them.
struct Block {
    counts: [AtomicU64; SLOTS],
}

/// The live threads' blocks, and the sums of the exited ones.
struct Registry {
    live: Vec<Arc<Block>>,
    retired: [u64; SLOTS],
}

/// Taken when a thread registers, when it exits and by [`sum`]: never while a
/// count is made.
static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    live: Vec::new(),
    retired: [0; SLOTS],
});

fn registry() -> MutexGuard<'static, Registry> {
    // A panic under the registry's lock leaves it consistent (each change is one
    // push, one removal or additions into `retired`): keep counting.
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The calling thread's block, registered on its first count.
struct Local {
    block: OnceCell<Arc<Block>>,
    /// Set while the block is being registered: a count made meanwhile (a lock
    /// taken by the allocator, or by a signal handler on this thread) is dropped
    /// instead of registering twice.
    registering: Cell<bool>,
}

impl Local {
    /// Allocates and registers this thread's block; `None` if a registration is
    /// already under way on this thread.
    #[cold]
    fn register(&self) -> Option<&Arc<Block>> {
        if self.registering.replace(true) {
            return None;
        }
        let block = Arc::new(Block {
            counts: [const { AtomicU64::new(0) }; SLOTS],
        });
        registry().live.push(Arc::clone(&block));
        let block = self.block.get_or_init(|| block);
        self.registering.set(false);
        Some(block)
    }
}

impl Drop for Local {
    /// The thread exits: fold its counts into the retired sums, in the same
    /// critical section that unlists its block, so that a snapshot sees them
    /// exactly once.
    fn drop(&mut self) {
        let Some(block) = self.block.get() else {
            return;
        };
        let mut registry = registry();
        for (sum, counter) in registry.retired.iter_mut().zip(&block.counts) {
            // Relaxed: written by this very thread.
            *sum += counter.load(Relaxed);
        }
        if let Some(at) = registry.live.iter().position(|b| Arc::ptr_eq(b, block)) {
            registry.live.swap_remove(at);
        }
    }
}

std::thread_local! {
    static LOCAL: Local = const {
        Local {
            block: OnceCell::new(),
            registering: Cell::new(false),
        }
    };
}

/// Adds one to the calling thread's counter `slot`. Out of line: the lock paths
/// that count stay as small as they were.
#[inline(never)]
pub(super) fn add(slot: usize) {
    // `try_with`: during the thread's thread-local destruction the count is dropped.
    let _ = LOCAL.try_with(|local| {
        let Some(block) = local.block.get().or_else(|| local.register()) else {
            return;
        };
        let counter = &block.counts[slot];
        // Relaxed, and a load and a store rather than an RMW: only this thread
        // writes its block, so no increment can be lost to another writer, and
        // readers ([`sum`], the exit fold) want a count, not an ordering.
        counter.store(counter.load(Relaxed) + 1, Relaxed);
    });
}

/// Live blocks plus retired sums.
pub(super) fn sum() -> Box<[u64]> {
    let registry = registry();
    let mut counts = registry.retired.to_vec();
    for block in &registry.live {
        for (sum, counter) in counts.iter_mut().zip(&block.counts) {
            // Relaxed: a running thread's count is read at some moment (the
            // snapshot is approximate while threads count); a joined thread's
            // stores happen-before its join, and so before this read.
            *sum += counter.load(Relaxed);
        }
    }
    counts.into_boxed_slice()
}

/// The calling thread's block alone; `None` if it has none (it never counted, or its
/// thread-locals are gone).
pub(super) fn this_thread() -> Option<Box<[u64]>> {
    let counts = LOCAL.try_with(|local| {
        local.block.get().map(|block| {
            // Relaxed: this thread's own stores.
            block.counts.iter().map(|c| c.load(Relaxed)).collect()
        })
    });
    counts.ok().flatten()
}
