/* A signal handler takes the lock its own thread is waiting for: run under
 * LD_PRELOAD=libklocks.so by tests/signals.rs for each KLOCKS_LOCK / KLOCKS_RWLOCK.
 *
 * usage: signals ROLE OBJECT
 *   ROLE    spinner (the waiter is seen running in its lock call: set KLOCKS_SPIN_NS
 *           high and KLOCKS_OWNER_PROBE=budget) or sleeper (seen asleep in it)
 *   OBJECT  mutex, rwlock-write (the waiter and the handler write-lock) or
 *           rwlock-read (the waiter write-locks, the handler read-locks)
 *
 * The main thread holds the lock; the waiter thread blocks on it; once the waiter is
 * seen in its role, SIGURG lands on it and the handler takes the same lock. The main
 * thread then releases: the handler must get the lock within 5 s and the waiter must
 * finish. Exit 0 on success, 1 on a hang, 3 if the role was never reached. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "watch.h"

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static enum { MUTEX, RWLOCK_WRITE, RWLOCK_READ } object;
static atomic_int handled, waiter_tid, calling;

static void take_and_release(int read) {
    if (object == MUTEX) {
        pthread_mutex_lock(&mutex);
        pthread_mutex_unlock(&mutex);
    } else if (read) {
        pthread_rwlock_rdlock(&rwlock);
        pthread_rwlock_unlock(&rwlock);
    } else {
        pthread_rwlock_wrlock(&rwlock);
        pthread_rwlock_unlock(&rwlock);
    }
}

static void on_signal(int sig) {
    (void)sig;
    take_and_release(object == RWLOCK_READ);
    atomic_store(&handled, 1);
}

static void *waiter(void *arg) {
    (void)arg;
    atomic_store(&waiter_tid, (int)syscall(SYS_gettid));
    atomic_store(&calling, 1);
    take_and_release(0);
    return NULL;
}

static char role_state;
static int in_role(void) {
    return atomic_load(&calling) && state(atomic_load(&waiter_tid)) == role_state;
}
static int blocked_or_done(void) {
    return atomic_load(&handled) || state(atomic_load(&waiter_tid)) == 'S';
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: signals spinner|sleeper mutex|rwlock-write|rwlock-read\n");
        return 2;
    }
    role_state = strcmp(argv[1], "spinner") == 0 ? 'R' : 'S';
    object = strcmp(argv[2], "mutex") == 0          ? MUTEX
             : strcmp(argv[2], "rwlock-write") == 0 ? RWLOCK_WRITE
                                                    : RWLOCK_READ;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    action.sa_flags = SA_RESTART;
    sigaction(SIGURG, &action, NULL);

    if (object == MUTEX)
        pthread_mutex_lock(&mutex);
    else
        pthread_rwlock_wrlock(&rwlock);
    pthread_t thread;
    pthread_create(&thread, NULL, waiter, NULL);
    /* Past the call's first instructions, then in the role. */
    while (!atomic_load(&calling))
        ;
    double settle = now() + 0.0002;
    while (now() < settle)
        ;
    if (!busy_until(2.0, in_role)) {
        printf("%s %s: the role was not reached (waiter state %c)\n", argv[1], argv[2],
               state(atomic_load(&waiter_tid)));
        return 3;
    }
    pthread_kill(thread, SIGURG);
    busy_until(0.05, blocked_or_done);
    if (object == MUTEX)
        pthread_mutex_unlock(&mutex);
    else
        pthread_rwlock_unlock(&rwlock);
    double end = now() + 5.0;
    while (!atomic_load(&handled)) {
        if (now() > end) {
            printf("%s %s: the handler did not get the lock within 5 s of its release\n",
                   argv[1], argv[2]);
            return 1;
        }
        usleep(1000);
    }
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    if (pthread_timedjoin_np(thread, NULL, &deadline) != 0) {
        printf("%s %s: the interrupted waiter never finished\n", argv[1], argv[2]);
        return 1;
    }
    printf("%s %s: the handler got the lock\nsignals: ok\n", argv[1], argv[2]);
    return 0;
}
