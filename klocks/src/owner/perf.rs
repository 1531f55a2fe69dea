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
//! **Fork.** The kernel does not copy perf mappings into a child (`VM_DONTCOPY`), so a
//! child that read a parent thread's slot would fault. The child's `pthread_atfork`
//! handler (see `owner.rs`) empties the table and forgets the forking thread's
//! registration before the child runs any Rust code.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{
    compiler_fence, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release, SeqCst},
};

use crossbeam_utils::CachePadded;

use super::tid::current_tid;
use crate::config::resolved::Resolved;

// The kernel ABI, from include/uapi/linux/perf_event.h.
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_DUMMY: u64 = 9;
/// `sizeof` the first published `perf_event_attr`: every field we set is in it.
const PERF_ATTR_SIZE_VER0: u32 = 64;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_RECORD_SWITCH: u32 = 14;
const PERF_RECORD_MISC_SWITCH_OUT: u16 = 1 << 13;
/// Bits of the `perf_event_attr` flag word (`disabled` is bit 0).
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;
const ATTR_CONTEXT_SWITCH: u64 = 1 << 26;
const ATTR_WRITE_BACKWARD: u64 = 1 << 27;
/// Where `perf_event_mmap_page::data_head` sits in the header page.
const DATA_HEAD_OFFSET: usize = 1024;
/// `sizeof(struct perf_event_header)`, the whole of a switch record.
const SWITCH_RECORD_BYTES: u64 = 8;

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER0`; the kernel zero-extends it.
#[repr(C)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    bp_addr: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER0 as usize);

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

/// In which direction the kernel writes the rings of this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    /// `write_backward`: the newest record starts at `data_head`.
    Backward,
    /// Plain overwrite ring: the newest record ends at `data_head`.
    Forward,
}

/// How this process's rings look, settled once.
#[derive(Clone, Copy, Debug)]
struct RingLayout {
    direction: Direction,
    /// The page size: the header page, and the one data page.
    page: usize,
}

impl RingLayout {
    fn map_len(&self) -> usize {
        2 * self.page
    }
}

/// The process's ring layout, probed once by opening and mapping an event on the
/// calling thread; the errno when perf refused (`EAGAIN` for a thread that asks
/// while another probes: it does not wait, see [`crate::config`]).
fn layout() -> Result<RingLayout, i32> {
    static LAYOUT: Resolved = Resolved::new();
    let (code, _) = LAYOUT.get(
        || encode_layout(probe_layout()),
        encode_layout(Err(libc::EAGAIN)),
    );
    decode_layout(code)
}

/// A layout result in one word: bit 63 set for a layout (bit 62 its direction, the
/// page size below), else the errno.
fn encode_layout(layout: Result<RingLayout, i32>) -> u64 {
    match layout {
        Ok(RingLayout { direction, page }) => {
            1 << 63 | u64::from(direction == Direction::Forward) << 62 | page as u64
        }
        Err(errno) => errno as u64,
    }
}

fn decode_layout(code: u64) -> Result<RingLayout, i32> {
    if code >> 63 == 0 {
        return Err(code as i32);
    }
    let direction = match code >> 62 & 1 {
        0 => Direction::Backward,
        _ => Direction::Forward,
    };
    Ok(RingLayout {
        direction,
        page: (code & ((1 << 62) - 1)) as usize,
    })
}

/// Opens and maps an event on the calling thread, backward if the kernel can.
fn probe_layout() -> Result<RingLayout, i32> {
    let errno = |err: &io::Error| err.raw_os_error().unwrap_or(libc::EINVAL);
    // SAFETY: sysconf has no preconditions.
    let page =
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).map_err(|_| libc::EINVAL)?;
    let tid = current_tid();
    let mut refused = libc::EINVAL;
    for direction in [Direction::Backward, Direction::Forward] {
        let layout = RingLayout { direction, page };
        match open_event(tid, direction) {
            Ok(fd) => {
                let ring = map_ring(&fd, &layout).map_err(|err| errno(&err))?;
                // SAFETY: `ring` was mapped just above with this layout and was
                // never shared.
                unsafe { unmap_ring(ring, &layout) };
                return Ok(layout);
            }
            // EINVAL for `write_backward`: a kernel before 4.7; try forward.
            Err(err) if direction == Direction::Backward && errno(&err) == libc::EINVAL => {}
            Err(err) => {
                refused = errno(&err);
                break;
            }
        }
    }
    Err(refused)
}

/// Whether this process can watch threads with perf rings (probes once).
pub(super) fn check() -> io::Result<()> {
    layout().map(drop).map_err(io::Error::from_raw_os_error)
}

/// Opens a context-switch event on thread `tid` (one of ours).
fn open_event(tid: u32, direction: Direction) -> io::Result<OwnedFd> {
    let mut flags = ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV | ATTR_CONTEXT_SWITCH;
    if direction == Direction::Backward {
        flags |= ATTR_WRITE_BACKWARD;
    }
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: PERF_ATTR_SIZE_VER0,
        config: PERF_COUNT_SW_DUMMY,
        sample_period: 0,
        sample_type: 0,
        read_format: 0,
        flags,
        wakeup_events: 0,
        bp_type: 0,
        bp_addr: 0,
    };
    let pid = libc::pid_t::try_from(tid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: `attr` is a valid `perf_event_attr` of the size it declares and outlives
    // the call; pid = a thread, cpu = -1 (any), group_fd = -1 (no group).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            pid,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    match libc::c_int::try_from(fd) {
        // SAFETY: the kernel just returned this fd to us; nobody else owns it.
        Ok(fd) if fd >= 0 => Ok(unsafe { OwnedFd::from_raw_fd(fd) }),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Maps an event's header and data pages, read-only (an overwrite ring).
fn map_ring(fd: &OwnedFd, layout: &RingLayout) -> io::Result<*mut u8> {
    // SAFETY: a fresh shared read-only mapping of a perf fd; it aliases nothing of ours.
    let ring = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            layout.map_len(),
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if ring == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(ring.cast())
}

/// Unmaps a ring.
///
/// # Safety
/// `ring` came from [`map_ring`] with `layout`, and nobody reads it any more.
unsafe fn unmap_ring(ring: *mut u8, layout: &RingLayout) {
    // SAFETY: per the contract. munmap of a whole mapping only fails for bad
    // arguments, which the contract excludes.
    unsafe { libc::munmap(ring.cast(), layout.map_len()) };
}

/// What a ring says about its thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// The newest record is a switch-in, or there is none yet.
    Running,
    /// The newest record is a switch-out.
    NotRunning,
    /// The ring holds something that is not a switch record.
    Unknown,
}

/// The newest switch record of a ring.
///
/// # Safety
/// `ring` is a live mapping made by [`map_ring`] with `layout`, for the whole call.
unsafe fn newest_switch(ring: *const u8, layout: &RingLayout) -> Seen {
    // SAFETY: `data_head` is an aligned u64 inside the live header page; the kernel
    // writes it, so it is read atomically.
    let data_head = unsafe { &*ring.add(DATA_HEAD_OFFSET).cast::<AtomicU64>() };
    // Acquire: pairs with the kernel's smp_wmb() between writing a record and
    // publishing it in `data_head` (perf_output_put_handle), so the record at the
    // head is complete.
    let head = data_head.load(Acquire);
    if head == 0 {
        return Seen::Running;
    }
    let start = match layout.direction {
        Direction::Backward => head,
        Direction::Forward => head.wrapping_sub(SWITCH_RECORD_BYTES),
    };
    // The data area is one page, a power of two; records are 8-byte aligned, so a
    // header never wraps around its end.
    let offset = (start & (layout.page as u64 - 1)) as usize;
    // SAFETY: `offset + 8 <= page`, inside the live data page, 8-byte aligned. Read as
    // one atomic: the kernel may be overwriting this very slot if the thread
    // switched 512 times since the head was read, and then any whole record it
    // holds is a newer one.
    let header = unsafe { &*ring.add(layout.page + offset).cast::<AtomicU64>() };
    // Relaxed: ordered after the head by the Acquire above.
    let bytes = header.load(Relaxed).to_ne_bytes();
    // struct perf_event_header { u32 type; u16 misc; u16 size; }
    let kind = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let misc = u16::from_ne_bytes([bytes[4], bytes[5]]);
    let size = u16::from_ne_bytes([bytes[6], bytes[7]]);
    if kind != PERF_RECORD_SWITCH || u64::from(size) != SWITCH_RECORD_BYTES {
        return Seen::Unknown;
    }
    match misc & PERF_RECORD_MISC_SWITCH_OUT {
        0 => Seen::Running,
        _ => Seen::NotRunning,
    }
}

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
        (tid_of(key) == tid).then_some(Found { slot, key })
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
    /// `watch_current` is registering the thread: a signal handler that interrupts
    /// it and meets contention leaves the thread unobservable for its own lock call.
    /// A second registration of one thread would take a second slot, which the
    /// thread's exit would never retire.
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
        if let Ok(Own::Slot(slot)) = OWN.try_with(|own| own.replace(Own::Refused)) {
            retire(slot);
        }
    }
}

/// Registers the calling thread, once; later calls are a thread-local read.
pub(super) fn watch_current() {
    let Ok(Own::Untried) = OWN.try_with(Cell::get) else {
        return;
    };
    OWN.with(|cell| cell.set(Own::Registering));
    // SeqCst signal fences: a handler on this thread sees `Registering` from the
    // first step of the registration on, and the outcome only once it is complete.
    compiler_fence(SeqCst);
    let own = match register() {
        Some(slot) => Own::Slot(slot),
        None => Own::Refused,
    };
    compiler_fence(SeqCst);
    OWN.with(|cell| cell.set(own));
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

/// Opens, maps and publishes the calling thread's ring; `None` when refused.
fn register() -> Option<usize> {
    let layout = layout().ok()?;
    // Without the fork handler a fork child could read a ring it does not have.
    static FORGET_IN_CHILD: Resolved = Resolved::new();
    if !super::at_fork_child(&FORGET_IN_CHILD, forget_parent_threads) {
        return None;
    }
    // Arm the destructor first: a thread already tearing down its thread-locals
    // could not retire a slot, so it must not take one.
    RETIRE_AT_EXIT.try_with(|_| ()).ok()?;
    // Before the fd exists: racing threads never hold more than the budget.
    if !reserve() {
        return None;
    }
    let slot = publish(&layout);
    if slot.is_none() {
        // Whatever `publish` opened or mapped is closed and unmapped by now.
        give_back();
    }
    slot
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

/// Takes the calling thread's ring out of the registry, waits for readers, unmaps it.
fn retire(slot: usize) {
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
    REGISTRY.keys[slot].store(pack(generation, FREE), Release);
    // Only now: the fd is closed and the ring unmapped.
    give_back();
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

/// A waiter's view of one thread's ring.
#[derive(Debug)]
pub(super) struct PerfWatch {
    tid: u32,
    found: Option<Found>,
    /// The thread retired its slot: it has exited.
    gone: bool,
}

impl PerfWatch {
    pub(super) fn new(tid: u32) -> Self {
        Self {
            tid,
            found: find(tid),
            gone: false,
        }
    }

    pub(super) fn owner_running(&mut self) -> Option<bool> {
        if self.gone {
            return Some(false);
        }
        let layout = layout().ok()?;
        // The owner may register after this watch was made: look again.
        let found = match self.found {
            Some(found) => found,
            None => *self.found.insert(find(self.tid)?),
        };
        match read_switch(found, &layout) {
            Some(Seen::Running) => Some(true),
            Some(Seen::NotRunning) => Some(false),
            Some(Seen::Unknown) => None,
            None => {
                self.gone = true;
                Some(false)
            }
        }
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
mod tests {
    use super::super::tests::perf_fds;
    use super::*;
    use std::sync::{Arc, Barrier};
    use std::thread;

    /// Threads registering at once: far beyond the budget.
    const THREADS: usize = 1000;
    /// Fds that the test harness may open or close meanwhile.
    const SLACK: usize = 16;

    /// The fds this process holds.
    fn open_fds() -> usize {
        std::fs::read_dir("/proc/self/fd").unwrap().count()
    }

    /// Bytes of perf rings mapped into this process (the pages the budget locks).
    fn perf_ring_bytes() -> usize {
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter(|line| line.contains("perf_event"))
            .filter_map(|line| {
                let (start, end) = line.split_whitespace().next()?.split_once('-')?;
                let start = usize::from_str_radix(start, 16).ok()?;
                Some(usize::from_str_radix(end, 16).ok()? - start)
            })
            .sum()
    }

    /// Registrations counted in the budget.
    fn reserved() -> usize {
        // Relaxed: a census taken while the threads it counts are quiescent.
        REGISTERED.load(Relaxed)
    }

    /// Slots whose key names the calling thread.
    fn slots_of_this_thread() -> usize {
        let tid = current_tid();
        REGISTRY
            .keys
            .iter()
            // Relaxed: this thread's own keys, written by this thread.
            .filter(|key| tid_of(key.load(Relaxed)) == tid)
            .count()
    }

    /// A signal handler that interrupts its thread's registration and meets
    /// contention (simulated by the hook, which runs inside the registration) does
    /// not register the thread a second time: one slot, retired at exit.
    #[test]
    fn a_registration_interrupted_on_its_thread_takes_one_slot() {
        if let Err(err) = check() {
            eprintln!("perf refused ({err}): no registration to interrupt");
            return;
        }
        let (nested, slots) = thread::spawn(|| {
            let nested = std::rc::Rc::new(Cell::new(None));
            let seen = nested.clone();
            crate::fault::hook::with(
                crate::fault::hook::Point::DuringRegistration,
                move || {
                    watch_current();
                    seen.set(Some(current_is_watched()));
                },
                watch_current,
            );
            (nested.get(), slots_of_this_thread())
        })
        .join()
        .unwrap();
        assert_eq!(
            nested,
            Some(false),
            "the interrupting call registered the thread"
        );
        assert!(slots <= 1, "{slots} slots for one thread");
    }

    #[test]
    fn the_budget_bounds_fds_and_rings() {
        // Alone in a child process: see `crate::testing::alone`.
        if !crate::testing::alone("owner::perf::tests::the_budget_bounds_fds_and_rings") {
            return;
        }
        // Where perf is refused nobody registers, and the bounds hold trivially.
        let perf = check();
        if let Err(err) = &perf {
            eprintln!("perf refused ({err}): checking the bounds without registrations");
        }
        let ring = layout().map_or(0, |layout| layout.map_len());
        let before = (open_fds(), perf_fds(), registered_slots(), reserved());
        let rings_before = perf_ring_bytes();
        let registered = Arc::new(Barrier::new(THREADS + 1));
        let exit = Arc::new(Barrier::new(THREADS + 1));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (registered, exit) = (registered.clone(), exit.clone());
                thread::Builder::new()
                    .stack_size(64 << 10)
                    .spawn(move || {
                        watch_current();
                        let watched = current_is_watched();
                        registered.wait();
                        exit.wait();
                        watched
                    })
                    .unwrap()
            })
            .collect();
        registered.wait();
        // Every thread is alive and has tried.
        let during = (open_fds(), perf_fds(), registered_slots(), reserved());
        let rings_during = perf_ring_bytes();
        exit.wait();
        // Joined one by one: a thread's destructors (which retire its ring) have run
        // when its join returns.
        let watched = threads
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .filter(|&watched| watched)
            .count();
        let after = (open_fds(), perf_fds(), registered_slots(), reserved());
        let rings_after = perf_ring_bytes();
        let report = format!(
            "(fds, perf fds, slots, reserved) before {before:?}, during {during:?}, after \
             {after:?}; ring bytes {rings_before}, {rings_during}, {rings_after}"
        );
        assert!(watched <= MAX_WATCHED, "{watched} watched; {report}");
        assert!(during.2 <= MAX_WATCHED, "{report}");
        assert!(during.0 <= before.0 + MAX_WATCHED + SLACK, "{report}");
        assert_eq!(during.1, before.1 + watched, "{report}");
        assert_eq!(during.2, before.2 + watched, "{report}");
        assert_eq!(during.3, before.3 + watched, "{report}");
        assert!(after.0 <= before.0 + SLACK, "{report}");
        // The locked memory: exactly one ring per registration, within the budget.
        assert_eq!(rings_during, rings_before + watched * ring, "{report}");
        assert!(
            rings_during - rings_before <= MAX_WATCHED * ring,
            "{report}"
        );
        assert_eq!(rings_after, rings_before, "{report}");
        assert_eq!(
            (after.1, after.2, after.3),
            (before.1, before.2, before.3),
            "{report}"
        );
        if perf.is_ok() {
            assert!(watched > 0, "perf works, yet nobody registered; {report}");
            // The places came back: a new thread registers.
            assert!(thread::spawn(|| {
                watch_current();
                current_is_watched()
            })
            .join()
            .unwrap());
        }
    }
}
