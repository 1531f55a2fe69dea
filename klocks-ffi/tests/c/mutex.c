/* The C API's mutexes: errno answers for every kind, counters under contention,
 * the owner checks of DEFAULT and SPINFUTEX. Exits 0 and prints "mutex: ok" when
 * every check holds; a failed check prints its line and exits 1. Run by tests/c_api.rs. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "klocks.h"

#include "check.h"

_Static_assert(sizeof(klocks_mutex_t) == KLOCKS_MUTEX_SIZE, "mutex size");
_Static_assert(_Alignof(klocks_mutex_t) == 8, "mutex alignment");

static const struct {
    klocks_kind kind;
    const char *name;
    int sleeps; /* survives more threads than CPUs */
} KINDS[] = {
    {KLOCKS_PVQSPINLOCK, "PVQSPINLOCK", 1}, {KLOCKS_QSPINLOCK, "QSPINLOCK", 0},
    {KLOCKS_TICKET, "TICKET", 0},           {KLOCKS_PVTICKET, "PVTICKET", 1},
    {KLOCKS_FUTEX, "FUTEX", 1},             {KLOCKS_SPINFUTEX, "SPINFUTEX", 1},
    {KLOCKS_DEFAULT, "DEFAULT", 1},
};
#define NKINDS (sizeof KINDS / sizeof KINDS[0])

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
    EXPECT(klocks_mutex_init(&m, (klocks_kind)(KLOCKS_DEFAULT + 1)), EINVAL);
    EXPECT(klocks_mutex_init(&m, (klocks_kind)-1), EINVAL);
    EXPECT(klocks_mutex_init(NULL, KLOCKS_PVQSPINLOCK), EINVAL);
    EXPECT(klocks_mutex_lock(NULL), EINVAL);
    EXPECT(klocks_mutex_trylock(NULL), EINVAL);
    EXPECT(klocks_mutex_unlock(NULL), EINVAL);
    EXPECT(klocks_mutex_destroy(NULL), EINVAL);
    /* Zero-filled is not initialised. */
    memset(&m, 0, sizeof m);
    EXPECT(klocks_mutex_lock(&m), EINVAL);
    EXPECT(klocks_mutex_unlock(&m), EINVAL);
    /* Misaligned storage. */
    _Alignas(8) unsigned char raw[sizeof(klocks_mutex_t) + 8];
    EXPECT(klocks_mutex_init((klocks_mutex_t *)(void *)(raw + 4), KLOCKS_FUTEX), EINVAL);
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
