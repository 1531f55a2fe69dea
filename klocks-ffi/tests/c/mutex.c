/* The C API's mutexes: errno answers for every kind, timed locks, the static
 * initialiser (first use raced by many threads), counters under contention, the
 * owner checks of DEFAULT and SPINFUTEX. Exits 0 and prints "mutex: ok" when
 * every check holds; a failed check prints its line and exits 1. Run by tests/c_api.rs. */
#define _DEFAULT_SOURCE /* usleep */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "klocks.h"

#include "check.h"
#include "kinds.h"

_Static_assert(sizeof(klocks_mutex_t) == KLOCKS_MUTEX_SIZE, "mutex size");
_Static_assert(_Alignof(klocks_mutex_t) == 8, "mutex alignment");


/* ---- errno answers on one thread ---- */

static void single_thread(klocks_kind kind) {
    klocks_mutex_t m;
    EXPECT(klocks_mutex_init(&m, kind), 0);
    EXPECT(klocks_mutex_lock(&m), 0);
    EXPECT(klocks_mutex_trylock(&m), EBUSY);
    EXPECT(klocks_mutex_destroy(&m), EBUSY);
    EXPECT(klocks_mutex_unlock(&m), 0);
    EXPECT(klocks_mutex_unlock(&m), EPERM);
    EXPECT(klocks_mutex_trylock(&m), 0);
    EXPECT(klocks_mutex_unlock(&m), 0);
    EXPECT(klocks_mutex_destroy(&m), 0);
    /* Use after destroy. */
    EXPECT(klocks_mutex_lock(&m), EINVAL);
    EXPECT(klocks_mutex_trylock(&m), EINVAL);
    EXPECT(klocks_mutex_unlock(&m), EINVAL);
    EXPECT(klocks_mutex_destroy(&m), EINVAL);
    /* A destroyed mutex can be initialised again. */
    EXPECT(klocks_mutex_init(&m, kind), 0);
    EXPECT(klocks_mutex_lock(&m), 0);
    EXPECT(klocks_mutex_unlock(&m), 0);
    EXPECT(klocks_mutex_destroy(&m), 0);
}

static void bad_objects(void) {
    klocks_mutex_t m;
    EXPECT(klocks_mutex_init(&m, (klocks_kind)0), EINVAL);
    /* The kinds are numbered 1 to NKINDS. */
    EXPECT(klocks_mutex_init(&m, (klocks_kind)(NKINDS + 1)), EINVAL);
    EXPECT(klocks_mutex_init(&m, (klocks_kind)-1), EINVAL);
    EXPECT(klocks_mutex_init(NULL, KLOCKS_PVQSPINLOCK), EINVAL);
    EXPECT(klocks_mutex_lock(NULL), EINVAL);
    EXPECT(klocks_mutex_trylock(NULL), EINVAL);
    EXPECT(klocks_mutex_unlock(NULL), EINVAL);
    EXPECT(klocks_mutex_destroy(NULL), EINVAL);
    EXPECT(klocks_mutex_timedlock(NULL, NULL), EINVAL);
    /* Zero-filled is an unlocked DEFAULT mutex, with its owner checks. */
    memset(&m, 0, sizeof m);
    EXPECT(klocks_mutex_unlock(&m), EPERM);
    EXPECT(klocks_mutex_lock(&m), 0);
    EXPECT(klocks_mutex_lock(&m), EDEADLK);
    EXPECT(klocks_mutex_unlock(&m), 0);
    EXPECT(klocks_mutex_destroy(&m), 0);
    /* Destroyed stays refused, and so do bytes init never wrote. */
    EXPECT(klocks_mutex_lock(&m), EINVAL);
    memset(&m, 0xA5, sizeof m);
    EXPECT(klocks_mutex_lock(&m), EINVAL);
    EXPECT(klocks_mutex_unlock(&m), EINVAL);
    EXPECT(klocks_mutex_timedlock(&m, NULL), EINVAL);
    /* Misaligned storage. */
    _Alignas(8) unsigned char raw[sizeof(klocks_mutex_t) + 8];
    EXPECT(klocks_mutex_init((klocks_mutex_t *)(void *)(raw + 4), KLOCKS_FUTEX), EINVAL);
}

/* ---- timed locks ---- */

static struct timespec in_ms(long ms) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

static long ms_since(struct timespec start) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L;
}

struct timed {
    klocks_mutex_t *m;
    int result;
    long waited_ms;
};

/* Another thread's timed lock of a mutex this thread holds for `hold_ms`. */
static void *timed_lock_body(void *arg) {
    struct timed *t = arg;
    struct timespec start, deadline = in_ms(t->waited_ms);
    clock_gettime(CLOCK_REALTIME, &start);
    t->result = klocks_mutex_timedlock(t->m, &deadline);
    t->waited_ms = ms_since(start);
    if (t->result == 0)
        EXPECT(klocks_mutex_unlock(t->m), 0);
    return NULL;
}

static void timed_lock(klocks_kind kind) {
    klocks_mutex_t m;
    pthread_t other;
    struct timespec past = in_ms(-1000), bad = in_ms(100);
    EXPECT(klocks_mutex_init(&m, kind), 0);
    /* Free: taken even with a past deadline or malformed nanoseconds. */
    EXPECT(klocks_mutex_timedlock(&m, &past), 0);
    EXPECT(klocks_mutex_unlock(&m), 0);
    bad.tv_nsec = 1000000000L;
    EXPECT(klocks_mutex_timedlock(&m, &bad), 0);
    EXPECT(klocks_mutex_timedlock(&m, NULL), EINVAL);
    /* Held: malformed nanoseconds are EINVAL, a deadline ETIMEDOUT, not earlier. */
    struct timed t = {&m, -1, 50};
    CHECK(pthread_create(&other, NULL, timed_lock_body, &t) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    EXPECT(t.result, ETIMEDOUT);
    CHECK(t.waited_ms >= 45);
    /* Released while the other thread waits: it gets the mutex. */
    t = (struct timed){&m, -1, 10000};
    CHECK(pthread_create(&other, NULL, timed_lock_body, &t) == 0);
    usleep(20000);
    EXPECT(klocks_mutex_unlock(&m), 0);
    CHECK(pthread_join(other, NULL) == 0);
    EXPECT(t.result, 0);
    CHECK(t.waited_ms < 5000);
    EXPECT(klocks_mutex_destroy(&m), 0);
}

/* The owner-tracking kinds answer a timed relock with EDEADLK. */
static void timed_relock(klocks_kind kind) {
    klocks_mutex_t m;
    struct timespec soon = in_ms(10);
    EXPECT(klocks_mutex_init(&m, kind), 0);
    EXPECT(klocks_mutex_timedlock(&m, &soon), 0);
    EXPECT(klocks_mutex_timedlock(&m, &soon), EDEADLK);
    EXPECT(klocks_mutex_unlock(&m), 0);
    EXPECT(klocks_mutex_destroy(&m), 0);
}

/* A held mutex and malformed nanoseconds: EINVAL (only when the call would wait). */
static void *bad_nanoseconds_body(void *arg) {
    struct timespec bad = in_ms(100);
    bad.tv_nsec = -1;
    EXPECT(klocks_mutex_timedlock(arg, &bad), EINVAL);
    return NULL;
}

static void timed_bad_nanoseconds(klocks_kind kind) {
    klocks_mutex_t m;
    pthread_t other;
    EXPECT(klocks_mutex_init(&m, kind), 0);
    EXPECT(klocks_mutex_lock(&m), 0);
    CHECK(pthread_create(&other, NULL, bad_nanoseconds_body, &m) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    EXPECT(klocks_mutex_unlock(&m), 0);
    EXPECT(klocks_mutex_destroy(&m), 0);
}

/* ---- the static initialiser: many threads make the first call at once ---- */

static klocks_mutex_t first_use = KLOCKS_MUTEX_INITIALIZER;
static long first_use_count;
static int first_use_go;

static void *first_use_body(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&first_use_go, __ATOMIC_ACQUIRE))
        ;
    for (int i = 0; i < 10000; i++) {
        EXPECT(klocks_mutex_lock(&first_use), 0);
        first_use_count++;
        EXPECT(klocks_mutex_unlock(&first_use), 0);
    }
    return NULL;
}

static void static_initializer(void) {
    enum { THREADS = 16 };
    pthread_t tid[THREADS];
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&tid[t], NULL, first_use_body, NULL) == 0);
    __atomic_store_n(&first_use_go, 1, __ATOMIC_RELEASE);
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_join(tid[t], NULL) == 0);
    CHECK(first_use_count == THREADS * 10000L);
    EXPECT(klocks_mutex_destroy(&first_use), 0);
    EXPECT(klocks_mutex_lock(&first_use), EINVAL);
    printf("mutex: static initialiser, first use by %d threads at once\n", THREADS);
}

/* ---- counters ---- */

struct counter {
    klocks_mutex_t lock;
    long value; /* plain: only the lock keeps increments whole */
    long per_thread;
};

static void *count_up(void *arg) {
    struct counter *c = arg;
    for (long i = 0; i < c->per_thread; i++) {
        EXPECT(klocks_mutex_lock(&c->lock), 0);
        c->value++;
        EXPECT(klocks_mutex_unlock(&c->lock), 0);
    }
    return NULL;
}

static void counter(klocks_kind kind, const char *name, int threads, long per_thread) {
    static struct counter c;
    pthread_t tid[64];
    CHECK(threads <= 64);
    EXPECT(klocks_mutex_init(&c.lock, kind), 0);
    c.value = 0;
    c.per_thread = per_thread;
    for (int t = 0; t < threads; t++)
        CHECK(pthread_create(&tid[t], NULL, count_up, &c) == 0);
    for (int t = 0; t < threads; t++)
        CHECK(pthread_join(tid[t], NULL) == 0);
    if (c.value != threads * per_thread) {
        fprintf(stderr, "%s: %d threads x %ld increments gave %ld\n", name, threads,
                per_thread, c.value);
        exit(1);
    }
    EXPECT(klocks_mutex_destroy(&c.lock), 0);
    printf("mutex: %s counter %d threads x %ld exact\n", name, threads, per_thread);
}

/* ---- owner checks (DEFAULT and SPINFUTEX) ---- */

static klocks_mutex_t owned;

static void *unlock_from_other_thread(void *arg) {
    (void)arg;
    EXPECT(klocks_mutex_unlock(&owned), EPERM);
    EXPECT(klocks_mutex_trylock(&owned), EBUSY);
    return NULL;
}

static void owner_checks(klocks_kind kind) {
    pthread_t other;
    EXPECT(klocks_mutex_init(&owned, kind), 0);
    EXPECT(klocks_mutex_lock(&owned), 0);
    EXPECT(klocks_mutex_lock(&owned), EDEADLK);
    CHECK(pthread_create(&other, NULL, unlock_from_other_thread, NULL) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    /* Still ours after the refused unlock. */
    EXPECT(klocks_mutex_trylock(&owned), EBUSY);
    EXPECT(klocks_mutex_unlock(&owned), 0);
    /* trylock records the owner too. */
    EXPECT(klocks_mutex_trylock(&owned), 0);
    EXPECT(klocks_mutex_lock(&owned), EDEADLK);
    CHECK(pthread_create(&other, NULL, unlock_from_other_thread, NULL) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    EXPECT(klocks_mutex_unlock(&owned), 0);
    EXPECT(klocks_mutex_unlock(&owned), EPERM);
    EXPECT(klocks_mutex_destroy(&owned), 0);
}

int main(void) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(klocks_version() != NULL && klocks_version()[0] != '\0');
    printf("mutex: libklocks %s, %ld CPUs\n", klocks_version(), cpus);

    bad_objects();
    for (size_t k = 0; k < NKINDS; k++)
        single_thread(KINDS[k].kind);
    owner_checks(KLOCKS_SPINFUTEX);
    owner_checks(KLOCKS_DEFAULT);
    printf("mutex: errno answers ok\n");
    for (size_t k = 0; k < NKINDS; k++) {
        timed_lock(KINDS[k].kind);
        timed_bad_nanoseconds(KINDS[k].kind);
    }
    timed_relock(KLOCKS_SPINFUTEX);
    timed_relock(KLOCKS_DEFAULT);
    printf("mutex: timed locks ok\n");
    static_initializer();

    for (size_t k = 0; k < NKINDS; k++) {
        /* Pure spinlocks never sleep: with more threads than CPUs a FIFO spinlock
         * waits for preempted waiters to be scheduled (docs/design.md), so they get at most
         * one thread per CPU (and at least 2). */
        int threads = 4;
        if (!KINDS[k].sleeps && cpus < threads)
            threads = cpus < 2 ? 2 : (int)cpus;
        counter(KINDS[k].kind, KINDS[k].name, threads, 100000);
        if (KINDS[k].sleeps)
            counter(KINDS[k].kind, KINDS[k].name, 32, 20000);
    }
    printf("mutex: ok\n");
    return 0;
}
