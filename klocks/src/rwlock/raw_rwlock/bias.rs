//! `RawRwLock`'s reader bias (BRAVO, Dice and Kogan, USENIX ATC 2019): while `BIAS`
//! is set in the word, readers take the lock through the global table of visible
//! readers ([`bravo`](crate::rwlock::bravo)) and never write the word; a writer that
//! takes `WRITER` revokes the bias (clears `BIAS`, then waits for the readers the
//! table's column of this lock shows) before its drain of the word's readers; after
//! a revocation the bias stays off for [`INHIBIT_FACTOR`] times what the revocation
//! took, and the first reader that takes the word after that turns it on again.
//!
//! ```text
//! biased read:  BIAS set: slot empty -> publishing; fence; BIAS still set -> held
//! read unlock:  slot held -> empty (the word untouched)
//! re-enable:    a word reader, after its entry: (r,0,0,..) -> BIAS set, if no writer
//!               holds or waits and the inhibit passed                  cmpxchg
//! revoke:       holding WRITER (exclusive): word &= !BIAS; fence; wait for the
//!               LANES slots of this lock's column; inhibit_until = now + 9 × (time
//!               it took)
//! ```
//!
//! `BIAS` is set only while no writer holds `WRITER`, and cleared only by a holder of
//! `WRITER` that then waits for the table's readers (or that gives up waiting and
//! sets it again, its readers still inside), by a fork child's `forget_waiters`
//! (which turns the table's readers into word readers) — so a slot held for a lock
//! whose `BIAS` is clear belongs to a revocation in progress, and a writer that
//! takes `WRITER` from a word without `BIAS` owes no revocation. An upgradable
//! holder leaves the bias as it is (readers enter beside it in any case); its
//! upgrade revokes it.
//!
//! The inhibit is a 16-bit clock of microseconds in the lock's last two bytes
//! (`writers_asleep` is a 16-bit count beside it): it wraps every 65 ms, so a lock
//! whose readers all stay away for over half of that after a revocation may find it
//! inhibited once more, for at most as long (its readers take the word meanwhile).
//! One value, [`NEVER_BIASED`], marks a lock made without the bias
//! ([`RawRwLock::new_unbiased`]): no reader turns it on, so no writer revokes it.

use super::*;
use crate::rwlock::bravo;
#[cfg(loom)]
use loom::sync::atomic::fence;
#[cfg(not(loom))]
use std::sync::atomic::fence;

/// The bias stays off this many times as long as the revocation took (the paper's N).
// Used by the native clock only (time is not modelled under loom).
#[cfg_attr(loom, allow(dead_code))]
pub const INHIBIT_FACTOR: u32 = 9;

/// `inhibit_until` of a lock without reader bias: never passes.
pub(super) const NEVER_BIASED: u16 = u16::MAX;

/// The inhibit clock: microseconds, wrapping at 2¹⁶.
#[cfg(not(loom))]
fn inhibit_clock() -> u16 {
    now_us() as u16
}

/// The clock a revocation is timed with: nanoseconds (a revocation takes well under
/// a microsecond when no reader is inside, which a microsecond clock would call 0
/// or 1, an inhibit of 0 or 9 µs).
#[cfg(not(loom))]
fn now_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the current time into `now`; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Time is not modelled under loom.
#[cfg(loom)]
fn now_ns() -> u64 {
    0
}

#[cfg(loom)]
std::thread_local! {
    /// Under loom (time is not modelled): whether a revoked bias stays inhibited.
    /// Off except in the models that turn it on; a std thread-local, as the other
    /// model switches.
    pub(crate) static INHIBITED_IN_MODELS: Cell<bool> = const { Cell::new(false) };
}

#[cfg(all(test, not(loom)))]
std::thread_local! {
    /// Revocations this thread made, and the inhibit they granted in all (µs).
    pub(crate) static REVOCATIONS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

impl RawRwLock {
    /// A reader's entry while the bias is on; whether it holds the lock (else it
    /// takes the word).
    #[inline]
    pub(super) fn try_enter_biased(&self) -> bool {
        // Relaxed: a hint that picks the path; the entry's Acquire is the load after
        // the fence.
        self.word.load(Relaxed) & BIAS != 0
            // Acquire: the value was written by an RMW in the release sequence of
            // the last write unlock (every change of the word is an RMW), whose
            // section this read then follows.
            && bravo::try_enter(self.address(), || self.word.load(Acquire) & BIAS != 0)
    }

    /// A reader that entered through the word turns the bias on if no writer holds
    /// the lock or sleeps for it and the inhibit of the last revocation passed.
    #[inline]
    pub(super) fn enable_bias_if_due(&self) {
        // Relaxed: picks the path; the cmpxchg decides.
        let val = self.word.load(Relaxed);
        if val & (BIAS | WRITER | WRITERS_WAITING) == 0 && self.inhibit_passed() {
            // Relaxed: the flag publishes nothing (readers that see it synchronize
            // with the last write unlock through the release sequence, above).
            let _ = self
                .word
                .compare_exchange(val, val | BIAS, Relaxed, Relaxed);
        }
    }

    fn inhibit_passed(&self) -> bool {
        // Relaxed: a hint; a stale value moves one re-enable by one revocation.
        let until = self.inhibit_until.load(Relaxed);
        if until == 0 {
            return true;
        }
        if until == NEVER_BIASED {
            return false;
        }
        #[cfg(not(loom))]
        {
            until.wrapping_sub(inhibit_clock()) as i16 <= 0
        }
        #[cfg(loom)]
        {
            // A revocation stores 1; the model's switch says whether it passed.
            !INHIBITED_IN_MODELS.with(Cell::get)
        }
    }

    /// Holding `WRITER` for an exclusive lock (the drain's start): clears `BIAS` and
    /// waits for the readers the table shows for this lock, then inhibits the bias.
    /// `false` if `patience` ran out first: the bias is set again (its readers are
    /// still inside; the next writer revokes it), and the caller releases `WRITER`.
    pub(super) fn revoke_bias(&self, patience: Patience) -> bool {
        // Relaxed: the fence below orders it before the scan.
        if self.word.fetch_and(!BIAS, Relaxed) & BIAS == 0 {
            return true;
        }
        // SeqCst: pairs with the reader's fence between its publication and its
        // look at BIAS (`bravo` module doc).
        fence(SeqCst);
        let start = now_ns();
        if !bravo::wait_for_readers(self.address(), patience) {
            // Relaxed: readers that see it enter beside the ones still inside,
            // which the next writer's revocation waits for.
            self.word.fetch_or(BIAS, Relaxed);
            return false;
        }
        self.inhibit(now_ns().saturating_sub(start));
        true
    }

    /// A revocation that must not wait (`try_lock_exclusive`, `try_upgrade`), holding
    /// `WRITER`: whether no reader holds the lock through the table. If one does, the
    /// bias is set again and the caller fails.
    pub(super) fn try_revoke_bias(&self) -> bool {
        // Relaxed: as in `revoke_bias`.
        if self.word.fetch_and(!BIAS, Relaxed) & BIAS == 0 {
            return true;
        }
        // SeqCst: as in `revoke_bias`.
        fence(SeqCst);
        if bravo::any_holder(self.address()) {
            // Relaxed: as in `revoke_bias`.
            self.word.fetch_or(BIAS, Relaxed);
            return false;
        }
        self.inhibit(0);
        true
    }

    /// The bias stays off for at least `INHIBIT_FACTOR` × `took_ns`: rounded up to
    /// microseconds, and one more, as the clock's current microsecond may be nearly
    /// over; at most 16 ms (a quarter of the clock's wrap).
    #[cfg(not(loom))]
    fn inhibit(&self, took_ns: u64) {
        let us = took_ns
            .saturating_mul(u64::from(INHIBIT_FACTOR))
            .div_ceil(1000)
            .min(0x4000) as u32
            + 1;
        let until = match inhibit_clock().wrapping_add(us as u16) {
            // 0 means "no inhibit" and NEVER_BIASED "never": one or two µs later.
            0 | NEVER_BIASED => 1,
            until => until,
        };
        // Relaxed: a hint for the readers' re-enable.
        self.inhibit_until.store(until, Relaxed);
        #[cfg(test)]
        REVOCATIONS.with(|r| {
            let (n, total) = r.get();
            r.set((n + 1, total + u64::from(us)));
        });
    }

    /// Under loom (time is not modelled): the inhibit is on, whatever it lasts.
    #[cfg(loom)]
    fn inhibit(&self, _took_ns: u64) {
        // Relaxed: a hint for the readers' re-enable.
        self.inhibit_until.store(1, Relaxed);
    }

    /// The entry of a writer (or upgradable holder) that finds only `BIAS` in the
    /// word: `BIAS -> BIAS | WRITER | extra`; an exclusive writer then revokes the
    /// bias in its drain. Whether it took `WRITER`.
    #[inline]
    pub(super) fn take_from_biased(&self, me: u32, take: Take) -> bool {
        // Acquire: pairs with the Release of the unlocks, as the fast path's.
        if self
            .word
            .compare_exchange(BIAS, BIAS | WRITER | take.extra(), Acquire, Relaxed)
            .is_err()
        {
            return false;
        }
        // Relaxed: as in `lock_exclusive`.
        self.writer.store(me, Relaxed);
        if take == Take::Exclusive {
            self.drain_readers(Patience::Forever);
        }
        true
    }

    /// Whether a reader holds the lock through the table (a snapshot, which reads
    /// the lock's column).
    pub(super) fn has_biased_readers(&self) -> bool {
        bravo::held_by_any(self.address())
    }

    /// A fork child's lock: its table readers become word readers, and the bias off.
    ///
    /// # Safety
    /// No other thread uses the lock during the call.
    pub(super) unsafe fn forget_biased_readers(&self) {
        // SAFETY: the caller's promise.
        let held = unsafe { bravo::take_holders(self.address()) };
        // Relaxed: the caller excludes every other thread.
        self.word.fetch_add(held * READER, Relaxed);
        self.word.fetch_and(!BIAS, Relaxed);
    }
}

/// [`RawRwLock`] without reader bias: every reader writes the word, as before the
/// bias. Its own type, so that the catalog lists it beside the default rwlock (the
/// before of the bias, measured in the same runs); it is a `RawRwLock` whose
/// `inhibit_until` never passes, and derefs to it for everything else.
#[repr(transparent)]
pub struct RawRwLockUnbiased(RawRwLock);

impl RawRwLockUnbiased {
    /// An unlocked lock without reader bias.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self(RawRwLock::with_bias(false))
    }
}

#[cfg(not(loom))]
impl Default for RawRwLockUnbiased {
    fn default() -> Self {
        Self::new()
    }
}

impl std::ops::Deref for RawRwLockUnbiased {
    type Target = RawRwLock;
    fn deref(&self) -> &RawRwLock {
        &self.0
    }
}

impl std::fmt::Debug for RawRwLockUnbiased {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
