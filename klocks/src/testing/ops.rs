//! The operations the test client drives a lock through: every `lock_api::RawMutex`
//! and `lock_api::RawRwLock` has them; under loom, where locks cannot be
//! `const`-constructed, the locks implement them directly.

/// The operations the client needs. Every `lock_api::RawMutex` has them; under loom,
/// where locks cannot be `const`-constructed, the locks implement it directly.
pub trait TestLock: Send + Sync + 'static {
    /// An unlocked lock.
    fn new_unlocked() -> Self;
    /// Acquire.
    fn acquire(&self);
    /// Release; the caller holds the lock.
    fn release(&self);
}

#[cfg(not(loom))]
impl<L: lock_api::RawMutex + Send + Sync + 'static> TestLock for L {
    fn new_unlocked() -> Self {
        L::INIT
    }
    fn acquire(&self) {
        self.lock();
    }
    fn release(&self) {
        // SAFETY: the client releases only what it acquired on the same thread.
        unsafe { self.unlock() }
    }
}

/// The reader-writer client's operations; every `lock_api::RawRwLock` has them.
pub trait TestRwLock: Send + Sync + 'static {
    /// An unlocked lock.
    fn new_unlocked() -> Self;
    /// Take a read lock.
    fn read(&self);
    /// Release a read lock this thread holds.
    fn read_done(&self);
    /// Take the write lock.
    fn write(&self);
    /// Release the write lock this thread holds.
    fn write_done(&self);
}

#[cfg(not(loom))]
impl<L: lock_api::RawRwLock + Send + Sync + 'static> TestRwLock for L {
    fn new_unlocked() -> Self {
        L::INIT
    }
    fn read(&self) {
        self.lock_shared();
    }
    fn read_done(&self) {
        // SAFETY: the client releases only what it acquired on the same thread.
        unsafe { self.unlock_shared() }
    }
    fn write(&self) {
        self.lock_exclusive();
    }
    fn write_done(&self) {
        // SAFETY: as above.
        unsafe { self.unlock_exclusive() }
    }
}
