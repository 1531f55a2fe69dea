/* A normal mutex used as a binary semaphore: taken in one thread, given back by
 * another, as glibc allows and real programs do. Run by tests/preload.rs under
 * LD_PRELOAD=libklocks.so with every KLOCKS_LOCK, and without the preload (glibc).
 *
 * THREADS takers (default: 4 per CPU) lock the mutex in turn, ROUNDS times in all
 * (default 100000), and never unlock it: each one, inside, checks that it is alone
 * and counts, then asks the giver to unlock. The giver, a thread that never locks
 * it, unlocks it for the taker, which meanwhile locks it again (the holder blocks
 * until the give) while the others sleep in their lock calls. Every unlock must
 * answer 0, nobody may be inside at once, and the count must come out exact.
 * Error-checking and recursive mutexes keep answering EPERM to a thread that does
 * not hold them. Prints "handover: ok" when every check holds; a failed check prints
 * its line and exits 1. */
#define _GNU_SOURCE

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

static pthread_mutex_t token = PTHREAD_MUTEX_INITIALIZER;
static long rounds = 100000;
static long counted; /* under the token */
static int inside;   /* takers inside at once: 0 or 1 */
static int give;     /* a taker asks the giver to unlock the token */
static int takers_left;

static void *take(void *arg) {
    (void)arg;
    for (;;) {
        EXPECT(pthread_mutex_lock(&token), 0);
        CHECK(__atomic_fetch_add(&inside, 1, __ATOMIC_SEQ_CST) == 0);
        int last = counted >= rounds;
        if (!last) counted++;
        __atomic_fetch_sub(&inside, 1, __ATOMIC_SEQ_CST);
        /* Release: the giver's unlock follows our count. */
        __atomic_store_n(&give, 1, __ATOMIC_RELEASE);
        if (last) break;
    }
    __atomic_fetch_sub(&takers_left, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Unlocks the token whenever a taker asks, until every taker has left; the last
 * asks before it leaves, so a give is looked for once more after that. */
static void *give_back(void *arg) {
    (void)arg;
    for (;;) {
        if (__atomic_exchange_n(&give, 0, __ATOMIC_ACQUIRE)) {
            EXPECT(pthread_mutex_unlock(&token), 0);
            continue;
        }
        if (__atomic_load_n(&takers_left, __ATOMIC_SEQ_CST) == 0) {
            if (__atomic_exchange_n(&give, 0, __ATOMIC_ACQUIRE))
                EXPECT(pthread_mutex_unlock(&token), 0);
            return NULL;
        }
        sched_yield();
    }
}

static void *expect_unlock_eperm(void *m) {
    EXPECT(pthread_mutex_unlock(m), EPERM);
    return NULL;
}

static void *expect_trylock_ebusy(void *m) {
    EXPECT(pthread_mutex_trylock(m), EBUSY);
    return NULL;
}

static void in_another_thread(void *(*fn)(void *), pthread_mutex_t *m) {
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, fn, m), 0);
    EXPECT(pthread_join(t, NULL), 0);
}

/* Only normal mutexes are anyone's to unlock: the others stay held. */
static void owned_types_refuse(pthread_mutex_t *m) {
    EXPECT(pthread_mutex_lock(m), 0);
    in_another_thread(expect_unlock_eperm, m);
    in_another_thread(expect_trylock_ebusy, m);
    EXPECT(pthread_mutex_unlock(m), 0);
    EXPECT(pthread_mutex_unlock(m), EPERM);
}

int main(void) {
    const char *env = getenv("THREADS");
    int threads = env ? atoi(env) : 4 * (int)sysconf(_SC_NPROCESSORS_ONLN);
    if ((env = getenv("ROUNDS"))) rounds = atol(env);
    CHECK(threads > 0 && threads <= 256 && rounds > 0);

    pthread_t takers[256], giver;
    takers_left = threads;
    for (int i = 0; i < threads; i++) EXPECT(pthread_create(&takers[i], NULL, take, NULL), 0);
    EXPECT(pthread_create(&giver, NULL, give_back, NULL), 0);
    for (int i = 0; i < threads; i++) EXPECT(pthread_join(takers[i], NULL), 0);
    EXPECT(pthread_join(giver, NULL), 0);
    CHECK(counted == rounds);
    /* Every hold was given back: the token is free. */
    EXPECT(pthread_mutex_trylock(&token), 0);
    EXPECT(pthread_mutex_unlock(&token), 0);
    EXPECT(pthread_mutex_destroy(&token), 0);
    printf("given back %ld times by another thread, %d takers\n", rounds + threads, threads);

    static pthread_mutex_t errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
    static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    owned_types_refuse(&errorcheck);
    owned_types_refuse(&recursive);
    printf("handover: ok\n");
    return 0;
}
