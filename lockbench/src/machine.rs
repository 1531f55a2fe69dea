//! What the numbers were measured on, and what else the machine was doing meanwhile.

use std::ffi::CStr;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Machine metadata: printed as the header line and stored in `--json`.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// Online CPUs (`_SC_NPROCESSORS_ONLN`).
    pub online_cpus: usize,
    /// Kernel name, release and architecture (uname).
    pub kernel: String,
    /// glibc version (`gnu_get_libc_version`).
    pub glibc: String,
    /// `rustc --version` of the compiler that built lockbench.
    pub rustc: &'static str,
    /// lockbench's own version.
    pub lockbench: &'static str,
    /// Cost of one `std::hint::spin_loop()` (x86 `pause`), in ns.
    pub pause_ns: f64,
    /// How long klocks' pv locks spin before they sleep, in ns.
    pub pv_spin_ns: u64,
    /// Where `pv_spin_ns` came from: `calibrated` or `KLOCKS_SPIN_NS`.
    pub pv_spin_source: &'static str,
    /// How klocks asks whether a lock owner is on a CPU (`klocks::owner`): `perf`,
    /// `clock` or `budget`.
    pub owner_probe: &'static str,
}

impl Machine {
    /// Reads the metadata, measures the pause and settles the pv spin budget (klocks
    /// calibrates it here, on a quiet machine, rather than inside the first pv cell).
    pub fn probe() -> Self {
        Self {
            cpu_model: cpu_model().unwrap_or_else(|| "unknown CPU".to_owned()),
            online_cpus: online_cpus(),
            kernel: kernel(),
            glibc: glibc(),
            rustc: env!("LOCKBENCH_RUSTC_VERSION"),
            lockbench: env!("CARGO_PKG_VERSION"),
            pause_ns: pause_ns(),
            pv_spin_ns: pv_spin_ns(),
            pv_spin_source: match std::env::var_os(klocks::config::SPIN_NS.name()) {
                Some(_) => klocks::config::SPIN_NS.name(),
                None => "calibrated",
            },
            owner_probe: klocks::owner::probe_kind().name(),
        }
    }

    /// One line for the top of the output.
    pub fn header(&self) -> String {
        format!(
            "lockbench {} | {} | {} online CPUs | {} | glibc {} | {} | pause {:.1} ns | \
             pv spin {:.1} µs ({}) | owner probe {}",
            self.lockbench,
            self.cpu_model,
            self.online_cpus,
            self.kernel,
            self.glibc,
            self.rustc,
            self.pause_ns,
            self.pv_spin_ns as f64 / 1e3,
            self.pv_spin_source,
            self.owner_probe
        )
    }
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix("model name")?.split_once(':'))
        .map(|(_, model)| model.trim().to_owned())
}

/// Online CPUs, at least 1.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(online).unwrap_or(1).max(1)
}

fn kernel() -> String {
    // SAFETY: an all-zero utsname is a valid value (arrays of c_char).
    let mut name: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `name` is a valid, writable utsname.
    if unsafe { libc::uname(&mut name) } != 0 {
        return "unknown kernel".to_owned();
    }
    let field = |f: &[libc::c_char]| {
        // SAFETY: uname NUL-terminates every field it fills.
        unsafe { CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    format!(
        "{} {} {}",
        field(&name.sysname),
        field(&name.release),
        field(&name.machine)
    )
}

#[cfg(target_env = "gnu")]
fn glibc() -> String {
    // SAFETY: returns a pointer to a static NUL-terminated string.
    unsafe { CStr::from_ptr(libc::gnu_get_libc_version()) }
        .to_string_lossy()
        .into_owned()
}

#[cfg(not(target_env = "gnu"))]
fn glibc() -> String {
    "none (not a glibc target)".to_owned()
}

/// Nanoseconds per `spin_loop()`: the best of a few timings of 100,000, so that a
/// preemption in one of them does not count.
fn pause_ns() -> f64 {
    pause_timings(5, 100_000)
        .into_iter()
        .min_by(f64::total_cmp)
        .unwrap_or_default()
}

/// Nanoseconds per `spin_loop()` now: the median of nine timings of 20,000 (about
/// 4.5 ms in all). The cost of a `pause` drifts on this host by up to 10% within
/// seconds (24.9 to 28.6 ns in consecutive probes of an idle VM), so a ceiling
/// computed from the start-up pause can be out of reach even for one thread; the
/// windowed scenarios probe this before and after each cell instead.
pub fn pause_probe_ns() -> f64 {
    let mut timings = pause_timings(9, 20_000);
    timings.sort_by(f64::total_cmp);
    timings[timings.len() / 2]
}

/// `trials` timings of `pauses` back-to-back `spin_loop()`s, in ns per pause.
fn pause_timings(trials: usize, pauses: u32) -> Vec<f64> {
    (0..trials)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..pauses {
                std::hint::spin_loop();
            }
            start.elapsed().as_secs_f64() * 1e9 / f64::from(pauses)
        })
        .collect()
}

/// The spin budget every klocks pv lock of this process uses (a budget without a
/// per-type override resolves to the process-wide one), calibrating it if needed.
pub fn pv_spin_ns() -> u64 {
    klocks::budget::SpinBudget::new().ns()
}

/// A snapshot of system-wide CPU time (/proc/stat) and this process's own (rusage),
/// which includes the children it has waited for (overcommit's cell processes).
#[derive(Debug, Clone, Copy)]
pub struct CpuTimes {
    busy: Duration,
    steal: Duration,
    own: Duration,
}

/// CPU time that was not ours during an interval.
#[derive(Debug, Clone, Copy)]
pub struct OtherLoad {
    /// Time the hypervisor ran something else on our vCPUs.
    pub steal: Duration,
    /// Busy time of other processes (system busy minus our own CPU time).
    pub others: Duration,
}

impl CpuTimes {
    /// Reads both clocks; `None` where /proc/stat is unavailable.
    pub fn now() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let ticks: Vec<u64> = stat
            .lines()
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        // user nice system idle iowait irq softirq steal ...
        let [user, nice, system, _idle, _iowait, irq, softirq, steal, ..] = ticks[..] else {
            return None;
        };
        Some(Self {
            busy: ticks_to_duration(user + nice + system + irq + softirq),
            steal: ticks_to_duration(steal),
            own: own_cpu_time()?,
        })
    }

    /// The load that was not ours between `earlier` and `self`.
    pub fn since(&self, earlier: &CpuTimes) -> OtherLoad {
        let busy = self.busy.saturating_sub(earlier.busy);
        let own = self.own.saturating_sub(earlier.own);
        OtherLoad {
            steal: self.steal.saturating_sub(earlier.steal),
            others: busy.saturating_sub(own),
        }
    }
}

/// One /proc/stat tick (`USER_HZ`).
pub fn tick() -> Duration {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Duration::from_secs(1) / u32::try_from(hz).unwrap_or(100).max(1)
}

fn ticks_to_duration(ticks: u64) -> Duration {
    let tick_ns = u64::try_from(tick().as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(ticks.saturating_mul(tick_ns))
}

fn own_cpu_time() -> Option<Duration> {
    Some(cpu_time(libc::RUSAGE_SELF)? + cpu_time(libc::RUSAGE_CHILDREN)?)
}

/// User plus system time of `who` (`RUSAGE_SELF` or `RUSAGE_CHILDREN`).
fn cpu_time(who: libc::c_int) -> Option<Duration> {
    // SAFETY: an all-zero rusage is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return None;
    }
    Some(timeval(usage.ru_utime)? + timeval(usage.ru_stime)?)
}

fn timeval(tv: libc::timeval) -> Option<Duration> {
    let secs = u64::try_from(tv.tv_sec).ok()?;
    let micros = u64::try_from(tv.tv_usec).ok()?;
    Some(Duration::from_secs(secs) + Duration::from_micros(micros))
}
