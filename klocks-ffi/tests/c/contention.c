/* Three hot locks of known waits, each waited for on a known call path, for the
 * contention profile's stacks (tests/profile.rs):
 *
 *   global_lock   a global:             WAITS waits of 9 ms, in serve_global()
 *   heap->lock    on the heap:          WAITS waits of 3 ms, in serve_heap()
 *   request locks one per request,      WAITS requests, each lock made, waited for
 *                 made and destroyed:   once for 1 ms in serve_request(), destroyed
 *
 * so by total wait: global (180 ms) > heap (60 ms) > the request site (20 ms): each a
 * few ms a wait apart, which scheduling delays on a loaded machine do not undo. The main
 * thread holds each lock until the waiter thread sleeps on it (glibc's word says so),
 * then holds on for the stated time, so every wait is one and about that long. The
 * waiter measures its own waits and prints their totals (`measured global NS`, ...),
 * to be compared with the profile's.
 *
 * The program also replaces malloc, calloc and realloc with versions that abort if
 * called inside a lock call that waits: the profile walks the stack there, and that
 * must not allocate (an allocator may be what holds the lock).
 *
 * The locks are glibc's: run with KLOCKS_LOCK unset.
 *
 * `contention cond`: ROUNDS times, a thread waits on a condvar; the main thread
 * signals it and then holds the mutex HOLD_MS more, so the woken thread's
 * re-acquisition of the mutex waits that long (any KLOCKS_LOCK). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAITS 20

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

/* Set by the waiter around its contended lock calls. */
static __thread int in_lock_call;

static void allocated_in_lock_call(void) {
    static const char message[] = "contention: malloc inside a waiting lock call\n";
    if (write(2, message, sizeof message - 1)) {}
    abort();
}

void *malloc(size_t size) {
    if (in_lock_call) allocated_in_lock_call();
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
    if (in_lock_call) allocated_in_lock_call();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
    if (in_lock_call) allocated_in_lock_call();
    return __libc_realloc(p, size);
}

static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
struct table {
    long entries;
    pthread_mutex_t lock;
};
static struct table *heap;
struct request {
    pthread_mutex_t lock;
    long served;
};
static struct request *volatile current;

/* The turn the holder has reached, and the last one the waiter finished. */
static volatile long held, got;
static int64_t measured[3];

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Locks `m`, timing the wait into measured[which], with allocation forbidden;
 * inlined, so that the lock call is in its caller. */
__attribute__((always_inline)) static inline void timed_lock(pthread_mutex_t *m, int which) {
    int64_t start = now_ns();
    in_lock_call = 1;
    pthread_mutex_lock(m); /* SITE:wait */
    in_lock_call = 0;
    measured[which] += now_ns() - start;
}

__attribute__((noinline)) static void serve_global(void) {
    timed_lock(&global_lock, 0);
    pthread_mutex_unlock(&global_lock);
}

__attribute__((noinline)) static void serve_heap(void) {
    timed_lock(&heap->lock, 1);
    heap->entries++;
    pthread_mutex_unlock(&heap->lock);
}

__attribute__((noinline)) static void serve_request(struct request *r) {
    timed_lock(&r->lock, 2);
    r->served++;
    pthread_mutex_unlock(&r->lock);
}

static void until_turn(long turn) {
    while (__atomic_load_n(&held, __ATOMIC_ACQUIRE) != turn) sched_yield();
}

static void done(long turn) { __atomic_store_n(&got, turn, __ATOMIC_RELEASE); }

static void *waiter(void *arg) {
    (void)arg;
    long turn = 0;
    for (int i = 0; i < WAITS; i++) {
        until_turn(++turn);
        serve_global();
        done(turn);
    }
    for (int i = 0; i < WAITS; i++) {
        until_turn(++turn);
        serve_heap();
        done(turn);
    }
    for (int i = 0; i < WAITS; i++) {
        until_turn(++turn);
        serve_request(current);
        done(turn);
    }
    return NULL;
}

/* Holds `m` until the waiter sleeps on it (turn `turn`), then `hold_ms` more. */
static void hand_over(pthread_mutex_t *m, long turn, long hold_ms) {
    pthread_mutex_lock(m);
    __atomic_store_n(&held, turn, __ATOMIC_RELEASE);
    while (__atomic_load_n(&m->__data.__lock, __ATOMIC_ACQUIRE) != 2) sched_yield();
    struct timespec t = {0, hold_ms * 1000000L};
    nanosleep(&t, NULL);
    pthread_mutex_unlock(m);
    while (__atomic_load_n(&got, __ATOMIC_ACQUIRE) != turn) sched_yield();
}

#define ROUNDS 10
#define HOLD_MS 10
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int waiting, signalled;

static void *cond_waiter(void *arg) {
    (void)arg;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_mutex_lock(&cond_lock);
        waiting = 1;
        while (!signalled) pthread_cond_wait(&cond, &cond_lock);
        signalled = 0;
        pthread_mutex_unlock(&cond_lock);
    }
    return NULL;
}

static int cond_rounds(void) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, cond_waiter, NULL) != 0) return 2;
    for (int round = 0; round < ROUNDS; round++) {
        /* Once `waiting` is seen under the mutex, the waiter is inside its wait. */
        for (;;) {
            pthread_mutex_lock(&cond_lock);
            if (waiting) break;
            pthread_mutex_unlock(&cond_lock);
            sched_yield();
        }
        waiting = 0;
        signalled = 1;
        pthread_cond_signal(&cond);
        struct timespec t = {0, HOLD_MS * 1000000L};
        nanosleep(&t, NULL);
        pthread_mutex_unlock(&cond_lock);
        while (__atomic_load_n(&signalled, __ATOMIC_ACQUIRE)) sched_yield();
    }
    pthread_join(thread, NULL);
    printf("cond done\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "cond")) return cond_rounds();
    heap = malloc(sizeof *heap);
    if (!heap) return 2;
    heap->entries = 0;
    pthread_mutex_init(&heap->lock, NULL); /* SITE:heap */
    pthread_t thread;
    if (pthread_create(&thread, NULL, waiter, NULL) != 0) return 2;
    long turn = 0;
    for (int i = 0; i < WAITS; i++) hand_over(&global_lock, ++turn, 9);
    for (int i = 0; i < WAITS; i++) hand_over(&heap->lock, ++turn, 3);
    for (int i = 0; i < WAITS; i++) {
        struct request *r = malloc(sizeof *r);
        if (!r) return 2;
        r->served = 0;
        pthread_mutex_init(&r->lock, NULL); /* SITE:request */
        current = r;
        hand_over(&r->lock, ++turn, 1);
        pthread_mutex_destroy(&r->lock);
        free(r);
    }
    pthread_join(thread, NULL);
    printf("measured global %lld\nmeasured heap %lld\nmeasured request %lld\n",
           (long long)measured[0], (long long)measured[1], (long long)measured[2]);
    return 0;
}
