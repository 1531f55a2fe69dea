//! The thread id `lock_api::ReentrantMutex` compares with its owner's, so that
//! [`ReentrantMutex`](crate::ReentrantMutex) is `lock_api`'s reentrant mutex on the
//! default [`RawMutex`](crate::RawMutex): the owning thread re-enters by a count
//! beside the raw lock, and only its first entry and last exit take and release it.

use std::num::NonZeroUsize;

/// The calling thread's kernel id ([`owner::current_tid`](crate::owner::current_tid)),
/// for `lock_api::ReentrantMutex`: unique among live threads and never zero, and
/// cached per thread, so the re-entry check is a thread-local read.
pub struct RawThreadId;

// SAFETY: two threads that are alive at once never have the same kernel id, and the
// id is nonzero (the kernel numbers threads from 1).
unsafe impl lock_api::GetThreadId for RawThreadId {
    const INIT: Self = RawThreadId;

    fn nonzero_thread_id(&self) -> NonZeroUsize {
        NonZeroUsize::new(crate::owner::current_tid() as usize)
            .expect("klocks: the kernel gave this thread id 0")
    }
}
