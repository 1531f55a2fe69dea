//! What rwsem and rw-fair (seed 001) share: the reader-writer critical sections,
//! their verification, the read-phase count, and the per-role numbers the tables
//! print.
//!
//! The data is two plain `u64`s, `a` and `b`, that only the lock protects. A writer,
//! holding the lock exclusive, increments `a`, spins the load, then increments `b`;
//! a reader, holding it shared, reads `a`, spins the load, reads `b`, and counts a
//! torn read if they differ. Both read and write through `read_volatile` and
//! `write_volatile`, so the compiler can neither fold the two reads nor merge the
//! two increments across the load. A lock that lets a writer in beside a reader
//! shows torn reads; one that lets two writers in at once loses increments. At the
//! end `a == b ==` every write section of the run (counted or late), and no read
//! was torn, or the cell is refused.
//!
//! The read-phase count measures fragmentation, the argument that removed reader
//! spinning in Linux 5.11: spinning readers that wake or arrive in ones and twos
//! split the readers into small groups between writers, so a writer waits on the
//! reader count more often than with one big group. A reader inside its section sets
//! `read_phase_open`; a writer inside its section that finds it set counts one read
//! phase and clears it. The average reader group is then every read ÷ read phases.

use std::cell::UnsafeCell;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::wait::WaitClock;
use super::{pause, Error, Stop, Tallied};
use crate::cells::{num, Cell, PerThread, RwRun};
use crate::rwlocks::BenchRwLock;

/// Which side of the lock a thread takes, for its whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Takes the lock shared, and reads.
    Reader,
    /// Takes the lock exclusive, and writes.
    Writer,
}

/// The data only the lock protects.
struct RwData {
    /// Incremented first by every write section.
    a: u64,
    /// Incremented last by every write section, after the load.
    b: u64,
    /// Read phases that a writer closed; only writers touch it.
    read_phases: u64,
}

/// A reader-writer lock and the data only it protects, alone on its cache lines
/// (the reader-writer counterpart of [`super::Guarded`]).
pub struct RwGuarded<L> {
    inner: CachePadded<RwInner<L>>,
}

struct RwInner<L> {
    lock: L,
    data: UnsafeCell<RwData>,
    /// Set by a reader, cleared by the writer that counts the phase. Every access is
    /// inside the lock, so the lock's own acquire and release order it: a writer sees
    /// the flag every earlier reader set (their unlocks happen before its lock), and
    /// readers see it cleared by the writer before them. Relaxed is enough; the
    /// atomic only lets readers, who share the lock, store to it at once.
    read_phase_open: AtomicBool,
}

// SAFETY: `data` is written only inside `lock.write` and read only inside `lock.read`
// or `lock.write` (and, once the threads are gone, through `into_counts`' ownership).
// That this excludes is the claim the scenarios verify; the negative control
// `busted-rw` breaks it on purpose and is caught.
unsafe impl<L: BenchRwLock> Sync for RwGuarded<L> {}

/// One thread's run: its sections inside the window, after it, its torn reads and
/// its waits.
#[derive(Debug, Clone)]
pub struct RwTally {
    counted: u64,
    late: u64,
    torn: u64,
    waits: Histogram<u64>,
}

impl RwTally {
    /// The waits this thread's clock recorded.
    pub fn waits(&self) -> &Histogram<u64> {
        &self.waits
    }
}

impl Tallied for RwTally {
    fn counted(&self) -> u64 {
        self.counted
    }
    fn late(&self) -> u64 {
        self.late
    }
}

impl<L: BenchRwLock> RwGuarded<L> {
    /// An unlocked lock over zeroed data, no read phase open.
    pub fn unlocked() -> Self {
        Self {
            inner: CachePadded::new(RwInner {
                lock: L::new(),
                data: UnsafeCell::new(RwData {
                    a: 0,
                    b: 0,
                    read_phases: 0,
                }),
                read_phase_open: AtomicBool::new(false),
            }),
        }
    }

    /// One read section with `load` pauses between the two reads; whether it saw
    /// `a == b`.
    #[inline]
    pub fn read(&self, load: u32) -> bool {
        self.inner.lock.read(|| self.read_data(load))
    }

    /// [`read`](Self::read), `clock` timing the lock call when it picks this one.
    #[inline]
    pub fn read_timed(&self, load: u32, clock: &mut WaitClock) -> bool {
        let started = clock.start();
        let (whole, acquired) = self.inner.lock.read(|| {
            let acquired = WaitClock::acquired(started);
            (self.read_data(load), acquired)
        });
        clock.record(started, acquired);
        whole
    }

    /// The read section's body, under the read side.
    #[inline(always)]
    fn read_data(&self, load: u32) -> bool {
        let inner = &*self.inner;
        {
            let data = inner.data.get();
            // SAFETY: inside the read side (see the `Sync` impl): writers are out,
            // so nothing writes `a` or `b`; raw reads, no reference that could alias
            // another reader's.
            let a = unsafe { ptr::read_volatile(ptr::addr_of!((*data).a)) };
            // Relaxed: see `read_phase_open`. Load first so that a big group of
            // readers shares the flag's line instead of bouncing it.
            if !inner.read_phase_open.load(Relaxed) {
                inner.read_phase_open.store(true, Relaxed);
            }
            pause(load);
            // SAFETY: as for `a`.
            let b = unsafe { ptr::read_volatile(ptr::addr_of!((*data).b)) };
            a == b
        }
    }

    /// One write section: `a += 1`, `load` pauses, `b += 1`, closing the read phase
    /// it finds open.
    #[inline]
    pub fn write(&self, load: u32) {
        self.inner.lock.write(|| self.write_data(load));
    }

    /// [`write`](Self::write), `clock` timing the lock call when it picks this one.
    #[inline]
    pub fn write_timed(&self, load: u32, clock: &mut WaitClock) {
        let started = clock.start();
        let acquired = self.inner.lock.write(|| {
            let acquired = WaitClock::acquired(started);
            self.write_data(load);
            acquired
        });
        clock.record(started, acquired);
    }

    /// The write section's body, under the write side.
    #[inline(always)]
    fn write_data(&self, load: u32) {
        let inner = &*self.inner;
        {
            let data = inner.data.get();
            // SAFETY: inside the write side (see the `Sync` impl): this thread alone
            // touches the data until it unlocks.
            unsafe {
                let a = ptr::addr_of_mut!((*data).a);
                ptr::write_volatile(a, ptr::read_volatile(a) + 1);
            }
            // Relaxed: see `read_phase_open`.
            if inner.read_phase_open.load(Relaxed) {
                // SAFETY: as for `a`.
                unsafe { (*data).read_phases += 1 };
                inner.read_phase_open.store(false, Relaxed);
            }
            pause(load);
            // SAFETY: as for `a`.
            unsafe {
                let b = ptr::addr_of_mut!((*data).b);
                ptr::write_volatile(b, ptr::read_volatile(b) + 1);
            }
        }
    }

    /// A lock thread of `role`: its section, then `outside` pauses, until stopped,
    /// `clock` timing its lock calls. A section that finishes after the thread sees
    /// the stop flag is late: verified, not counted.
    pub fn work(
        &self,
        role: Role,
        (load, outside): (u32, u32),
        clock: WaitClock,
        stop: &Stop,
    ) -> RwTally {
        match role {
            Role::Reader => loop_until(stop, outside, clock, |clock| !self.read_timed(load, clock)),
            Role::Writer => loop_until(stop, outside, clock, |clock| {
                self.write_timed(load, clock);
                false
            }),
        }
    }

    /// The data's counters once every thread returned; `tallies` are the threads'
    /// results, the first `readers` of them readers'.
    pub fn into_counts(self, readers: usize, tallies: &[RwTally]) -> RwCounts {
        let inner = CachePadded::into_inner(self.inner);
        let data = inner.data.into_inner();
        let (reading, writing) = tallies.split_at(readers.min(tallies.len()));
        RwCounts {
            a: data.a,
            b: data.b,
            // A phase the last readers opened and no writer closed still counts.
            read_phases: data.read_phases + u64::from(inner.read_phase_open.into_inner()),
            readers,
            torn_reads: reading.iter().map(|t| t.torn).sum(),
            late_reads: reading.iter().map(|t| t.late).sum(),
            late_writes: writing.iter().map(|t| t.late).sum(),
        }
    }
}

/// Runs `section` (which returns whether it saw a torn read), then `outside` pauses,
/// until stopped.
#[inline]
fn loop_until(
    stop: &Stop,
    outside: u32,
    mut clock: WaitClock,
    section: impl Fn(&mut WaitClock) -> bool,
) -> RwTally {
    let (mut counted, mut late, mut torn) = (0, 0, 0);
    while !stop.requested() {
        torn += u64::from(section(&mut clock));
        if stop.requested() {
            late += 1;
        } else {
            counted += 1;
        }
        pause(outside);
    }
    RwTally {
        counted,
        late,
        torn,
        waits: clock.into_histogram(),
    }
}

/// What a reader-writer cell process reports beside the per-thread counts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct RwCounts {
    /// The first counter every write section increments.
    pub a: u64,
    /// The second.
    pub b: u64,
    /// Runs of readers between writers (see the module doc).
    pub read_phases: u64,
    /// How many of the threads (the first ones) were readers.
    pub readers: usize,
    /// Read sections that saw `a ≠ b`.
    pub torn_reads: u64,
    /// Read sections finished after the stop flag.
    pub late_reads: u64,
    /// Write sections finished after the stop flag.
    pub late_writes: u64,
}

/// Fails unless the counters saw every write section whole and no read was torn;
/// otherwise splits the run by role. `counted` holds every thread's sections inside
/// `window`, the readers' first.
pub fn verify(
    context: &str,
    counts: &RwCounts,
    counted: &[u64],
    window: Duration,
) -> Result<RwRun, Error> {
    let (reading, writing) = counted.split_at(counts.readers.min(counted.len()));
    let (reads, writes): (u64, u64) = (reading.iter().sum(), writing.iter().sum());
    let all_reads = reads + counts.late_reads;
    let all_writes = writes + counts.late_writes;
    if counts.a != all_writes || counts.b != all_writes || counts.torn_reads != 0 {
        return Err(Error::Verification(format!(
            "{context}: after {all_writes} write sections the protected counters read \
             a = {}, b = {}, and {} of {all_reads} read sections saw a ≠ b: the lock let \
             a writer in beside a reader or another writer",
            counts.a, counts.b, counts.torn_reads
        )));
    }
    let secs = window.as_secs_f64();
    Ok(RwRun {
        reads,
        writes,
        reads_per_s: reads as f64 / secs,
        writes_per_s: writes as f64 / secs,
        readers: role_threads(reading),
        writers: role_threads(writing),
        read_phases: counts.read_phases,
        reader_group: (counts.read_phases > 0)
            .then(|| all_reads as f64 / counts.read_phases as f64),
    })
}

/// One role's per-thread counts; all zero (a role the lock starved outright) is
/// still a summary, `None` only when the role has no threads.
fn role_threads(counts: &[u64]) -> Option<PerThread> {
    if counts.is_empty() {
        return None;
    }
    Some(PerThread::of(counts).unwrap_or(PerThread {
        min: 0,
        mean: 0.0,
        max: 0,
    }))
}

/// A role's fairness, min ÷ mean; 0 for a role that did nothing at all (starved as a
/// whole, not evenly served).
pub fn min_per_mean(threads: &PerThread) -> f64 {
    if threads.mean > 0.0 {
        threads.min_per_mean()
    } else {
        0.0
    }
}

/// Throughput in the seed's unit: ops/s shown as kops/s.
pub fn kops(ops_per_sec: f64) -> String {
    num(ops_per_sec / 1e3)
}

/// The median over a cell's runs of something about one role's threads.
pub fn per_role(cell: &Cell, role: Role, of: impl Fn(&PerThread) -> f64) -> Option<f64> {
    cell.median_of(|run| {
        let rw = run.rw?;
        let threads = match role {
            Role::Reader => rw.readers,
            Role::Writer => rw.writers,
        };
        threads.as_ref().map(&of)
    })
}

/// The median fairness (min ÷ mean per-thread sections) of one role.
pub fn role_fairness(cell: &Cell, role: Role) -> Option<f64> {
    per_role(cell, role, min_per_mean)
}

/// The median average reader group (reads per read phase).
pub fn reader_group(cell: &Cell) -> Option<f64> {
    cell.median_of(|run| run.rw.and_then(|rw| rw.reader_group))
}

/// A value through `format`, or `-`.
pub fn show(value: Option<f64>, format: impl Fn(f64) -> String) -> String {
    value.map_or_else(|| "-".to_owned(), format)
}

/// `0.93`, or `-`.
pub fn show_ratio(value: Option<f64>) -> String {
    show(value, |v| format!("{v:.2}"))
}

/// `1.23×`, or `-`.
pub fn times(value: Option<f64>) -> String {
    show(value, |v| format!("{v:.2}×"))
}

/// The geometric mean of `values`; `None` when there are none.
pub fn geometric_mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty())
        .then(|| (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(a: u64, b: u64, torn_reads: u64) -> RwCounts {
        RwCounts {
            a,
            b,
            read_phases: 4,
            readers: 2,
            torn_reads,
            late_reads: 2,
            late_writes: 1,
        }
    }

    #[test]
    fn a_whole_run_splits_by_role() {
        // Readers did 10 + 30 (+ 2 late), writers 5 + 5 (+ 1 late).
        let run = verify(
            "t",
            &counts(11, 11, 0),
            &[10, 30, 5, 5],
            Duration::from_secs(2),
        )
        .expect("verified");
        assert_eq!((run.reads, run.writes), (40, 10));
        assert_eq!((run.reads_per_s, run.writes_per_s), (20.0, 5.0));
        assert_eq!(run.readers.unwrap().min, 10);
        assert_eq!(run.writers.unwrap().mean, 5.0);
        assert_eq!(run.reader_group, Some(42.0 / 4.0));
    }

    #[test]
    fn a_starved_role_is_all_zeros_with_no_fairness() {
        let mut starved = counts(0, 0, 0);
        starved.late_writes = 0;
        let run = verify("t", &starved, &[10, 30, 0, 0], Duration::from_secs(1)).unwrap();
        let writers = run.writers.expect("writers ran");
        assert_eq!((writers.min, writers.max, writers.mean), (0, 0, 0.0));
        assert_eq!(min_per_mean(&writers), 0.0);
    }

    #[test]
    fn lost_updates_and_torn_reads_are_refused() {
        let counted = [10, 30, 5, 5];
        for bad in [counts(10, 10, 0), counts(11, 10, 0), counts(11, 11, 1)] {
            let err = verify("rwsem: busted-rw", &bad, &counted, Duration::from_secs(1))
                .expect_err("refused");
            let text = err.to_string();
            assert!(
                text.starts_with("verification failed: rwsem: busted-rw"),
                "{text}"
            );
        }
    }

    #[test]
    fn sections_count_read_phases_and_see_whole_writes() {
        let guarded = RwGuarded::<std::sync::RwLock<()>>::unlocked();
        // Two reads make one phase, a write closes it; a read opens another that
        // nothing closes.
        assert!(guarded.read(1) && guarded.read(1));
        guarded.write(1);
        guarded.write(1);
        assert!(guarded.read(1));
        let stop = Stop::new();
        stop.request();
        let idle = || guarded.work(Role::Reader, (1, 0), WaitClock::new(1, 0), &stop);
        let tallies = [idle(), idle()];
        let counts = guarded.into_counts(1, &tallies);
        assert_eq!((counts.a, counts.b, counts.read_phases), (2, 2, 2));
    }

    #[test]
    fn the_geometric_mean_of_ratios() {
        let gm = geometric_mean(&[0.5, 2.0]).unwrap();
        assert!((gm - 1.0).abs() < 1e-12);
        assert_eq!(geometric_mean(&[]), None);
    }
}
