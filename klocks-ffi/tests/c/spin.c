/* pthread spinlocks: run by tests/preload.rs under LD_PRELOAD=libklocks.so with each
 * KLOCKS_SPIN, and without the preload (glibc), which shows the checks are right.
 *
 * - THREADS threads (default: 4 per CPU, more threads than CPUs) add to a counter
 *   under one spinlock, ROUNDS times each (default 20000): the total must be exact.
 * - pthread_spin_trylock answers EBUSY while the lock is held, by its holder too,
 *   and 0 once it is free.
 * - An unlock by a thread that does not hold the lock releases it, as glibc's does.
 * - A process-shared spinlock in shared memory, initialised before fork(), excludes
 *   two threads of the parent and two of the child, SHARED_ROUNDS times each
 *   (default 1000000; klocks leaves it to glibc: its queue and futexes are the
 *   process's own, and a klocks lock shared this way hangs within 300000 rounds).
 * - With EXPECT_KLOCKS=1 (klocks in charge), the answers stricter than glibc's:
 *   EPERM for unlocking a free lock, EBUSY for destroying a held one.
 * Prints "spin: ok" when every check holds; a failed check prints its line and exits
 * 1. With the argument "busted" the counter is added to without the lock, and the
 * total check must fail (it exits 0 after the counter if no update was lost).
 *
 * No check relies on zero-filled memory: glibc's x86-64 spinlock is free at 1 (its
 * init writes 1, its lock decrements), so a spinlock needs pthread_spin_init. */
#define _GNU_SOURCE

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static pthread_spinlock_t lock;
static long counter; /* under the lock */
static long rounds = 20000;
static long shared_rounds = 1000000;
static int busted;
static int go; /* the adders start together */

static void *add(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
        sched_yield();
    for (long i = 0; i < rounds; i++) {
        if (!busted)
            EXPECT(pthread_spin_lock(&lock), 0);
        /* A read-modify-write with a gap, so that a missing lock loses updates. */
        long seen = __atomic_load_n(&counter, __ATOMIC_RELAXED);
        for (volatile int gap = 0; gap < 20; gap++)
            ;
        __atomic_store_n(&counter, seen + 1, __ATOMIC_RELAXED);
        if (!busted)
            EXPECT(pthread_spin_unlock(&lock), 0);
    }
    return NULL;
}

static long env_long(const char *name, long otherwise) {
    const char *value = getenv(name);
    return value != NULL ? atol(value) : otherwise;
}

static void counter_adds_up(void) {
    long threads = env_long("THREADS", 4 * sysconf(_SC_NPROCESSORS_ONLN));
    rounds = env_long("ROUNDS", rounds);
    pthread_t tid[threads];
    EXPECT(pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE), 0);
    for (long i = 0; i < threads; i++)
        CHECK(pthread_create(&tid[i], NULL, add, NULL) == 0);
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    for (long i = 0; i < threads; i++)
        CHECK(pthread_join(tid[i], NULL) == 0);
    if (counter != threads * rounds) {
        fprintf(stderr, "counter mismatch: %ld, expected %ld\n", counter, threads * rounds);
        exit(1);
    }
    EXPECT(pthread_spin_destroy(&lock), 0);
    printf("spin: counter %ld threads x %ld rounds\n", threads, rounds);
}

static void *try_while_held(void *arg) {
    (void)arg;
    EXPECT(pthread_spin_trylock(&lock), EBUSY);
    return NULL;
}

static void *unlock_for_holder(void *arg) {
    (void)arg;
    EXPECT(pthread_spin_unlock(&lock), 0);
    return NULL;
}

static void errno_answers(int klocks) {
    pthread_t other;
    EXPECT(pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE), 0);
    EXPECT(pthread_spin_trylock(&lock), 0);
    EXPECT(pthread_spin_trylock(&lock), EBUSY);
    CHECK(pthread_create(&other, NULL, try_while_held, NULL) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    if (klocks)
        EXPECT(pthread_spin_destroy(&lock), EBUSY);
    /* Another thread releases the hold, as glibc's unlock does. */
    CHECK(pthread_create(&other, NULL, unlock_for_holder, NULL) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    EXPECT(pthread_spin_trylock(&lock), 0);
    EXPECT(pthread_spin_unlock(&lock), 0);
    if (klocks)
        EXPECT(pthread_spin_unlock(&lock), EPERM);
    EXPECT(pthread_spin_lock(&lock), 0);
    EXPECT(pthread_spin_unlock(&lock), 0);
    EXPECT(pthread_spin_destroy(&lock), 0);
    printf("spin: errno answers ok\n");
}

/* Parent and child, each with two threads that start together, add to a counter in
 * shared memory under a process-shared spinlock. */
struct shared {
    pthread_spinlock_t lock;
    long counter;
    int ready; /* threads at the start line */
};

static void *add_shared(void *arg) {
    struct shared *shared = arg;
    __atomic_add_fetch(&shared->ready, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&shared->ready, __ATOMIC_SEQ_CST) < 4)
        sched_yield();
    for (long i = 0; i < shared_rounds; i++) {
        EXPECT(pthread_spin_lock(&shared->lock), 0);
        long seen = __atomic_load_n(&shared->counter, __ATOMIC_RELAXED);
        __atomic_store_n(&shared->counter, seen + 1, __ATOMIC_RELAXED);
        EXPECT(pthread_spin_unlock(&shared->lock), 0);
    }
    return NULL;
}

static void process_shared(void) {
    struct shared *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                     -1, 0);
    CHECK(shared != MAP_FAILED);
    EXPECT(pthread_spin_init(&shared->lock, PTHREAD_PROCESS_SHARED), 0);
    shared_rounds = env_long("SHARED_ROUNDS", shared_rounds);
    pid_t child = fork();
    CHECK(child >= 0);
    pthread_t tid[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&tid[i], NULL, add_shared, shared) == 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(tid[i], NULL) == 0);
    if (child == 0)
        _exit(0);
    int status;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (shared->counter != 4 * shared_rounds) {
        fprintf(stderr, "process-shared counter mismatch: %ld, expected %ld\n", shared->counter,
                4 * shared_rounds);
        exit(1);
    }
    EXPECT(pthread_spin_destroy(&shared->lock), 0);
    printf("spin: process-shared, parent and child\n");
}

int main(int argc, char **argv) {
    busted = argc > 1 && strcmp(argv[1], "busted") == 0;
    int klocks = getenv("EXPECT_KLOCKS") != NULL;
    counter_adds_up();
    if (busted)
        return 0; /* no update was lost this time */
    errno_answers(klocks);
    process_shared();
    printf("spin: ok\n");
    return 0;
}
