//! Contention points: the call stacks at which threads waited for a lock, kept per
//! lock (and per site, for destroyed locks), like the kernel's `lock_stat`
//! contention points but a few frames deep.
//!
//! # Capture
//!
//! Only a call that found the lock busy captures ([`capture`]), before it waits: the
//! stack is walked with the unwinder (`_Unwind_Backtrace`, through
//! `backtrace::trace_unsynchronized`), since programs built without frame pointers
//! (GCC's default at `-O2`) leave nothing for a frame-pointer walk to follow. The walk
//! allocates nothing: the crate's tracing only calls the unwinder, whose frame lookup
//! reads the loaded modules' unwind tables through `dl_iterate_phdr` (the loader's
//! own lock, not a pthread mutex) and takes libgcc's `object_mutex` only when some
//! module registered its frames by hand (rare since `PT_GNU_EH_FRAME`). The frames
//! below the interposed call (the preload's own) are skipped: the walk starts
//! keeping frames at the lock call's return address (its site), then keeps
//! [`FRAMES`] in all. A lock call the preload itself makes (a klocks condvar retaking
//! its mutex) has its site in the preload: the walk then also skips the preload's
//! frames above it, so the stack starts where the program called in (its
//! `pthread_cond_wait`). The preload's code is found at start ([`find_own_code`]);
//! linked into the program rather than preloaded, it is not told apart. A thread already capturing does not capture again: a lock call
//! the unwinder makes (that `object_mutex`) is counted without a stack, so the walk
//! never recurses. The cost is one unwind of a few frames (2 to 3 µs here, see
//! docs/preload.md), paid only by a call that is about to sleep or spin for the lock,
//! before it waits (its wait is timed from the failed try, and the walk counted in it
//! only while the lock stayed busy: see `waited`); an uncontended call pays nothing.
//!
//! # Storage
//!
//! A lock's entry holds [`STACKS`] stacks ([`Stacks`]), each keyed by a hash of its
//! frames, with its waits, total and longest wait. A wait adds to its stack's slot,
//! else takes a free one, else replaces the slot with the least total wait if its own
//! wait is longer (the replaced slot's counts go to `others`, as does a wait that
//! does not displace any), so the slots keep the stacks that waited longest. The
//! record is guarded by a flag taken with a swap, never waited for: a wait that finds
//! it taken (another thread recording at the same moment) goes to `others`. Nothing
//! allocates; a destroyed lock's stacks are merged into its site's the same way.

use std::cell::Cell;
use std::sync::atomic::{
    AtomicBool, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};

/// How many frames a stack keeps: the lock call's return address and its callers.
pub(in crate::preload::profile) const FRAMES: usize = 6;
/// How many stacks a lock (or a site) keeps.
pub(in crate::preload::profile) const STACKS: usize = 4;
/// How many frames the walk passes over looking for the lock call's site before it
/// gives up (the preload's own frames are three or four).
const MAX_SKIPPED: usize = 16;

/// The preload's executable code, `[OWN_START, OWN_END)`; empty if not found, or if
/// the preload is linked into the program.
static OWN_START: AtomicUsize = AtomicUsize::new(0);
static OWN_END: AtomicUsize = AtomicUsize::new(0);

/// Whether `ip` is in the preload's code.
fn own(ip: usize) -> bool {
    // Relaxed: set at start, before the profile is switched on (whose Release
    // publishes them).
    OWN_START.load(Relaxed) <= ip && ip < OWN_END.load(Relaxed)
}

/// Finds the preload's executable segments (from the library's constructor).
pub(super) fn find_own_code() {
    // SAFETY: a zeroed Dl_info is valid; dladdr only reads the loader's tables.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above; the address is this function's.
    if unsafe { libc::dladdr(find_own_code as *const libc::c_void, &mut info) } == 0 {
        return;
    }
    extern "C" fn each(
        module: *mut libc::dl_phdr_info,
        _: usize,
        base: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid entry for the call's duration.
        let module = unsafe { &*module };
        // The main program (the preload linked into it) has an empty name.
        // SAFETY: a NUL-terminated string, when not null.
        let named = !module.dlpi_name.is_null() && unsafe { *module.dlpi_name } != 0;
        if module.dlpi_addr as usize != base as usize || !named {
            return 0;
        }
        let (mut start, mut end) = (usize::MAX, 0);
        for i in 0..module.dlpi_phnum as usize {
            // SAFETY: `dlpi_phnum` headers at `dlpi_phdr`.
            let header = unsafe { &*module.dlpi_phdr.add(i) };
            if header.p_type == libc::PT_LOAD && header.p_flags & libc::PF_X != 0 {
                let at = module.dlpi_addr as usize + header.p_vaddr as usize;
                start = start.min(at);
                end = end.max(at + header.p_memsz as usize);
            }
        }
        if start < end {
            // Relaxed: see `own`.
            OWN_START.store(start, Relaxed);
            OWN_END.store(end, Relaxed);
        }
        1
    }
    // SAFETY: the callback reads only the entries the loader passes.
    unsafe { libc::dl_iterate_phdr(Some(each), info.dli_fbase) };
}

/// A stack just walked: return addresses, innermost (the lock call's) first, 0 past
/// the last.
#[derive(Clone, Copy)]
pub(super) struct Captured {
    frames: [usize; FRAMES],
    hash: u64,
}

impl Captured {
    /// Where the program called the lock (the site, or the first frame outside the
    /// preload when the preload made the call).
    pub(super) fn caller(&self) -> usize {
        self.frames[0]
    }

    /// The return addresses, innermost first, 0 past the last.
    pub(super) fn frames(&self) -> &[usize; FRAMES] {
        &self.frames
    }
}

std::thread_local! {
    /// Whether this thread is walking its stack (a lock call made by the unwinder
    /// must not walk again).
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
}

/// Walks the calling thread's stack from the lock call that returns to `site`; `None`
/// if the site is unknown or not found, or this thread is already walking.
#[cold]
#[inline(never)]
pub(super) fn capture(site: usize) -> Option<Captured> {
    if site == 0 {
        return None;
    }
    // An exiting thread, whose thread-locals are gone, captures nothing.
    let entered = CAPTURING.try_with(|walking| !walking.replace(true));
    if entered != Ok(true) {
        return None;
    }
    let mut frames = [0usize; FRAMES];
    let mut kept = 0;
    let mut skipped = 0;
    // SAFETY: `trace_unsynchronized` requires that no other thread use the crate's
    // unsynchronised tracing at the same time in a way that breaks the unwinder; the
    // unwinder behind it (libgcc's `_Unwind_Backtrace`) is thread-safe, and the
    // closure only stores integers into a local array.
    unsafe {
        let mut found = false;
        backtrace::trace_unsynchronized(|frame| {
            let ip = frame.ip() as usize;
            found |= ip == site;
            if kept == 0 && (!found || own(ip)) {
                skipped += 1;
                return skipped < MAX_SKIPPED;
            }
            frames[kept] = ip;
            kept += 1;
            kept < FRAMES
        });
    }
    let _ = CAPTURING.try_with(|walking| walking.set(false));
    (kept > 0).then(|| Captured {
        frames,
        hash: hash(&frames),
    })
}

/// A hash of the frames, never 0 (0 marks a free slot).
fn hash(frames: &[usize; FRAMES]) -> u64 {
    let mut hash = 0xCBF2_9CE4_8422_2325u64;
    for &frame in frames {
        hash = (hash ^ frame as u64).wrapping_mul(0x0000_0100_0000_01B3);
        hash ^= hash >> 29;
    }
    hash | 1
}

/// One stack and the waits made at it. Times are in clock ticks.
pub(in crate::preload::profile) struct Stack {
    /// The frames' hash; 0: the slot is free.
    hash: AtomicU64,
    frames: [AtomicUsize; FRAMES],
    waits: AtomicU64,
    wait: AtomicU64,
    wait_max: AtomicU64,
}

/// A stack as the report reads it.
#[derive(Clone, Copy, Default)]
pub(in crate::preload::profile) struct StackView {
    pub(in crate::preload::profile) frames: [usize; FRAMES],
    pub(in crate::preload::profile) waits: u64,
    pub(in crate::preload::profile) wait: u64,
    pub(in crate::preload::profile) wait_max: u64,
}

impl StackView {
    /// The frames kept, innermost first.
    pub(in crate::preload::profile) fn frames(
        &self,
    ) -> impl DoubleEndedIterator<Item = usize> + '_ {
        let kept = self.frames.iter().position(|&frame| frame == 0);
        self.frames[..kept.unwrap_or(FRAMES)].iter().copied()
    }
}

impl Stack {
    const fn new() -> Stack {
        Stack {
            hash: AtomicU64::new(0),
            frames: [const { AtomicUsize::new(0) }; FRAMES],
            waits: AtomicU64::new(0),
            wait: AtomicU64::new(0),
            wait_max: AtomicU64::new(0),
        }
    }

    /// Relaxed, in every method: the record's flag orders the writers (see
    /// [`Stacks::add`]); the report reads a snapshot.
    fn view(&self) -> StackView {
        StackView {
            frames: std::array::from_fn(|i| self.frames[i].load(Relaxed)),
            waits: self.waits.load(Relaxed),
            wait: self.wait.load(Relaxed),
            wait_max: self.wait_max.load(Relaxed),
        }
    }

    fn set(&self, hash: u64, stack: &StackView) {
        for (slot, &frame) in self.frames.iter().zip(&stack.frames) {
            slot.store(frame, Relaxed);
        }
        self.waits.store(stack.waits, Relaxed);
        self.wait.store(stack.wait, Relaxed);
        self.wait_max.store(stack.wait_max, Relaxed);
        self.hash.store(hash, Relaxed);
    }

    fn add(&self, stack: &StackView) {
        self.waits
            .store(self.waits.load(Relaxed) + stack.waits, Relaxed);
        self.wait
            .store(self.wait.load(Relaxed).saturating_add(stack.wait), Relaxed);
        if stack.wait_max > self.wait_max.load(Relaxed) {
            self.wait_max.store(stack.wait_max, Relaxed);
        }
    }
}

/// The stacks of one lock or site (module doc).
pub(in crate::preload::profile) struct Stacks {
    /// Taken (with a swap, never waited for) by the thread that changes the slots.
    busy: AtomicBool,
    stacks: [Stack; STACKS],
    /// Waits kept in no slot, and their total: stacks that waited less than those
    /// kept, records found busy, and waits whose stack could not be walked.
    others: AtomicU64,
    others_wait: AtomicU64,
}

impl Stacks {
    pub(in crate::preload::profile) const fn new() -> Stacks {
        Stacks {
            busy: AtomicBool::new(false),
            stacks: [const { Stack::new() }; STACKS],
            others: AtomicU64::new(0),
            others_wait: AtomicU64::new(0),
        }
    }

    /// Counts a wait of `ticks` at `stack` (`None`: not walked).
    pub(super) fn record(&self, stack: Option<&Captured>, ticks: u64) {
        let Some(captured) = stack else {
            return self.add_other(1, ticks);
        };
        let view = StackView {
            frames: captured.frames,
            waits: 1,
            wait: ticks,
            wait_max: ticks,
        };
        self.add(captured.hash, &view);
    }

    /// Relaxed: counts for the report, ordered with nothing.
    fn add_other(&self, waits: u64, ticks: u64) {
        self.others.fetch_add(waits, Relaxed);
        self.others_wait.fetch_add(ticks, Relaxed);
    }

    /// Adds `stack` (hash `hash`): to its slot, a free slot, or in place of the slot
    /// that waited least if it waited longer; else to `others`.
    fn add(&self, hash: u64, stack: &StackView) {
        // Acquire: pairs with the Release below, so this thread sees the slots as the
        // last writer left them.
        if self.busy.swap(true, Acquire) {
            return self.add_other(stack.waits, stack.wait);
        }
        // Relaxed, for the slots: ordered by the flag.
        let same = self.stacks.iter().find(|s| s.hash.load(Relaxed) == hash);
        if let Some(slot) = same {
            slot.add(stack);
        } else if let Some(free) = self.stacks.iter().find(|s| s.hash.load(Relaxed) == 0) {
            free.set(hash, stack);
        } else {
            let least = self
                .stacks
                .iter()
                .min_by_key(|s| s.wait.load(Relaxed))
                .expect("STACKS > 0");
            let kept = least.view();
            if stack.wait > kept.wait {
                self.add_other(kept.waits, kept.wait);
                least.set(hash, stack);
            } else {
                self.add_other(stack.waits, stack.wait);
            }
        }
        // Release: pairs with the Acquire of the next writer's swap.
        self.busy.store(false, Release);
    }

    /// Adds every stack of `from` (a destroyed lock's) to these (its site's).
    pub(super) fn merge(&self, from: &Stacks) {
        for stack in &from.stacks {
            // Relaxed: the lock is destroyed, nothing records into `from` any more.
            let hash = stack.hash.load(Relaxed);
            if hash != 0 {
                self.add(hash, &stack.view());
            }
        }
        // Relaxed: as above.
        self.add_other(from.others.load(Relaxed), from.others_wait.load(Relaxed));
    }

    /// Empties every slot, for the entry's reuse or a fork child's fresh start.
    pub(super) fn clear(&self) {
        // Relaxed: see the callers, which publish the entry (or have one thread).
        for stack in &self.stacks {
            stack.set(0, &StackView::default());
        }
        self.others.store(0, Relaxed);
        self.others_wait.store(0, Relaxed);
        self.busy.store(false, Relaxed);
    }

    /// The stacks kept, longest total wait first (a snapshot: a slot being replaced
    /// as it is read may mix two stacks, a lapse the report can bear).
    pub(in crate::preload::profile) fn ranked(&self) -> [Option<StackView>; STACKS] {
        let mut views: [Option<StackView>; STACKS] = std::array::from_fn(|i| {
            let stack = &self.stacks[i];
            // Relaxed: a snapshot for the report.
            (stack.hash.load(Relaxed) != 0).then(|| stack.view())
        });
        views.sort_by_key(|view| std::cmp::Reverse(view.map_or(0, |v| v.wait)));
        views
    }

    /// The waits kept in no slot, and their total wait in ticks.
    pub(in crate::preload::profile) fn others(&self) -> (u64, u64) {
        // Relaxed: a snapshot for the report.
        (self.others.load(Relaxed), self.others_wait.load(Relaxed))
    }
}
