//! Releasing a [`SpinFutexMutex`] for the thread that holds it, as glibc lets any
//! thread unlock a normal mutex (one used as a binary semaphore), and asking whether
//! the calling thread holds it: what the interposer needs of the lock beyond
//! `lock_api`.

use super::{owner_of, SpinFutexMutex};
use crate::owner;
use crate::sync::Ordering::*;

impl SpinFutexMutex {
    /// Releases the mutex on behalf of the thread that holds it, from any thread, as
    /// glibc releases a normal mutex that another thread locked (a mutex used as a
    /// binary semaphore: taken in one thread, given back in another). Whether the
    /// mutex was held: `false` leaves an unlocked mutex as it was.
    ///
    /// The release is the holder's own contended unlock made with the holder's id,
    /// `(owner,0,1) -> (0,0,0)` then wake one sleeper, or `(owner,s,w) -> (0,s,w)`
    /// when a spinner takes over the duty to wake: the word cannot tell who runs the
    /// releasing cmpxchg, so every argument of "No lost wake-ups" holds unchanged.
    ///
    /// # Safety
    /// The caller takes the holder's place for this one release: the holder must not
    /// release this hold too (a `lock_api` guard of it must be forgotten), and no
    /// other thread may release it meanwhile.
    ///
    /// # Panics
    /// If another thread releases the same hold between this call's read of the
    /// owner and its release (a broken contract: the word is left untouched).
    pub unsafe fn unlock_for_owner(&self) -> bool {
        // Relaxed: names the hold we release; `unlock_contended` (in
        // `spin_futex_mutex.rs`) reads the word again and its releasing cmpxchg checks
        // that the same owner still holds it.
        let owner = owner_of(self.word.load(Relaxed));
        if owner == 0 {
            return false;
        }
        self.unlock_contended(owner);
        true
    }

    /// Whether the calling thread holds the mutex, as its word says: a caller that may
    /// have had its hold released by [`unlock_for_owner`](Self::unlock_for_owner)
    /// asks this before `lock`, which panics on a relock by the owner.
    pub fn held_by_current_thread(&self) -> bool {
        // Relaxed: only this thread writes its own id into the word, so it reads it
        // if and only if it still holds the lock, or a value after its release.
        owner_of(self.word.load(Relaxed)) == owner::current_tid()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::{OWNER_MASK, WAITERS};
    use super::*;
    use std::sync::Arc;

    #[test]
    fn held_by_current_thread_reads_the_word() {
        let lock = Arc::new(SpinFutexMutex::new());
        assert!(!lock.held_by_current_thread());
        lock.lock();
        assert!(lock.held_by_current_thread());
        let other = Arc::clone(&lock);
        assert!(!std::thread::spawn(move || other.held_by_current_thread())
            .join()
            .unwrap());
        lock.unlock();
        assert!(!lock.held_by_current_thread());
    }

    #[test]
    fn unlock_for_owner_of_an_unlocked_mutex_is_refused() {
        let lock = SpinFutexMutex::new();
        // SAFETY: nobody holds the lock, so no hold is released twice.
        assert!(!unsafe { lock.unlock_for_owner() });
        assert_eq!(lock.word.load(Relaxed), 0);
    }

    #[test]
    fn unlock_for_owner_releases_another_threads_hold_and_wakes_its_sleeper() {
        let lock = Arc::new(SpinFutexMutex::new());
        lock.lock();
        let sleeper = {
            let lock = Arc::clone(&lock);
            std::thread::spawn(move || {
                lock.lock();
                lock.unlock();
            })
        };
        while lock.word.load(Relaxed) & WAITERS == 0 {
            std::thread::yield_now();
        }
        let releaser = Arc::clone(&lock);
        // SAFETY: this thread holds the lock and lets the releaser give it back.
        let released = std::thread::spawn(move || unsafe { releaser.unlock_for_owner() });
        assert!(released.join().unwrap());
        sleeper.join().unwrap();
        assert_eq!(lock.word.load(Relaxed) & (OWNER_MASK | WAITERS), 0);
    }
}
