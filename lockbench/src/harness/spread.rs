//! Threads spread over the CPUs: thread i of a race pinned to the i-th CPU this
//! process may use (its affinity mask, read once per run), modulo their number, so
//! that every CPU runs the race's threads and a cache line they all write moves
//! between CPUs, as it does on a machine whose every core reads a shared table. Only
//! the race's own threads are pinned (before its start gate); nothing else is.

use std::io;

use super::ping_pong::pin;
use super::Error;

/// The CPUs a race's threads are pinned to, in order.
#[derive(Debug, Clone)]
pub struct Spread {
    cpus: Vec<usize>,
}

impl Spread {
    /// Every CPU the calling thread may run on (the process's, for lockbench's main
    /// thread, which pins nothing).
    pub fn allowed() -> Result<Self, Error> {
        let context = || "spreading threads: reading the CPUs this process may use".to_owned();
        // SAFETY: an all-zero cpu_set_t is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } != 0 {
            return Err(Error::Io(context(), io::Error::last_os_error()));
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `cpu` is below CPU_SETSIZE, inside `set`.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect();
        match cpus.is_empty() {
            true => Err(Error::Io(context(), io::Error::other("the mask is empty"))),
            false => Ok(Self { cpus }),
        }
    }

    /// The CPUs, in the order threads are pinned to them.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// The CPU thread `thread` of a race runs on.
    pub fn cpu_of(&self, thread: usize) -> usize {
        self.cpus[thread % self.cpus.len()]
    }

    /// Pins the calling thread, thread `thread` of the race, to its CPU. A CPU that
    /// went away since [`Spread::allowed`] read the mask (EINVAL) fails the run: a
    /// thread left where the scheduler puts it would measure another placement.
    pub fn pin(&self, thread: usize) -> Result<(), Error> {
        let cpu = self.cpu_of(thread);
        pin(cpu).map_err(|err| {
            Error::Io(
                format!("spreading threads: pinning thread {thread} to cpu{cpu} (was it taken offline, or out of this process's CPUs?)"),
                err,
            )
        })
    }
}

/// The CPU the calling thread runs on now; `None` where the kernel cannot say.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes nothing and touches no memory of ours.
    usize::try_from(unsafe { libc::sched_getcpu() }).ok()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use std::time::Duration;

    use super::*;
    use crate::harness::race_prepared;

    /// A CPU that is not there (the last of the mask's range: no test machine has
    /// it) fails the race with the OS's EINVAL, and no worker works unpinned.
    #[test]
    fn a_cpu_that_went_away_fails_the_race() {
        let last = libc::CPU_SETSIZE as usize - 1;
        let gone = Spread { cpus: vec![last] };
        let worked = AtomicUsize::new(0);
        let race = race_prepared(
            2,
            Duration::from_secs(10),
            |id| gone.pin(id),
            || {},
            // Relaxed: a count read after the threads are joined.
            |_, _| worked.fetch_add(1, Relaxed),
        );
        match race {
            Err(Error::Io(what, err)) => {
                assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{what}: {err}");
                assert!(what.contains(&format!("thread 0 to cpu{last}")), "{what}");
            }
            Err(other) => panic!("another error: {other}"),
            Ok(_) => panic!("a race pinned to a CPU that is not there ran"),
        }
        assert_eq!(worked.into_inner(), 0);
    }
}
