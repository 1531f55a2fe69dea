/* pthread_spin_lock/unlock pairs on one spinlock: a contended spinlock
 * microbenchmark for `lockbench app` (the spinlock counterpart of pairs.c).
 *
 *   spin-pairs THREADS PAIRS [busted]
 *
 * Each of THREADS threads does PAIRS pthread_spin_lock / counter += 1 /
 * pthread_spin_unlock on one spinlock (pthread_spin_init, PTHREAD_PROCESS_PRIVATE).
 * Prints "pairs/s: N" (all threads together) and "ns/pair: N" (wall time per pair
 * per thread); exits 1 if a call fails or the counter does not add up. With "busted"
 * the counter is added to without the lock: the check must catch the lost updates.
 * Unmodified pthread code: run it with and without LD_PRELOAD=libklocks.so and
 * KLOCKS_SPIN. */
#define _GNU_SOURCE

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_spinlock_t lock;
static long counter; /* under the lock */
static long pairs;
static int busted;

static void *body(void *arg) {
    (void)arg;
    for (long i = 0; i < pairs; i++) {
        if (!busted && pthread_spin_lock(&lock) != 0) {
            fprintf(stderr, "pthread_spin_lock failed\n");
            exit(1);
        }
        /* A load and a store with a gap (wider without the lock, so that the lost
         * updates show even when the CPUs take turns), so that a missing lock loses
         * updates. */
        long seen = __atomic_load_n(&counter, __ATOMIC_RELAXED);
        for (volatile int gap = 0; gap < (busted ? 200 : 4); gap++)
            ;
        __atomic_store_n(&counter, seen + 1, __ATOMIC_RELAXED);
        if (!busted && pthread_spin_unlock(&lock) != 0) {
            fprintf(stderr, "pthread_spin_unlock failed\n");
            exit(1);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4 || atoi(argv[1]) < 1 || atoi(argv[1]) > 1024 || atol(argv[2]) < 1 ||
        (argc == 4 && strcmp(argv[3], "busted") != 0)) {
        fprintf(stderr, "usage: spin-pairs THREADS(1..1024) PAIRS [busted]\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    pairs = atol(argv[2]);
    busted = argc == 4;
    if (pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE) != 0) {
        fprintf(stderr, "pthread_spin_init failed\n");
        return 1;
    }
    pthread_t t[1024];
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&t[i], NULL, body, NULL) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    if (counter != threads * pairs) {
        fprintf(stderr, "counter mismatch: %ld, expected %ld\n", counter, threads * pairs);
        return 1;
    }
    if (pthread_spin_destroy(&lock) != 0) {
        fprintf(stderr, "pthread_spin_destroy failed\n");
        return 1;
    }
    double s = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
    printf("pairs/s: %.0f\n", threads * pairs / s);
    printf("ns/pair: %.2f\n", s * 1e9 / pairs);
    return 0;
}
