/* Forks with a lock in a given state while other threads wait on it: the waiters are
 * parked in a signal handler (SIGURG) that blocks in read() on a pipe, so the lock
 * word keeps their traces (pending bit, queue tail, sleepers, a reservation) while
 * they cannot act on them. The child checks what it may do with the lock, under
 * alarm(): a lock that hangs kills it with SIGALRM, reported as a hang.
 *
 * The states (what the child must be able to do):
 *   FREE        the parent released the lock after its waiters parked: the child
 *               locks and unlocks it ROUNDS times and takes it with trylock;
 *   FORKER      the forking thread holds it, waiters parked: the child unlocks it,
 *               then as FREE;
 *   OTHER       another thread holds it, waiters parked: the child's trylock is
 *               EBUSY (glibc's rule: nobody in the child will release it).
 * Used by spin-fork.c and mutex-fork.c. */
#ifndef KLOCKS_TEST_FORK_PARK_H
#define KLOCKS_TEST_FORK_PARK_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

enum at_fork { FREE, FORKER, OTHER };
static const char *const at_fork_name[] = {"free", "held by the forking thread",
                                           "held by another thread"};

/* The lock under test, through its operations; `word` reads its raw lock word for
 * the report (NULL: not known, as for glibc's locks). */
struct lock_ops {
    const char *name;
    void *lock;
    int (*do_lock)(void *);
    int (*do_unlock)(void *);
    int (*do_trylock)(void *);
    uint32_t (*word)(void *);
    /* Brings `lock`, held by the caller, into the state the scenario wants while its
     * waiters wait (e.g. a reservation); NULL: nothing. */
    void (*prepare)(const struct lock_ops *, pthread_t *waiters, int n);
};

static int park_pipe[2];
static volatile int parked;

static void park(int sig) {
    (void)sig;
    __atomic_add_fetch(&parked, 1, __ATOMIC_SEQ_CST);
    char byte;
    while (read(park_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
}

static void install_park(void) {
    CHECK(pipe(park_pipe) == 0);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = park;
    sigemptyset(&action.sa_mask);
    CHECK(sigaction(SIGURG, &action, NULL) == 0);
}

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

struct waiter_arg {
    const struct lock_ops *ops;
};

static volatile int waiters_stop;

/* A waiter takes the lock until told to stop, so that it is still waiting however
 * often the scenario lets the lock go before it parks the waiters. */
static void *wait_for_lock(void *arg) {
    const struct lock_ops *ops = ((struct waiter_arg *)arg)->ops;
    do {
        EXPECT(ops->do_lock(ops->lock), 0);
        EXPECT(ops->do_unlock(ops->lock), 0);
    } while (!__atomic_load_n(&waiters_stop, __ATOMIC_SEQ_CST));
    return NULL;
}

static volatile int holder_has_it, holder_release;

static void *hold_lock(void *arg) {
    const struct lock_ops *ops = ((struct waiter_arg *)arg)->ops;
    EXPECT(ops->do_lock(ops->lock), 0);
    __atomic_store_n(&holder_has_it, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&holder_release, __ATOMIC_SEQ_CST))
        nap_ms(1);
    EXPECT(ops->do_unlock(ops->lock), 0);
    return NULL;
}

#define FORK_ROUNDS 5000

/* Parks `n` waiters on the lock, makes state `at`, forks and checks the child.
 * Returns 0 when the child did what the state allows, else prints why and returns 1. */
static int fork_with_parked_waiters(const struct lock_ops *ops, int n, enum at_fork at) {
    struct waiter_arg arg = {ops};
    pthread_t holder, waiters[8];
    parked = 0;
    holder_has_it = holder_release = waiters_stop = 0;
    if (at == OTHER) {
        CHECK(pthread_create(&holder, NULL, hold_lock, &arg) == 0);
        while (!__atomic_load_n(&holder_has_it, __ATOMIC_SEQ_CST))
            nap_ms(1);
    } else {
        EXPECT(ops->do_lock(ops->lock), 0);
    }
    for (int i = 0; i < n; i++)
        CHECK(pthread_create(&waiters[i], NULL, wait_for_lock, &arg) == 0);
    if (ops->prepare && at != OTHER) {
        ops->prepare(ops, waiters, n);
    } else {
        for (int i = 0; i < n; i++) {
            nap_ms(30); /* the waiter reaches its wait: pending, queued, asleep */
            CHECK(pthread_kill(waiters[i], SIGURG) == 0);
            while (__atomic_load_n(&parked, __ATOMIC_SEQ_CST) <= i)
                nap_ms(1);
        }
    }
    if (at == FREE)
        EXPECT(ops->do_unlock(ops->lock), 0);
    nap_ms(5);
    uint32_t word = ops->word ? ops->word(ops->lock) : 0;
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        alarm(5);
        int ok = 1;
        if (at == OTHER) {
            ok = ops->do_trylock(ops->lock) == EBUSY;
        } else {
            if (at == FORKER)
                ok = ops->do_unlock(ops->lock) == 0;
            for (int i = 0; ok && i < FORK_ROUNDS; i++)
                ok = ops->do_lock(ops->lock) == 0 && ops->do_unlock(ops->lock) == 0;
            ok = ok && ops->do_trylock(ops->lock) == 0 && ops->do_unlock(ops->lock) == 0;
        }
        _exit(ok ? 0 : 1);
    }
    int status;
    CHECK(waitpid(child, &status, 0) == child);
    __atomic_store_n(&waiters_stop, 1, __ATOMIC_SEQ_CST);
    if (at == FORKER)
        EXPECT(ops->do_unlock(ops->lock), 0);
    for (int i = 0; i < n; i++)
        CHECK(write(park_pipe[1], "x", 1) == 1);
    if (at == OTHER) {
        __atomic_store_n(&holder_release, 1, __ATOMIC_SEQ_CST);
        CHECK(pthread_join(holder, NULL) == 0);
    }
    for (int i = 0; i < n; i++)
        CHECK(pthread_join(waiters[i], NULL) == 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        printf("%s: %s, %d parked waiter(s) (word %#x at fork): child ok\n", ops->name,
               at_fork_name[at], n, word);
        return 0;
    }
    printf("%s: %s, %d parked waiter(s) (word %#x at fork): the child %s\n", ops->name,
           at_fork_name[at], n, word,
           WIFSIGNALED(status) ? "hung (killed by its alarm)" : "failed its checks");
    return 1;
}

#endif
