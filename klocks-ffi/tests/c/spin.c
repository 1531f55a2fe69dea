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
 *   (default 200000; a queued klocks spinlock shared this way, whose queue and
 *   futexes are the process's own, hangs within 300000 rounds).
 * - A process-shared spinlock in a memfd mapped twice in the parent and once more in
 *   a forked child (three addresses of one lock, none of them where another process
 *   initialised it): MAPPED_THREADS threads of the parent (default 4, half through
 *   each mapping) and as many of the child add MAPPED_ROUNDS times each (default
 *   20000): more threads than CPUs across two processes, exact total.
 * - A private spinlock that another thread holds at fork() stays held in the child
 *   (trylock EBUSY, as glibc's: no thread of the child will release it); the child's
 *   threads still use a new spinlock, and the child exits.
 * Every process sets an alarm (ALARM seconds, default 120): a lock that hangs kills
 * it with SIGALRM instead of hanging the test run.
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
static long shared_rounds = 200000;
static long alarm_seconds = 120;
static int busted;
static int go; /* the adders start together */
static int expect_klocks; /* EXPECT_KLOCKS: klocks' stricter answers */

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
    if (child == 0)
        alarm(alarm_seconds);
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

/* ---- one lock, three addresses, two processes ---- */

struct mapped {
    pthread_spinlock_t lock;
    long counter; /* under the lock */
    int ready;    /* threads of both processes at the start line */
};

static long mapped_rounds = 20000;
static long mapped_threads = 4;

static void *add_mapped(void *arg) {
    struct mapped *mapped = arg;
    __atomic_add_fetch(&mapped->ready, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&mapped->ready, __ATOMIC_SEQ_CST) < 2 * mapped_threads)
        sched_yield();
    for (long i = 0; i < mapped_rounds; i++) {
        EXPECT(pthread_spin_lock(&mapped->lock), 0);
        long seen = __atomic_load_n(&mapped->counter, __ATOMIC_RELAXED);
        for (volatile int gap = 0; gap < 20; gap++)
            ;
        __atomic_store_n(&mapped->counter, seen + 1, __ATOMIC_RELAXED);
        EXPECT(pthread_spin_unlock(&mapped->lock), 0);
    }
    return NULL;
}

static void *unlock_mapped(void *arg) {
    struct mapped *mapped = arg;
    EXPECT(pthread_spin_unlock(&mapped->lock), 0);
    return NULL;
}

static struct mapped *map_again(int fd) {
    struct mapped *at = mmap(NULL, sizeof(struct mapped), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(at != MAP_FAILED);
    return at;
}

/* `threads` threads add through `first` and `second` alternately. */
static void add_through(struct mapped *first, struct mapped *second) {
    pthread_t tid[mapped_threads];
    for (long i = 0; i < mapped_threads; i++)
        CHECK(pthread_create(&tid[i], NULL, add_mapped, i % 2 ? second : first) == 0);
    for (long i = 0; i < mapped_threads; i++)
        CHECK(pthread_join(tid[i], NULL) == 0);
}

static void second_mapping(void) {
    mapped_rounds = env_long("MAPPED_ROUNDS", mapped_rounds);
    mapped_threads = env_long("MAPPED_THREADS", mapped_threads);
    int fd = memfd_create("spin-second-mapping", 0);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, sizeof(struct mapped)) == 0);
    struct mapped *first = map_again(fd), *second = map_again(fd);
    CHECK(first != second);
    EXPECT(pthread_spin_init(&first->lock, PTHREAD_PROCESS_SHARED), 0);
    /* One lock at both addresses, in this process, with the answers of a private one. */
    EXPECT(pthread_spin_lock(&second->lock), 0);
    EXPECT(pthread_spin_trylock(&first->lock), EBUSY);
    if (expect_klocks)
        EXPECT(pthread_spin_destroy(&first->lock), EBUSY);
    EXPECT(pthread_spin_unlock(&first->lock), 0);
    if (expect_klocks)
        EXPECT(pthread_spin_unlock(&second->lock), EPERM);
    EXPECT(pthread_spin_trylock(&second->lock), 0);
    /* Another thread releases the hold, as glibc's unlock does. */
    pthread_t other;
    CHECK(pthread_create(&other, NULL, unlock_mapped, first) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    EXPECT(pthread_spin_trylock(&second->lock), 0);
    EXPECT(pthread_spin_unlock(&second->lock), 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        alarm(alarm_seconds);
        struct mapped *third = map_again(fd); /* the first two stay mapped: a new address */
        CHECK(third != first && third != second);
        add_through(third, third);
        _exit(0);
    }
    add_through(first, second);
    int status;
    CHECK(waitpid(child, &status, 0) == child);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "second-mapping child failed: status %#x\n", status);
        exit(1);
    }
    long expected = 2 * mapped_threads * mapped_rounds;
    if (first->counter != expected) {
        fprintf(stderr, "second-mapping counter mismatch: %ld, expected %ld\n", first->counter, expected);
        exit(1);
    }
    EXPECT(pthread_spin_destroy(&second->lock), 0);
    /* A private init turns the word into a private spinlock again. */
    EXPECT(pthread_spin_init(&first->lock, PTHREAD_PROCESS_PRIVATE), 0);
    EXPECT(pthread_spin_lock(&first->lock), 0);
    EXPECT(pthread_spin_trylock(&first->lock), EBUSY);
    EXPECT(pthread_spin_unlock(&first->lock), 0);
    EXPECT(pthread_spin_destroy(&first->lock), 0);
    CHECK(munmap(first, sizeof *first) == 0 && munmap(second, sizeof *second) == 0);
    close(fd);
    printf("spin: second mapping, %ld threads x 2 processes x %ld rounds\n", mapped_threads,
           mapped_rounds);
}

/* ---- fork while another thread holds a private spinlock ---- */

static pthread_spinlock_t held;
static int holding, release_held;

static void *hold(void *arg) {
    (void)arg;
    EXPECT(pthread_spin_lock(&held), 0);
    __atomic_store_n(&holding, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&release_held, __ATOMIC_SEQ_CST))
        sched_yield();
    EXPECT(pthread_spin_unlock(&held), 0);
    return NULL;
}

static void fork_while_held(void) {
    pthread_t holder;
    EXPECT(pthread_spin_init(&held, PTHREAD_PROCESS_PRIVATE), 0);
    CHECK(pthread_create(&holder, NULL, hold, NULL) == 0);
    while (!__atomic_load_n(&holding, __ATOMIC_SEQ_CST))
        sched_yield();
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        alarm(alarm_seconds);
        /* The holder is not in the child: its hold stays, as with glibc. */
        EXPECT(pthread_spin_trylock(&held), EBUSY);
        /* Other spinlocks work, contended (the queue slots come from a fork-safe pool). */
        counter = 0;
        rounds = 5000;
        pthread_t tid[2];
        EXPECT(pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE), 0);
        for (int i = 0; i < 2; i++)
            CHECK(pthread_create(&tid[i], NULL, add, NULL) == 0);
        for (int i = 0; i < 2; i++)
            CHECK(pthread_join(tid[i], NULL) == 0);
        CHECK(counter == 2 * rounds);
        EXPECT(pthread_spin_trylock(&held), EBUSY);
        _exit(0);
    }
    int status;
    CHECK(waitpid(child, &status, 0) == child);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "fork-while-held child failed: status %#x\n", status);
        exit(1);
    }
    __atomic_store_n(&release_held, 1, __ATOMIC_SEQ_CST);
    CHECK(pthread_join(holder, NULL) == 0);
    EXPECT(pthread_spin_trylock(&held), 0);
    EXPECT(pthread_spin_unlock(&held), 0);
    EXPECT(pthread_spin_destroy(&held), 0);
    printf("spin: fork while another thread holds a spinlock\n");
}

int main(int argc, char **argv) {
    busted = argc > 1 && strcmp(argv[1], "busted") == 0;
    int klocks = expect_klocks = getenv("EXPECT_KLOCKS") != NULL;
    alarm_seconds = env_long("ALARM", alarm_seconds);
    alarm(alarm_seconds);
    counter_adds_up();
    if (busted)
        return 0; /* no update was lost this time */
    errno_answers(klocks);
    process_shared();
    second_mapping();
    fork_while_held();
    printf("spin: ok\n");
    return 0;
}
