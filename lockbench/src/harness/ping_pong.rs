//! The ping-pong of one cache line between two pinned threads, each waiting for its
//! parity and answering with the next value: the core-to-core latency, measured on
//! its own or as the placement probe around a cell. One round trip is two one-way
//! transfers of the line, so one-way = elapsed / (2 × round trips).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use super::{join, Error};

/// A placement probe times this many bursts and keeps the fastest, so that a probe
/// thread descheduled during one burst (a busy machine) does not pass for a far
/// placement.
const PROBE_BURSTS: u64 = 10;
/// Round trips per probe burst: the whole probe takes about 4 ms near, 17 ms far.
const PROBE_ROUND_TRIPS: u64 = 5_000;

/// One short one-way latency measurement for placement checks; `None` on a machine
/// with fewer than two usable CPUs.
pub fn probe() -> Result<Option<f64>, Error> {
    let Some(cpus) = cpu_pair() else {
        return Ok(None);
    };
    let fastest = ping_pong(cpus, PROBE_ROUND_TRIPS, PROBE_BURSTS)?
        .into_iter()
        .min()
        .unwrap_or_default();
    Ok(Some(one_way_ns(fastest, PROBE_ROUND_TRIPS)))
}

/// One-way latency in ns of `round_trips` round trips that took `elapsed`.
pub fn one_way_ns(elapsed: Duration, round_trips: u64) -> f64 {
    elapsed.as_secs_f64() * 1e9 / (2 * round_trips) as f64
}

/// The first two CPUs this process may run on.
pub fn cpu_pair() -> Option<[usize; 2]> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } != 0 {
        return None;
    }
    let mut allowed = (0..libc::CPU_SETSIZE as usize).filter(|&cpu| {
        // SAFETY: `cpu` is below CPU_SETSIZE, inside `set`.
        unsafe { libc::CPU_ISSET(cpu, &set) }
    });
    Some([allowed.next()?, allowed.next()?])
}

/// Pins the calling thread to `cpu`.
pub fn pin(cpu: usize) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: callers pass a CPU of this process's affinity mask, below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    match unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Pins the calling thread to `cpu`, then waits until the peer has tried too: fails
/// if either could not be pinned, so neither bounces alone.
fn pin_both(cpu: usize, failed: &AtomicBool, ready: &Barrier) -> io::Result<()> {
    let pinned = pin(cpu);
    if pinned.is_err() {
        // Relaxed: the barrier below orders this store before the peer's load.
        failed.store(true, Relaxed);
    }
    ready.wait();
    pinned?;
    // Relaxed: ordered by the barrier (see above).
    match failed.load(Relaxed) {
        true => Err(io::Error::other("the peer thread could not be pinned")),
        false => Ok(()),
    }
}

/// Bounces a line between threads pinned to `cpus`, `bursts` times `round_trips`
/// round trips; returns each burst's elapsed time, measured by the thread on
/// `cpus[0]`.
pub fn ping_pong(cpus: [usize; 2], round_trips: u64, bursts: u64) -> Result<Vec<Duration>, Error> {
    let line = CachePadded::new(AtomicU64::new(0));
    let per_burst = 2 * round_trips;
    let end = per_burst * bursts;
    let (failed, ready) = (AtomicBool::new(false), Barrier::new(2));
    let elapsed = thread::scope(|scope| {
        let (line, failed, ready) = (&line, &failed, &ready);
        let server = scope.spawn(move || {
            pin_both(cpus[1], failed, ready)?;
            bounce(line, 1, end);
            io::Result::Ok(())
        });
        let client = scope.spawn(move || {
            pin_both(cpus[0], failed, ready)?;
            let timed = (0..bursts).map(|burst| {
                let (from, to) = (burst * per_burst, (burst + 1) * per_burst);
                let start = Instant::now();
                bounce(line, from, to);
                wait_for(line, to);
                start.elapsed()
            });
            Ok(timed.collect())
        });
        join(server).and(join(client))
    })
    .map_err(|err| {
        Error::Io(
            format!("c2c: pinning to cpu{} and cpu{}", cpus[0], cpus[1]),
            err,
        )
    })?;
    let last = CachePadded::into_inner(line).into_inner();
    if last != end {
        return Err(Error::Verification(format!(
            "c2c: the line ended at {last}, expected {end} after {} round trips",
            round_trips * bursts
        )));
    }
    Ok(elapsed)
}

/// Waits for each value from `first` to below `end`, every other one, answering
/// each with the next value: `first` even for the client, odd for the server.
fn bounce(line: &AtomicU64, first: u64, end: u64) {
    let mut turn = first;
    while turn < end {
        wait_for(line, turn);
        // Relaxed: the line carries nothing but itself; its modification order alone
        // orders the turns (this store is seen by the peer's `wait_for`).
        line.store(turn + 1, Relaxed);
        turn += 2;
    }
}

/// Spins (politely, as the locks do) until the line holds `value`.
fn wait_for(line: &AtomicU64, value: u64) {
    // Relaxed: pairs with the peer's Relaxed store in `bounce`; see there.
    while line.load(Relaxed) != value {
        std::hint::spin_loop();
    }
}
