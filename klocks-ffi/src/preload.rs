//! pthread interposition: klocks inside unmodified programs.
//!
//! `libklocks.so` defines `pthread_mutex_*`, `pthread_rwlock_*`, `pthread_cond_*` and
//! `pthread_spin_*`.
//! Preloaded (`LD_PRELOAD=libklocks.so KLOCKS_LOCK=pvqspinlock ./app`), its
//! definitions come first in the dynamic linker's search order, so every call the
//! program and its libraries make lands here. Each one reads the process's choice
//! ([`config`]) and either runs a klocks lock or forwards to glibc's own function
//! ([`glibc`], found with `dlsym(RTLD_NEXT)`).
//!
//! # The choice is per process, made once
//!
//! `KLOCKS_LOCK` names the mutex (`default`, the one to pick, or another kind of the
//! C API, [`crate::mutex`], or `glibc`; `KLOCKS_LOCK=help` lists them);
//! `KLOCKS_RWLOCK` names the rwlock (`default-rw`, `rwsem-adaptive`, `rwsem-always`,
//! `rwsem-never`, or `glibc`). `KLOCKS_LOCK=default` names the default pair: its
//! rwlock too, unless `KLOCKS_RWLOCK` says otherwise. Otherwise each family is
//! glibc's unless its variable names a klocks lock: rwlocks too, because glibc's
//! default rwlock lets a reader re-take a read lock while a writer waits and klocks'
//! rwlocks do not. `KLOCKS_SPIN` names the spinlock of `pthread_spin_*`
//! (`pvqspinlock`, which `default` names, or `qspinlock`; [`spin`]); only it, not
//! `KLOCKS_LOCK=default`, makes them klocks'. Unset, or the library linked normally
//! for its C API (`-lklocks`),
//! everything is glibc's: linking klocks never changes a program's pthread locks by
//! surprise. The first interposed call
//! reads the environment and fixes the choice for the life of the process, since the
//! bytes of every lock object are interpreted by it (names ignore case; empty is
//! unset). `help` lists the names; an
//! unknown name, or an invalid `KLOCKS_SPIN_NS`/`KLOCKS_OWNER_PROBE`, prints one line
//! on stderr (with the nearest name, if one is close) and leaves that family to
//! glibc: the program runs on, nothing is lost. `KLOCKS_VERBOSE=1` names the choice
//! in one line at start.
//!
//! # State lives in the pthread objects
//!
//! No table maps objects to locks: each klocks lock sits inside the caller's
//! `pthread_mutex_t` ([`mutex`]), `pthread_rwlock_t` ([`rwlock`]) or `pthread_cond_t`
//! ([`cond`]), at places that keep glibc's own fields meaningful where it matters:
//! the mutex type stays in glibc's `__kind`, the condvar's clock and process-shared
//! bits in glibc's `__wrefs`. Every klocks lock is unlocked when all its bytes are
//! zero, so the static initialisers (`PTHREAD_MUTEX_INITIALIZER`, the recursive and
//! error-checking `_NP` ones, `PTHREAD_RWLOCK_INITIALIZER`, `PTHREAD_COND_INITIALIZER`)
//! and objects that glibc's `init` wrote work without a call to us.
//!
//! # What is passed to glibc unchanged
//!
//! Robust, priority-inheritance, priority-protect and process-shared mutexes, and
//! process-shared rwlocks and condvars: klocks' waiters queue on nodes inside this
//! process, the kernel's robust list and PI futexes need glibc's word format, and
//! another process sharing the object may not run klocks. `init` sees the attribute
//! and lets glibc initialise the object; later calls recognise it by glibc's
//! `__kind` bits (mutexes), a marker in the padding (rwlocks) or glibc's shared bit
//! in `__wrefs` (condvars). Private condvars are klocks' whenever the mutexes are
//! (they work with every mutex, through these functions).
//!
//! # Contention profile
//!
//! `KLOCKS_PROFILE=1` times every interposed mutex and rwlock call, klocks' or glibc's,
//! and prints the locks that made threads wait longest at exit ([`profile`]).
//!
//! # Lock validator
//!
//! `KLOCKS_LOCKDEP=1` validates the order of every interposed lock call, klocks' or
//! glibc's, and reports the deadlocks it makes possible ([`lockdep`]).
//!
//! # Fork
//!
//! A fork child has one thread. A lock that was free at the fork may still list
//! waiters of threads the child does not have, and one the forking thread held (an
//! `atfork` handler's pattern) must stay held by it; glibc's mutexes give both. Each
//! object carries the fork generation it was last used in ([`fork`]); the first use
//! in a newer generation repairs it: re-initialised free if nobody held it, re-taken
//! by the forking thread's continuation if that thread held it, left held if another
//! thread did (as with glibc, where the child would block).
//!
//! # Waiting with a deadline
//!
//! Timed and clock locks try the lock, then poll it with a doubling sleep (1 µs to
//! 1 ms, never past the deadline) until it is free or the deadline passes. Queue
//! locks cannot abandon a queue slot, so a timed waiter never enters the queue: it is
//! correct for every kind, but it gets the lock only when it finds it free, so under
//! steady contention it may time out however long its deadline. No interposed call
//! is a cancellation point (sleeps and waits are raw system calls), so a
//! `pthread_cancel` never unwinds out of one.
//!
//! # Misuse
//!
//! As glibc: error-checking mutexes return `EDEADLK`/`EPERM`, recursive ones count,
//! and a normal mutex relocked by its holder deadlocks (POSIX's rule for
//! `PTHREAD_MUTEX_NORMAL`; with `default` and `spinfutex`, which see it, klocks prints one line
//! first, the other kinds just wait). Beyond glibc: unlocking an
//! unlocked normal mutex or a rwlock the caller does not hold returns `EPERM` instead
//! of corrupting the word; a destroyed mutex returns `EINVAL`. These checks come
//! before klocks' own, so a klocks panic is left only for a misuse they cannot see
//! (two threads racing to release one hold): it never unwinds into C, because a
//! panic leaving an `extern "C"` function aborts the process after printing its
//! message (Rust 1.81 and later). A lock that cannot be taken or released must not
//! look as if it were.

mod cond;
mod config;
pub(crate) mod fork;
mod glibc;
mod lockdep;
mod mutex;
mod profile;
mod route;
mod rwlock;
mod settings;
mod spin;
mod stderr;

use crate::time;
use crate::time::nap_for as nap;

/// Makes the choice when the library is loaded, so that `KLOCKS_LOCK=help` and a bad
/// name are answered even by a program that never takes a lock (the first interposed
/// call makes it if another library's constructor comes first), readies the spin
/// budget and owner probe of a klocks choice (see `config::warm_up`), and prints the
/// `KLOCKS_VERBOSE` line.
#[used]
#[link_section = ".init_array"]
static CHOOSE_AT_LOAD: extern "C" fn() = {
    extern "C" fn choose() {
        // The queued spinlocks' fork repair, registered here rather than at the
        // first contended lock, which may be inside an allocator.
        klocks_core::install_fork_repair();
        config::warm_up();
        profile::start();
        lockdep::start();
        route::set();
        config::announce(profile::on());
    }
    choose
};

/// Prints the contention profile at exit, if `KLOCKS_PROFILE` asked for one. The
/// preloaded library is finalised after the program's own destructors and `atexit`
/// handlers, so their lock calls are counted too.
#[used]
#[link_section = ".fini_array"]
static REPORT_AT_EXIT: extern "C" fn() = {
    extern "C" fn report() {
        profile::at_exit();
        lockdep::at_exit();
    }
    report
};
