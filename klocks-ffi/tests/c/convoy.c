/* A convoy for a FIFO lock: `convoy T N` starts T threads together (a barrier) and
 * has each take one mutex N times around a counter increment and a short critical
 * section (WORK loop steps, and every YIELD_EVERY-th time a sched_yield, so that
 * the other threads run while it is held); exits 1 unless the counter is T × N.
 *
 * Run with more threads than CPUs (lockbench's tests pin it to 2 CPUs with taskset),
 * every thread wants the lock at once from the start, so glibc's mutex is contended
 * (its waiters sleep, and the thread that runs takes the lock again as it likes). A
 * lock that hands itself to its waiters in FIFO order, sleeping ones included
 * (`KLOCKS_LOCK=pvticket`), makes each acquisition wait for its waiter to be
 * scheduled: a convoy, slower than glibc's for this program
 * (lockbench/tests/app_profile.rs measures it with `app --profile --try`). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define WORK 50
#define YIELD_EVERY 8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static long counter, pairs;
static volatile long work;

static void *body(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    for (long i = 0; i < pairs; i++) {
        pthread_mutex_lock(&lock);
        counter++;
        for (int w = 0; w < WORK; w++) work++;
        if (i % YIELD_EVERY == 0) sched_yield();
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: convoy THREADS PAIRS\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    pairs = atol(argv[2]);
    if (threads < 1 || threads > 64 || pairs < 1) return 2;
    pthread_t t[64];
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, body, NULL) != 0) return 2;
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    if (counter != (long)threads * pairs) {
        fprintf(stderr, "convoy: counter %ld, expected %ld\n", counter, (long)threads * pairs);
        return 1;
    }
    printf("convoy done\n");
    return 0;
}
