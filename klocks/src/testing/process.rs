//! Unit tests that need a process of their own (they change process-wide state or
//! may crash), and a look at another thread's scheduler state.

/// Set in a child process of [`isolated`]: run the scenario instead of spawning it.
#[cfg(all(test, not(loom)))]
const ISOLATED_CHILD: &str = "KLOCKS_ISOLATED_TEST_CHILD";

/// Runs `scenario` in a child process that runs only the unit test `test` (its path in
/// the crate, e.g. `fault::tests::name`), for tests that change process-wide state
/// (spin budgets, signal handlers, leaked slots, the perf budget) or that may crash;
/// returns the child's exit status (`None` in the child itself, after running the
/// scenario). A child that exits 0 must have run exactly that one test.
#[cfg(all(test, not(loom)))]
pub(crate) fn isolated(test: &str, scenario: impl FnOnce()) -> Option<std::process::ExitStatus> {
    if std::env::var_os(ISOLATED_CHILD).is_some() {
        scenario();
        return None;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ISOLATED_CHILD, "1")
        .output()
        .expect("the child test process starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        assert!(
            stdout.contains("1 passed"),
            "the child ran no test {test}: {stdout}"
        );
    }
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    Some(out.status)
}

/// [`isolated`], requiring the child to pass: `true` in the child (run the test's
/// body), `false` in the parent once the child passed (`if !alone(..) { return; }`).
#[cfg(all(test, not(loom)))]
pub(crate) fn alone(test: &str) -> bool {
    match isolated(test, || {}) {
        None => true,
        Some(status) => {
            assert!(status.success(), "{test} in its own process: {status:?}");
            false
        }
    }
}

/// The scheduler state of thread `tid` of this process (`R`, `S`, ...), from
/// `/proc/self/task/<tid>/stat`; `None` once the thread is gone.
#[cfg(all(test, not(loom)))]
pub(crate) fn thread_state(tid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // "tid (comm) S ...": the state follows the last ')'.
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// The first two CPUs this process may use.
pub(crate) fn two_cpus() -> Option<[usize; 2]> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } != 0 {
        return None;
    }
    // SAFETY: every `cpu` is below CPU_SETSIZE, inside `set`.
    let mut cpus = (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) });
    Some([cpus.next()?, cpus.next()?])
}

/// Pins the calling thread to `cpu`.
pub(crate) fn pin(cpu: usize) {
    // SAFETY: an all-zero cpu_set_t is the empty set; `cpu` is below CPU_SETSIZE.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    let pinned = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    assert_eq!(pinned, 0, "pinning to cpu{cpu}");
}
