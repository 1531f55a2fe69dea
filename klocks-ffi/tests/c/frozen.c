/* A waiter that cannot act: its thread is stopped inside the lock call by a signal
 * handler that blocks, that siglongjmps out, or that nests another lock call. The
 * other threads of the lock must go on getting it. Run under LD_PRELOAD=libklocks.so
 * by tests/frozen.rs for each KLOCKS_LOCK / KLOCKS_RWLOCK, and without it as the
 * control (glibc's locks).
 *
 * usage: frozen CASE OBJECT
 *   CASE    blocking: the waiter T is seen running in its lock call (spinning: set
 *             KLOCKS_SPIN_NS high and KLOCKS_OWNER_PROBE=budget) when a handler
 *             lands on it and blocks in read(2) on a pipe; a second waiter S then
 *             sleeps on the lock, and writes that pipe once it has had the lock.
 *           longjmp: the same, but the handler siglongjmps out of T's lock call,
 *             and T then waits for the pipe outside any lock call.
 *           nested: T spins on lock A; a SIGUSR1 handler on T spins on lock B
 *             (held too); a nested SIGUSR2 handler locks A. A is released: the
 *             nested handler must get it; then B, and T finishes.
 *           drain-read (rwlock only): T write-locks while the main thread holds a
 *             read lock (T waits for the reader to leave); a handler on T
 *             read-locks: it must be granted (0, not EDEADLK), as glibc grants it.
 *   OBJECT  mutex, or rwlock (write locks, but for drain-read)
 *
 * Exit 0 on success, 1 on a hang or a wrong answer, 3 if T's role was not reached. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "watch.h"

static pthread_mutex_t mutex_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mutex_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock_a = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rwlock_b = PTHREAD_RWLOCK_INITIALIZER;
static int rw;
static int pipe_fds[2];
static sigjmp_buf jump;
static atomic_int t_tid, calling, handled, nested_done, s_done, s_tid, handler_answer = -1;
static enum { BLOCKING, LONGJMP, NESTED, DRAIN_READ } which;

static void lock_a(void) {
    if (rw)
        pthread_rwlock_wrlock(&rwlock_a);
    else
        pthread_mutex_lock(&mutex_a);
}
static void unlock_a(void) {
    if (rw)
        pthread_rwlock_unlock(&rwlock_a);
    else
        pthread_mutex_unlock(&mutex_a);
}
static void lock_b(void) {
    if (rw)
        pthread_rwlock_wrlock(&rwlock_b);
    else
        pthread_mutex_lock(&mutex_b);
}
static void unlock_b(void) {
    if (rw)
        pthread_rwlock_unlock(&rwlock_b);
    else
        pthread_mutex_unlock(&mutex_b);
}

static void wait_for_pipe(void) {
    char byte;
    while (read(pipe_fds[0], &byte, 1) != 1 && errno == EINTR)
        ;
}

static void on_urg(int sig) {
    (void)sig;
    atomic_store(&handled, 1);
    if (which == BLOCKING) {
        wait_for_pipe();
    } else if (which == LONGJMP) {
        siglongjmp(jump, 1);
    } else if (which == DRAIN_READ) {
        int answer = pthread_rwlock_rdlock(&rwlock_a);
        if (answer == 0)
            pthread_rwlock_unlock(&rwlock_a);
        atomic_store(&handler_answer, answer);
    }
}

static void on_usr1(int sig) {
    (void)sig;
    atomic_store(&handled, 1);
    lock_b();
    unlock_b();
}

static void on_usr2(int sig) {
    (void)sig;
    lock_a();
    unlock_a();
    atomic_store(&nested_done, 1);
}

static void *waiter_t(void *arg) {
    (void)arg;
    atomic_store(&t_tid, (int)syscall(SYS_gettid));
    if (which == LONGJMP && sigsetjmp(jump, 1)) {
        /* Out of the lock call for good: wait outside any lock. */
        wait_for_pipe();
        return NULL;
    }
    atomic_store(&calling, 1);
    lock_a();
    unlock_a();
    return NULL;
}

static void *waiter_s(void *arg) {
    (void)arg;
    atomic_store(&s_tid, (int)syscall(SYS_gettid));
    lock_a();
    unlock_a();
    atomic_store(&s_done, 1);
    char byte = 1;
    (void)!write(pipe_fds[1], &byte, 1);
    return NULL;
}

static int t_running(void) { return atomic_load(&calling) && state(atomic_load(&t_tid)) == 'R'; }
static int t_in_call(void) { return atomic_load(&calling) && state(atomic_load(&t_tid)) != 0; }
static int t_handled(void) { return atomic_load(&handled); }
static int s_asleep(void) { return atomic_load(&s_tid) && state(atomic_load(&s_tid)) == 'S'; }

static int within(double secs, atomic_int *flag) {
    double end = now() + secs;
    while (!atomic_load(flag)) {
        if (now() > end)
            return 0;
        usleep(1000);
    }
    return 1;
}

static int joined(pthread_t thread) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    return pthread_timedjoin_np(thread, NULL, &deadline) == 0;
}

static void handle(int sig, void (*handler)(int)) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    action.sa_flags = SA_RESTART | SA_NODEFER;
    sigaction(sig, &action, NULL);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: frozen blocking|longjmp|nested|drain-read mutex|rwlock\n");
        return 2;
    }
    which = strcmp(argv[1], "blocking") == 0  ? BLOCKING
            : strcmp(argv[1], "longjmp") == 0 ? LONGJMP
            : strcmp(argv[1], "nested") == 0  ? NESTED
                                              : DRAIN_READ;
    rw = strcmp(argv[2], "rwlock") == 0;
    int control = getenv("LD_PRELOAD") == NULL;
    if (pipe(pipe_fds) != 0)
        return 2;
    handle(SIGURG, on_urg);
    handle(SIGUSR1, on_usr1);
    handle(SIGUSR2, on_usr2);

    if (which == DRAIN_READ)
        pthread_rwlock_rdlock(&rwlock_a);
    else
        lock_a();
    if (which == NESTED)
        lock_b();
    pthread_t t, s;
    pthread_create(&t, NULL, waiter_t, NULL);
    while (!atomic_load(&calling))
        ;
    double settle = now() + 0.0002;
    while (now() < settle)
        ;
    /* glibc's waiters sleep at once: the control only needs T inside its call. */
    if (!busy_until(2.0, control || which == DRAIN_READ ? t_in_call : t_running)) {
        printf("%s %s: T's role was not reached (state %c)\n", argv[1], argv[2],
               state(atomic_load(&t_tid)));
        return 3;
    }
    if (!control && which != DRAIN_READ && !t_running()) {
        printf("%s %s: T's role was not reached (state %c)\n", argv[1], argv[2],
               state(atomic_load(&t_tid)));
        return 3;
    }
    pthread_kill(t, which == NESTED ? SIGUSR1 : SIGURG);
    busy_until(0.05, t_handled);

    if (which == DRAIN_READ) {
        double end = now() + 5.0;
        while (atomic_load(&handler_answer) == -1 && now() < end)
            usleep(1000);
        int answer = atomic_load(&handler_answer);
        pthread_rwlock_unlock(&rwlock_a);
        if (answer != 0) {
            printf("%s %s: the handler's read lock beside its own thread's waiting write "
                   "lock answered %d (%s), not 0\n",
                   argv[1], argv[2], answer, answer == -1 ? "no answer" : strerror(answer));
            return 1;
        }
        if (!joined(t)) {
            printf("%s %s: the interrupted writer never finished\n", argv[1], argv[2]);
            return 1;
        }
        printf("%s %s: the handler's read lock was granted\nfrozen: ok\n", argv[1], argv[2]);
        return 0;
    }

    if (which == NESTED) {
        /* The SIGUSR1 handler spins on B (or sleeps there): nest SIGUSR2 on it. */
        double settle2 = now() + 0.001;
        while (now() < settle2)
            ;
        pthread_kill(t, SIGUSR2);
        double nest = now() + 0.002;
        while (now() < nest)
            ;
        unlock_a();
        if (!within(5.0, &nested_done)) {
            printf("%s %s: the nested handler did not get A within 5 s of its release\n",
                   argv[1], argv[2]);
            return 1;
        }
        unlock_b();
        if (!joined(t)) {
            printf("%s %s: the interrupted waiter never finished\n", argv[1], argv[2]);
            return 1;
        }
        printf("%s %s: the nested handler got the lock\nfrozen: ok\n", argv[1], argv[2]);
        return 0;
    }

    /* T is stopped (in its handler, or gone from its call): S sleeps on the lock. */
    pthread_create(&s, NULL, waiter_s, NULL);
    busy_until(2.0, s_asleep);
    unlock_a();
    if (!within(5.0, &s_done)) {
        printf("%s %s: the sleeper did not get the lock within 5 s of its release "
               "(T frozen in its lock call)\n",
               argv[1], argv[2]);
        return 1;
    }
    if (!joined(s) || !joined(t)) {
        printf("%s %s: a waiter never finished\n", argv[1], argv[2]);
        return 1;
    }
    /* The lock still works for everyone. */
    lock_a();
    unlock_a();
    printf("%s %s: the sleeper got the lock\nfrozen: ok\n", argv[1], argv[2]);
    return 0;
}
