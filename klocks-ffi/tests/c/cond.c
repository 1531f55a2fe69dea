/* The C API's condition variable (klocks_cond_t): every errno answer, deadlines on
 * both clocks, signal and broadcast with every mutex kind, the static initialisers,
 * cancellation of a waiter. Exits 0 and prints "cond: ok" when every check holds; a
 * failed check prints its line and exits 1. Run by tests/c_api.rs. */
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

_Static_assert(sizeof(klocks_cond_t) == KLOCKS_COND_SIZE, "cond size");
_Static_assert(_Alignof(klocks_cond_t) == 8, "cond alignment");


static struct timespec in_ms(clockid_t clock, long ms) {
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

static long ms_since(clockid_t clock, struct timespec start) {
    struct timespec now;
    clock_gettime(clock, &now);
    return (now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L;
}

/* ---- errno answers and deadlines, one thread ---- */

/* A timed wait nobody signals: ETIMEDOUT after the deadline on `clock`, holding the
 * mutex again. */
static void times_out(klocks_cond_t *c, klocks_mutex_t *m, clockid_t clock) {
    struct timespec start, deadline = in_ms(clock, 50);
    clock_gettime(clock, &start);
    EXPECT(klocks_mutex_lock(m), 0);
    EXPECT(klocks_cond_timedwait(c, m, &deadline), ETIMEDOUT);
    CHECK(ms_since(clock, start) >= 45);
    EXPECT(klocks_mutex_trylock(m), EBUSY);
    EXPECT(klocks_mutex_unlock(m), 0);
}

static void errno_answers(void) {
    klocks_cond_t c;
    klocks_mutex_t m = KLOCKS_MUTEX_INITIALIZER;
    struct timespec soon = in_ms(CLOCK_REALTIME, 10);
    EXPECT(klocks_cond_init(&c), 0);
    /* Waiting without holding the mutex: the unlock's answer, no wait. */
    EXPECT(klocks_cond_wait(&c, &m), EPERM);
    EXPECT(klocks_cond_timedwait(&c, &m, &soon), EPERM);
    EXPECT(klocks_cond_wait(&c, NULL), EINVAL);
    /* Deadlines: null and malformed nanoseconds are EINVAL, the mutex still held. */
    EXPECT(klocks_mutex_lock(&m), 0);
    EXPECT(klocks_cond_timedwait(&c, &m, NULL), EINVAL);
    struct timespec bad = soon;
    bad.tv_nsec = 1000000000L;
    EXPECT(klocks_cond_timedwait(&c, &m, &bad), EINVAL);
    EXPECT(klocks_mutex_unlock(&m), 0);
    /* CLOCK_REALTIME by default; a deadline on the other clock would be in the
     * past (CLOCK_MONOTONIC counts from boot), so waiting 45 ms shows the clock. */
    times_out(&c, &m, CLOCK_REALTIME);
    EXPECT(klocks_cond_signal(&c), 0);
    EXPECT(klocks_cond_broadcast(&c), 0);
    EXPECT(klocks_cond_destroy(&c), 0);
    /* Destroyed: EINVAL everywhere until init. */
    EXPECT(klocks_mutex_lock(&m), 0);
    EXPECT(klocks_cond_wait(&c, &m), EINVAL);
    EXPECT(klocks_cond_timedwait(&c, &m, &soon), EINVAL);
    EXPECT(klocks_mutex_unlock(&m), 0);
    EXPECT(klocks_cond_signal(&c), EINVAL);
    EXPECT(klocks_cond_broadcast(&c), EINVAL);
    EXPECT(klocks_cond_destroy(&c), EINVAL);
    /* CLOCK_MONOTONIC, chosen at init. */
    EXPECT(klocks_cond_init_clock(&c, CLOCK_MONOTONIC), 0);
    times_out(&c, &m, CLOCK_MONOTONIC);
    EXPECT(klocks_cond_destroy(&c), 0);
    EXPECT(klocks_cond_init_clock(&c, CLOCK_REALTIME), 0);
    times_out(&c, &m, CLOCK_REALTIME);
    EXPECT(klocks_cond_destroy(&c), 0);
    EXPECT(klocks_cond_init_clock(&c, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
    /* Null, misaligned, garbage. */
    EXPECT(klocks_cond_init(NULL), EINVAL);
    EXPECT(klocks_cond_signal(NULL), EINVAL);
    EXPECT(klocks_cond_wait(NULL, &m), EINVAL);
    _Alignas(8) unsigned char raw[sizeof(klocks_cond_t) + 8];
    EXPECT(klocks_cond_init((klocks_cond_t *)(void *)(raw + 4)), EINVAL);
    memset(&c, 0x77, sizeof c);
    EXPECT(klocks_cond_broadcast(&c), EINVAL);
    /* Zero-filled: a condvar on CLOCK_REALTIME. */
    memset(&c, 0, sizeof c);
    times_out(&c, &m, CLOCK_REALTIME);
    EXPECT(klocks_cond_destroy(&c), 0);
    EXPECT(klocks_mutex_destroy(&m), 0);
    printf("cond: errno answers ok\n");
}

/* ---- signal and broadcast with every mutex kind ---- */

struct gate {
    klocks_mutex_t m;
    klocks_cond_t c;
    int open;     /* guarded by m */
    int inside;   /* waiters that saw it open */
    long handoffs; /* ping-pong turns, guarded by m */
};

static void *wait_for_open(void *arg) {
    struct gate *g = arg;
    EXPECT(klocks_mutex_lock(&g->m), 0);
    while (!g->open)
        EXPECT(klocks_cond_wait(&g->c, &g->m), 0);
    g->inside++;
    EXPECT(klocks_mutex_unlock(&g->m), 0);
    return NULL;
}

/* Two threads take turns by the parity of `handoffs`, each waking the other with a
 * signal: a lost wake-up hangs the test (the harness's timeout fails it). */
static void *take_turns(void *arg) {
    struct gate *g = arg;
    int me = g->open++; /* 0 or 1, set before the second thread starts */
    EXPECT(klocks_mutex_lock(&g->m), 0);
    while (g->handoffs < 2000) {
        while (g->handoffs % 2 != me && g->handoffs < 2000)
            EXPECT(klocks_cond_wait(&g->c, &g->m), 0);
        if (g->handoffs < 2000)
            g->handoffs++;
        EXPECT(klocks_cond_signal(&g->c), 0);
    }
    EXPECT(klocks_mutex_unlock(&g->m), 0);
    return NULL;
}

static void with_kind(klocks_kind kind, const char *name, int sleeps) {
    static struct gate g;
    int waiters = sleeps ? 8 : 2;
    pthread_t tid[8];
    EXPECT(klocks_mutex_init(&g.m, kind), 0);
    EXPECT(klocks_cond_init(&g.c), 0);
    g.open = g.inside = 0;
    g.handoffs = 0;
    for (int t = 0; t < waiters; t++)
        CHECK(pthread_create(&tid[t], NULL, wait_for_open, &g) == 0);
    usleep(20000);
    EXPECT(klocks_mutex_lock(&g.m), 0);
    g.open = 1;
    EXPECT(klocks_mutex_unlock(&g.m), 0);
    EXPECT(klocks_cond_broadcast(&g.c), 0);
    for (int t = 0; t < waiters; t++)
        CHECK(pthread_join(tid[t], NULL) == 0);
    CHECK(g.inside == waiters);
    /* Destroy right after the broadcast's waiters left, then a ping-pong. */
    EXPECT(klocks_cond_destroy(&g.c), 0);
    EXPECT(klocks_cond_init(&g.c), 0);
    g.open = 0;
    CHECK(pthread_create(&tid[0], NULL, take_turns, &g) == 0);
    while (__atomic_load_n(&g.open, __ATOMIC_SEQ_CST) == 0)
        usleep(1000);
    CHECK(pthread_create(&tid[1], NULL, take_turns, &g) == 0);
    CHECK(pthread_join(tid[0], NULL) == 0);
    CHECK(pthread_join(tid[1], NULL) == 0);
    CHECK(g.handoffs == 2000);
    EXPECT(klocks_cond_destroy(&g.c), 0);
    EXPECT(klocks_mutex_destroy(&g.m), 0);
    printf("cond: %s broadcast to %d waiters, 2000 signalled turns\n", name, waiters);
}

/* ---- the static initialisers ---- */

static klocks_mutex_t ready_lock = KLOCKS_MUTEX_INITIALIZER;
static klocks_cond_t ready_cond = KLOCKS_COND_INITIALIZER;
static int ready;

static void *make_ready(void *arg) {
    (void)arg;
    usleep(10000);
    EXPECT(klocks_mutex_lock(&ready_lock), 0);
    ready = 1;
    EXPECT(klocks_cond_signal(&ready_cond), 0);
    EXPECT(klocks_mutex_unlock(&ready_lock), 0);
    return NULL;
}

static void static_initializers(void) {
    pthread_t other;
    CHECK(pthread_create(&other, NULL, make_ready, NULL) == 0);
    EXPECT(klocks_mutex_lock(&ready_lock), 0);
    while (!ready) {
        struct timespec deadline = in_ms(CLOCK_REALTIME, 10000);
        EXPECT(klocks_cond_timedwait(&ready_cond, &ready_lock, &deadline), 0);
    }
    EXPECT(klocks_mutex_unlock(&ready_lock), 0);
    CHECK(pthread_join(other, NULL) == 0);
    printf("cond: static initialisers ok\n");
}

/* ---- cancellation: the cleanup handler runs with the mutex held ---- */

static klocks_mutex_t cancel_lock = KLOCKS_MUTEX_INITIALIZER;
static klocks_cond_t cancel_cond = KLOCKS_COND_INITIALIZER;
static int waiting, relocked;

static void cleanup(void *arg) {
    (void)arg;
    /* DEFAULT records its owner: this unlock succeeds only if this thread holds it. */
    relocked = klocks_mutex_unlock(&cancel_lock) == 0;
}

static void *wait_forever(void *arg) {
    (void)arg;
    EXPECT(klocks_mutex_lock(&cancel_lock), 0);
    pthread_cleanup_push(cleanup, NULL);
    __atomic_store_n(&waiting, 1, __ATOMIC_SEQ_CST);
    for (;;)
        klocks_cond_wait(&cancel_cond, &cancel_lock);
    pthread_cleanup_pop(0);
    return NULL;
}

static void cancellation(void) {
    pthread_t other;
    void *result;
    CHECK(pthread_create(&other, NULL, wait_forever, NULL) == 0);
    while (!__atomic_load_n(&waiting, __ATOMIC_SEQ_CST))
        usleep(1000);
    usleep(20000);
    CHECK(pthread_cancel(other) == 0);
    CHECK(pthread_join(other, &result) == 0);
    CHECK(result == PTHREAD_CANCELED);
    CHECK(relocked);
    EXPECT(klocks_mutex_trylock(&cancel_lock), 0);
    EXPECT(klocks_mutex_unlock(&cancel_lock), 0);
    printf("cond: a cancelled waiter holds the mutex in its cleanup\n");
}

int main(void) {
    errno_answers();
    for (size_t k = 0; k < NKINDS; k++)
        with_kind(KINDS[k].kind, KINDS[k].name, KINDS[k].sleeps);
    static_initializers();
    cancellation();
    printf("cond: ok\n");
    return 0;
}
