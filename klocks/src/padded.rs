//! Cache-line isolation (seed 002): a hot lock owns its whole cache line.
//!
//! Two hot locks (or a lock and unrelated hot data) on one cache line make every
//! acquisition of one invalidate the other's line in every other CPU's cache: false
//! sharing. The seed padded the five hottest kernel spinlocks to a full line
//! (`docs/decisions/waiting.md`: padded-seed-gain). [`Padded<L>`] does the same for any klocks raw lock: it aligns and
//! pads the lock to [`crossbeam_utils::CachePadded`]'s line size (128 bytes on x86-64,
//! because the adjacent-line prefetcher pulls lines in pairs; 64 or more elsewhere), so
//! `lock_api::Mutex<Padded<L>, T>` puts `T` on the next line and nothing else shares
//! the lock's.
//!
//! Pad a lock that many CPUs take often and that sits next to other hot data (arrays of
//! locks, a lock inside a busy struct). Do not pad locks you have millions of (hash
//! bucket locks): 128 bytes each costs more in cache footprint than it saves.

use crossbeam_utils::CachePadded;

/// A raw lock alone on its cache line. Implements the same `lock_api` traits as `L`.
#[derive(Default)]
#[repr(transparent)]
pub struct Padded<L>(CachePadded<L>);

impl<L> Padded<L> {
    /// Pads `lock` to a cache line.
    pub const fn new(lock: L) -> Self {
        Self(CachePadded::new(lock))
    }
}

impl<L> std::ops::Deref for Padded<L> {
    type Target = L;
    fn deref(&self) -> &L {
        &self.0
    }
}

impl<L: std::fmt::Debug> std::fmt::Debug for Padded<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Padded").field(&*self.0).finish()
    }
}

// SAFETY: every operation is `L`'s own, on the one `L` inside.
unsafe impl<L: lock_api::RawMutex> lock_api::RawMutex for Padded<L> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new(L::INIT);
    type GuardMarker = L::GuardMarker;

    #[inline]
    fn lock(&self) {
        self.0.lock();
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.0.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: the caller holds the lock, which is the inner lock.
        unsafe { self.0.unlock() }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::spin::{QSpinLock, TicketLock};

    #[test]
    fn a_padded_lock_owns_its_line() {
        let line = std::mem::align_of::<CachePadded<u8>>();
        assert!(line >= 64);
        assert_eq!(std::mem::size_of::<Padded<QSpinLock>>(), line);
        assert_eq!(std::mem::align_of::<Padded<TicketLock>>(), line);
        let pair = [Padded::new(QSpinLock::new()), Padded::new(QSpinLock::new())];
        let gap = (&pair[1] as *const _ as usize) - (&pair[0] as *const _ as usize);
        assert_eq!(gap, line);
    }

    #[test]
    fn mutex_data_starts_on_the_next_line() {
        let m = lock_api::Mutex::<Padded<TicketLock>, u64>::new(7);
        let line = std::mem::align_of::<CachePadded<u8>>();
        let base = &m as *const _ as usize;
        let data = m.data_ptr() as usize;
        assert_eq!(data - base, line);
        assert_eq!(*m.lock(), 7);
    }

    #[test]
    fn stress_padded() {
        crate::testing::contend::<Padded<QSpinLock>>(
            crate::testing::Contention::threads(2).iterations(100_000),
        )
        .unwrap();
    }
}
