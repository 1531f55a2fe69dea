//! BRAVO's table of visible readers (Dice and Kogan, "BRAVO: Biased Locking for
//! Reader-Writer Locks", USENIX ATC 2019): a reader of a lock whose reader bias is on
//! takes the lock by writing a slot of one global table instead of the lock's word,
//! so readers on different CPUs share no cache line; a writer revokes the bias and
//! waits for the readers the table shows for its lock. The lock side (the bias flag,
//! when it is revoked and turned on again) is
//! [`RawRwLock`'s](super::raw_rwlock::RawRwLock); this file is the table, and names
//! no lock.
//!
//! # The table: lanes × columns
//!
//! The paper hashes (lock, thread) over the whole table, so a writer must scan all of
//! it: 4096 slots, 512 cache lines, for every revocation, and the inhibit (nine times
//! the revocation) kept the bias off most of the time. Here the table is a matrix of
//! [`LANES`] rows by [`COLUMNS`] slots of 8 bytes: a thread's lane is its id modulo
//! `LANES`, a lock's column a hash of its address modulo `COLUMNS`, and a reader's
//! slot the crossing of the two:
//!
//! ```text
//!                      column = hash(lock) mod COLUMNS
//!                                   |
//!          +----+----+----+----+----v----+----+----+ ... +----+
//! lane 0   |    |    |    |    |         |    |    |     |    |   one row: COLUMNS
//! lane 1   |    |    |    |    |  slot   |    |    |     |    |   slots (512 B),
//!  ...     |    |    |    |    |    .    |    |    |     |    |   written only by
//! lane 63  |    |    |    |    |    .    |    |    |     |    |   its lane's threads
//!          +----+----+----+----+---------+----+----+ ... +----+
//!   index = (id mod LANES) × COLUMNS + column
//!
//!     63          48 47                         2   1      0
//! +-------------+------------------------------+---+--------------+
//! | id / LANES  |        lock address          | 0 | PUBLISHING   |      a slot
//! +-------------+------------------------------+---+--------------+
//! ```
//!
//! - **Readers of different lanes share no line**: a row is 512 bytes, aligned to
//!   128 (two lines, the adjacent-line prefetch), and only the threads of its lane
//!   write it (a revoking writer withdraws a publishing slot, the one exception).
//! - **A revocation reads one column**: `LANES` slots, each on its own line (rows are
//!   512 bytes apart), whose loads do not depend on one another and so overlap: 64
//!   lines, against the whole table's 512 read one after the other.
//! - **Sizes.** 64 lanes × 64 columns = 4096 slots, 32 KiB (the paper's table size).
//!   64 lanes: threads created together get consecutive kernel ids, so up to 64 of
//!   them land in 64 different lanes and never share a slot; and `id / 64` fits the
//!   16-bit tag for every id the kernel gives (`pid_max` ≤ 2²²). 64 columns: two locks
//!   read at once by one thread share a slot with probability 1/64 (the second then
//!   takes its word); fewer lanes would shorten the scan but put threads created
//!   together in one lane (a collision per 32 with 32 lanes), more would lengthen it.
//!
//! The slot's index and its value give back the lock and the thread's id *exactly*
//! (the index's row the low bits of the id, the tag its high bits; the value the
//! lock): with one bit per column of its own row (which columns it holds, below:
//! whose slot is whose), a thread knows a slot for its own, which a read unlock (it
//! must know whether it holds the lock by a slot or by the word) and a signal handler
//! need. Hence the limits: lock addresses below 2⁴⁸ (every address a Linux
//! process gets unless it asks `mmap` for more) and ids below 2²² (= 2¹⁶ × `LANES`,
//! the kernel's largest `pid_max`); a lock or thread outside them never takes the
//! table, always the word. Two threads of one lane reading one lock, or one thread
//! reading two locks of one column, find the slot taken: the second takes the word.
//!
//! # States of a slot
//!
//! ```text
//! empty -> publishing       the reader's cmpxchg (0 -> value | PUBLISHING)
//! publishing -> held        the reader's cmpxchg, having seen the bias on (its SeqCst load
//!                           after its SeqCst publication)
//! publishing -> empty       the reader backs out (bias off), or a writer withdraws it
//! held -> empty             the read unlock (a Release store)
//! either -> empty           the lock's drop (`forget_lock`): no thread uses the lock
//! ```
//!
//! Only the thread named in a slot writes it, except for a writer's withdrawal of a
//! *publishing* slot and the drop of a lock that no thread uses (below: a lock that
//! dies); so a reader's cmpxchg to `held` fails exactly when a writer
//! withdrew it, and the reader takes the word instead. A writer therefore never waits
//! for a reader that has not entered: not for one preempted between its two
//! cmpxchgs, not for one interrupted there by a signal handler that then waits for
//! the writer (below), and not for a thread that is gone in a fork child.
//!
//! # The store-load pairing
//!
//! ```text
//! reader                              writer (holding WRITER)
//! [S] slot = lock | PUBLISHING        [S] word &= !BIAS
//!     (a SeqCst cmpxchg)                  fence(SeqCst)
//! [L] word & BIAS ?  (a SeqCst load)  [L] slot == lock ?   (its column's LANES slots)
//! ```
//!
//! The reader's two accesses are SeqCst, the writer's are ordered by a SeqCst fence,
//! and the single total order S of SeqCst operations (C++20 [atomics.order] ¶4,
//! Rust's model) forbids a reader that saw the bias on and whose slot the writer
//! missed: the writer's load missing the publication puts its fence before the
//! publication in S (¶4.3), the reader's load missing the clear puts that load before
//! the fence (¶4.2), and the publication precedes the load in S (same thread): a
//! cycle. So either the writer's scan sees the slot (and waits, or withdraws it) or
//! the reader sees the bias off and backs out; and the slot of (lock, thread) is in
//! the lock's column, whichever the thread.
//!
//! The reader pays nothing for it on x86-64 beyond the cmpxchg it makes anyway (a
//! `lock cmpxchg` is a full barrier already, and a SeqCst load a plain `mov`); a
//! fence between the two would be a visible share of an uncontended read lock and
//! unlock (`docs/decisions/waiting.md`: bias-reader-fence). (On
//! AArch64 the pair is an acquire-release cmpxchg and an `ldar`; not measured.)
//! Loom checks the pairing with fences on both sides: it models SeqCst accesses as
//! AcqRel (its README, "Unsupported features"), which would report this pairing
//! broken, so the loom build adds the fence after the reader's cmpxchg, the form of
//! the pairing it models exactly.
//!
//! # Signals and fork
//!
//! A handler on a thread whose slot for the lock is taken (the thread holds the lock
//! through it, or is between its two cmpxchgs) finds the slot occupied and takes the
//! word. If a writer revokes meanwhile, it withdraws a publishing slot instead of
//! waiting for it, so the handler never waits for its own thread; a held slot is a
//! read lock the thread holds, and a handler that read-locks it again while a writer
//! waits deadlocks, as every recursive read lock behind a waiting writer does.
//!
//! A fork child has a copy of the table. A slot of a thread that is not in the child
//! is either publishing (withdrawn by the first writer, as any) or held: a read lock
//! that no thread in the child will release, as the word's count of a reader that
//! held it at the fork. The forking thread keeps its id (a thread-local, copied, not
//! the child's new kernel id), so it finds its own slots and releases them as in the
//! parent. [`RawRwLock::forget_waiters`](super::raw_rwlock::RawRwLock::forget_waiters)
//! turns the held slots of its lock into word readers.
//!
//! # Ids, and whose slot is whose
//!
//! A thread's id is its kernel thread id when it first publishes, passed through
//! the fork child's swap below. A slot's value names an id, and ids come back: the
//! kernel gives a departed thread's tid to a new thread, and a departed thread may
//! leave a slot held (it exited holding a read lock, or it is a parent thread absent
//! from a fork child). So a slot that names a thread's id is not therefore its own:
//! each thread keeps the columns of its row whose slot it published and holds
//! (`HELD_COLUMNS`, a bit per column), and a read unlock releases a slot only if its
//! bit is set and the slot names the lock it releases. A new thread with a departed
//! one's id finds the departed slot taken (its reads of that column take the word),
//! and never releases it: the departed read lock stays held, as the word's count of
//! a departed reader does.
//!
//! Two *live* threads never share an id. In a fork child the forking thread keeps
//! its parent id `p` and has a new kernel tid `c`; the child's fork handler records
//! the pair, and a thread of the child takes its tid as its id except that `p` and
//! `c` trade places (a permutation of the tids, so ids stay distinct however the
//! kernel hands out tids, and a new thread given tid `p` once the parent's thread
//! left takes `c`, which no other thread of the child has). A child's child records
//! its own forking thread's pair instead: every other thread of the parent is absent
//! there. A thread that asks for its id before the handler is registered takes the
//! word until it is.
//!
//! # A lock that dies
//!
//! A read guard leaked with `mem::forget` leaves its slot held after its lock is
//! dropped, and a lock made later at the same address would find it in its column:
//! its first revoking writer would wait for it forever. So `RawRwLock`'s `Drop`
//! empties the slots that name it ([`forget_lock`]): the `&mut` of a drop proves
//! that no guard is alive (a forgotten one cannot reach the lock again), so no
//! thread releases those slots after, and the thread that published one still counts
//! it in `HELD_COLUMNS`: its next read unlock of that column finds the slot empty, or
//! holding one of its own later publications, which is then its own to release. A
//! lock moved out of its place (a move runs no `Drop`) while a forgotten guard's slot
//! names its old address leaves that slot behind, and a lock later made there waits
//! for it; the C API's and the preload's rwlocks never take the table (their
//! `_within_max` read entries keep to the word), so none of their slots outlive them.

use crate::sync::{cpu_relax_times, AtomicU64, Ordering::*};
use crate::wait::Patience;
use std::cell::Cell;

#[cfg(loom)]
use loom::sync::atomic::fence;

/// log₂ of the number of lanes (1 under loom, to keep the models small: model
/// threads have ids 1, 2, ..., so the first two have lanes of their own).
#[cfg(not(loom))]
const LANE_BITS: u32 = 6;
#[cfg(loom)]
const LANE_BITS: u32 = 1;

/// log₂ of the number of columns (1 under loom).
#[cfg(not(loom))]
const COLUMN_BITS: u32 = 6;
#[cfg(loom)]
const COLUMN_BITS: u32 = 1;

/// The table's rows: a thread's lane is its id modulo `LANES`.
pub const LANES: usize = 1 << LANE_BITS;
/// The slots of a row: a lock's column is a hash of its address modulo `COLUMNS`.
pub const COLUMNS: usize = 1 << COLUMN_BITS;
/// The number of slots in the table.
const SLOTS: usize = LANES * COLUMNS;

/// The low bit of a slot's value: published, the bias not yet seen on.
const PUBLISHING: u64 = 1;
/// Where the thread's tag (its id / `LANES`) starts.
const TAG_SHIFT: u32 = 48;
/// The lock's address in a slot's value.
const LOCK_MASK: u64 = ((1 << TAG_SHIFT) - 1) & !3;
/// Threads with an id at or above this take the word: their tag would not fit.
const MAX_ID: u32 = 1 << (64 - TAG_SHIFT + LANE_BITS);

#[cfg(not(loom))]
#[repr(C, align(128))]
struct Table([AtomicU64; SLOTS]);

#[cfg(not(loom))]
static TABLE: Table = Table([const { AtomicU64::new(0) }; SLOTS]);

#[cfg(loom)]
struct Table([AtomicU64; SLOTS]);

#[cfg(loom)]
loom::lazy_static! {
    static ref TABLE: Table = Table(std::array::from_fn(|_| AtomicU64::new(0)));
}

#[cfg(not(loom))]
std::thread_local! {
    /// This thread's id in the table, 0 until it first publishes (no destructor:
    /// readable during thread exit and from the fork handler too).
    static ID: Cell<u32> = const { Cell::new(0) };
    /// The columns of this thread's row whose slot this thread published and holds,
    /// one bit each (module doc: whose slot is whose): only a thread with some looks
    /// at its slot in a read unlock. A signal handler's changes are undone before it
    /// returns, so an update of the interrupted code that misses one loses nothing.
    static HELD_COLUMNS: Cell<u64> = const { Cell::new(0) };
}
#[cfg(loom)]
loom::thread_local! {
    static ID: Cell<u32> = Cell::new(0);
    static HELD_COLUMNS: Cell<u64> = Cell::new(0);
}

const _: () = assert!(
    COLUMNS <= u64::BITS as usize,
    "a column per bit of HELD_COLUMNS"
);

/// This thread's id: [`id_of_tid`] of its kernel thread id when it first asked, kept
/// in a fork child (module doc: ids in a fork child). `u32::MAX` (which fits no slot:
/// the word) while the fork handler that keeps the ids apart is not yet in place.
#[inline]
fn id() -> u32 {
    ID.with(|id| match id.get() {
        0 => fresh_id(id),
        known => known,
    })
}

#[cold]
fn fresh_id(id: &Cell<u32>) -> u32 {
    if !ids_apart_in_fork_children() {
        return u32::MAX;
    }
    let fresh = id_of_tid(crate::owner::current_tid());
    id.set(fresh);
    fresh
}

/// The transposition of ids a fork child applies to its new threads' tids: the
/// forking thread's id in the high half, its kernel tid in the child in the low
/// half; 0 in a process that no fork made, or whose forking thread had no id (or
/// kept its tid). Written by [`swap_ids_in_child`] only, in a child before it has a
/// second thread.
#[cfg(not(loom))]
static FORK_SWAP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The id a thread whose kernel tid is `tid` takes: `tid`, except in a fork child,
/// where the forking thread's id and its new kernel tid trade places. A permutation
/// of the tids, so that two live threads never share an id.
#[cfg(not(loom))]
fn id_of_tid(tid: u32) -> u32 {
    // Relaxed: written in this process's fork handler before any other thread of it
    // existed (thread creation orders it before theirs), never after.
    let swap = FORK_SWAP.load(Relaxed);
    let (forker_id, forker_tid) = ((swap >> 32) as u32, swap as u32);
    match tid {
        _ if swap == 0 => tid,
        tid if tid == forker_id => forker_tid,
        tid if tid == forker_tid => forker_id,
        tid => tid,
    }
}

/// Model threads have small ids of their own, and no fork.
#[cfg(loom)]
fn id_of_tid(tid: u32) -> u32 {
    tid
}

/// Whether [`swap_ids_in_child`] runs in every fork child (registered once).
#[cfg(not(loom))]
fn ids_apart_in_fork_children() -> bool {
    static INSTALLED: crate::config::resolved::Resolved = crate::config::resolved::Resolved::new();
    crate::owner::at_fork_child(&INSTALLED, swap_ids_in_child)
}

#[cfg(loom)]
fn ids_apart_in_fork_children() -> bool {
    true
}

/// Runs in a fork child, on its only thread (the forking one), before the child's
/// own code: that thread keeps its id, which its slots name, and its new kernel tid
/// takes the id's place for the child's new threads (`id_of_tid`).
#[cfg(not(loom))]
extern "C" fn swap_ids_in_child() {
    let kept = ID.with(Cell::get);
    // SAFETY: gettid has no preconditions and cannot fail (async-signal-safe).
    let tid = unsafe { libc::gettid() } as u32;
    let swap = if kept == 0 || kept == u32::MAX || kept == tid {
        0
    } else {
        (u64::from(kept) << 32) | u64::from(tid)
    };
    // Relaxed: read by this thread and by threads the child creates later.
    FORK_SWAP.store(swap, Relaxed);
}

/// Whether `lock` (an address) and this thread's `id` fit in a slot.
fn fits(lock: usize, id: u32) -> bool {
    (lock as u64) & !LOCK_MASK == 0 && id < MAX_ID
}

/// The lock's column (Fibonacci hashing of the address: its top bits).
#[cfg(not(loom))]
fn column_of(lock: u64) -> usize {
    ((lock >> 2).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - COLUMN_BITS)) as usize
}

/// Under loom, column 0: a column that followed the lock's address, which differs
/// from one execution to the next, would make the explorations differ.
#[cfg(loom)]
fn column_of(_: u64) -> usize {
    0
}

/// The slot of `(lock, id)`, its column, and the value that says "held".
fn slot_of(lock: usize, id: u32) -> (&'static AtomicU64, usize, u64) {
    let lock = lock as u64;
    let lane = id as usize & (LANES - 1);
    let held = (u64::from(id >> LANE_BITS) << TAG_SHIFT) | lock;
    let column = column_of(lock);
    (&TABLE.0[lane * COLUMNS + column], column, held)
}

/// The slots of `lock`'s column, one per lane: every slot a reader of `lock` can hold.
fn column(lock: u64) -> impl Iterator<Item = &'static AtomicU64> {
    let column = column_of(lock);
    (0..LANES).map(move |lane| &TABLE.0[lane * COLUMNS + column])
}

/// This thread now holds its slot of `column` (`true`) or no longer does.
fn note_held(column: usize, held: bool) {
    let bit = 1u64 << column;
    HELD_COLUMNS.with(|h| h.set(if held { h.get() | bit } else { h.get() & !bit }));
}

/// A reader enters `lock` through the table: publishes itself in its slot, and
/// enters if `bias_on()` (a SeqCst load of the lock's word, which as an Acquire also
/// orders the last write section before this read section) is true then. Whether it
/// holds the lock; `false` leaves nothing behind (the slot taken, the bias off, or a
/// writer's withdrawal): the caller takes the word.
#[inline]
pub(crate) fn try_enter(lock: usize, bias_on: impl FnOnce() -> bool) -> bool {
    let id = id();
    if !fits(lock, id) {
        return false;
    }
    let (slot, column, held) = slot_of(lock, id);
    let publishing = held | PUBLISHING;
    // SeqCst: with `bias_on`'s SeqCst load, pairs with the writer's fence in
    // `RawRwLock::revoke_bias`, between its clearing of the bias and its scan (module
    // doc: the store-load pairing). It publishes no data (a writer's section waits
    // for the unlock's Release store instead). A failure changes nothing: Relaxed.
    if slot
        .compare_exchange(0, publishing, SeqCst, Relaxed)
        .is_err()
    {
        return false;
    }
    // Loom models the SeqCst accesses as AcqRel: the fence is the pairing's form it
    // checks (module doc).
    #[cfg(loom)]
    fence(SeqCst);
    if bias_on() {
        // Relaxed: the entry's Acquire was `bias_on`'s load; this only tells a
        // revoking writer to wait rather than withdraw, and fails if it withdrew.
        if slot
            .compare_exchange(publishing, held, Relaxed, Relaxed)
            .is_ok()
        {
            note_held(column, true);
            return true;
        }
        return false;
    }
    // Relaxed: backing out of a slot that no writer waits for (it withdraws
    // publishing slots); fails if a writer withdrew it first.
    let _ = slot.compare_exchange(publishing, 0, Relaxed, Relaxed);
    false
}

/// A read unlock through the table: whether this thread held `lock` by its slot
/// (now released; the lock is not touched). `false`: the caller releases the word.
#[inline]
pub(crate) fn leave(lock: usize) -> bool {
    if HELD_COLUMNS.with(Cell::get) == 0 {
        return false;
    }
    leave_held(lock)
}

#[inline(never)]
fn leave_held(lock: usize) -> bool {
    let id = id();
    if !fits(lock, id) {
        return false;
    }
    let (slot, column, held) = slot_of(lock, id);
    // A slot this thread did not publish is not its own, even if it names the lock
    // and this thread's id: a departed thread's (module doc: whose slot is whose).
    if HELD_COLUMNS.with(Cell::get) & (1 << column) == 0 {
        return false;
    }
    // Relaxed: only this thread writes a slot that names it as held (ids are unique
    // among live threads), but for a dropped lock's `forget_lock`, which ran
    // before this thread could use the memory again.
    if slot.load(Relaxed) != held {
        return false;
    }
    // Release: pairs with the Acquire load of a revoking writer's scan, which then
    // orders this read section before its write section. The last access: the lock
    // may be freed as soon as a writer sees it.
    slot.store(0, Release);
    note_held(column, false);
    true
}

/// Whether this thread holds `lock` by its slot (as [`leave`] would find it), without
/// releasing it: a recursive read may then enter by the word past a revoking writer,
/// which waits for that slot before it drains the word's readers.
pub(crate) fn held_here(lock: usize) -> bool {
    if HELD_COLUMNS.with(Cell::get) == 0 {
        return false;
    }
    let id = id();
    if !fits(lock, id) {
        return false;
    }
    let (slot, column, held) = slot_of(lock, id);
    // Relaxed: only this thread writes a slot that names it as held (as in `leave`).
    HELD_COLUMNS.with(Cell::get) & (1 << column) != 0 && slot.load(Relaxed) == held
}

/// What a revoking writer finds in a slot of its lock's column.
enum Found {
    /// Not a reader of the lock (empty, or another lock's), or a publication it
    /// withdrew.
    Nobody,
    /// A reader of the lock inside.
    Reader,
}

/// A revoking writer's look at `slot` for `lock`: withdraws a publication, reports a
/// held slot.
fn look(slot: &AtomicU64, lock: u64) -> Found {
    loop {
        // Acquire: pairs with the Release store of the read unlock.
        let val = slot.load(Acquire);
        if val & LOCK_MASK != lock {
            return Found::Nobody;
        }
        if val & PUBLISHING == 0 {
            return Found::Reader;
        }
        // Relaxed: that reader has not entered; its commit fails and it takes the
        // word, behind this writer.
        if slot.compare_exchange(val, 0, Relaxed, Relaxed).is_ok() {
            return Found::Nobody;
        }
    }
}

/// Holding the lock's `WRITER` with its bias just cleared (and a SeqCst fence after):
/// withdraws every slot still publishing for `lock`, and waits until none holds it.
/// `false` if `patience` ran out first (readers still hold it). Reads `lock`'s column
/// only: `LANES` slots.
pub(crate) fn wait_for_readers(lock: usize, patience: Patience) -> bool {
    let lock = lock as u64;
    for slot in column(lock) {
        let mut looks = 0u32;
        while let Found::Reader = look(slot, lock) {
            if patience.expired() {
                return false;
            }
            looks += 1;
            pause_for_reader(looks, patience);
        }
    }
    true
}

/// Looks at a reader's slot spent spinning, then yielding, before the writer naps.
const SPIN_LOOKS: u32 = 64;
const YIELD_LOOKS: u32 = 64;
/// The first nap, in microseconds; each next one doubles, up to 2⁶ times as long
/// (1 ms).
const FIRST_NAP_US: u64 = 16;
const NAP_DOUBLINGS: u32 = 6;

/// Between a revoking writer's `looks` at a table reader still inside. A reader's
/// unlock is one store to its own slot and wakes nobody (a wake would need a
/// store-load fence in every read unlock, to pair with the writer's "I sleep"), so
/// the writer polls: it spins first (a reader inside is usually one read section
/// away), then yields (a preempted reader gets the CPU), then naps, doubling from
/// 16 µs to 1 ms, so that a reader that stays inside (I/O in its section, or asleep
/// in another lock) costs the writer no CPU, and its unlock reaches the writer
/// within 1 ms.
fn pause_for_reader(looks: u32, patience: Patience) {
    if looks < SPIN_LOOKS {
        cpu_relax_times(16);
    } else if looks < SPIN_LOOKS + YIELD_LOOKS {
        crate::sync::yield_now();
    } else {
        let doublings = (looks - SPIN_LOOKS - YIELD_LOOKS).min(NAP_DOUBLINGS);
        patience.nap(std::time::Duration::from_micros(FIRST_NAP_US << doublings));
    }
}

/// Whether any thread holds `lock` through the table, withdrawing every slot that
/// only publishes for it (the caller holds `WRITER` and cleared the bias, as for
/// [`wait_for_readers`]): one read of the column, which waits for nobody.
pub(crate) fn any_holder(lock: usize) -> bool {
    let lock = lock as u64;
    // Every slot, not the first reader's: each publication is withdrawn.
    let mut inside = false;
    for slot in column(lock) {
        inside |= matches!(look(slot, lock), Found::Reader);
    }
    inside
}

/// A snapshot for `is_locked`: whether a slot holds `lock`.
pub(crate) fn held_by_any(lock: usize) -> bool {
    let lock = lock as u64;
    // Relaxed: a snapshot.
    column(lock).any(|slot| {
        let val = slot.load(Relaxed);
        val & LOCK_MASK == lock && val & PUBLISHING == 0
    })
}

/// For a fork child's `forget_waiters`: empties every slot of `lock`, and returns
/// how many held it (the caller adds them to the word's count).
///
/// # Safety
/// No other thread uses the lock during the call.
pub(crate) unsafe fn take_holders(lock: usize) -> u32 {
    let lock = lock as u64;
    let mut held = 0;
    for slot in column(lock) {
        // Relaxed: the caller excludes every other thread that could use the lock.
        let val = slot.load(Relaxed);
        if val & LOCK_MASK == lock
            && slot.compare_exchange(val, 0, Relaxed, Relaxed).is_ok()
            && val & PUBLISHING == 0
        {
            held += 1;
        }
    }
    held
}

/// For a lock that dies (`RawRwLock`'s `Drop`, or memory that becomes a new lock):
/// empties every slot that names `lock`, held (a guard leaked with `mem::forget`,
/// or a reader that left without its unlock) or publishing (a reader gone in a fork
/// child), so that a new lock at the same address inherits none.
///
/// # Safety
/// No thread holds or uses the lock at `lock`, and none will (a leaked guard's
/// thread never releases it: it cannot reach the lock).
#[cold]
#[inline(never)]
pub(crate) unsafe fn forget_lock(lock: usize) {
    let lock = lock as u64;
    for slot in column(lock) {
        // Relaxed: the slot names a lock no thread uses; the cmpxchg only keeps a
        // slot its owner published meanwhile for another lock of the column. What
        // hands the memory to a new lock (the allocator, or the caller's own
        // synchronization) orders this store before any use of it.
        let val = slot.load(Relaxed);
        if val & LOCK_MASK == lock {
            let _ = slot.compare_exchange(val, 0, Relaxed, Relaxed);
        }
    }
}

/// For tests and models: publishes this thread for `lock` and stops there, as a
/// thread interrupted between its two cmpxchgs; whether the slot was free.
#[cfg(test)]
pub(crate) fn publish_only(lock: usize) -> bool {
    let (slot, _, held) = slot_of(lock, id());
    // SeqCst: as in `try_enter`.
    slot.compare_exchange(0, held | PUBLISHING, SeqCst, Relaxed)
        .is_ok()
}

/// For tests and models: the rest of `publish_only`'s interrupted entry, backing out;
/// whether the slot was still publishing (no writer withdrew it).
#[cfg(test)]
pub(crate) fn back_out_only(lock: usize) -> bool {
    let (slot, _, held) = slot_of(lock, id());
    // Relaxed: as in `try_enter`.
    slot.compare_exchange(held | PUBLISHING, 0, Relaxed, Relaxed)
        .is_ok()
}

/// For tests: the lane and column of this thread's slot for `lock`.
#[cfg(all(test, not(loom)))]
pub(crate) fn lane_and_column(lock: usize) -> (usize, usize) {
    let (slot, _, _) = slot_of(lock, id());
    let index = (std::ptr::from_ref(slot) as usize - std::ptr::from_ref(&TABLE.0[0]) as usize)
        / std::mem::size_of::<AtomicU64>();
    (index / COLUMNS, index % COLUMNS)
}

/// For tests: this thread's id in the table.
#[cfg(all(test, not(loom)))]
pub(crate) fn id_for_tests() -> u32 {
    id()
}

/// For tests: gives this thread `id`, as if the kernel had given it that tid.
#[cfg(all(test, not(loom)))]
pub(crate) fn force_id_for_tests(id: u32) {
    ID.with(|cached| cached.set(id));
}

/// For tests: the id a thread whose kernel tid is `tid` takes.
#[cfg(all(test, not(loom)))]
pub(crate) fn id_of_tid_for_tests(tid: u32) -> u32 {
    id_of_tid(tid)
}
