/*
 * klocks.h - the C API of klocks (libklocks.so, built by
 * `cargo build --release -p klocks-ffi` into target/release/libklocks.so).
 *
 * klocks brings the Linux kernel's lock designs to userspace. This header exposes
 * its mutexes (klocks_mutex_t, six kinds) and its reader-writer semaphore
 * (klocks_rwsem_t) with pthread's conventions:
 *
 *   - Storage is the caller's: declare a klocks_mutex_t / klocks_rwsem_t (static,
 *     on the stack, inside your struct, in shared memory of one process); the
 *     library never allocates.
 *   - Initialisation is required. A zero-filled object is NOT a valid unlocked lock
 *     (unlike PTHREAD_MUTEX_INITIALIZER): every call on an object that was never
 *     initialised, or was destroyed, returns EINVAL (detected through a tag inside
 *     the object; garbage bytes are very unlikely, not certain, to be taken for one).
 *   - init must happen-before every other call on the object from any thread
 *     (publish the object after init, e.g. before pthread_create). init on an object
 *     that is in use, and destroy racing with other calls, are undefined behaviour,
 *     as with pthread.
 *   - An initialised object must not be copied or moved (memcpy, realloc of the
 *     containing memory): the lock's address is part of its identity (waiters sleep
 *     on it). Copying the bytes does not make a second lock.
 *   - Every function returns 0 on success or an errno value (EINVAL, EBUSY, EPERM,
 *     EDEADLK); errno itself is not set. All functions are thread-safe on an
 *     initialised object, except init and destroy (above).
 *   - Locks are not process-shared and not recursive; they are not async-signal-safe
 *     (do not take them in a signal handler that may interrupt their holder).
 *   - Thread identity is the kernel thread id (gettid). After fork() only the
 *     forking thread exists in the child; locks held by other threads stay held.
 *
 * If klocks itself detects misuse that these checks did not catch (for example two
 * threads racing to unlock one hold), it prints a message to stderr and the call
 * returns EINVAL; a Rust panic never unwinds into C.
 *
 * Environment: KLOCKS_SPIN_NS=<ns> sets the spin budget of the pv kinds, SPINFUTEX
 * and the rwsem; KLOCKS_OWNER_PROBE=perf|clock|budget the owner probe (see
 * docs/design.md, "Settings"). While either is invalid (or forces a probe the system refuses),
 * klocks_mutex_init and klocks_rwsem_init print why on stderr and return EINVAL,
 * leaving the object untouched; no other call ever fails for configuration.
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

#ifdef __cplusplus
extern "C" {
#define KLOCKS_ALIGNAS(n) alignas(n)
#else
#define KLOCKS_ALIGNAS(n) _Alignas(n)
#endif

/* sizeof(klocks_mutex_t) and sizeof(klocks_rwsem_t); part of the ABI. */
#define KLOCKS_MUTEX_SIZE 32
#define KLOCKS_RWSEM_SIZE 64

/* A mutex of one of the klocks_kind kinds. Opaque: use only through the functions
 * below. 32 bytes, aligned to 8. */
typedef struct {
    KLOCKS_ALIGNAS(8) unsigned char opaque[KLOCKS_MUTEX_SIZE];
} klocks_mutex_t;

/* A reader-writer semaphore. Opaque: use only through the functions below.
 * 64 bytes, aligned to 8. */
typedef struct {
    KLOCKS_ALIGNAS(8) unsigned char opaque[KLOCKS_RWSEM_SIZE];
} klocks_rwsem_t;

/* The mutex kinds (README.md, "Which lock", and docs/design.md say when to use which;
 * KLOCKS_DEFAULT unless you know why not). */
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

/* Initialises *m as an unlocked mutex of the given kind. Overwrites whatever *m
 * held; initialising a mutex that is locked or in use by other threads is
 * undefined behaviour. Re-initialising a destroyed mutex is allowed.
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

#ifdef __cplusplus
}
#endif

#endif /* KLOCKS_H */
