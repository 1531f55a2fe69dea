//! The one trait every measured lock implements (`locks` implements it for klocks'
//! locks and the peers, `handicap` for the handicapped default), so that scenarios
//! are generic over the lock and monomorphized for each.

/// A lock as the scenarios use it: build one, run a critical section under it.
///
/// `with` instead of split lock/unlock so that locks whose only API is a guard
/// (`std::sync::Mutex`) fit the same generic code as raw locks.
pub trait BenchLock: Send + Sync + 'static {
    /// The name `--locks` accepts and the tables print.
    const NAME: &'static str;

    /// An unlocked lock.
    fn new() -> Self;

    /// Runs `critical` with the lock held.
    fn with<R>(&self, critical: impl FnOnce() -> R) -> R;

    /// A fork child's repair of its copy of the lock, where the lock needs one
    /// (`torture --freeze`'s fork children); nothing by default.
    ///
    /// # Safety
    /// In a fork child, on the forking thread's continuation, before any other use.
    unsafe fn forget_waiters(&self) {}
}
