//! The `PerfSwitch` probe: each watched thread's context switches, as the kernel
//! records them in a perf ring that waiters read with plain loads.
//!
//! **The event.** A watched thread opens, on itself, a software "dummy" event (it
//! counts nothing) with `context_switch = 1`: the kernel then writes a
//! `PERF_RECORD_SWITCH` record into the event's ring every time the thread is switched
//! in, and one with `PERF_RECORD_MISC_SWITCH_OUT` in `misc` every time it is switched
//! out (preempted, blocked, or yielding). `exclude_kernel` and `exclude_hv` keep the
//! event legal at `perf_event_paranoid = 2` for one's own threads. The ring is 1 page
//! of header (`perf_event_mmap_page`) and 1 data page (512 records), mapped `PROT_READ`
//! only: a read-only ring is an *overwrite* ring, the kernel never waits for a reader
//! and nobody consumes. With `write_backward = 1` (Linux ≥ 4.7) the kernel writes each
//! record just *below* the previous one and publishes its start as `data_head`, so the
//! newest record is the one at `data_head`; without it (the fallback) the kernel
//! writes forward and the newest record ends at `data_head`. Either way a switch
//! record is its 8-byte header alone (no `sample_id_all`), so the newest one is found
//! without walking the ring. No record yet means no switch since the thread opened
//! the event on itself, i.e. it has been running since.
//!
//! **The registry.** Waiters know an owner by its tid, so the rings are found through
//! one static table of [`REGISTRY_SLOTS`] slots, never freed (type-stable, as the MCS
//! nodes are): a thread registers in the first free slot of the [`PROBE_WINDOW`] slots
//! from `tid % REGISTRY_SLOTS`, and `Watch::new(tid)` scans those same slots. Tids are
//! handed out sequentially, so live threads rarely collide. The keys sit densely in
//! their own array (a window is one or two cache lines), the slots' reader counts
//! each on their own line (waiters of different owners do not bounce each other).
//! A thread that finds no free slot, the budget spent (below), or whose
//! `perf_event_open`/`mmap` is refused (fd or locked-memory limits), stays
//! unregistered and waiters get `None`.
//!
//! **The budget.** A registration holds one fd and 2 locked pages until its thread
//! exits, so a program whose hundreds of threads all meet contention at some point
//! would hold hundreds of extra fds (`EMFILE`, `select()`'s `FD_SETSIZE`) and spend the
//! user's perf locked-memory allowance (`perf_event_mlock_kb`, then `RLIMIT_MEMLOCK`),
//! which profilers need too. So at most [`MAX_WATCHED`] registrations are alive in a
//! process at once, counted in [`REGISTERED`]: `register` reserves a place before
//! `perf_event_open` (a CAS loop that never passes the cap) and `retire` gives it back
//! once the fd is closed and the ring unmapped; the fork handler resets the count
//! with the table. A thread that finds the budget spent stays unregistered like any
//! refused one (`Own::Refused`, never tried again, even once places free up: its
//! `watch_current` stays a thread-local read), and waiters of that owner get `None`,
//! so they fall back to the time budget (`crate::budget`). The first owners to meet
//! contention get the places, and keep them for their lifetime.
//!
//! **A tid is never trusted after its thread exited.** Each slot's key is
//! `generation << 32 | tid`, and the generation grows every time the slot is claimed,
//! so a waiter holding a key can tell "the same thread" from "another thread that got
//! the same (recycled) tid and the same slot". The slot of an exiting thread is
//! retired by a thread-local destructor, which must not unmap the ring under a
//! reader. The protocol, a Dekker pair over `readers` and the key, all four accesses
//! `SeqCst`:
//!
//! ```text
//!   waiter (read_switch)                   exiting owner (retire)
//!   [R1] readers += 1          SeqCst      [T1] key = (gen, BUSY)          SeqCst
//!   [R2] key == mine?          SeqCst      [T2] wait until readers == 0    SeqCst
//!        yes: read the ring                     munmap, close
//!   [R3] readers -= 1          Release     [T3] key = (gen, FREE)          Release
//! ```
//!
//! In the single total order of `SeqCst` operations either [T2] comes after [R1], and
//! then [T2] sees the waiter's count and waits for [R3] (whose Release pairs with
//! [T2]'s acquire: the ring reads happen before the munmap); or [T2] comes before
//! [R1], and then [T1] does too, so [R2] reads `BUSY` or a later key and the waiter
//! never touches the ring. With `Release`/`Acquire` alone both sides could read the
//! other's old value (store buffering) and a waiter would read an unmapped page.
//! A waiter that sees its key gone knows the thread has exited (its destructor runs
//! on its way out), so it answers "not running" from then on.
//!
//! **The price.** A registered thread pays at every context switch it makes, watched
//! or not (about twice a yield ping-pong's switch: `docs/decisions/waiting.md`, perf-probe-price).
//! `price.rs` keeps that a small share of its CPU time: a thread that switches more
//! often than once per [`CPU_PER_SWITCH_NS`](price::CPU_PER_SWITCH_NS) of CPU moves
//! its slot to the clock (below), where waiters watch it through its CPU clock.
//!
//! **Fork.** The kernel does not copy perf mappings into a child (`VM_DONTCOPY`), so a
//! child that read a parent thread's slot would fault. The child's `pthread_atfork`
//! handler (see `owner.rs`) empties the table and forgets the forking thread's
//! registration before the child runs any Rust code.

use std::cell::Cell;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{
    compiler_fence, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release, SeqCst},
};

use crossbeam_utils::CachePadded;

use super::fork_child::at_fork_child;
use super::tid::current_tid;
use crate::config::resolved::Resolved;

pub(super) mod price;
mod ring;
pub(super) use ring::check;
use ring::{
    layout, map_ring, newest_switch, open_event, settled_layout, unmap_ring, RingLayout, Seen,
};

use super::cpu_clock::ClockWatch;

/// Slots in the registry: threads that can be watched at once (fewer when tids
/// collide). 16 KiB of keys and 128 KiB of slots, zero pages until touched.
pub(super) const REGISTRY_SLOTS: usize = 2048;
/// Slots a thread may register in, and a waiter scans, from `tid % REGISTRY_SLOTS`.
pub(super) const PROBE_WINDOW: usize = 8;

/// `PerfSwitch` registrations alive in a process at once, at most (the budget in
/// `owner/perf.rs`): 32 fds, and 32 rings of 2 pages, 256 KiB with 4 KiB pages. That
/// is half the default per-user perf allowance even on one CPU
/// (`perf_event_mlock_kb`, 516 KiB, which the kernel multiplies by the number of
/// online CPUs), so a profiler and other processes of the user keep the rest. With
/// 64 KiB pages a ring is 128 KiB and the allowance 576 KiB per CPU: past it `mmap`
/// charges `RLIMIT_MEMLOCK` and may be refused, and those threads stay unregistered.
pub const MAX_WATCHED: usize = 32;

/// The `tid` half of a key: a slot nobody holds.
const FREE: u32 = 0;
/// The `tid` half of a key: a slot being set up or torn down (never a real tid,
/// which is below 2^22).
const BUSY: u32 = u32::MAX;
/// A flag of the `tid` half of a key: the thread, alive, has no ring any more and is
/// watched through its CPU clock (`price.rs`). Real tids are below 2^22.
const CLOCK: u32 = 1 << 30;

/// One registered thread's ring, as waiters see it.
#[derive(Debug)]
struct Slot {
    /// Waiters between [R1] and [R3] (see the module doc).
    readers: AtomicU32,
    /// The event's fd, `-1` when none; touched only by the owning thread (and the
    /// fork handler).
    fd: AtomicI32,
    /// The mapped ring; valid while the key names a live thread.
    ring: AtomicPtr<u8>,
}

/// Every slot, and its key.
struct Registry {
    /// `generation << 32 | tid`, where tid is [`FREE`], [`BUSY`] or a live thread.
    keys: [AtomicU64; REGISTRY_SLOTS],
    slots: [CachePadded<Slot>; REGISTRY_SLOTS],
}

static REGISTRY: Registry = Registry {
    keys: [const { AtomicU64::new(pack(0, FREE)) }; REGISTRY_SLOTS],
    slots: [const {
        CachePadded::new(Slot {
            readers: AtomicU32::new(0),
            fd: AtomicI32::new(-1),
            ring: AtomicPtr::new(std::ptr::null_mut()),
        })
    }; REGISTRY_SLOTS],
};

const fn pack(generation: u32, tid: u32) -> u64 {
    (generation as u64) << 32 | tid as u64
}

fn tid_of(key: u64) -> u32 {
    key as u32
}

/// Whether a key names a thread watched through its CPU clock.
fn is_clock(key: u64) -> bool {
    tid_of(key) != BUSY && tid_of(key) & CLOCK != 0
}

fn generation_of(key: u64) -> u32 {
    (key >> 32) as u32
}

/// The slots thread `tid` may live in.
fn window(tid: u32) -> impl Iterator<Item = usize> {
    (0..PROBE_WINDOW).map(move |i| (tid as usize + i) % REGISTRY_SLOTS)
}

/// A thread's registration, as a waiter found it.
#[derive(Clone, Copy, Debug)]
struct Found {
    slot: usize,
    key: u64,
}

/// Looks `tid` up in the registry.
fn find(tid: u32) -> Option<Found> {
    window(tid).find_map(|slot| {
        // Relaxed: only a hint; `read_switch` validates the key again with SeqCst
        // before it touches the ring.
        let key = REGISTRY.keys[slot].load(Relaxed);
        (tid_of(key) == tid || tid_of(key) == tid | CLOCK).then_some(Found { slot, key })
    })
}

/// Reads the ring of a thread found earlier; `None` when the thread is gone.
fn read_switch(found: Found, layout: &RingLayout) -> Option<Seen> {
    let slot = &REGISTRY.slots[found.slot];
    // [R1] SeqCst: the Dekker pair with [T1]/[T2] in `retire` (module doc).
    slot.readers.fetch_add(1, SeqCst);
    // [R2] SeqCst: see [R1]. Seeing our key also acquires the `ring` store that
    // `register` published with it (a SeqCst load is an acquire).
    let seen = (REGISTRY.keys[found.slot].load(SeqCst) == found.key).then(|| {
        // Relaxed: ordered by [R2].
        let ring = slot.ring.load(Relaxed);
        // SAFETY: our key is still in the slot and we are counted in `readers`, so
        // the owner's `retire` waits for us before it unmaps the ring; the ring was
        // mapped with the process's layout before the key was published.
        unsafe { newest_switch(ring, layout) }
    });
    // [R3] Release: our ring reads happen before [T2] sees us gone and unmaps.
    slot.readers.fetch_sub(1, Release);
    seen
}

/// This thread's registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Own {
    /// `watch_current` was never called (or the thread is a fork child).
    Untried,
    /// It was, and perf or the registry refused: never tried again.
    Refused,
    /// Registered in this slot.
    Slot(usize),
    /// Moved to the clock: this slot holds its key with [`CLOCK`], no ring.
    Clock(usize),
    /// `watch_current` is registering the thread: a signal handler that interrupts
    /// it and meets contention leaves the thread unobservable for its own lock call.
    /// A second registration of one thread would take a second slot, which the
    /// thread's exit would never retire. Also set while the thread moves its slot to
    /// the clock, for the same reason.
    Registering,
}

std::thread_local! {
    /// No destructor, so the fork handler can reset it without registering one.
    static OWN: Cell<Own> = const { Cell::new(Own::Untried) };
    /// Its destructor retires the slot when the thread exits.
    static RETIRE_AT_EXIT: RetireAtExit = const { RetireAtExit };
}

struct RetireAtExit;

impl Drop for RetireAtExit {
    fn drop(&mut self) {
        match OWN.try_with(|own| own.replace(Own::Refused)) {
            Ok(Own::Slot(slot)) => retire(slot, FREE),
            Ok(Own::Clock(slot)) => free_clock_slot(slot),
            _ => {}
        }
    }
}

/// Registers the calling thread, once; later calls are a thread-local read. Whether
/// that is settled: `false` when another thread was still probing the process's
/// ring layout, and the thread should ask again at its next call.
pub(super) fn watch_current() -> bool {
    let Ok(Own::Untried) = OWN.try_with(Cell::get) else {
        return true;
    };
    OWN.with(|cell| cell.set(Own::Registering));
    // SeqCst signal fences: a handler on this thread sees `Registering` from the
    // first step of the registration on, and the outcome only once it is complete.
    compiler_fence(SeqCst);
    let own = match register() {
        Registered::Slot(slot) => Own::Slot(slot),
        Registered::Refused => Own::Refused,
        Registered::NotYet => Own::Untried,
    };
    compiler_fence(SeqCst);
    OWN.with(|cell| cell.set(own));
    own != Own::Untried
}

/// What a registration came to.
enum Registered {
    Slot(usize),
    Refused,
    /// Another thread is probing the process's ring layout: try again later.
    NotYet,
}

/// Whether the calling thread is registered (for tests and the benchmark).
pub(super) fn current_is_watched() -> bool {
    matches!(OWN.try_with(Cell::get), Ok(Own::Slot(_)))
}

/// Registrations alive (or being set up) in this process: never above
/// [`MAX_WATCHED`] (the module doc's budget).
static REGISTERED: AtomicUsize = AtomicUsize::new(0);

/// Takes a place in the budget; `false` when all [`MAX_WATCHED`] are taken.
fn reserve() -> bool {
    // Acquire on success: pairs with the Release in `give_back`, so the close and
    // munmap of the registration whose place we take happen before our
    // `perf_event_open`: never more than MAX_WATCHED fds and rings at once. Relaxed
    // otherwise: a failed attempt takes nothing.
    REGISTERED
        .fetch_update(Acquire, Relaxed, |alive| {
            (alive < MAX_WATCHED).then_some(alive + 1)
        })
        .is_ok()
}

/// Returns a place to the budget, once its fd is closed and its ring unmapped.
fn give_back() {
    // Release: pairs with the Acquire in `reserve`.
    REGISTERED.fetch_sub(1, Release);
}

/// Opens, maps and publishes the calling thread's ring.
fn register() -> Registered {
    let layout = match settled_layout() {
        None => return Registered::NotYet,
        Some(Err(_)) => return Registered::Refused,
        Some(Ok(layout)) => layout,
    };
    // Without the fork handler a fork child could read a ring it does not have.
    static FORGET_IN_CHILD: Resolved = Resolved::new();
    if !at_fork_child(&FORGET_IN_CHILD, forget_parent_threads) {
        // Another thread is installing it.
        return Registered::NotYet;
    }
    // Arm the destructor first: a thread already tearing down its thread-locals
    // could not retire a slot, so it must not take one.
    if RETIRE_AT_EXIT.try_with(|_| ()).is_err() {
        return Registered::Refused;
    }
    // Before the fd exists: racing threads never hold more than the budget.
    if !reserve() {
        return Registered::Refused;
    }
    match publish(&layout) {
        Some(slot) => Registered::Slot(slot),
        None => {
            // Whatever `publish` opened or mapped is closed and unmapped by now.
            give_back();
            Registered::Refused
        }
    }
}

/// Opens, maps and publishes the calling thread's ring, in a place reserved in the
/// budget; `None`, with nothing left open or mapped, when refused.
fn publish(layout: &RingLayout) -> Option<usize> {
    crate::fault::during_registration();
    let tid = current_tid();
    let fd = open_event(tid, layout.direction).ok()?;
    let ring = map_ring(&fd, layout).ok()?;
    let Some((slot, generation)) = claim(tid) else {
        // SAFETY: mapped just above, never published.
        unsafe { unmap_ring(ring, layout) };
        return None;
    };
    let entry = &REGISTRY.slots[slot];
    // Relaxed: published by the Release store of the key below.
    entry.fd.store(fd.into_raw_fd(), Relaxed);
    entry.ring.store(ring, Relaxed);
    // Release: pairs with [R2] in `read_switch`: a waiter that sees this key sees the
    // ring pointer.
    REGISTRY.keys[slot].store(pack(generation, tid), Release);
    Some(slot)
}

/// Takes a free slot of `tid`'s window, marking it busy with a new generation.
fn claim(tid: u32) -> Option<(usize, u32)> {
    window(tid).find_map(|slot| {
        // Relaxed: the CAS below revalidates.
        let key = REGISTRY.keys[slot].load(Relaxed);
        if tid_of(key) != FREE {
            return None;
        }
        let generation = generation_of(key).wrapping_add(1);
        // Acquire: pairs with [T3], the Release that freed the slot, so the previous
        // owner's munmap and close happen before we reuse the slot.
        REGISTRY.keys[slot]
            .compare_exchange(key, pack(generation, BUSY), Acquire, Relaxed)
            .ok()
            .map(|_| (slot, generation))
    })
}

/// Takes the calling thread's ring out of the registry, waits for readers, unmaps it,
/// and leaves `then` in the key's `tid` half: [`FREE`] when the thread exits, its
/// tid with [`CLOCK`] when it moves to the clock.
fn retire(slot: usize, then: u32) {
    let entry = &REGISTRY.slots[slot];
    // Relaxed: our own key, last written by this thread.
    let generation = generation_of(REGISTRY.keys[slot].load(Relaxed));
    // [T1] SeqCst: the Dekker pair with [R1]/[R2] (module doc).
    REGISTRY.keys[slot].store(pack(generation, BUSY), SeqCst);
    // [T2] SeqCst: see [T1]; as an acquire it also pairs with every reader's [R3].
    // A reader holds the count for a few loads, so this waits only if one was
    // preempted right there.
    while entry.readers.load(SeqCst) != 0 {
        std::thread::yield_now();
    }
    // Relaxed: the slot is ours alone until [T3].
    let ring = entry.ring.swap(std::ptr::null_mut(), Relaxed);
    let fd = entry.fd.swap(-1, Relaxed);
    if let Ok(layout) = layout() {
        // SAFETY: registered with this layout; after [T2] no waiter can reach it.
        unsafe { unmap_ring(ring, &layout) };
    }
    // SAFETY: the fd `register` stored; nobody else owns it.
    drop(unsafe { OwnedFd::from_raw_fd(fd) });
    // [T3] Release: pairs with the Acquire in `claim`.
    REGISTRY.keys[slot].store(pack(generation, then), Release);
    // Only now: the fd is closed and the ring unmapped.
    give_back();
}

/// Frees the slot of a thread watched through its clock, when it exits.
fn free_clock_slot(slot: usize) {
    // Relaxed: our own key, last written by this thread.
    let generation = generation_of(REGISTRY.keys[slot].load(Relaxed));
    // Release: pairs with the Acquire in `claim` (no ring to order: the slot's was
    // unmapped when it moved to the clock). A waiter that reads this key knows the
    // thread exited; one that read the clock key first learns it from the clock
    // (EINVAL).
    REGISTRY.keys[slot].store(pack(generation, FREE), Release);
}

/// In a fork child: forgets every registration inherited from the parent. Only
/// async-signal-safe work (atomics and `close`): it runs between `fork` and the
/// child's own code, with the child's only thread.
extern "C" fn forget_parent_threads() {
    for (key, entry) in REGISTRY.keys.iter().zip(&REGISTRY.slots) {
        // Relaxed throughout: the child has a single thread.
        let seen = key.load(Relaxed);
        if tid_of(seen) != FREE {
            // The parent's rings were not mapped into the child (VM_DONTCOPY), but
            // their fds were inherited.
            let fd = entry.fd.swap(-1, Relaxed);
            if fd >= 0 {
                // SAFETY: an fd inherited from the parent that only this slot owns.
                unsafe { libc::close(fd) };
            }
            entry.ring.store(std::ptr::null_mut(), Relaxed);
            key.store(pack(generation_of(seen), FREE), Relaxed);
        }
        // A parent thread may have been reading at the fork; it does not exist here.
        if entry.readers.load(Relaxed) != 0 {
            entry.readers.store(0, Relaxed);
        }
    }
    // Relaxed: as above. What remains registered is nothing: the forking thread
    // forgets its registration too (and may register again).
    REGISTERED.store(0, Relaxed);
    let _ = OWN.try_with(|own| own.set(Own::Untried));
}

/// A waiter's view of one thread's ring, or of its CPU clock once it moved there.
#[derive(Debug)]
pub(super) struct PerfWatch {
    tid: u32,
    found: Option<Found>,
    /// The thread retired its slot: it has exited.
    gone: bool,
    /// The thread is watched through its CPU clock (`price.rs`).
    clock: Option<ClockWatch>,
}

impl PerfWatch {
    pub(super) fn new(tid: u32) -> Self {
        Self {
            tid,
            found: find(tid),
            gone: false,
            clock: None,
        }
    }

    pub(super) fn owner_running(&mut self) -> Option<bool> {
        if let Some(clock) = &mut self.clock {
            return clock.owner_running();
        }
        if self.gone {
            return Some(false);
        }
        let layout = layout().ok()?;
        // The owner may register after this watch was made: look again.
        let found = match self.found {
            Some(found) => found,
            None => *self.found.insert(find(self.tid)?),
        };
        if is_clock(found.key) {
            return self.watch_clock();
        }
        match read_switch(found, &layout) {
            Some(Seen::Running) => Some(true),
            Some(Seen::NotRunning) => Some(false),
            Some(Seen::Unknown) => None,
            // The ring is gone: the thread exited, or moved to the clock. A look
            // while it moves finds neither and reads "not running" for the rest of
            // this watch: at worst one waiter sleeps instead of spinning.
            None => match find(self.tid) {
                Some(found) if is_clock(found.key) => self.watch_clock(),
                _ => {
                    self.gone = true;
                    Some(false)
                }
            },
        }
    }

    /// From now on, answers from the thread's CPU clock.
    fn watch_clock(&mut self) -> Option<bool> {
        self.clock.insert(ClockWatch::new(self.tid)).owner_running()
    }
}

/// Registry slots whose key names a thread (tests: leak checks).
#[cfg(test)]
pub(super) fn registered_slots() -> usize {
    REGISTRY
        .keys
        .iter()
        // Relaxed: a census taken while the threads it counts are quiescent.
        .filter(|key| !matches!(tid_of(key.load(Relaxed)), FREE | BUSY))
        .count()
}

#[cfg(test)]
mod tests;
