//! A sleeping lock's wait queue: the kernel's `wait_lock` + `wait_list` + `wake_q`.
//!
//! Waiters are nodes on their own stacks, linked in arrival order (FIFO) into a
//! singly linked list that only the holder of the queue's lock reads or changes. A
//! waiter waits on its node's `state` word (spinning, then sleeping: [`park`](crate::park)) until a
//! waker changes it.
//!
//! The queue's lock is a [`SpinFutexMutex`](crate::SpinFutexMutex): the kernel's
//! `wait_lock` is a spinlock, held for a few list operations, never across a sleep or
//! a wake-up, and a waiter for it here spins while its holder runs and sleeps if the
//! holder was preempted (threads outnumber CPUs). A queued spinlock would do too, but
//! would hold one of its per-thread queue slots for every thread that ever slept on
//! an rwsem. Wake-ups are decided while the lock is held and made after it is
//! dropped (the kernel's `wake_q`; the rwsem's `Deliveries`), so a woken thread never
//! runs straight into the lock its waker still holds, and a waiter let go, which may
//! free the rwsem, only runs once its waker is done with the rwsem. Under `--cfg loom` the lock is
//! loom's mutex: the pv lock's own models prove it, and modelling it again inside
//! every rwsem execution would only multiply the states.
//!
//! # Node lifetime
//!
//! A node is in the list from the `push` by its owner until a `pop_front` or `remove`
//! under the lock. A waker may store to a node's `state` only while the node is linked
//! or, for a node it has unlinked and not yet told, as its last access: once the waiter sees the
//! new state it may return and its stack frame is gone. The futex wake that follows
//! therefore takes the word's address, not a reference ([`park::wake_one_at`](crate::park::wake_one_at)): a wake
//! on a dead address is a no-op or a spurious wake-up of whoever sleeps there now,
//! which every sleeper tolerates.

use std::cell::Cell;
use std::ptr;

use crate::sync::AtomicU32;

/// One waiter: a link, a word to sleep on, and what the lock needs to know about it.
pub(crate) struct Waiter<D> {
    next: Cell<*const Waiter<D>>,
    /// What the waker tells the waiter; the waiter sleeps while it is unchanged.
    pub(crate) state: AtomicU32,
    pub(crate) data: D,
}

impl<D> Waiter<D> {
    pub(crate) fn new(state: u32, data: D) -> Self {
        Self {
            next: Cell::new(ptr::null()),
            state: AtomicU32::new(state),
            data,
        }
    }
}

/// The list of waiters, oldest first. Only reachable through [`WaitQueue::lock`].
pub(crate) struct Queue<D> {
    head: *const Waiter<D>,
    tail: *const Waiter<D>,
}

// SAFETY: the raw pointers name nodes of other threads; they are only followed while
// the queue's lock is held, and every node stays alive while it is linked (see the
// module doc), so moving the list between threads under that lock is sound.
unsafe impl<D> Send for Queue<D> {}

impl<D> Queue<D> {
    const fn new() -> Self {
        Self {
            head: ptr::null(),
            tail: ptr::null(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_null()
    }

    /// Whether `node` is the only waiter.
    pub(crate) fn is_only(&self, node: &Waiter<D>) -> bool {
        ptr::eq(self.head, node) && ptr::eq(self.tail, node)
    }

    pub(crate) fn is_front(&self, node: &Waiter<D>) -> bool {
        ptr::eq(self.head, node)
    }

    /// The oldest waiter.
    pub(crate) fn front(&self) -> Option<&Waiter<D>> {
        // SAFETY: a linked node is alive (module doc), and we hold the queue's lock.
        unsafe { self.head.as_ref() }
    }

    /// Links `node` at the back. The caller keeps `node` alive and unmoved until it
    /// is unlinked again.
    pub(crate) fn push(&mut self, node: &Waiter<D>) {
        node.next.set(ptr::null());
        match self.back() {
            Some(back) => back.next.set(node),
            None => self.head = node,
        }
        self.tail = node;
    }

    fn back(&self) -> Option<&Waiter<D>> {
        // SAFETY: as in `front`.
        unsafe { self.tail.as_ref() }
    }

    /// Unlinks up to `max` waiters for which `pick` is true, wherever they are, and
    /// returns them still chained to each other in queue order.
    pub(crate) fn detach_where(
        &mut self,
        max: usize,
        mut pick: impl FnMut(&Waiter<D>) -> bool,
    ) -> Detached<D> {
        let mut taken = Detached {
            head: ptr::null(),
            len: 0,
        };
        let mut taken_tail: *const Waiter<D> = ptr::null();
        let mut prev: *const Waiter<D> = ptr::null();
        let mut at = self.head;
        // SAFETY: `at` and `prev` are null or linked nodes (we walk from the head under
        // the lock), `taken_tail` null or a node we just unlinked, alive as well.
        while let (Some(node), true) = (unsafe { at.as_ref() }, taken.len < max) {
            let next = node.next.get();
            if pick(node) {
                match unsafe { prev.as_ref() } {
                    Some(prev) => prev.next.set(next),
                    None => self.head = next,
                }
                if ptr::eq(self.tail, node) {
                    self.tail = prev;
                }
                node.next.set(ptr::null());
                match unsafe { taken_tail.as_ref() } {
                    Some(tail) => tail.next.set(node),
                    None => taken.head = node,
                }
                taken_tail = node;
                taken.len += 1;
            } else {
                prev = at;
            }
            at = next;
        }
        taken
    }

    /// Unlinks `node`, which must be linked (its owner removing itself).
    pub(crate) fn remove(&mut self, node: &Waiter<D>) {
        let mut prev: *const Waiter<D> = ptr::null();
        let mut at = self.head;
        while !ptr::eq(at, node) {
            assert!(!at.is_null(), "klocks: a waiter left a queue it was not in");
            prev = at;
            // SAFETY: `at` is a linked node (we walk from the head under the lock).
            at = unsafe { (*at).next.get() };
        }
        let next = node.next.get();
        // SAFETY: `prev` is null or a linked node, as above.
        match unsafe { prev.as_ref() } {
            Some(prev) => prev.next.set(next),
            None => self.head = next,
        }
        if ptr::eq(self.tail, node) {
            self.tail = prev;
        }
    }
}

/// Waiters unlinked by [`Queue::detach_where`], chained in queue order. Each stays
/// alive until its waker's last store to its `state` (module doc).
pub(crate) struct Detached<D> {
    head: *const Waiter<D>,
    len: usize,
}

impl<D> Detached<D> {
    /// Visits the waiters in order without releasing any.
    pub(crate) fn each(&self, mut f: impl FnMut(usize, &Waiter<D>)) {
        let mut at = self.head;
        let mut i = 0;
        // SAFETY: detached nodes are alive until released (`release_each`).
        while let Some(node) = unsafe { at.as_ref() } {
            f(i, node);
            i += 1;
            at = node.next.get();
        }
    }

    /// Visits the waiters in order, letting `f` release each (its last access): the
    /// link to the next is read before `f` runs.
    pub(crate) fn release_each(self, mut f: impl FnMut(usize, &Waiter<D>)) {
        let mut at = self.head;
        let mut i = 0;
        // SAFETY: as in `each`; the node is not touched after `f`.
        while let Some(node) = unsafe { at.as_ref() } {
            at = node.next.get();
            f(i, node);
            i += 1;
        }
    }
}

/// The queue and its lock.
pub(crate) struct WaitQueue<D> {
    #[cfg(not(loom))]
    inner: lock_api::Mutex<crate::SpinFutexMutex, Queue<D>>,
    #[cfg(loom)]
    inner: loom::sync::Mutex<Queue<D>>,
}

impl<D> WaitQueue<D> {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        Self {
            inner: lock_api::Mutex::const_new(crate::SpinFutexMutex::new(), Queue::new()),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        Self {
            inner: loom::sync::Mutex::new(Queue::new()),
        }
    }

    /// Takes the queue's lock.
    #[cfg(not(loom))]
    pub(crate) fn lock(&self) -> impl std::ops::DerefMut<Target = Queue<D>> + '_ {
        self.inner.lock()
    }

    #[cfg(loom)]
    pub(crate) fn lock(&self) -> impl std::ops::DerefMut<Target = Queue<D>> + '_ {
        self.inner.lock().unwrap()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ids(queue: &Queue<u32>) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = queue.head;
        while let Some(node) = unsafe { at.as_ref() } {
            out.push(node.data);
            at = node.next.get();
        }
        out
    }

    #[test]
    fn fifo_order_and_removal_from_anywhere_keep_head_and_tail() {
        let nodes: Vec<Waiter<u32>> = (0..4).map(|i| Waiter::new(0, i)).collect();
        let mut queue = Queue::new();
        assert!(queue.is_empty());
        for node in &nodes {
            queue.push(node);
        }
        assert_eq!(ids(&queue), [0, 1, 2, 3]);
        assert!(queue.is_front(&nodes[0]));
        queue.remove(&nodes[2]);
        assert_eq!(ids(&queue), [0, 1, 3]);
        queue.remove(&nodes[3]);
        assert_eq!(ids(&queue), [0, 1]);
        queue.push(&nodes[2]);
        assert_eq!(ids(&queue), [0, 1, 2]);
        queue.remove(&nodes[0]);
        queue.remove(&nodes[1]);
        assert!(queue.is_only(&nodes[2]));
        queue.remove(&nodes[2]);
        assert!(queue.is_empty());
    }

    fn detached_ids(detached: &Detached<u32>) -> Vec<u32> {
        let mut out = Vec::new();
        detached.each(|i, node| {
            assert_eq!(i, out.len());
            out.push(node.data);
        });
        out
    }

    #[test]
    fn detach_where_takes_matches_from_anywhere_in_order() {
        let nodes: Vec<Waiter<u32>> = (0..6).map(|i| Waiter::new(0, i)).collect();
        let mut queue = Queue::new();
        nodes.iter().for_each(|n| queue.push(n));
        let odd = queue.detach_where(2, |n| n.data % 2 == 1);
        assert_eq!(detached_ids(&odd), [1, 3]);
        assert_eq!(ids(&queue), [0, 2, 4, 5]);
        let back = queue.detach_where(8, |n| n.data >= 4);
        assert_eq!(detached_ids(&back), [4, 5]);
        assert_eq!(ids(&queue), [0, 2]);
        queue.push(&nodes[1]);
        assert_eq!(
            ids(&queue),
            [0, 2, 1],
            "the tail follows removals at the back"
        );
        let mut released = Vec::new();
        queue
            .detach_where(8, |_| true)
            .release_each(|i, n| released.push((i, n.data)));
        assert_eq!(released, [(0, 0), (1, 2), (2, 1)]);
        assert!(queue.is_empty());
    }

    #[test]
    #[should_panic(expected = "a waiter left a queue it was not in")]
    fn removing_an_unlinked_node_panics() {
        let (a, b) = (Waiter::new(0, 1u32), Waiter::new(0, 2u32));
        let mut queue = Queue::new();
        queue.push(&a);
        queue.remove(&b);
    }
}
