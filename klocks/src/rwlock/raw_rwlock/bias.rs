//! `RawRwLock`'s reader bias (BRAVO, Dice and Kogan, USENIX ATC 2019): while `BIAS`
//! is set in the word, readers take the lock through the global table of visible
//! readers ([`bravo`](crate::rwlock::bravo)) and never write the word; a writer that
//! takes `WRITER` revokes the bias (clears `BIAS`, then waits for the readers the
//! table's column of this lock shows) before its drain of the word's readers; after
//! a revocation the bias stays off for [`INHIBIT_FACTOR`] times what the revocation
//! took, and the first reader that takes the word after that turns it on again.
//!
//! ```text
//! biased read:  BIAS set: slot empty -> publishing (SeqCst); BIAS still set (a SeqCst
//!               load) -> held
//! read unlock:  slot held -> empty (the word untouched)
//! re-enable:    a word reader, after its entry: (r,0,0,..) -> BIAS set, if no writer
//!               holds or waits and the inhibit passed                  cmpxchg
//! revoke:       holding WRITER (exclusive): word &= !BIAS; fence; read the LANES
//!               slots of this lock's column, withdrawing publications; wait for
//!               the held ones; inhibit_until = now + 9 × (the clear and the read)
//! write:        a writer that finds the bias off marks a running inhibit WRITTEN;
//!               a reader that finds a WRITTEN inhibit over starts it again
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
//! The inhibit is the lock's last two bytes (`writers_asleep` is a 16-bit count
//! beside it): a 15-bit clock of 1024 ticks (the TSC's on x86-64, about a third of a
//! microsecond at 3 GHz; nanoseconds elsewhere) and [`WRITTEN`] above it. The paper
//! turns the bias on again as soon as the inhibit passes; that makes a write-heavy
//! lock turn it on for one or two reads at a time and revoke it again at the next
//! write, each cycle costing more than the revocation it was timed by (the readers'
//! publications and the lines they move, the extra cmpxchgs on the word:
//! `docs/decisions/raw-rwlock.md`, bias-inhibit). So a write during the inhibit marks it [`WRITTEN`], and a reader that finds a
//! written inhibit over starts it again instead of turning the bias on: the bias
//! comes back only after an inhibit without writes, which a read-mostly lock gives at
//! once and a write-heavy one never. The clock wraps every 11 ms (33 ms without a
//! TSC), so a lock whose readers all stay away for over half of that after a
//! revocation may find it inhibited once more, for at most as long (its readers take
//! the word meanwhile). One value, [`NEVER_BIASED`], marks a lock made without the
//! bias ([`RawRwLockUnbiased`](crate::RawRwLockUnbiased)): no reader turns it on, so no writer revokes it.

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

/// `inhibit_until`: a writer took the lock during the inhibit, which then starts
/// again when it passes.
const WRITTEN: u16 = 1 << 15;

/// `inhibit_until`: the clock's bits.
#[cfg_attr(loom, allow(dead_code))]
const CLOCK_MASK: u16 = WRITTEN - 1;

/// A clock unit is 2¹⁰ ticks.
#[cfg_attr(loom, allow(dead_code))]
const TICK_SHIFT: u32 = 10;

/// What the last revocation of any lock took, in ticks: the length of an inhibit
/// started again by a reader (a column's read costs about the same for every lock).
/// A hint, not part of any lock's state: a std atomic under loom too.
#[cfg_attr(loom, allow(dead_code))]
static LAST_REVOCATION_TICKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The clock a revocation is timed with, and the inhibit's: the time-stamp counter
/// on x86-64 (a revocation takes a few hundred nanoseconds, which a microsecond
/// clock would call 0 or 1, and the readers look at the clock while an inhibit
/// runs, where `clock_gettime` cost 25 ns), else nanoseconds.
#[cfg(all(not(loom), target_arch = "x86_64"))]
fn ticks() -> u64 {
    // SAFETY: `rdtsc` exists on every x86-64 CPU and has no preconditions.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(all(not(loom), not(target_arch = "x86_64")))]
fn ticks() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the current time into `now`; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// A reader through the word looks at the bias (the word again, and the inhibit
/// clock) once in this many of its entries.
#[cfg(not(loom))]
pub(super) const LOOK_EVERY: u8 = 16;

#[cfg(not(loom))]
std::thread_local! {
    /// This thread's entries through the word left before it looks at the bias (no
    /// destructor: readable during thread exit too).
    static LOOKS_LEFT: Cell<u8> = const { Cell::new(0) };
}

/// Whether this entry through the word looks at the bias: once in [`LOOK_EVERY`]
/// of the thread's. A look reads the lock's line again after the entry's cmpxchg,
/// when under contention another CPU has often taken it meanwhile, and the clock
/// costs a share of a read section (bias-inhibit); the bias comes back at most
/// `LOOK_EVERY` entries of a thread later.
#[cfg(not(loom))]
fn look_due() -> bool {
    LOOKS_LEFT.with(|left| {
        let now = left.get();
        left.set(now.checked_sub(1).unwrap_or(LOOK_EVERY - 1));
        now == 0
    })
}

/// Under loom, every entry looks (the models need the bias to come back).
#[cfg(loom)]
fn look_due() -> bool {
    true
}

/// Time is not modelled under loom.
#[cfg(loom)]
fn ticks() -> u64 {
    0
}

/// The inhibit clock: 15 bits of units of 2¹⁰ ticks.
#[cfg(not(loom))]
fn inhibit_clock() -> u16 {
    (ticks() >> TICK_SHIFT) as u16 & CLOCK_MASK
}

/// The inhibit's end, `len` units from `now` on the inhibit clock: never 0 ("no
/// inhibit") nor `CLOCK_MASK` (which `WRITTEN` would make `NEVER_BIASED`); those
/// become one or two units later.
#[cfg(not(loom))]
fn inhibit_end(now: u16, len: u64) -> u16 {
    match now.wrapping_add(len.min(u64::from(CLOCK_MASK / 4)) as u16) & CLOCK_MASK {
        0 | CLOCK_MASK => 1,
        end => end,
    }
}

/// The inhibit's length for a revocation that took `took` ticks: `INHIBIT_FACTOR`
/// times it, in clock units rounded up, and one more, as the clock's current unit may
/// be nearly over; at most a quarter of the clock's wrap.
#[cfg(not(loom))]
fn inhibit_len(took: u64) -> u64 {
    took.saturating_mul(u64::from(INHIBIT_FACTOR))
        .div_ceil(1 << TICK_SHIFT)
        + 1
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
    /// Revocations this thread made.
    pub(crate) static REVOCATIONS: Cell<u64> = const { Cell::new(0) };
}

impl RawRwLock {
    /// Whether the lock was made without the bias ([`RawRwLockUnbiased`](crate::RawRwLockUnbiased)): its
    /// readers and writers skip every step of the bias, which then costs them one
    /// load from the lock's own line.
    #[inline]
    fn never_biased(&self) -> bool {
        // Relaxed: set at construction and never changed (a writer's mark finds
        // `WRITTEN` set in it, `inhibit` runs only after a revocation).
        self.inhibit_until.load(Relaxed) == NEVER_BIASED
    }

    /// A reader's entry while the bias is on; whether it holds the lock (else it
    /// takes the word).
    #[inline]
    pub(super) fn try_enter_biased(&self) -> bool {
        // Relaxed: a hint that picks the path; the entry's Acquire is the SeqCst load
        // after the publication (in `bravo::try_enter`).
        let entered = !self.never_biased()
            && self.word.load(Relaxed) & BIAS != 0
            // SeqCst: the look at the bias after the publication, which pairs with
            // the revoking writer's fence (`bravo` module doc: the store-load
            // pairing). As an Acquire: the value was written by an RMW in the release
            // sequence of the last write unlock (every change of the word is an
            // RMW), whose section this read then follows.
            && bravo::try_enter(self.address(), || self.word.load(SeqCst) & BIAS != 0);
        if entered {
            stats::count(STATS, Event::BiasedRead);
        }
        entered
    }

    /// A reader that entered through the word turns the bias on if no writer holds
    /// the lock or sleeps for it and the inhibit of the last revocation passed.
    #[inline]
    pub(super) fn enable_bias_if_due(&self) {
        if !look_due() || self.never_biased() {
            return;
        }
        // Relaxed: picks the path; the cmpxchg decides.
        let val = self.word.load(Relaxed);
        if val & (BIAS | WRITER | WRITERS_WAITING) == 0 && self.inhibit_passed() {
            // Relaxed: the flag publishes nothing (readers that see it synchronize
            // with the last write unlock through the release sequence, above).
            if self
                .word
                .compare_exchange(val, val | BIAS, Relaxed, Relaxed)
                .is_ok()
            {
                stats::count(STATS, Event::BiasOn);
            }
        }
    }

    /// Whether the inhibit of the last revocation passed with no write during it.
    /// A reader that finds it passed after writes starts it again.
    fn inhibit_passed(&self) -> bool {
        // Relaxed: a hint; a stale value moves one re-enable by one inhibit.
        let until = self.inhibit_until.load(Relaxed);
        if until == 0 {
            return true;
        }
        #[cfg(not(loom))]
        {
            let now = inhibit_clock();
            // The 15-bit difference, as a signed one: passed when not positive.
            let ahead = (until & CLOCK_MASK).wrapping_sub(now) & CLOCK_MASK;
            if ahead != 0 && ahead < WRITTEN / 2 {
                return false;
            }
            if until & WRITTEN == 0 {
                return true;
            }
            // Relaxed: a hint, as the load.
            let took = LAST_REVOCATION_TICKS.load(Relaxed);
            // Relaxed: a hint; a writer's mark lost to this store moves one re-enable
            // by one inhibit.
            self.inhibit_until
                .store(inhibit_end(now, inhibit_len(took)), Relaxed);
            false
        }
        #[cfg(loom)]
        {
            // A revocation stores 1; the model's switch says whether it passed.
            !INHIBITED_IN_MODELS.with(Cell::get)
        }
    }

    /// A writer took the lock without revoking the bias (it was off): if an inhibit
    /// runs, it is marked [`WRITTEN`] (once: later writers find the mark and store
    /// nothing). Holding `WRITER`, so the lock's line is this CPU's.
    #[inline]
    pub(super) fn note_write(&self) {
        // Relaxed: a hint for the readers' re-enable.
        let until = self.inhibit_until.load(Relaxed);
        if until != 0 && until & WRITTEN == 0 {
            // Relaxed: as above.
            self.inhibit_until.store(until | WRITTEN, Relaxed);
        }
    }

    /// Holding `WRITER` for an exclusive lock (the drain's start): clears `BIAS` and
    /// waits for the readers the table shows for this lock, then inhibits the bias
    /// for [`INHIBIT_FACTOR`] times what clearing it and reading the column took.
    /// `false` if `patience` ran out first: the bias is set again (its readers are
    /// still inside; the next writer revokes it), and the caller releases `WRITER`.
    pub(super) fn revoke_bias(&self, patience: Patience) -> bool {
        self.revoke(Some(patience))
    }

    /// A revocation that must not wait (`try_lock_exclusive`, `try_upgrade`), holding
    /// `WRITER`: whether no reader holds the lock through the table. If one does, the
    /// bias is set again and the caller fails.
    pub(super) fn try_revoke_bias(&self) -> bool {
        self.revoke(None)
    }

    /// `revoke_bias`, waiting for the readers found inside with `wait`, or (`None`)
    /// failing at once if there are any.
    fn revoke(&self, wait: Option<Patience>) -> bool {
        if self.never_biased() {
            return true;
        }
        // Relaxed: exact, as no reader sets BIAS while a writer holds WRITER; the
        // common case of a write-heavy lock, which must not pay for the clock.
        if self.word.load(Relaxed) & BIAS == 0 {
            self.note_write();
            return true;
        }
        let start = ticks();
        // Relaxed: the fence below orders it before the scan.
        self.word.fetch_and(!BIAS, Relaxed);
        // SeqCst: pairs with the reader's SeqCst publication and look at BIAS
        // (`bravo` module doc: the store-load pairing).
        fence(SeqCst);
        stats::count(STATS, Event::BiasRevoke);
        // The revocation's cost is this read of the column: the wait for the readers
        // it found inside is the drain every writer makes, word or table, and a
        // reader preempted in its section would otherwise inhibit the bias for
        // milliseconds.
        let inside = bravo::any_holder(self.address());
        let took = ticks().saturating_sub(start);
        if inside && !wait.is_some_and(|patience| bravo::wait_for_readers(self.address(), patience))
        {
            // Relaxed: readers that see it enter beside the ones still inside,
            // which the next writer's revocation waits for.
            self.word.fetch_or(BIAS, Relaxed);
            return false;
        }
        self.inhibit(took);
        true
    }

    /// The bias stays off for at least `INHIBIT_FACTOR` × `took` ticks
    /// ([`inhibit_len`]), and after that until an inhibit passes without a write.
    #[cfg(not(loom))]
    fn inhibit(&self, took: u64) {
        // Relaxed: a hint for the readers that start an inhibit again.
        LAST_REVOCATION_TICKS.store(took, Relaxed);
        // Relaxed: a hint for the readers' re-enable.
        self.inhibit_until
            .store(inhibit_end(inhibit_clock(), inhibit_len(took)), Relaxed);
        #[cfg(test)]
        REVOCATIONS.with(|r| r.set(r.get() + 1));
    }

    /// Under loom (time is not modelled): the inhibit is on, whatever it lasts.
    #[cfg(loom)]
    fn inhibit(&self, _took: u64) {
        // Relaxed: a hint for the readers' re-enable.
        self.inhibit_until.store(1, Relaxed);
    }

    /// The entry of a writer (or upgradable holder) that finds only `BIAS` in the
    /// word: `BIAS -> BIAS | WRITER | extra`; an exclusive writer then revokes the
    /// bias in its drain. Whether it took `WRITER`.
    #[inline]
    pub(super) fn take_from_biased(&self, me: u32, take: Take) -> bool {
        if self.never_biased() {
            return false;
        }
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

impl RawRwLock {
    /// For memory that stops being this lock or becomes a new one (a C `destroy` or
    /// `init`): empties the slots of the table of visible readers that name this
    /// lock's address, held by read locks that were never released (a thread that
    /// exited holding one, a reader gone in a fork child), so that a lock later made
    /// at this address waits for none of them. The lock's own word is not changed.
    ///
    /// # Safety
    /// No thread uses the lock during the call, and no read lock of it is released
    /// after: the ones held are abandoned with the lock.
    pub unsafe fn forget_table_readers(&self) {
        // SAFETY: the caller's promise.
        unsafe { bravo::forget_lock(self.address()) };
    }
}

/// A dropped lock takes its table readers with it (`bravo::forget_lock`): a read
/// guard leaked with `mem::forget` leaves its slot held, and a new lock at the same
/// address would otherwise wait for it forever. `&mut self`: no guard of the lock is
/// alive, so none releases a slot after this.
impl Drop for RawRwLock {
    fn drop(&mut self) {
        // Relaxed: `&mut self` orders every earlier use of the lock before this.
        // Slots can name the lock only while `BIAS` is set, or while a holder of
        // `WRITER` revokes it (a writer gone in a fork child); otherwise none, and
        // an unbiased or write-heavy lock's drop costs this load.
        if self.word.load(Relaxed) & (BIAS | WRITER) != 0 {
            // SAFETY: `&mut self`: no thread uses the lock, and none will release a
            // read lock of it (a leaked guard cannot reach it).
            unsafe { bravo::forget_lock(self.address()) };
        }
    }
}
