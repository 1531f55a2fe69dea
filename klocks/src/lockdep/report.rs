//! What a report holds: plain values, no allocation, so that the graph keeps them in
//! its mapped memory and a host may render them where allocating is unsafe.

/// How many return addresses a dependency keeps of the stack that made it.
pub const FRAMES: usize = 8;

/// The longest chain a report keeps (a longer cycle's first dependencies).
pub const MAX_CHAIN: usize = 8;

/// What a report says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportKind {
    /// A cycle of dependencies: `possible circular locking dependency`.
    CircularDependency,
    /// A wait for a lock of a class the thread holds: `possible recursive locking`.
    RecursiveLocking,
    /// A thread exited holding the lock of `chain[0].from`.
    HeldAtThreadExit,
    /// A thread destroyed a lock it held (class `chain[0].from`).
    DestroyedWhileHeld,
}

/// One dependency: a thread held a lock of class `from` (taken at `holder_site`)
/// and waited for one of class `to` at `waiter_site`, whose stack was
/// `waiter_stack`. For the warnings, `to` is 0 and there is no stack.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dependency {
    /// The held lock's class.
    pub from: u32,
    /// The wanted lock's class (0 for a warning).
    pub to: u32,
    /// Whether the held lock was held shared (a read lock).
    pub from_shared: bool,
    /// Whether the wanted lock was a recursive read.
    pub to_recursive_read: bool,
    /// Where the held lock was taken: its lock call's return address.
    pub holder_site: usize,
    /// Where the wanted lock was called for: its lock call's return address.
    pub waiter_site: usize,
    /// The waiting thread's stack from `waiter_site` outwards (0 past the last).
    pub waiter_stack: [usize; FRAMES],
    /// The thread, by kernel id.
    pub thread: u32,
}

/// One report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    /// What it says.
    pub kind: ReportKind,
    /// For a cycle: the dependency that closed it first (this thread's, the one it
    /// was about to wait for), then the dependencies that were already there, from
    /// its wanted class back to its held one. For recursive locking: the one
    /// dependency within a class. For a warning: the lock held.
    pub chain: [Dependency; MAX_CHAIN],
    /// How many of `chain` are used.
    pub len: usize,
    /// Whether the cycle was longer than [`MAX_CHAIN`].
    pub truncated: bool,
}

impl Report {
    /// The dependencies, in order.
    pub fn chain(&self) -> &[Dependency] {
        &self.chain[..self.len]
    }

    /// The classes of a cycle in order, starting from the held class of the first
    /// dependency.
    pub fn classes(&self) -> impl Iterator<Item = u32> + '_ {
        self.chain().iter().map(|dependency| dependency.from)
    }
}
