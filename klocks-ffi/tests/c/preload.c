/* pthread semantics, as an unmodified program sees them. Run by tests/preload.rs
 * under LD_PRELOAD=libklocks.so with every KLOCKS_LOCK, and without the preload
 * (glibc), which shows the checks themselves are right. Plain POSIX and glibc's
 * _NP initialisers only: no klocks header.
 *
 * Environment: THREADS (contending threads; 2 for the plain spinlocks, which are
 * not made for more threads than CPUs), EXPECT_KLOCKS (set: klocks runs the locks,
 * so the checks where klocks is stricter than glibc run too, and show that the
 * calls really are interposed).
 *
 * `preload busted` runs the counter without taking the lock: it must fail, which
 * shows the counter check can. Prints "preload: ok" when every check holds; a
 * failed check prints its line and exits 1. */
#define _GNU_SOURCE

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static int THREADS = 16;
static int KLOCKS; /* a klocks lock runs the mutexes */

static void *spawn(pthread_t *t, void *(*fn)(void *), void *arg) {
    EXPECT(pthread_create(t, NULL, fn, arg), 0);
    return NULL;
}

static void join(pthread_t t) { EXPECT(pthread_join(t, NULL), 0); }

static struct timespec in_ms(clockid_t clock, long ms) {
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_nsec += ms * 1000000L;
    t.tv_sec += t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

static long ms_since(clockid_t clock, struct timespec start) {
    struct timespec now;
    clock_gettime(clock, &now);
    return (now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L;
}

/* ---- a thread that holds a mutex until told to let go ---- */

struct holder {
    pthread_mutex_t *m;
    int holding, release;
    pthread_t t;
};

static void *hold_body(void *arg) {
    struct holder *h = arg;
    EXPECT(pthread_mutex_lock(h->m), 0);
    __atomic_store_n(&h->holding, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&h->release, __ATOMIC_SEQ_CST)) usleep(1000);
    EXPECT(pthread_mutex_unlock(h->m), 0);
    return NULL;
}

static void hold(struct holder *h, pthread_mutex_t *m) {
    h->m = m;
    h->holding = h->release = 0;
    spawn(&h->t, hold_body, h);
    while (!__atomic_load_n(&h->holding, __ATOMIC_SEQ_CST)) usleep(1000);
}

static void let_go(struct holder *h) {
    __atomic_store_n(&h->release, 1, __ATOMIC_SEQ_CST);
    join(h->t);
}

static void *expect_unlock_eperm(void *m) {
    EXPECT(pthread_mutex_unlock(m), EPERM);
    return NULL;
}

static void *expect_trylock_ebusy(void *m) {
    EXPECT(pthread_mutex_trylock(m), EBUSY);
    return NULL;
}

/* ---- mutex types ---- */

static void normal_mutex(void) {
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    EXPECT(pthread_mutex_lock(&m), 0);
    EXPECT(pthread_mutex_trylock(&m), EBUSY);
    EXPECT(pthread_mutex_destroy(&m), EBUSY);
    EXPECT(pthread_mutex_unlock(&m), 0);
    EXPECT(pthread_mutex_trylock(&m), 0);
    EXPECT(pthread_mutex_unlock(&m), 0);
    if (KLOCKS) /* glibc corrupts its word instead */
        EXPECT(pthread_mutex_unlock(&m), EPERM);
    EXPECT(pthread_mutex_destroy(&m), 0);
    if (KLOCKS) /* glibc's destroy marks the kind; its lock is then undefined */
        EXPECT(pthread_mutex_lock(&m), EINVAL);
    EXPECT(pthread_mutex_init(&m, NULL), 0);
    EXPECT(pthread_mutex_lock(&m), 0);
    EXPECT(pthread_mutex_unlock(&m), 0);
    printf("normal mutex\n");
}

static void errorcheck_mutex(pthread_mutex_t *m) {
    pthread_t t;
    EXPECT(pthread_mutex_unlock(m), EPERM);
    EXPECT(pthread_mutex_lock(m), 0);
    EXPECT(pthread_mutex_lock(m), EDEADLK);
    EXPECT(pthread_mutex_trylock(m), EBUSY);
    struct timespec soon = in_ms(CLOCK_REALTIME, 10);
    EXPECT(pthread_mutex_timedlock(m, &soon), EDEADLK);
    spawn(&t, expect_unlock_eperm, m);
    join(t);
    spawn(&t, expect_trylock_ebusy, m);
    join(t);
    EXPECT(pthread_mutex_unlock(m), 0);
    EXPECT(pthread_mutex_unlock(m), EPERM);
}

static void recursive_mutex(pthread_mutex_t *m) {
    pthread_t t;
    EXPECT(pthread_mutex_lock(m), 0);
    EXPECT(pthread_mutex_lock(m), 0);
    EXPECT(pthread_mutex_trylock(m), 0);
    struct timespec soon = in_ms(CLOCK_REALTIME, 10);
    EXPECT(pthread_mutex_timedlock(m, &soon), 0);
    spawn(&t, expect_trylock_ebusy, m);
    join(t);
    spawn(&t, expect_unlock_eperm, m);
    join(t);
    for (int i = 0; i < 4; i++) EXPECT(pthread_mutex_unlock(m), 0);
    EXPECT(pthread_mutex_unlock(m), EPERM);
    EXPECT(pthread_mutex_trylock(m), 0);
    EXPECT(pthread_mutex_unlock(m), 0);
}

/* An error-checking mutex left locked by a thread that exited: a new thread (which
 * glibc may give the dead one's descriptor and stack) is not its owner. */
static pthread_mutex_t dead_owner = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;

static void *lock_and_exit(void *arg) {
    (void)arg;
    EXPECT(pthread_mutex_lock(&dead_owner), 0);
    return NULL;
}

static void *unlock_dead_owners(void *arg) {
    (void)arg;
    return (void *)(long)pthread_mutex_unlock(&dead_owner);
}

static void dead_owner_mutex(void) {
    pthread_t t;
    spawn(&t, lock_and_exit, NULL);
    join(t);
    for (int i = 0; i < 4; i++) {
        void *answer;
        spawn(&t, unlock_dead_owners, NULL);
        EXPECT(pthread_join(t, &answer), 0);
        CHECK((long)answer == EPERM);
    }
}

static void mutex_types(void) {
    static pthread_mutex_t ec_static = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
    static pthread_mutex_t rec_static = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    errorcheck_mutex(&ec_static);
    recursive_mutex(&rec_static);

    pthread_mutexattr_t attr;
    pthread_mutex_t ec, rec;
    EXPECT(pthread_mutexattr_init(&attr), 0);
    EXPECT(pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK), 0);
    EXPECT(pthread_mutex_init(&ec, &attr), 0);
    EXPECT(pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE), 0);
    EXPECT(pthread_mutex_init(&rec, &attr), 0);
    EXPECT(pthread_mutexattr_destroy(&attr), 0);
    errorcheck_mutex(&ec);
    recursive_mutex(&rec);
    EXPECT(pthread_mutex_destroy(&ec), 0);
    EXPECT(pthread_mutex_destroy(&rec), 0);
    printf("error-checking and recursive mutexes\n");
}

/* ---- counters under contention ---- */

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t counter_rlock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static volatile long counter;
static int busted;
#define ROUNDS 20000

/* A read-modify-write with a gap, so that a missing lock loses updates. */
static void bump(void) {
    long seen = counter;
    for (volatile int i = 0; i < 20; i++) {
    }
    counter = seen + 1;
}

static void *count_body(void *arg) {
    int recursive = arg != NULL;
    for (int i = 0; i < ROUNDS; i++) {
        if (busted) {
            bump();
        } else if (recursive) {
            EXPECT(pthread_mutex_lock(&counter_rlock), 0);
            EXPECT(pthread_mutex_lock(&counter_rlock), 0);
            bump();
            EXPECT(pthread_mutex_unlock(&counter_rlock), 0);
            EXPECT(pthread_mutex_unlock(&counter_rlock), 0);
        } else if (i % 3 == 0) {
            while (pthread_mutex_trylock(&counter_lock) == EBUSY) sched_yield();
            bump();
            EXPECT(pthread_mutex_unlock(&counter_lock), 0);
        } else {
            EXPECT(pthread_mutex_lock(&counter_lock), 0);
            bump();
            EXPECT(pthread_mutex_unlock(&counter_lock), 0);
        }
    }
    return NULL;
}

static void counters(int recursive) {
    pthread_t t[256];
    counter = 0;
    for (int i = 0; i < THREADS; i++) spawn(&t[i], count_body, recursive ? &t : NULL);
    for (int i = 0; i < THREADS; i++) join(t[i]);
    if (counter != (long)THREADS * ROUNDS) {
        fprintf(stderr, "counter mismatch: %ld, expected %ld\n", counter, (long)THREADS * ROUNDS);
        exit(1);
    }
    printf("%s counter %d threads\n", recursive ? "recursive" : "normal", THREADS);
}

/* ---- deadlines ---- */

static void deadlines(void) {
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    struct holder h;
    struct timespec at, start;

    at = in_ms(CLOCK_REALTIME, 1000);
    EXPECT(pthread_mutex_timedlock(&m, &at), 0); /* free: at once */
    EXPECT(pthread_mutex_unlock(&m), 0);

    hold(&h, &m);
    clock_gettime(CLOCK_REALTIME, &start);
    at = in_ms(CLOCK_REALTIME, 50);
    EXPECT(pthread_mutex_timedlock(&m, &at), ETIMEDOUT);
    CHECK(ms_since(CLOCK_REALTIME, start) >= 49);
    clock_gettime(CLOCK_MONOTONIC, &start);
    at = in_ms(CLOCK_MONOTONIC, 50);
    EXPECT(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &at), ETIMEDOUT);
    CHECK(ms_since(CLOCK_MONOTONIC, start) >= 49);
    at.tv_nsec = 1000000000L;
    EXPECT(pthread_mutex_timedlock(&m, &at), EINVAL);
    at = in_ms(CLOCK_MONOTONIC, 50);
    EXPECT(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &at), EINVAL);
    let_go(&h);

    /* A deadline far enough away is met when the holder lets go. */
    hold(&h, &m);
    at = in_ms(CLOCK_MONOTONIC, 10000);
    h.release = 1;
    EXPECT(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &at), 0);
    EXPECT(pthread_mutex_unlock(&m), 0);
    join(h.t);
    printf("timed mutex\n");
}

/* ---- rwlocks ---- */

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long pair[2];

static void *rw_read_try(void *arg) {
    (void)arg;
    EXPECT(pthread_rwlock_tryrdlock(&rw), 0);
    EXPECT(pthread_rwlock_unlock(&rw), 0);
    EXPECT(pthread_rwlock_trywrlock(&rw), EBUSY);
    return NULL;
}

static void *rw_write_try(void *arg) {
    (void)arg;
    EXPECT(pthread_rwlock_tryrdlock(&rw), EBUSY);
    EXPECT(pthread_rwlock_trywrlock(&rw), EBUSY);
    struct timespec at = in_ms(CLOCK_REALTIME, 30);
    EXPECT(pthread_rwlock_timedrdlock(&rw, &at), ETIMEDOUT);
    at = in_ms(CLOCK_MONOTONIC, 30);
    EXPECT(pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &at), ETIMEDOUT);
    return NULL;
}

static void *rw_torture(void *arg) {
    long writer = (long)arg;
    for (int i = 0; i < 5000; i++) {
        if (writer && i % 4 == 0) {
            EXPECT(pthread_rwlock_wrlock(&rw), 0);
            pair[0]++;
            for (volatile int k = 0; k < 10; k++) {
            }
            pair[1]++;
            EXPECT(pthread_rwlock_unlock(&rw), 0);
        } else {
            EXPECT(pthread_rwlock_rdlock(&rw), 0);
            long a = pair[0];
            for (volatile int k = 0; k < 10; k++) {
            }
            long b = pair[1];
            EXPECT(pthread_rwlock_unlock(&rw), 0);
            if (a != b) {
                fprintf(stderr, "a reader saw a half-done write: %ld != %ld\n", a, b);
                exit(1);
            }
        }
    }
    return NULL;
}

static void rwlocks(void) {
    pthread_t t[256];
    EXPECT(pthread_rwlock_rdlock(&rw), 0);
    EXPECT(pthread_rwlock_rdlock(&rw), 0); /* a reader may read-lock again */
    spawn(&t[0], rw_read_try, NULL);
    join(t[0]);
    if (KLOCKS) /* glibc's destroy does not check */
        EXPECT(pthread_rwlock_destroy(&rw), EBUSY);
    EXPECT(pthread_rwlock_unlock(&rw), 0);
    EXPECT(pthread_rwlock_unlock(&rw), 0);

    EXPECT(pthread_rwlock_wrlock(&rw), 0);
    EXPECT(pthread_rwlock_wrlock(&rw), EDEADLK);
    EXPECT(pthread_rwlock_rdlock(&rw), EDEADLK);
    spawn(&t[0], rw_write_try, NULL);
    join(t[0]);
    EXPECT(pthread_rwlock_unlock(&rw), 0);
    if (KLOCKS) /* glibc's unlock of an unlocked rwlock corrupts it instead */
        EXPECT(pthread_rwlock_unlock(&rw), EPERM);

    pthread_rwlock_t own;
    EXPECT(pthread_rwlock_init(&own, NULL), 0);
    struct timespec at = in_ms(CLOCK_REALTIME, 1000);
    EXPECT(pthread_rwlock_timedwrlock(&own, &at), 0);
    EXPECT(pthread_rwlock_unlock(&own), 0);
    EXPECT(pthread_rwlock_destroy(&own), 0);

    pair[0] = pair[1] = 0;
    for (long i = 0; i < THREADS; i++) spawn(&t[i], rw_torture, (void *)(i % 2));
    for (int i = 0; i < THREADS; i++) join(t[i]);
    CHECK(pair[0] == pair[1]);
    CHECK(pair[0] == (long)(THREADS / 2) * 1250);
    printf("rwlock %d threads\n", THREADS);
}

/* ---- condvars ---- */

#define QUEUE 8
static struct {
    pthread_mutex_t lock;
    pthread_cond_t nonempty, nonfull;
    long items[QUEUE];
    int head, len;
} q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0};
#define ITEMS 4000

static void *produce(void *arg) {
    long base = (long)arg * ITEMS;
    for (long i = 1; i <= ITEMS; i++) {
        EXPECT(pthread_mutex_lock(&q.lock), 0);
        while (q.len == QUEUE) EXPECT(pthread_cond_wait(&q.nonfull, &q.lock), 0);
        q.items[(q.head + q.len++) % QUEUE] = base + i;
        EXPECT(pthread_cond_signal(&q.nonempty), 0);
        EXPECT(pthread_mutex_unlock(&q.lock), 0);
    }
    return NULL;
}

static void *consume(void *arg) {
    long *sum = arg;
    for (long i = 0; i < ITEMS; i++) {
        EXPECT(pthread_mutex_lock(&q.lock), 0);
        while (q.len == 0) {
            /* A timed wait on half of the takes: a timeout just loops. */
            if (i % 2) {
                struct timespec at = in_ms(CLOCK_REALTIME, 5);
                int r = pthread_cond_timedwait(&q.nonempty, &q.lock, &at);
                CHECK(r == 0 || r == ETIMEDOUT);
            } else {
                EXPECT(pthread_cond_wait(&q.nonempty, &q.lock), 0);
            }
        }
        *sum += q.items[q.head];
        q.head = (q.head + 1) % QUEUE;
        q.len--;
        EXPECT(pthread_cond_signal(&q.nonfull), 0);
        EXPECT(pthread_mutex_unlock(&q.lock), 0);
    }
    return NULL;
}

struct gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    int open, waiting;
};

static void *wait_at_gate(void *arg) {
    struct gate *g = arg;
    EXPECT(pthread_mutex_lock(&g->m), 0);
    g->waiting++;
    while (!g->open) EXPECT(pthread_cond_wait(&g->c, &g->m), 0);
    EXPECT(pthread_mutex_unlock(&g->m), 0);
    return NULL;
}

/* ---- a process-shared condvar (glibc's) with a private mutex (klocks') ---- */

static pthread_mutex_t pc_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pc_c;
static int pc_turn;

static void *pc_pong(void *arg) {
    (void)arg;
    for (int i = 0; i < 300; i++) {
        EXPECT(pthread_mutex_lock(&pc_m), 0);
        while (pc_turn != 1) EXPECT(pthread_cond_wait(&pc_c, &pc_m), 0);
        pc_turn = 0;
        EXPECT(pthread_cond_broadcast(&pc_c), 0);
        EXPECT(pthread_mutex_unlock(&pc_m), 0);
    }
    return NULL;
}

static void shared_condvar_private_mutex(void) {
    pthread_condattr_t attr;
    EXPECT(pthread_condattr_init(&attr), 0);
    EXPECT(pthread_condattr_setpshared(&attr, PTHREAD_PROCESS_SHARED), 0);
    EXPECT(pthread_cond_init(&pc_c, &attr), 0);
    EXPECT(pthread_condattr_destroy(&attr), 0);
    pthread_t t;
    spawn(&t, pc_pong, NULL);
    for (int i = 0; i < 300; i++) {
        EXPECT(pthread_mutex_lock(&pc_m), 0);
        pc_turn = 1;
        EXPECT(pthread_cond_signal(&pc_c), 0);
        while (pc_turn != 0) EXPECT(pthread_cond_wait(&pc_c, &pc_m), 0);
        EXPECT(pthread_mutex_unlock(&pc_m), 0);
    }
    join(t);
    EXPECT(pthread_mutex_lock(&pc_m), 0);
    struct timespec start, at = in_ms(CLOCK_REALTIME, 30);
    clock_gettime(CLOCK_MONOTONIC, &start);
    /* Spurious returns are allowed (klocks returns every 10 ms here, see cond.rs);
     * the deadline must still end the wait. */
    int r;
    while ((r = pthread_cond_timedwait(&pc_c, &pc_m, &at)) == 0) {
    }
    EXPECT(r, ETIMEDOUT);
    CHECK(ms_since(CLOCK_MONOTONIC, start) >= 29);
    EXPECT(pthread_mutex_unlock(&pc_m), 0); /* still ours: the wait gave it back */
    EXPECT(pthread_cond_destroy(&pc_c), 0);
    printf("shared condvar, private mutex\n");
}

/* ---- cancellation of a condvar waiter ---- */

static pthread_mutex_t cancel_m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t cancel_c = PTHREAD_COND_INITIALIZER;
static int cancel_cleanup_ran, cancel_cleanup_held, cancel_waiting;

/* The waiter's cleanup: POSIX has the mutex re-acquired by then (an error-checking
 * mutex unlocks only for its holder). */
static void cancel_cleanup(void *arg) {
    (void)arg;
    cancel_cleanup_ran = 1;
    cancel_cleanup_held = pthread_mutex_unlock(&cancel_m) == 0;
}

static void *wait_to_be_cancelled(void *timed) {
    EXPECT(pthread_mutex_lock(&cancel_m), 0);
    cancel_waiting = 1;
    pthread_cleanup_push(cancel_cleanup, NULL);
    for (;;) {
        if (timed) {
            struct timespec at = in_ms(CLOCK_REALTIME, 60000);
            pthread_cond_timedwait(&cancel_c, &cancel_m, &at);
        } else {
            pthread_cond_wait(&cancel_c, &cancel_m);
        }
    }
    pthread_cleanup_pop(0);
    return NULL;
}

/* The shutdown pattern: cancel a worker blocked in a condvar wait, join it. */
static void cancel_waiters(void) {
    for (long timed = 0; timed < 2; timed++) {
        cancel_cleanup_ran = cancel_cleanup_held = cancel_waiting = 0;
        pthread_t t;
        spawn(&t, wait_to_be_cancelled, (void *)timed);
        for (;;) {
            EXPECT(pthread_mutex_lock(&cancel_m), 0);
            int waiting = cancel_waiting;
            EXPECT(pthread_mutex_unlock(&cancel_m), 0);
            if (waiting) break;
            usleep(1000);
        }
        usleep(20000); /* let it block */
        struct timespec start;
        clock_gettime(CLOCK_MONOTONIC, &start);
        EXPECT(pthread_cancel(t), 0);
        void *result;
        EXPECT(pthread_join(t, &result), 0);
        CHECK(result == PTHREAD_CANCELED);
        CHECK(ms_since(CLOCK_MONOTONIC, start) < 5000);
        CHECK(cancel_cleanup_ran && cancel_cleanup_held);
        /* Free again, usable by others. */
        EXPECT(pthread_mutex_lock(&cancel_m), 0);
        EXPECT(pthread_mutex_unlock(&cancel_m), 0);
    }
    EXPECT(pthread_cond_destroy(&cancel_c), 0);
    printf("condvar cancellation\n");
}

static void condvars(void) {
    pthread_t t[256];
    long sums[128] = {0};
    int pairs = THREADS / 2 > 0 ? THREADS / 2 : 1;
    for (long i = 0; i < pairs; i++) {
        spawn(&t[2 * i], produce, (void *)i);
        spawn(&t[2 * i + 1], consume, &sums[i]);
    }
    for (int i = 0; i < 2 * pairs; i++) join(t[i]);
    long total = 0, want = 0;
    for (int i = 0; i < pairs; i++) total += sums[i];
    for (long p = 0; p < pairs; p++) want += ITEMS * p * ITEMS + (long)ITEMS * (ITEMS + 1) / 2;
    CHECK(total == want);

    /* Timeouts, on both clocks. */
    pthread_condattr_t attr;
    pthread_cond_t mono;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    EXPECT(pthread_condattr_init(&attr), 0);
    EXPECT(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC), 0);
    EXPECT(pthread_cond_init(&mono, &attr), 0);
    EXPECT(pthread_condattr_destroy(&attr), 0);
    struct timespec start, at;
    EXPECT(pthread_mutex_lock(&m), 0);
    clock_gettime(CLOCK_MONOTONIC, &start);
    at = in_ms(CLOCK_MONOTONIC, 40);
    EXPECT(pthread_cond_timedwait(&mono, &m, &at), ETIMEDOUT);
    CHECK(ms_since(CLOCK_MONOTONIC, start) >= 39);
    at = in_ms(CLOCK_REALTIME, 40);
    EXPECT(pthread_cond_clockwait(&mono, &m, CLOCK_REALTIME, &at), ETIMEDOUT);
    at.tv_nsec = -1;
    EXPECT(pthread_cond_timedwait(&mono, &m, &at), EINVAL);
    EXPECT(pthread_mutex_unlock(&m), 0);
    EXPECT(pthread_cond_destroy(&mono), 0);

    /* Broadcast wakes every waiter; destroying right after it is allowed. */
    struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    int n = THREADS < 32 ? THREADS : 32;
    for (int i = 0; i < n; i++) spawn(&t[i], wait_at_gate, &g);
    for (;;) {
        EXPECT(pthread_mutex_lock(&g.m), 0);
        int all = g.waiting == n;
        EXPECT(pthread_mutex_unlock(&g.m), 0);
        if (all) break;
        usleep(1000);
    }
    usleep(20000); /* let them block */
    EXPECT(pthread_mutex_lock(&g.m), 0);
    g.open = 1;
    EXPECT(pthread_cond_broadcast(&g.c), 0);
    EXPECT(pthread_mutex_unlock(&g.m), 0);
    EXPECT(pthread_cond_destroy(&g.c), 0);
    for (int i = 0; i < n; i++) join(t[i]);
    printf("condvar %d threads\n", THREADS);
}

/* ---- what klocks passes to glibc ---- */

static pthread_mutex_t robust;

static void *die_holding(void *arg) {
    (void)arg;
    EXPECT(pthread_mutex_lock(&robust), 0);
    return NULL; /* exits holding it */
}

static void passed_through(void) {
    pthread_mutexattr_t attr;
    pthread_t t;
    EXPECT(pthread_mutexattr_init(&attr), 0);
    EXPECT(pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST), 0);
    EXPECT(pthread_mutex_init(&robust, &attr), 0);
    spawn(&t, die_holding, NULL);
    join(t);
    EXPECT(pthread_mutex_lock(&robust), EOWNERDEAD);
    EXPECT(pthread_mutex_consistent(&robust), 0);
    EXPECT(pthread_mutex_unlock(&robust), 0);
    EXPECT(pthread_mutex_destroy(&robust), 0);

    pthread_mutex_t pi;
    EXPECT(pthread_mutexattr_init(&attr), 0);
    EXPECT(pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT), 0);
    EXPECT(pthread_mutex_init(&pi, &attr), 0);
    EXPECT(pthread_mutex_lock(&pi), 0);
    EXPECT(pthread_mutex_unlock(&pi), 0);
    EXPECT(pthread_mutex_destroy(&pi), 0);

    /* Process-shared: a mutex, rwlock and condvar in shared memory, used by a
     * child process. */
    struct shared {
        pthread_mutex_t m;
        pthread_rwlock_t rw;
        pthread_cond_t c;
        int ready;
    } *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED);
    pthread_rwlockattr_t rwattr;
    pthread_condattr_t cattr;
    EXPECT(pthread_mutexattr_init(&attr), 0);
    EXPECT(pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED), 0);
    EXPECT(pthread_mutex_init(&s->m, &attr), 0);
    EXPECT(pthread_rwlockattr_init(&rwattr), 0);
    EXPECT(pthread_rwlockattr_setpshared(&rwattr, PTHREAD_PROCESS_SHARED), 0);
    EXPECT(pthread_rwlock_init(&s->rw, &rwattr), 0);
    EXPECT(pthread_condattr_init(&cattr), 0);
    EXPECT(pthread_condattr_setpshared(&cattr, PTHREAD_PROCESS_SHARED), 0);
    EXPECT(pthread_cond_init(&s->c, &cattr), 0);
    EXPECT(pthread_rwlock_wrlock(&s->rw), 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        /* Blocks on the parent's write lock, then signals through the condvar. */
        if (pthread_rwlock_rdlock(&s->rw) != 0 || pthread_rwlock_unlock(&s->rw) != 0) _exit(2);
        if (pthread_mutex_lock(&s->m) != 0) _exit(3);
        s->ready = 1;
        if (pthread_cond_signal(&s->c) != 0 || pthread_mutex_unlock(&s->m) != 0) _exit(4);
        _exit(0);
    }
    usleep(20000);
    EXPECT(pthread_rwlock_unlock(&s->rw), 0);
    EXPECT(pthread_mutex_lock(&s->m), 0);
    while (!s->ready) EXPECT(pthread_cond_wait(&s->c, &s->m), 0);
    EXPECT(pthread_mutex_unlock(&s->m), 0);
    int status;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    printf("robust, PI and process-shared\n");
}

/* ---- fork in a multithreaded program ---- */

static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fork_free = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t fork_rw = PTHREAD_RWLOCK_INITIALIZER;

static void *queue_on_fork_lock(void *arg) {
    (void)arg;
    EXPECT(pthread_mutex_lock(&fork_lock), 0);
    EXPECT(pthread_mutex_unlock(&fork_lock), 0);
    return NULL;
}

static void *queue_on_fork_free(void *arg) {
    (void)arg;
    for (int i = 0; i < 200; i++) {
        EXPECT(pthread_mutex_lock(&fork_free), 0);
        EXPECT(pthread_mutex_unlock(&fork_free), 0);
    }
    return NULL;
}

static pthread_rwlock_t fork_read = PTHREAD_RWLOCK_INITIALIZER;

static void *queue_on_fork_rw(void *arg) {
    (void)arg;
    EXPECT(pthread_rwlock_rdlock(&fork_rw), 0);
    EXPECT(pthread_rwlock_unlock(&fork_rw), 0);
    return NULL;
}

static void *write_fork_read(void *arg) {
    (void)arg;
    EXPECT(pthread_rwlock_wrlock(&fork_read), 0);
    EXPECT(pthread_rwlock_unlock(&fork_read), 0);
    return NULL;
}

static pthread_mutex_t fork_race = PTHREAD_MUTEX_INITIALIZER;
static long fork_race_count;

/* Threads of the child that all reach a mutex last used before the fork at once:
 * one repairs it, the others wait for the repair, then they contend. */
static void *race_in_child(void *arg) {
    (void)arg;
    for (int i = 0; i < 2000; i++) {
        if (pthread_mutex_lock(&fork_race) != 0) _exit(12);
        fork_race_count++;
        if (pthread_mutex_unlock(&fork_race) != 0) _exit(13);
    }
    return NULL;
}

/* Another thread of the child, before the forking thread touched the objects it
 * holds: every try answers at once, every timed call by its deadline (returns the
 * first failed check, 0 if all passed). */
static void *try_in_child(void *arg) {
    (void)arg;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    if (pthread_mutex_trylock(&fork_lock) != EBUSY) return (void *)30L;
    struct timespec at = in_ms(CLOCK_REALTIME, 50);
    if (pthread_mutex_timedlock(&fork_lock, &at) != ETIMEDOUT) return (void *)31L;
    if (KLOCKS) {
        if (pthread_rwlock_tryrdlock(&fork_rw) != EBUSY) return (void *)32L;
        if (pthread_rwlock_trywrlock(&fork_rw) != EBUSY) return (void *)33L;
        at = in_ms(CLOCK_REALTIME, 50);
        if (pthread_rwlock_timedrdlock(&fork_rw, &at) != ETIMEDOUT) return (void *)34L;
        /* Not the holder: unlocking is refused, not waited for. */
        if (pthread_rwlock_unlock(&fork_rw) != EPERM) return (void *)35L;
    }
    if (ms_since(CLOCK_MONOTONIC, start) > 1000) return (void *)36L;
    return NULL;
}

/* The child of a fork made while the forking thread held `fork_lock` and `fork_rw`
 * (an atfork handler's pattern) with other threads queued on them. */
static int forked_child(void) {
    pthread_t racers[4];
    for (int i = 0; i < 4; i++)
        if (pthread_create(&racers[i], NULL, race_in_child, NULL) != 0) return 14;
    for (int i = 0; i < 4; i++)
        if (pthread_join(racers[i], NULL) != 0) return 15;
    if (fork_race_count != 4 * 2000) return 16;
    /* Another thread of the child finds fork_lock and fork_rw held (by the forking
     * thread) at once, whichever kind runs them. */
    {
        pthread_t t;
        void *answer;
        if (pthread_create(&t, NULL, try_in_child, NULL) != 0) return 17;
        if (pthread_join(t, &answer) != 0) return 18;
        if (answer) return (int)(long)answer;
    }
    if (pthread_mutex_unlock(&fork_lock) != 0) return 2;
    /* glibc's rwlock fails this: after the unlock, the readers that were queued in
     * the parent still count, and the write lock below never comes. */
    if (!KLOCKS) return 0;
    if (pthread_rwlock_unlock(&fork_rw) != 0) return 3;
    /* Both usable again, from a new thread as well. */
    pthread_t t;
    if (pthread_create(&t, NULL, queue_on_fork_lock, NULL) != 0) return 4;
    if (pthread_join(t, NULL) != 0) return 5;
    if (pthread_rwlock_wrlock(&fork_rw) != 0 || pthread_rwlock_unlock(&fork_rw) != 0) return 6;
    /* fork_read: read-held by the forking thread, a writer of the parent queued (its
     * node on a stack the child does not have, forgotten by the repair). */
    if (pthread_rwlock_unlock(&fork_read) != 0) return 10;
    if (pthread_rwlock_wrlock(&fork_read) != 0 || pthread_rwlock_unlock(&fork_read) != 0) return 11;
    /* fork_free: held by a thread the child does not have, or free. */
    struct timespec at = in_ms(CLOCK_REALTIME, 100);
    int r = pthread_mutex_timedlock(&fork_free, &at);
    if (r == 0) {
        if (pthread_mutex_unlock(&fork_free) != 0) return 7;
        if (pthread_mutex_lock(&fork_free) != 0 || pthread_mutex_unlock(&fork_free) != 0) return 8;
    } else if (r != ETIMEDOUT) {
        return 9;
    }
    return 0;
}

static void fork_with_threads(void) {
    pthread_t t[64];
    int n = THREADS < 8 ? THREADS : 8;
    EXPECT(pthread_mutex_lock(&fork_free), 0);
    EXPECT(pthread_mutex_lock(&fork_lock), 0);
    EXPECT(pthread_mutex_lock(&fork_race), 0); /* used in the parent: stale in the child */
    EXPECT(pthread_mutex_unlock(&fork_race), 0);
    EXPECT(pthread_rwlock_wrlock(&fork_rw), 0);
    EXPECT(pthread_rwlock_rdlock(&fork_read), 0);
    pthread_t fork_read_writer;
    spawn(&fork_read_writer, write_fork_read, NULL);
    for (int i = 0; i < n; i++) spawn(&t[i], queue_on_fork_lock, NULL);
    for (int i = 0; i < n; i++) spawn(&t[n + i], queue_on_fork_rw, NULL);
    for (int i = 0; i < n; i++) spawn(&t[2 * n + i], queue_on_fork_free, NULL);
    usleep(50000); /* let them queue */
    /* Forks while the others pass fork_free around: at the fork it may be held by
     * one of them (then the child cannot take it, as with glibc: not checked) or be
     * free with threads queued behind it (the case the child must survive). */
    EXPECT(pthread_mutex_unlock(&fork_free), 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) _exit(forked_child());
    EXPECT(pthread_rwlock_unlock(&fork_rw), 0);
    EXPECT(pthread_mutex_unlock(&fork_lock), 0);
    EXPECT(pthread_rwlock_unlock(&fork_read), 0);
    join(fork_read_writer);
    for (int i = 0; i < 3 * n; i++) join(t[i]);
    int status;
    CHECK(waitpid(child, &status, 0) == child);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "fork child failed: status %d\n", status);
        exit(1);
    }
    printf("fork with threads\n");
}

int main(int argc, char **argv) {
    const char *threads = getenv("THREADS");
    if (threads) THREADS = atoi(threads);
    CHECK(THREADS >= 2 && THREADS <= 128);
    KLOCKS = getenv("EXPECT_KLOCKS") != NULL;
    if (argc > 1 && strcmp(argv[1], "busted") == 0) {
        busted = 1;
        counters(0);
        printf("preload: busted counter passed\n");
        return 0;
    }
    normal_mutex();
    mutex_types();
    dead_owner_mutex();
    counters(0);
    counters(1);
    deadlines();
    rwlocks();
    condvars();
    cancel_waiters();
    shared_condvar_private_mutex();
    passed_through();
    fork_with_threads();
    printf("preload: ok\n");
    return 0;
}
