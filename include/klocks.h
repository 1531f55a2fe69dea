/*
 * klocks.h - the C API of klocks (libklocks.so.0 and libklocks.a, built by
 * `cargo build --release -p klocks-ffi` into target/release/, and installed with
 * this header and klocks.pc by `scripts/install-c PREFIX`; then
 * `cc app.c $(pkg-config --cflags --libs klocks)`).
 *
 * klocks brings the Linux kernel's lock designs to userspace. This header exposes
 * its mutexes (klocks_mutex_t, of the klocks_kind kinds), its default reader-writer
 * lock (klocks_rwlock_t), its reader-writer semaphore (klocks_rwsem_t) and a condition
 * variable (klocks_cond_t) with pthread's conventions:
 *
 *   - Storage is the caller's: declare a klocks_mutex_t, klocks_rwlock_t,
 *     klocks_rwsem_t or klocks_cond_t (static, on the stack, inside your struct, in
 *     shared memory of one process); the library never allocates.
 *   - Static initialisers: KLOCKS_MUTEX_INITIALIZER (a KLOCKS_DEFAULT mutex),
 *     KLOCKS_RWLOCK_INITIALIZER and KLOCKS_COND_INITIALIZER (deadlines on
 *     CLOCK_REALTIME) make a usable object without an init call, and so does
 *     zero-filled memory (static storage, calloc, memset 0): all-zero bytes are that
 *     default object, unlocked. Any number of threads may make the first call on
 *     such an object at once (nothing is initialised lazily). A klocks_rwsem_t, and
 *     any other mutex kind or condvar clock, needs its init call.
 *   - Every call on an object that was destroyed, or holds bytes that are neither
 *     zero nor written by init, returns EINVAL (detected through a tag inside the
 *     object; garbage bytes are very unlikely, not certain, to be taken for one).
 *   - init must happen-before every other call on the object from any thread
 *     (publish the object after init, e.g. before pthread_create). init on an object
 *     that is in use, and destroy racing with other calls, are undefined behaviour,
 *     as with pthread.
 *   - An initialised object must not be copied or moved (memcpy, realloc of the
 *     containing memory): the lock's address is part of its identity (waiters sleep
 *     on it). Copying the bytes does not make a second lock.
 *   - Every function returns 0 on success or an errno value (EINVAL, EBUSY, EPERM,
 *     EDEADLK, ETIMEDOUT, EAGAIN); errno itself is not set. Timed calls take an absolute
 *     time, as pthread's: CLOCK_REALTIME (a condvar's may be on CLOCK_MONOTONIC). All functions are thread-safe on an
 *     initialised object, except init and destroy (above).
 *   - Locks are not process-shared and not recursive; they are not async-signal-safe
 *     (do not take them in a signal handler that may interrupt their holder).
 *   - Thread identity is the kernel thread id (gettid). After fork() only the
 *     forking thread exists in the child. A klocks_mutex_t that was free in the
 *     parent is free in the child, whatever waited on it (sleepers, a spinner, a
 *     queue, a handoff reserved for a waiter); one the forking thread held is held
 *     by the child's continuation of it, which unlocks it; one another thread held
 *     stays held (lock waits forever, trylock returns EBUSY), as with pthread.
 *     A klocks_rwlock_t likewise by its writer; one read-held at the fork stays
 *     read-held. klocks_rwsem_t is not repaired after fork.
 *
 * If klocks itself detects misuse that these checks did not catch (for example two
 * threads racing to unlock one hold), it prints a message to stderr and the call
 * returns EINVAL; a Rust panic never unwinds into C.
 *
 * Environment: KLOCKS_SPIN_NS=<ns> sets the spin budget of the pv kinds, SPINFUTEX
 * and the rwsem; KLOCKS_OWNER_PROBE=perf|clock|budget the owner probe (see
 * docs/design.md, "Settings"). While either is invalid (or forces a probe the system refuses),
 * the init functions print why on stderr and return EINVAL, leaving the object
 * untouched; no other call ever fails for configuration (an object made by a static
 * initialiser reports a bad setting once on stderr and uses the automatic one).
 *
 * The same library, preloaded (LD_PRELOAD=libklocks.so KLOCKS_LOCK=pvqspinlock ./app),
 * replaces the pthread mutexes, rwlocks and condition variables of an unmodified
 * program; see docs/preload.md. It also defines those pthread functions when
 * linked with -lklocks: with KLOCKS_LOCK unset (or "glibc") they pass every call to
 * glibc unchanged, so linking klocks never changes a program's pthread locks unless
 * it asks.
 */
#ifndef KLOCKS_H
#define KLOCKS_H

#include <time.h> /* struct timespec */

#ifdef __cplusplus
extern "C" {
#define KLOCKS_ALIGNAS(n) alignas(n)
#else
#define KLOCKS_ALIGNAS(n) _Alignas(n)
#endif

/* The objects' sizes; part of the ABI. */
#define KLOCKS_MUTEX_SIZE 32
#define KLOCKS_RWLOCK_SIZE 32
#define KLOCKS_RWSEM_SIZE 64
#define KLOCKS_COND_SIZE 24

/* A mutex of one of the klocks_kind kinds. Opaque: use only through the functions
 * below. 32 bytes, aligned to 8. */
typedef struct {
    KLOCKS_ALIGNAS(8) unsigned char opaque[KLOCKS_MUTEX_SIZE];
} klocks_mutex_t;

/* klocks' default reader-writer lock (klocks::RwLock). Opaque: use only through
 * the functions below. 32 bytes, aligned to 8. */
typedef struct {
    KLOCKS_ALIGNAS(8) unsigned char opaque[KLOCKS_RWLOCK_SIZE];
} klocks_rwlock_t;

/* A reader-writer semaphore. Opaque: use only through the functions below.
 * 64 bytes, aligned to 8. */
typedef struct {
    KLOCKS_ALIGNAS(8) unsigned char opaque[KLOCKS_RWSEM_SIZE];
} klocks_rwsem_t;

/* A condition variable, used with any klocks_mutex_t. Opaque: use only through the
 * functions below. 24 bytes, aligned to 8. */
typedef struct {
    KLOCKS_ALIGNAS(8) unsigned char opaque[KLOCKS_COND_SIZE];
} klocks_cond_t;

/* Static initialisers: an unlocked KLOCKS_DEFAULT mutex, an unlocked rwlock, a
 * condvar on CLOCK_REALTIME. All-zero bytes, so zero-filled memory is the same. */
#define KLOCKS_MUTEX_INITIALIZER { { 0 } }
#define KLOCKS_RWLOCK_INITIALIZER { { 0 } }
#define KLOCKS_COND_INITIALIZER { { 0 } }

/* The mutex kinds, one for each lock of klocks' catalog that has a kind number
 * (docs/design.md's lock table says when to use which, under the kind's name in
 * lower case; KLOCKS_DEFAULT unless you know why not). */
typedef enum {
    /* Paravirt queued spinlock: spins a calibrated budget, then sleeps until the
     * unlocker kicks it. Short critical sections; survives any number of threads. */
    KLOCKS_PVQSPINLOCK = 1,
    /* Queued (MCS) spinlock: FIFO, local spinning, NEVER sleeps. Only when threads
     * never outnumber CPUs: a waiter preempted in the queue stalls everyone. */
    KLOCKS_QSPINLOCK,
    /* Ticket spinlock: FIFO, NEVER sleeps. Tiny sections on very few CPUs only. */
    KLOCKS_TICKET,
    /* Ticket lock whose waiters sleep after a bounded spin: strict FIFO with any
     * number of threads. */
    KLOCKS_PVTICKET,
    /* Drepper's futex mutex (glibc's default design): sleeps when contended. */
    KLOCKS_FUTEX,
    /* Futex mutex that records its owner; one waiter spins while the owner runs
     * (seed 004). Detects unlock by a non-owner and relock by the owner. */
    KLOCKS_SPINFUTEX,
    /* klocks::Mutex, the one to pick: a futex mutex whose waiters spin while the
     * owner runs and sleep otherwise, barging for throughput, with a handoff to a
     * waiter that has waited 1 ms (every wait is bounded). Detects unlock by a
     * non-owner and relock by the owner, as KLOCKS_SPINFUTEX. */
    KLOCKS_DEFAULT
} klocks_kind;

/* Reader spinning of a klocks_rwsem_t (writers always spin while a running writer
 * holds the lock). */
typedef enum {
    /* Readers spin, but stop while writers found the readers' sections long
     * (seed 001's nonspinnable bits); phase-fair. The default choice. */
    KLOCKS_RWSEM_ADAPTIVE = 1,
    /* Readers always spin (the kernel before seed 001). */
    KLOCKS_RWSEM_ALWAYS,
    /* Readers never spin; they steal a free lock once, then queue (Linux 5.11+). */
    KLOCKS_RWSEM_NEVER
} klocks_rwsem_policy;

/* The library version, a static NUL-terminated string such as "0.1.0". Never NULL;
 * do not free it. Thread-safe. */
const char *klocks_version(void);

/* ------------------------------------------------------------------ mutex --- */

/* Initialises *m as an unlocked mutex of the given kind (KLOCKS_DEFAULT: the same
 * as KLOCKS_MUTEX_INITIALIZER). Overwrites whatever *m held; initialising a mutex
 * that is locked or in use by other threads is undefined behaviour.
 * Re-initialising a destroyed mutex is allowed.
 * Returns 0; EINVAL if m is NULL or not 8-byte aligned, or kind is not a
 * klocks_kind. Not thread-safe with respect to other calls on *m. */
int klocks_mutex_init(klocks_mutex_t *m, klocks_kind kind);

/* Destroys an unlocked mutex: later calls on *m return EINVAL until it is
 * initialised again, and its storage may then be freed or reused.
 * Returns 0; EBUSY if the mutex is locked (it stays initialised); EINVAL if m is
 * NULL or not an initialised mutex. Must not race with other calls on *m (a thread
 * waiting in klocks_mutex_lock is a use). */
int klocks_mutex_destroy(klocks_mutex_t *m);

/* Locks the mutex, waiting until it is free (spinning or sleeping as the kind
 * does). Returns 0 once the caller holds it; EINVAL if m is NULL or not an
 * initialised mutex; EDEADLK, for KLOCKS_DEFAULT and KLOCKS_SPINFUTEX, if the
 * caller holds it already. For the other kinds a relock by the holder deadlocks (the locks are not
 * recursive and record no owner), as with pthread's default mutex. Thread-safe. */
int klocks_mutex_lock(klocks_mutex_t *m);

/* Locks the mutex unless the absolute CLOCK_REALTIME time *abstime passes first,
 * as pthread_mutex_timedlock. Returns 0 once the caller holds it; ETIMEDOUT at the
 * deadline; EINVAL if abstime is NULL, or if its tv_nsec is outside 0..999999999
 * and the mutex is not free at once; EDEADLK, EINVAL for m, as klocks_mutex_lock.
 * KLOCKS_DEFAULT sleeps until woken or the deadline; the other kinds, whose waiters
 * cannot leave a queue once in it, try the mutex with a doubling sleep in between
 * (1 us to 1 ms), so under steady contention they may time out however long the
 * deadline. Thread-safe. */
int klocks_mutex_timedlock(klocks_mutex_t *m, const struct timespec *abstime);

/* Locks the mutex if no thread holds it, without waiting (it may barge past
 * waiters for the kinds that allow it). Returns 0 if the caller now holds it;
 * EBUSY if some thread (the caller included) holds it; EINVAL if m is NULL or not
 * an initialised mutex. Thread-safe. */
int klocks_mutex_trylock(klocks_mutex_t *m);

/* Unlocks a mutex the caller holds, handing it to (or waking) a waiter.
 * Returns 0; EPERM if the mutex is not locked, and for KLOCKS_DEFAULT and
 * KLOCKS_SPINFUTEX also if another thread holds it (the mutex then stays held by that thread); EINVAL if m
 * is NULL or not an initialised mutex.
 * The other kinds record no owner: unlocking a mutex held by another thread cannot
 * be detected and releases that thread's hold (do not rely on it). Thread-safe. */
int klocks_mutex_unlock(klocks_mutex_t *m);

/* ----------------------------------------------------------------- rwlock --- */

/* The most read locks a klocks_rwlock_t holds at once (2^23 - 1): one more is
 * refused with EAGAIN, as pthread's rwlocks refuse theirs past their maximum. */
#define KLOCKS_RWLOCK_MAX_READERS 8388607

/* klocks_rwlock_t is klocks' default reader-writer lock: reads and writes take one
 * compare-and-swap uncontended; writers barge as KLOCKS_DEFAULT mutexes do, sleeping
 * writers hold new readers back, and readers get timed turns (docs/design.md). A
 * reader that read-locks again while a writer waits may deadlock, as in any
 * writer-preferring rwlock. Thread identity and the errno answers are those of
 * klocks_rwsem_t below. */

/* Initialises *r as an unlocked rwlock (the same as KLOCKS_RWLOCK_INITIALIZER).
 * Same rules as klocks_mutex_init. Returns 0; EINVAL if r is NULL or not 8-byte
 * aligned, or a KLOCKS_* setting is invalid. */
int klocks_rwlock_init(klocks_rwlock_t *r);

/* Destroys an unlocked rwlock: later calls on *r return EINVAL until it is
 * initialised again. Returns 0; EBUSY if it is read- or write-locked; EINVAL if r
 * is NULL or not a rwlock. Must not race with other calls on *r. */
int klocks_rwlock_destroy(klocks_rwlock_t *r);

/* Takes a read lock, waiting while a writer holds it (or sleeping writers wait).
 * Returns 0; EDEADLK if the caller holds the write lock; EAGAIN if KLOCKS_RWLOCK_MAX_READERS
 * readers hold it (as pthread_rwlock_rdlock past its maximum); EINVAL if r is NULL
 * or not a rwlock. Thread-safe. */
int klocks_rwlock_rdlock(klocks_rwlock_t *r);

/* Takes a read lock if no writer holds the rwlock. Returns 0; EBUSY otherwise
 * (also when the caller is the writer); EAGAIN if KLOCKS_RWLOCK_MAX_READERS readers
 * hold it; EINVAL as above. Thread-safe. */
int klocks_rwlock_tryrdlock(klocks_rwlock_t *r);

/* Takes a read lock unless the absolute CLOCK_REALTIME time *abstime passes first.
 * Returns 0; ETIMEDOUT at the deadline; EDEADLK if the caller holds the write lock;
 * EAGAIN if KLOCKS_RWLOCK_MAX_READERS readers hold it when the caller would enter;
 * EINVAL if abstime is NULL, or its tv_nsec is outside 0..999999999 and the lock is
 * not free at once, or as above. Thread-safe. */
int klocks_rwlock_timedrdlock(klocks_rwlock_t *r, const struct timespec *abstime);

/* Takes the write lock, waiting until no reader or writer holds it. Returns 0;
 * EDEADLK if the caller holds the write lock already; EINVAL as above. Taking the
 * write lock while the caller holds a read lock deadlocks (readers are not
 * recorded). Thread-safe. */
int klocks_rwlock_wrlock(klocks_rwlock_t *r);

/* Takes the write lock if nobody holds the rwlock. Returns 0; EBUSY otherwise
 * (also when the caller holds it); EINVAL as above. Thread-safe. */
int klocks_rwlock_trywrlock(klocks_rwlock_t *r);

/* Takes the write lock unless the absolute CLOCK_REALTIME time *abstime passes
 * first. Returns as klocks_rwlock_timedrdlock (never EAGAIN). Thread-safe. */
int klocks_rwlock_timedwrlock(klocks_rwlock_t *r, const struct timespec *abstime);

/* Releases the caller's lock, as pthread_rwlock_unlock: the write lock if the
 * caller holds it, else one read lock if readers hold the rwlock.
 * Returns 0; EPERM if the rwlock is not locked, or another thread holds its write
 * lock (which stays held); EINVAL as above. Readers are counted, not recorded: a
 * thread that holds no read lock and unlocks a rwlock other threads read-hold
 * releases one of their read locks, undetected. Thread-safe. */
int klocks_rwlock_unlock(klocks_rwlock_t *r);

/* ------------------------------------------------------------------ rwsem --- */

/* Initialises *r as an unlocked rwsem with the given reader-spin policy. Same
 * rules as klocks_mutex_init. Returns 0; EINVAL if r is NULL or not 8-byte aligned,
 * or policy is not a klocks_rwsem_policy. */
int klocks_rwsem_init(klocks_rwsem_t *r, klocks_rwsem_policy policy);

/* Destroys an unlocked rwsem: later calls on *r return EINVAL until it is
 * initialised again. Returns 0; EBUSY if it is read- or write-locked; EINVAL if r
 * is NULL or not an initialised rwsem. Must not race with other calls on *r. */
int klocks_rwsem_destroy(klocks_rwsem_t *r);

/* Takes a read lock, waiting while a writer holds the rwsem or threads wait for it
 * (waiters are served in FIFO order, so readers do not starve writers). A thread
 * may hold several read locks, but a recursive read lock deadlocks if a writer
 * queues in between. Returns 0; EDEADLK if the caller holds the write lock; EINVAL
 * if r is NULL or not an initialised rwsem. Thread-safe. */
int klocks_rwsem_rdlock(klocks_rwsem_t *r);

/* Takes a read lock if that needs no waiting. Returns 0; EBUSY if a writer holds
 * the rwsem or threads wait for it (also when the caller is the writer); EINVAL as
 * above. Thread-safe. */
int klocks_rwsem_tryrdlock(klocks_rwsem_t *r);

/* Takes the write lock, waiting until no reader or writer holds it. Returns 0;
 * EDEADLK if the caller holds the write lock already; EINVAL as above. Taking the
 * write lock while the caller holds a read lock deadlocks (readers are not
 * recorded; debug builds of libklocks detect it and return EINVAL). Thread-safe. */
int klocks_rwsem_wrlock(klocks_rwsem_t *r);

/* Takes the write lock if nobody holds the rwsem or waits for it. Returns 0; EBUSY
 * otherwise (also when the caller holds it); EINVAL as above. Thread-safe. */
int klocks_rwsem_trywrlock(klocks_rwsem_t *r);

/* Releases the caller's lock, as pthread_rwlock_unlock: the write lock if the
 * caller holds it, else one read lock if readers hold the rwsem.
 * Returns 0; EPERM if the rwsem is not locked, or another thread holds its write
 * lock (which stays held); EINVAL as above.
 * Readers are counted, not recorded: a thread that holds no read lock and unlocks
 * a rwsem other threads read-hold releases one of their read locks, undetected
 * (debug builds of libklocks detect it and return EINVAL). Thread-safe. */
int klocks_rwsem_unlock(klocks_rwsem_t *r);

/* ------------------------------------------------------------------- cond --- */

/* Initialises *c as a condvar whose klocks_cond_timedwait deadlines are on
 * CLOCK_REALTIME (the same as KLOCKS_COND_INITIALIZER). Same rules as
 * klocks_mutex_init. Returns 0; EINVAL if c is NULL or not 8-byte aligned. */
int klocks_cond_init(klocks_cond_t *c);

/* As klocks_cond_init, with deadlines on `clock`: CLOCK_REALTIME or
 * CLOCK_MONOTONIC (a clockid_t from <time.h>). Returns 0; EINVAL for another
 * clock, or as klocks_cond_init. */
int klocks_cond_init_clock(klocks_cond_t *c, int clock);

/* Destroys a condvar nobody waits on: it first waits until the threads a
 * broadcast woke have left it (so it may follow a broadcast at once, as POSIX
 * allows), then later calls on *c return EINVAL until it is initialised again.
 * Returns 0; EINVAL if c is NULL or not a condvar. Must not race with a wait that
 * starts. */
int klocks_cond_destroy(klocks_cond_t *c);

/* Releases *m (a klocks_mutex_t of any kind, held by the caller), sleeps until a
 * signal or broadcast, and takes *m again before it returns. It may return 0
 * without a signal (a spurious wake-up, as pthread_cond_wait): wait in a loop that
 * checks the condition. Returns 0; EINVAL if c is NULL or not a condvar; what
 * klocks_mutex_unlock answers (EPERM if the caller does not hold *m, EINVAL for a
 * bad m), without waiting. A cancellation point, as pthread_cond_wait: a thread
 * cancelled while it waits holds *m again when its cleanup handlers run.
 * Thread-safe. */
int klocks_cond_wait(klocks_cond_t *c, klocks_mutex_t *m);

/* As klocks_cond_wait, until the absolute time *abstime on the condvar's clock
 * (CLOCK_REALTIME unless klocks_cond_init_clock chose CLOCK_MONOTONIC). Returns
 * ETIMEDOUT once the deadline passed (holding *m again); EINVAL if abstime is NULL
 * or its tv_nsec is outside 0..999999999; otherwise as klocks_cond_wait. */
int klocks_cond_timedwait(klocks_cond_t *c, klocks_mutex_t *m, const struct timespec *abstime);

/* Wakes at least one thread waiting on *c, if any. Returns 0; EINVAL if c is NULL
 * or not a condvar. Thread-safe; the mutex need not be held. */
int klocks_cond_signal(klocks_cond_t *c);

/* Wakes every thread waiting on *c. Returns as klocks_cond_signal. */
int klocks_cond_broadcast(klocks_cond_t *c);

/* ---------------------------------------------------------------- lockdep --- */

/* Names the lock validator's class of the pthread lock at *lock (a
 * pthread_mutex_t, pthread_rwlock_t or pthread_spinlock_t, under the preload with
 * KLOCKS_LOCKDEP=1): every lock given the same name (its first 32 bytes count) is
 * one class, whatever its init site. Call it after the lock's init and before it
 * is first taken. Returns 0 (also when the validator is off, when it does
 * nothing); EINVAL if lock or name is NULL or name is not UTF-8. Thread-safe. */
int klocks_lockdep_class(const void *lock, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* KLOCKS_H */
