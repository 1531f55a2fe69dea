//! MCS queue nodes, per-thread slots and the tail code.
//!
//! The kernel's qspinlock queues waiters on per-CPU MCS nodes (four per CPU, one for
//! each context that can nest: task, softirq, hardirq, NMI) and encodes "which node
//! is last" as `(cpu + 1, idx)` in the 16-bit tail of the lock word. Userspace has no
//! CPUs to own, so klocks gives each *thread* one node:
//!
//! - A thread takes a **slot** (an index into one global node table) the first time it
//!   must queue, and gives it back when it exits. The tail code is `slot + 1`, so `0`
//!   means "no queue". A thread waits in at most one queue at a time, so one node per
//!   thread suffices. A thread that exits *while queued* (abnormally: `pthread_exit`
//!   from a signal handler, a `longjmp` out of a lock call, asynchronous
//!   cancellation, a panic unwinding out of the queueing) never gives its slot back:
//!   its node may still be linked in a queue.
//! - The nodes live in a static table, never freed: a node is *type-stable*, so a
//!   waiter that decodes a tail always reaches a valid node even if the thread that
//!   owned it has since exited (its slot is only reused once it left every queue).
//! - **No node, still a lock.** A thread gets no node when all [`MAX_SLOTS`] are held
//!   by living threads, when its thread-locals are already destroyed (a lock taken in
//!   a thread-local destructor), or when its node is busy because a signal handler
//!   interrupted the thread while it was queued and now contends on a lock itself
//!   (the kernel's nesting case). Such a caller takes the slot-less path of the lock
//!   (see `qspinlock/queue.rs`), which is correct but neither fair nor local-spinning.
//!   How far it gets depends on the lock. `PvQSpinLock`'s slot-less path takes any
//!   free lock, so a signal handler completes even on the lock its own thread is
//!   queued on (heading the queue, with `pending` set). `QSpinLock`'s needs the whole
//!   word clear (its queue head takes the lock with a plain `set_locked`, so nobody
//!   may take it from under the head): a handler waits for that lock's queue to
//!   drain, and one that takes the very `QSpinLock` its thread is queued on deadlocks,
//!   as the kernel forbids an interrupt from taking a spinlock its CPU waits for.
//!
//! Slot allocation is a lock-free stack (fork-safe: see `FreeStack`), used once per
//! thread lifetime, in the slow path.

use crossbeam_utils::CachePadded;
use std::cell::Cell;

use crate::sync::{AtomicPtr, AtomicU32, Ordering};

/// How many threads can hold a queue node at once (the tail could encode 65535;
/// 4096 nodes of 128 bytes are 512 KiB of zero pages until touched).
///
/// Unit tests build with 4 slots so that ordinary stress tests also drive the
/// slot-less path; loom models use 2 so three model threads exhaust them.
pub const MAX_SLOTS: usize = if cfg!(loom) {
    2
} else if cfg!(test) {
    4
} else {
    4096
};

// Tail codes are `slot + 1` in 16 bits, and 0 means "no tail".
const _: () = assert!(MAX_SLOTS < 0xffff);

/// One waiter's place in an MCS queue.
///
/// Only the owning thread initialises it and writes `state`, only the predecessor
/// writes `locked`, only the successor writes `next`.
#[derive(Debug)]
pub(crate) struct McsNode {
    /// Set to 1 by the predecessor when this node becomes the queue head; the futex
    /// word a sleeping pv waiter waits on.
    pub(crate) locked: AtomicU32,
    /// The successor, linked in after it swapped itself into the tail.
    pub(crate) next: AtomicPtr<McsNode>,
    /// pv locks only: [`RUNNING`] or [`HALTED`] (asleep or about to sleep on `locked`).
    pub(crate) state: AtomicU32,
}

/// The waiter spins.
pub(crate) const RUNNING: u32 = 0;
/// The waiter sleeps on its `locked` word, or is about to: whoever sets `locked` must
/// wake it.
pub(crate) const HALTED: u32 = 1;

impl McsNode {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Self {
            locked: AtomicU32::new(0),
            next: AtomicPtr::new(std::ptr::null_mut()),
            state: AtomicU32::new(RUNNING),
        }
    }

    #[cfg(loom)]
    fn new() -> Self {
        Self {
            locked: AtomicU32::new(0),
            next: AtomicPtr::new(std::ptr::null_mut()),
            state: AtomicU32::new(RUNNING),
        }
    }
}

/// All queue nodes, plus the pool of free slot indices.
struct SlotTable {
    nodes: [CachePadded<McsNode>; MAX_SLOTS],
    pool: SlotPool,
}

#[cfg(not(loom))]
type SlotPool = FreeStack;
#[cfg(loom)]
type SlotPool = loom::sync::Mutex<FreeSlots>;

/// The free slots, without a lock: slots never handed out are `fresh..MAX_SLOTS`,
/// returned ones form a Treiber stack linked through `next`. No lock, so a fork can
/// never leave the child a pool locked by a thread it does not have; every change is
/// one CAS, so the child inherits a consistent pool (a slot being returned by a
/// parent thread at that instant is merely leaked, as are the slots of every other
/// parent thread: their nodes may be linked in queues the child inherited, so they
/// must not be handed out again).
#[cfg(not(loom))]
struct FreeStack {
    /// `tag << 32 | (slot + 1)` of the top, 0 when empty; the tag grows with every
    /// change (ABA: a pop must not succeed against a top that left and came back).
    top: std::sync::atomic::AtomicU64,
    /// `next[slot]`: the slot below it on the stack, plus one (0: none).
    next: [std::sync::atomic::AtomicU32; MAX_SLOTS],
    /// Slots never handed out start here.
    fresh: std::sync::atomic::AtomicUsize,
}

#[cfg(not(loom))]
impl FreeStack {
    const fn new() -> Self {
        Self {
            top: std::sync::atomic::AtomicU64::new(0),
            next: [const { std::sync::atomic::AtomicU32::new(0) }; MAX_SLOTS],
            fresh: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// A returned slot, else a fresh one, else `None`.
    fn take(&self) -> Option<u16> {
        use std::sync::atomic::Ordering::{Acquire, Relaxed};
        // Acquire: pairs with the Release of the `give` that pushed this top, so its
        // `next` link is visible.
        let mut top = self.top.load(Acquire);
        while top as u32 != 0 {
            let slot = (top as u32 - 1) as usize;
            // Relaxed: ordered by the Acquire above; a stale link only fails the CAS
            // (the tag moved).
            let below = self.next[slot].load(Relaxed);
            let popped = ((top >> 32) + 1) << 32 | u64::from(below);
            // Acquire: as above, for the top the CAS replaced.
            match self
                .top
                .compare_exchange_weak(top, popped, Acquire, Acquire)
            {
                Ok(_) => return Some(slot as u16),
                Err(now) => top = now,
            }
        }
        // Relaxed: a counter; each value is handed out once.
        self.fresh
            .fetch_update(Relaxed, Relaxed, |fresh| {
                (fresh < MAX_SLOTS).then_some(fresh + 1)
            })
            .ok()
            .map(|slot| slot as u16)
    }

    /// Returns `slot` to the pool.
    fn give(&self, slot: u16) {
        use std::sync::atomic::Ordering::{Relaxed, Release};
        // Relaxed: the expected value; the CAS decides.
        let mut top = self.top.load(Relaxed);
        loop {
            // Relaxed: published by the Release CAS below.
            self.next[usize::from(slot)].store(top as u32, Relaxed);
            let pushed = ((top >> 32) + 1) << 32 | u64::from(slot + 1);
            // Release: pairs with the Acquire in `take`.
            match self
                .top
                .compare_exchange_weak(top, pushed, Release, Relaxed)
            {
                Ok(_) => return,
                Err(now) => top = now,
            }
        }
    }

    /// Whether `slot` is on the stack (tests: a census while the pool is quiet).
    #[cfg(test)]
    fn contains(&self, slot: u16) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let mut at = self.top.load(Relaxed) as u32;
        while at != 0 {
            if at - 1 == u32::from(slot) {
                return true;
            }
            at = self.next[at as usize - 1].load(Relaxed);
        }
        false
    }
}

/// Loom: slots never handed out are `fresh..MAX_SLOTS`; returned ones are on
/// `returned` (the models never return any: see `ThreadSlot`'s drop).
#[cfg(loom)]
struct FreeSlots {
    fresh: usize,
    returned: Vec<u16>,
}

#[cfg(loom)]
impl FreeSlots {
    fn take(&mut self) -> Option<u16> {
        if let Some(slot) = self.returned.pop() {
            return Some(slot);
        }
        (self.fresh < slot_limit()).then(|| {
            self.fresh += 1;
            (self.fresh - 1) as u16
        })
    }
}

/// Loom models may hand out fewer than the two loom slots, so that two threads
/// already reach the slot-less path (at a deeper preemption bound than three could).
#[cfg(loom)]
static LOOM_SLOT_LIMIT: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(MAX_SLOTS);

#[cfg(loom)]
fn slot_limit() -> usize {
    LOOM_SLOT_LIMIT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Serialises loom models against changes of the slot limit: a model that ran while
/// another test changed the limit would see a nondeterministic slot pool.
#[cfg(all(loom, test))]
static SLOT_LIMIT_USERS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Runs `model` with the default slot limit, alongside other such models.
#[cfg(all(loom, test))]
pub(crate) fn with_default_slots<R>(model: impl FnOnce() -> R) -> R {
    let _shared = SLOT_LIMIT_USERS.read().unwrap_or_else(|e| e.into_inner());
    model()
}

/// Runs `model` with at most `limit` queue slots, with no other model running.
#[cfg(all(loom, test))]
pub(crate) fn with_slot_limit<R>(limit: usize, model: impl FnOnce() -> R) -> R {
    let _exclusive = SLOT_LIMIT_USERS.write().unwrap_or_else(|e| e.into_inner());
    LOOM_SLOT_LIMIT.store(limit, std::sync::atomic::Ordering::Relaxed);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(model));
    LOOM_SLOT_LIMIT.store(MAX_SLOTS, std::sync::atomic::Ordering::Relaxed);
    result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

#[cfg(not(loom))]
static TABLE: SlotTable = SlotTable {
    nodes: [const { CachePadded::new(McsNode::new()) }; MAX_SLOTS],
    pool: FreeStack::new(),
};

#[cfg(not(loom))]
fn table() -> &'static SlotTable {
    &TABLE
}

#[cfg(loom)]
loom::lazy_static! {
    static ref TABLE: SlotTable = SlotTable {
        nodes: std::array::from_fn(|_| CachePadded::new(McsNode::new())),
        pool: loom::sync::Mutex::new(FreeSlots { fresh: 0, returned: Vec::new() }),
    };
}

#[cfg(loom)]
fn table() -> &'static SlotTable {
    &TABLE
}

/// The node a tail code names. Codes come only from [`with_queue_node`], so they are
/// always in `1..=MAX_SLOTS`.
pub(crate) fn decode_tail(code: u32) -> &'static McsNode {
    &table().nodes[code as usize - 1]
}

/// A thread's claim on a slot: returned to the pool when the thread exits, unless it
/// exits while queued (see `drop`).
struct ThreadSlot {
    slot: Cell<Option<u16>>,
    /// How many slow paths this thread is inside (signal handlers nest them): the
    /// depth of its next wait record ([`with_wait_record`]).
    #[cfg_attr(loom, allow(dead_code))]
    waits: Cell<usize>,
    /// Set while this thread is queued, so a nested (signal-handler) acquisition on the
    /// same thread takes the slot-less path instead of reusing a node that is in a queue.
    in_use: Cell<bool>,
}

impl ThreadSlot {
    /// The slot this thread holds, claiming one if it has none yet. `None` when the
    /// pool is empty: the caller then uses the slot-less path this time.
    fn claim(&self) -> Option<u16> {
        if self.slot.get().is_none() {
            #[cfg(not(loom))]
            {
                let slot = table().pool.take();
                self.slot.set(slot);
                OWN_SLOT.with(|own| own.set(slot.map_or(0, |slot| u32::from(slot) + 1)));
            }
            #[cfg(loom)]
            match table().pool.try_lock() {
                Ok(mut free) => self.slot.set(free.take()),
                Err(_) => return None,
            }
        }
        self.slot.get()
    }
}

// Loom cannot run model operations inside a thread-local destructor, so under loom
// slots are not returned (the models never need more than their two slots); slot
// reuse after thread exit is checked natively below.
#[cfg(not(loom))]
impl Drop for ThreadSlot {
    fn drop(&mut self) {
        let Some(slot) = self.slot.get() else {
            return;
        };
        if self.in_use.get() {
            // The thread is exiting from inside `with_queue_node` (`pthread_exit` from a
            // signal handler, a `longjmp` out of a lock call, asynchronous cancellation,
            // a panic unwinding out of the queueing): its node may still be linked in a
            // lock's queue, where a predecessor will still write its `locked` and a
            // successor its `next`, or a tail still names it. The next thread to get the
            // slot would reset and publish that linked node (ABA: one node in two queue
            // positions, the queue corrupted). So the slot is leaked, never returned: it
            // costs one node of `MAX_SLOTS` for the rest of the process, on a path where
            // the lock it was queued on is lost anyway.
            return;
        }
        // The thread is exiting outside any queue: nobody can reach its node through a
        // tail any more, and the slot can go to another thread.
        table().pool.give(slot);
    }
}

#[cfg(not(loom))]
std::thread_local! {
    static THREAD_SLOT: ThreadSlot = const {
        ThreadSlot { slot: Cell::new(None), waits: Cell::new(0), in_use: Cell::new(false) }
    };
    /// This thread's slot plus one (0: none), beside `THREAD_SLOT` for the fork child
    /// handler: a thread-local without a destructor, which reading never registers.
    static OWN_SLOT: Cell<u32> = const { Cell::new(0) };
}

/// How many nested slow paths (signal handlers on one thread) a thread records.
// The wait records serve the fork repair, native only.
#[cfg_attr(loom, allow(dead_code))]
pub const WAIT_DEPTH: usize = 4;

/// `WAITS[slot][depth]`: the address of the lock word whose slow path the thread
/// holding `slot` is in, at that nesting depth; 0 for none. Written only by that
/// thread; read by the fork child handler ([`fork_child`](super::fork_child)).
#[cfg(not(loom))]
static WAITS: [[std::sync::atomic::AtomicUsize; WAIT_DEPTH]; MAX_SLOTS] =
    [const { [const { std::sync::atomic::AtomicUsize::new(0) }; WAIT_DEPTH] }; MAX_SLOTS];

/// Records that the thread holding `slot` waits for `word` at `depth` (0 clears it).
#[cfg(not(loom))]
fn record(slot: u16, depth: usize, word: usize) {
    // Relaxed: read only by a fork child, which sees memory as an instant of this
    // thread's execution; the fence orders the record before the waiter bits (the
    // word's RMWs that follow), so that no instant shows the bits without it.
    WAITS[usize::from(slot)][depth].store(word, std::sync::atomic::Ordering::Relaxed);
    std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
}

/// The waits recorded by the threads of slots ever handed out, but `except`'s, each
/// passed to `take` and cleared (the fork child handler, alone in the child: those
/// threads are gone).
#[cfg(not(loom))]
pub(crate) fn take_waits_of_others(except: Option<u16>, mut take: impl FnMut(usize)) {
    use std::sync::atomic::Ordering::Relaxed;
    for (slot, records) in WAITS.iter().enumerate().take(slots_handed_out()) {
        if Some(slot as u16) == except {
            continue;
        }
        for record in records {
            // Relaxed: the child has one thread.
            let word = record.load(Relaxed);
            if word != 0 {
                take(word);
                record.store(0, Relaxed);
            }
        }
    }
}

/// The calling thread's slot, if it has one (for the fork child handler).
#[cfg(not(loom))]
pub(crate) fn own_slot() -> Option<u16> {
    let own = OWN_SLOT.try_with(Cell::get).unwrap_or(0);
    (own != 0).then(|| (own - 1) as u16)
}

/// How many slots were ever handed out: slots `0..` this hold every record.
#[cfg(not(loom))]
fn slots_handed_out() -> usize {
    // Relaxed: read by the fork child handler alone in the child.
    table()
        .pool
        .fresh
        .load(std::sync::atomic::Ordering::Relaxed)
        .min(MAX_SLOTS)
}

/// Runs `wait`, a lock's slow path on `word`, with the wait recorded for a fork
/// child ([`fork_child`](super::fork_child)): the record names `word` before `wait`
/// touches it and is cleared when `wait` returns (the thread holds the lock then).
/// A thread without a slot, or nested deeper than [`WAIT_DEPTH`], records nothing.
#[inline]
pub(crate) fn with_wait_record<R>(word: &AtomicU32, wait: impl FnOnce() -> R) -> R {
    #[cfg(not(loom))]
    {
        let place = THREAD_SLOT.try_with(|ts| {
            let slot = ts.claim()?;
            let depth = ts.waits.get();
            // The depth moves before the record is written: a handler that interrupts
            // this thread between the two records at the next depth, and restores
            // both before it returns.
            ts.waits.set(depth + 1);
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
            if depth < WAIT_DEPTH {
                record(slot, depth, word.as_ptr() as usize);
            }
            Some((slot, depth))
        });
        let result = wait();
        if let Ok(Some((slot, depth))) = place {
            if depth < WAIT_DEPTH {
                record(slot, depth, 0);
            }
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
            let _ = THREAD_SLOT.try_with(|ts| ts.waits.set(depth));
        }
        result
    }
    #[cfg(loom)]
    {
        let _ = word;
        wait()
    }
}

#[cfg(loom)]
loom::thread_local! {
    static THREAD_SLOT: ThreadSlot = ThreadSlot { slot: Cell::new(None), waits: Cell::new(0), in_use: Cell::new(false) };
}

/// Runs `queue` with this thread's node, reset and ready to be published, and its tail
/// code; or with `None` when the thread has no usable node (see the module doc).
pub(crate) fn with_queue_node<R>(queue: impl FnOnce(Option<(u32, &'static McsNode)>) -> R) -> R {
    let claimed = THREAD_SLOT.try_with(|ts| {
        if ts.in_use.get() {
            return None;
        }
        let slot = ts.claim()?;
        ts.in_use.set(true);
        Some(slot)
    });
    let Ok(Some(slot)) = claimed else {
        return queue(None);
    };
    // The signal-handler check above reads `in_use` on this same thread; keep the
    // compiler from sinking the store past the queueing.
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);

    let code = u32::from(slot) + 1;
    let node = decode_tail(code);
    // Relaxed: nobody can see the node until the tail swap that publishes it, which is
    // a Release (see `xchg_tail`); the node was last touched by our own previous use.
    node.locked.store(0, Ordering::Relaxed);
    node.next.store(std::ptr::null_mut(), Ordering::Relaxed);
    node.state.store(RUNNING, Ordering::Relaxed);

    let result = queue(Some((code, node)));

    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    let _ = THREAD_SLOT.try_with(|ts| ts.in_use.set(false));
    result
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Whether `slot` is on the pool's free list (a census).
    fn returned_contains(slot: u16) -> bool {
        table().pool.contains(slot)
    }

    #[test]
    fn a_thread_exiting_while_queued_leaks_its_slot() {
        // Alone in a child process: see `crate::testing::alone`.
        if !crate::testing::alone("spin::mcs::tests::a_thread_exiting_while_queued_leaks_its_slot")
        {
            return;
        }
        // A panic unwinding out of the closure leaves `with_queue_node` as an abnormal
        // exit does: `in_use` still set, the node possibly linked in some queue. The
        // tail code travels out as the panic payload.
        let leaked = std::thread::spawn(|| {
            with_queue_node(|node| {
                let (code, _) = node.expect("a node: this process has no other user");
                std::panic::panic_any(code)
            })
        })
        .join()
        .expect_err("the thread unwinds out of its queue")
        .downcast::<u32>()
        .map(|code| *code)
        .expect("the tail code");
        // Joined: the thread's destructors have run.
        assert!(
            !returned_contains((leaked - 1) as u16),
            "the slot of a thread that exited while queued went back to the pool"
        );
        // Threads that come and go get the other slots, never the leaked one.
        for _ in 0..3 * MAX_SLOTS {
            let code = std::thread::spawn(|| with_queue_node(|node| node.map(|(c, _)| c)))
                .join()
                .unwrap();
            assert!(code.is_some(), "a slot returned normally was lost");
            assert_ne!(code, Some(leaked), "a leaked slot was handed out again");
        }
        // Held all at once, the others still serve MAX_SLOTS - 1 threads and no more:
        // the leak costs one node. The holders claim one after the other (a claim that
        // finds the pool's lock taken gets no node).
        let release = std::sync::Barrier::new(MAX_SLOTS);
        let (sent, received) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            let release = &release;
            let mut codes = Vec::new();
            for _ in 0..MAX_SLOTS - 1 {
                let sent = sent.clone();
                s.spawn(move || {
                    with_queue_node(|node| {
                        sent.send(node.map(|(c, _)| c)).unwrap();
                        release.wait();
                    })
                });
                codes.push(received.recv().unwrap());
            }
            let extra = s.spawn(|| with_queue_node(|node| node.is_some()));
            let extra = extra.join().unwrap();
            release.wait();
            assert!(
                codes
                    .iter()
                    .all(|code| code.is_some() && *code != Some(leaked)),
                "{codes:?}, leaked {leaked}"
            );
            assert!(
                !extra,
                "a node was handed out beyond the MAX_SLOTS - 1 left"
            );
        });
    }

    #[test]
    fn slots_are_reused_after_thread_exit() {
        // Alone in a child process, as `nested_use_on_one_thread_gets_no_node`.
        if !crate::testing::alone("spin::mcs::tests::slots_are_reused_after_thread_exit") {
            return;
        }
        // Claim and release more slots than exist, one thread at a time: every thread
        // must get a node, because each exiting thread returns its slot.
        for _ in 0..3 * MAX_SLOTS {
            std::thread::spawn(|| with_queue_node(|node| assert!(node.is_some())))
                .join()
                .unwrap();
        }
    }

    #[test]
    fn nested_use_on_one_thread_gets_no_node() {
        // Alone in a child process: the slots are the process's, and a test beside it
        // with more queueing threads than slots may hold them all.
        if !crate::testing::alone("spin::mcs::tests::nested_use_on_one_thread_gets_no_node") {
            return;
        }
        with_queue_node(|outer| {
            assert!(outer.is_some());
            with_queue_node(|inner| assert!(inner.is_none(), "node handed out twice"));
        });
        with_queue_node(|again| assert!(again.is_some(), "node not released"));
    }

    /// Forks while other threads take and return slots; in each child the forking
    /// thread (which holds a slot) exits, returning its slot. A pool behind a lock
    /// that another thread held at the fork would block that exit forever.
    #[test]
    fn the_pool_survives_forks_amid_slot_traffic() {
        let name = "spin::mcs::tests::the_pool_survives_forks_amid_slot_traffic";
        let status = crate::testing::isolated(name, || {
            use std::sync::atomic::AtomicBool;
            use std::time::{Duration, Instant};
            static STOP: AtomicBool = AtomicBool::new(false);
            let churners: Vec<_> = (0..2)
                .map(|_| {
                    std::thread::spawn(|| {
                        while !STOP.load(Ordering::Relaxed) {
                            std::thread::spawn(|| with_queue_node(|_| ()))
                                .join()
                                .unwrap();
                        }
                    })
                })
                .collect();
            for _ in 0..100 {
                let child = std::thread::spawn(|| {
                    with_queue_node(|_| ());
                    // SAFETY: fork in a test process; the child only lets this thread
                    // return (its thread-locals' destructors run) and the process end.
                    unsafe { libc::fork() }
                })
                .join();
                let pid = match child {
                    Ok(pid) if pid > 0 => pid,
                    // The child's copy of the forking thread: returning ended it (and
                    // the child process, whose only thread it was) above; a parent
                    // that failed to fork says so.
                    Ok(pid) => panic!("fork returned {pid}"),
                    Err(_) => panic!("the forking thread panicked"),
                };
                let deadline = Instant::now() + Duration::from_secs(3);
                loop {
                    let mut status = 0;
                    // SAFETY: waits for our own child without blocking.
                    let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
                    if done == pid {
                        break;
                    }
                    if Instant::now() > deadline {
                        // SAFETY: our own child.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                        panic!("a fork child's thread never finished exiting");
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            STOP.store(true, Ordering::Relaxed);
            churners.into_iter().for_each(|c| c.join().unwrap());
        });
        if let Some(status) = status {
            assert!(status.success(), "{status:?}");
        }
    }

    #[test]
    fn exhausted_pool_gives_no_node() {
        // Hold slots from MAX_SLOTS live threads, then ask from one more. Other tests
        // run concurrently and may hold slots too, so the claim is: never more nodes
        // handed out than slots, and if every holder got one, the extra thread gets none.
        let held = std::sync::Barrier::new(MAX_SLOTS + 1);
        let release = std::sync::Barrier::new(MAX_SLOTS + 1);
        std::thread::scope(|s| {
            let holders: Vec<_> = (0..MAX_SLOTS)
                .map(|_| {
                    s.spawn(|| {
                        with_queue_node(|node| {
                            held.wait();
                            release.wait();
                            node.is_some()
                        })
                    })
                })
                .collect();
            held.wait();
            let extra = s.spawn(|| with_queue_node(|n| n.is_some())).join().unwrap();
            release.wait();
            let holders_with_node = holders
                .into_iter()
                .map(|h| h.join().unwrap())
                .filter(|&got| got)
                .count();
            assert!(holders_with_node + usize::from(extra) <= MAX_SLOTS);
            if holders_with_node == MAX_SLOTS {
                assert!(!extra, "a node was handed out beyond MAX_SLOTS");
            }
        });
    }
}
