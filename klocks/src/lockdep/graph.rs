//! The dependencies: a lock-free set of those seen, and behind the graph's lock, the
//! graph with its topological order, the dependencies' records and the reports.
//!
//! # The seen set
//!
//! Each dependency is one word, [`key`]: the two classes, whether the held lock was
//! shared, whether the wanted one is a recursive read. The set is open addressing
//! over [`SET`] words; only the graph's lock holder inserts (a Release store into an
//! empty slot), every thread looks up without a lock (Acquire loads), so a lookup
//! either finds a dependency or goes to the lock, which looks again.
//!
//! # The graph and its order
//!
//! Each class `c` is two nodes: `2c` ("reached by a dependency that does not end in a
//! recursive read") and `2c + 1` ("reached by one that does"). A dependency A→B adds
//! the arc `2A + r → 2B + r'` (`r'`: whether B is a recursive read) for each `r` it may
//! follow: both when A was held exclusive, only `r = 0` when A was held shared (a
//! shared hold after a recursive read is the pair that the recursive-read rule says
//! cannot deadlock). A cycle of nodes is then exactly a cycle of dependencies that
//! the rule keeps (module doc of `lockdep`).
//!
//! The nodes keep a topological order `ord` (Pearce and Kelly, "A dynamic topological
//! sort algorithm for directed acyclic graphs", JEA 2006; the algorithm of Abseil's
//! `graphcycles.cc`). An arc `x → y` with `ord[x] < ord[y]` changes nothing. Otherwise
//! a forward search from `y` over nodes ordered at most `ord[x]` either reaches `x`
//! (a cycle: the arc is not added, and the path found is the report's chain) or
//! collects the set `F`; a backward search from `x` over nodes ordered at least
//! `ord[y]` collects `B`; the order positions of `B ∪ F` are then handed out again,
//! `B`'s first, each set keeping its own order. Only nodes between the arc's ends
//! are visited.

use std::cell::UnsafeCell;
use std::sync::atomic::{
    AtomicBool, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::OnceLock;

use super::class::{self, map};
use super::report::{Dependency, Report, ReportKind, MAX_CHAIN};
use super::state::{self, stop, Host, MAX_CLASSES, MAX_DEPENDENCIES, MAX_REPORTS};

/// The seen set's size: twice the dependencies, so probe paths stay short.
const SET: usize = 2 * MAX_DEPENDENCIES;
/// Two nodes a class, class ids from 1.
const NODES: usize = 2 * (MAX_CLASSES + 1);
/// At most two arcs a dependency.
const ARCS: usize = 2 * MAX_DEPENDENCIES;
/// No arc: the end of a list.
const NONE: u32 = u32::MAX;

/// The word of the dependency `from → to`.
pub(super) fn key(from: u32, to: u32, from_shared: bool, to_recursive: bool) -> u64 {
    (u64::from(from) << 32)
        | (u64::from(to) << 2)
        | (u64::from(from_shared) << 1)
        | u64::from(to_recursive)
}

fn slot_of(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize % SET
}

/// An arc of the graph, on the lists of its two ends.
#[derive(Clone, Copy)]
struct Arc {
    from: u32,
    to: u32,
    next_out: u32,
    next_in: u32,
    dependency: u32,
}

/// Everything behind the graph's lock.
struct Graph {
    dependencies: [Dependency; MAX_DEPENDENCIES],
    dependency_count: usize,
    arcs: [Arc; ARCS],
    arc_count: usize,
    out_head: [u32; NODES],
    in_head: [u32; NODES],
    ord: [u32; NODES],
    /// The search's marks: a node is visited when its mark is `epoch`.
    mark: [u32; NODES],
    epoch: u32,
    /// The arc by which the forward search reached each node.
    parent: [u32; NODES],
    stack: [u32; NODES],
    forward: [u32; NODES],
    backward: [u32; NODES],
    positions: [u32; NODES],
    reports: [Report; MAX_REPORTS],
    report_count: usize,
    reports_dropped: u64,
}

struct Shared {
    host: &'static Host,
    seen: &'static [AtomicU64],
    graph: &'static UnsafeCell<Graph>,
    /// The graph's lock (held for a new dependency, a report, a fork).
    busy: AtomicBool,
}

// SAFETY: the graph is touched only with `busy` held (see `locked`).
unsafe impl Sync for Shared {}
// SAFETY: as above.
unsafe impl Send for Shared {}

static SHARED: OnceLock<Shared> = OnceLock::new();
/// Dependencies recorded (for `usage`, without the lock).
static DEPENDENCIES: AtomicUsize = AtomicUsize::new(0);

/// Maps the tables and registers the fork handlers (once); whether they are there.
pub(super) fn start(host: &'static Host) -> bool {
    if SHARED.get().is_some() {
        return true;
    }
    if !class::start() {
        return false;
    }
    state::set_host(host);
    let (Some(seen), Some(graph)) = (map::<AtomicU64>(SET), map::<UnsafeCell<Graph>>(1)) else {
        return false;
    };
    let graph = &graph[0];
    {
        // SAFETY: nobody else has the graph yet (it is published below).
        let fresh = unsafe { &mut *graph.get() };
        for (node, ord) in fresh.ord.iter_mut().enumerate() {
            *ord = node as u32;
        }
        fresh.out_head = [NONE; NODES];
        fresh.in_head = [NONE; NODES];
    }
    if SHARED
        .set(Shared {
            host,
            seen,
            graph,
            busy: AtomicBool::new(false),
        })
        .is_err()
    {
        return true;
    }
    extern "C" fn prepare() {
        if let Some(shared) = SHARED.get() {
            take(shared);
        }
    }
    extern "C" fn after() {
        if let Some(shared) = SHARED.get() {
            // Release: pairs with the Acquire in `take`.
            shared.busy.store(false, Release);
        }
    }
    // SAFETY: plain functions that live as long as the process; the child's handler
    // releases the lock its forking thread took in `prepare`, so the graph is whole.
    unsafe { libc::pthread_atfork(Some(prepare), Some(after), Some(after)) };
    true
}

pub(super) fn host() -> Option<&'static Host> {
    SHARED.get().map(|shared| shared.host)
}

fn take(shared: &Shared) {
    // Acquire: pairs with the Release of the previous holder's release.
    while shared.busy.swap(true, Acquire) {
        // The slow path only: another thread is adding a dependency or reporting.
        std::thread::yield_now();
    }
}

/// Runs `body` on the graph with its lock held.
fn locked<R>(body: impl FnOnce(&'static Host, &mut Graph) -> R) -> Option<R> {
    let shared = SHARED.get()?;
    take(shared);
    // SAFETY: `busy` is held: nobody else touches the graph.
    let result = body(shared.host, unsafe { &mut *shared.graph.get() });
    // Release: pairs with the Acquire in `take`.
    shared.busy.store(false, Release);
    Some(result)
}

/// Whether the dependency `key` was seen (no lock).
#[inline]
pub(super) fn seen(key: u64) -> bool {
    let Some(shared) = SHARED.get() else {
        return true;
    };
    let mut at = slot_of(key);
    loop {
        // Acquire: pairs with the Release in `insert`; the dependency's arcs are then
        // in the graph.
        match shared.seen[at].load(Acquire) {
            0 => return false,
            found if found == key => return true,
            _ => at = (at + 1) % SET,
        }
    }
}

fn insert(seen: &[AtomicU64], key: u64) {
    let mut at = slot_of(key);
    // Relaxed: only the graph's lock holder writes the set.
    while seen[at].load(Relaxed) != 0 {
        at = (at + 1) % SET;
    }
    // Release: pairs with the Acquire in `seen`.
    seen[at].store(key, Release);
}

/// Adds a dependency never seen before (this thread holds `dependency.from` and is
/// about to wait for `dependency.to`), reporting the cycle or recursion it makes.
#[cold]
pub(super) fn add(key: u64, dependency: Dependency) {
    let Some(shared) = SHARED.get() else { return };
    let full = locked(|host, graph| {
        if seen(key) {
            return false;
        }
        if graph.dependency_count == MAX_DEPENDENCIES {
            return true;
        }
        let index = graph.dependency_count as u32;
        graph.dependencies[index as usize] = dependency;
        graph.dependency_count += 1;
        // Relaxed: a count.
        DEPENDENCIES.store(graph.dependency_count, Relaxed);
        let (from, to) = (dependency.from, dependency.to);
        if from == to {
            if !(dependency.from_shared && dependency.to_recursive_read) {
                let mut report = empty(ReportKind::RecursiveLocking);
                report.chain[0] = dependency;
                report.len = 1;
                keep(host, graph, report);
            }
        } else {
            let target = 2 * to + u32::from(dependency.to_recursive_read);
            let sources: &[u32] = if dependency.from_shared {
                &[2 * from]
            } else {
                &[2 * from, 2 * from + 1]
            };
            for &source in sources {
                if !graph.insert_arc(source, target, index) {
                    let report = graph.cycle(source, target, index);
                    keep(host, graph, report);
                    break;
                }
            }
        }
        insert(shared.seen, key);
        false
    });
    if full == Some(true) {
        stop("lockdep: the dependency table is full (16384 dependencies); validation stopped");
    }
}

/// A warning about the held lock `held` (a dependency with no wanted class).
#[cold]
pub(super) fn warn(kind: ReportKind, held: Dependency) {
    locked(|host, graph| {
        let already = graph.reports[..graph.report_count]
            .iter()
            .any(|report| report.kind == kind && report.chain[0].from == held.from);
        if !already {
            let mut report = empty(kind);
            report.chain[0] = held;
            report.len = 1;
            keep(host, graph, report);
        }
    });
}

fn empty(kind: ReportKind) -> Report {
    Report {
        kind,
        chain: [Dependency::default(); MAX_CHAIN],
        len: 0,
        truncated: false,
    }
}

fn keep(host: &Host, graph: &mut Graph, report: Report) {
    (host.found)(&report);
    if graph.report_count < MAX_REPORTS {
        graph.reports[graph.report_count] = report;
        graph.report_count += 1;
    } else {
        graph.reports_dropped += 1;
    }
}

/// A copy of the reports, and how many were not kept.
pub(super) fn reports() -> (Vec<Report>, u64) {
    locked(|_, graph| {
        (
            graph.reports[..graph.report_count].to_vec(),
            graph.reports_dropped,
        )
    })
    .unwrap_or_default()
}

/// Dependencies recorded.
pub(super) fn dependencies() -> usize {
    // Relaxed: a count.
    DEPENDENCIES.load(Relaxed)
}

impl Graph {
    /// Pearce–Kelly's insertion of `x → y` for dependency `dependency` (module doc);
    /// `false` if the arc would close a cycle (not added: [`Graph::cycle`] reads the
    /// path the search found).
    fn insert_arc(&mut self, x: u32, y: u32, dependency: u32) -> bool {
        let (lower, upper) = (self.ord[y as usize], self.ord[x as usize]);
        if lower > upper {
            self.link(x, y, dependency);
            return true;
        }
        self.epoch = self.epoch.wrapping_add(1).max(1);
        let Ok(forward) = self.search_forward(y, x, upper) else {
            return false;
        };
        let backward = self.search_backward(x, lower);
        self.reorder(forward, backward);
        self.link(x, y, dependency);
        true
    }

    fn link(&mut self, x: u32, y: u32, dependency: u32) {
        if self.arc_count == ARCS {
            return;
        }
        let arc = self.arc_count as u32;
        self.arcs[arc as usize] = Arc {
            from: x,
            to: y,
            next_out: self.out_head[x as usize],
            next_in: self.in_head[y as usize],
            dependency,
        };
        self.out_head[x as usize] = arc;
        self.in_head[y as usize] = arc;
        self.arc_count += 1;
    }

    /// Collects in `forward` the nodes reachable from `start` ordered at most
    /// `upper`; `Err` if `target` is one of them (its `parent` arcs lead back).
    fn search_forward(&mut self, start: u32, target: u32, upper: u32) -> Result<usize, ()> {
        let (mut found, mut depth) = (0, 0);
        self.mark[start as usize] = self.epoch;
        self.parent[start as usize] = NONE;
        self.stack[depth] = start;
        depth += 1;
        while depth > 0 {
            depth -= 1;
            let node = self.stack[depth];
            self.forward[found] = node;
            found += 1;
            let mut arc = self.out_head[node as usize];
            while arc != NONE {
                let Arc { to, next_out, .. } = self.arcs[arc as usize];
                if to == target {
                    self.parent[to as usize] = arc;
                    return Err(());
                }
                if self.mark[to as usize] != self.epoch && self.ord[to as usize] < upper {
                    self.mark[to as usize] = self.epoch;
                    self.parent[to as usize] = arc;
                    self.stack[depth] = to;
                    depth += 1;
                }
                arc = next_out;
            }
        }
        Ok(found)
    }

    /// Collects in `backward` the nodes that reach `start` ordered at least `lower`.
    fn search_backward(&mut self, start: u32, lower: u32) -> usize {
        let (mut found, mut depth) = (0, 0);
        self.mark[start as usize] = self.epoch;
        self.stack[depth] = start;
        depth += 1;
        while depth > 0 {
            depth -= 1;
            let node = self.stack[depth];
            self.backward[found] = node;
            found += 1;
            let mut arc = self.in_head[node as usize];
            while arc != NONE {
                let Arc { from, next_in, .. } = self.arcs[arc as usize];
                if self.mark[from as usize] != self.epoch && self.ord[from as usize] > lower {
                    self.mark[from as usize] = self.epoch;
                    self.stack[depth] = from;
                    depth += 1;
                }
                arc = next_in;
            }
        }
        found
    }

    /// Hands the order positions of the two sets out again, the backward set's first.
    fn reorder(&mut self, forward: usize, backward: usize) {
        let ord = &self.ord;
        self.forward[..forward].sort_unstable_by_key(|&node| ord[node as usize]);
        self.backward[..backward].sort_unstable_by_key(|&node| ord[node as usize]);
        let mut count = 0;
        for &node in self.backward[..backward]
            .iter()
            .chain(&self.forward[..forward])
        {
            self.positions[count] = self.ord[node as usize];
            count += 1;
        }
        self.positions[..count].sort_unstable();
        for (i, &node) in self.backward[..backward]
            .iter()
            .chain(&self.forward[..forward])
            .enumerate()
        {
            self.ord[node as usize] = self.positions[i];
        }
    }

    /// The report of the cycle that `x → y` (dependency `closing`) would close: the
    /// closing dependency, then the path the forward search found from `y` to `x`.
    fn cycle(&self, x: u32, y: u32, closing: u32) -> Report {
        let mut path = [NONE; 64];
        let mut length = 0;
        let mut node = x;
        let mut truncated = false;
        while node != y {
            let arc = self.parent[node as usize];
            if arc == NONE {
                break;
            }
            if length == path.len() {
                truncated = true;
                break;
            }
            path[length] = arc;
            length += 1;
            node = self.arcs[arc as usize].from;
        }
        let mut report = empty(ReportKind::CircularDependency);
        report.chain[0] = self.dependencies[closing as usize];
        report.len = 1;
        for &arc in path[..length].iter().rev() {
            if report.len == MAX_CHAIN {
                truncated = true;
                break;
            }
            let dependency = self.arcs[arc as usize].dependency;
            report.chain[report.len] = self.dependencies[dependency as usize];
            report.len += 1;
        }
        report.truncated = truncated;
        report
    }
}
