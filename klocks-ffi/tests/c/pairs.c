/* pthread_mutex_lock/unlock pairs on one mutex: the interposer's cost, and a
 * contended microbenchmark for `lockbench app`.
 *
 *   pairs THREADS PAIRS     each thread does PAIRS lock/increment/unlock pairs
 *
 * Prints "pairs/s: N" (all threads together) and "ns/pair: N" (wall time per pair
 * per thread); exits 1 if the counter does not add up. Unmodified pthread code:
 * run it with and without LD_PRELOAD=libklocks.so. */
#define _GNU_SOURCE

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static long pairs;

static void *body(void *arg) {
    (void)arg;
    for (long i = 0; i < pairs; i++) {
        pthread_mutex_lock(&lock);
        counter++;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3 || atoi(argv[1]) < 1 || atoi(argv[1]) > 1024 || atol(argv[2]) < 1) {
        fprintf(stderr, "usage: pairs THREADS(1..1024) PAIRS\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    pairs = atol(argv[2]);
    pthread_t t[1024];
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&t[i], NULL, body, NULL) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    if (counter != threads * pairs) {
        fprintf(stderr, "counter mismatch: %ld, expected %ld\n", counter, threads * pairs);
        return 1;
    }
    double s = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
    printf("pairs/s: %.0f\n", threads * pairs / s);
    printf("ns/pair: %.2f\n", s * 1e9 / pairs);
    return 0;
}
