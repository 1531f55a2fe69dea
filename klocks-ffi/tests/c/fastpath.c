/* The interposer's fast path makes no system call.
 *
 * After a warm-up (the first calls of a process and of a thread may set things up:
 * the choice, glibc's addresses, a thread's id), the program enters seccomp's strict
 * mode, where any system call other than read, write, _exit and sigreturn kills the
 * process with SIGKILL. Inside it, it runs uncontended lock/unlock and trylock/unlock
 * pairs on a statically initialised mutex, on one from pthread_mutex_init, and on a
 * recursive and an error-checking one, and read, write, tryread and trywrite pairs
 * (and two nested reads) on a statically initialised rwlock and on one from
 * pthread_rwlock_init; then it writes "fastpath: ok" and leaves through the raw exit
 * system call (exit_group, which exit() uses, is not allowed).
 *
 *   fastpath           the check
 *   fastpath syscall   the negative control: one getppid() inside strict mode, which
 *                      must be killed, so the check can fail */
#define _GNU_SOURCE

#include <linux/seccomp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAIRS 100000

static pthread_mutex_t fixed = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t fixed_rw = PTHREAD_RWLOCK_INITIALIZER;

static void say(const char *text) {
    ssize_t written = write(1, text, strlen(text));
    (void)written;
}

static void leave(int code) {
    syscall(SYS_exit, code);
}

static int pairs(pthread_mutex_t *m, long n) {
    for (long i = 0; i < n; i++) {
        if (pthread_mutex_lock(m) != 0 || pthread_mutex_unlock(m) != 0)
            return 1;
        if (pthread_mutex_trylock(m) != 0 || pthread_mutex_unlock(m) != 0)
            return 1;
    }
    return 0;
}

static int rw_pairs(pthread_rwlock_t *r, long n) {
    for (long i = 0; i < n; i++) {
        if (pthread_rwlock_rdlock(r) != 0 || pthread_rwlock_unlock(r) != 0)
            return 1;
        if (pthread_rwlock_wrlock(r) != 0 || pthread_rwlock_unlock(r) != 0)
            return 1;
        if (pthread_rwlock_tryrdlock(r) != 0 || pthread_rwlock_unlock(r) != 0)
            return 1;
        if (pthread_rwlock_trywrlock(r) != 0 || pthread_rwlock_unlock(r) != 0)
            return 1;
        if (pthread_rwlock_rdlock(r) != 0 || pthread_rwlock_tryrdlock(r) != 0 ||
            pthread_rwlock_unlock(r) != 0 || pthread_rwlock_unlock(r) != 0)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    int control = argc == 2 && strcmp(argv[1], "syscall") == 0;
    pthread_mutex_t made, recursive, checking;
    pthread_mutexattr_t attr;
    pthread_mutex_init(&made, NULL);
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&recursive, &attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&checking, &attr);
    pthread_mutex_t *all[] = {&fixed, &made, &recursive, &checking};
    pthread_rwlock_t made_rw;
    pthread_rwlock_init(&made_rw, NULL);
    pthread_rwlock_t *all_rw[] = {&fixed_rw, &made_rw};
    for (int i = 0; i < 4; i++)
        if (pairs(all[i], 1) != 0 || (i < 2 && rw_pairs(all_rw[i], 1) != 0)) {
            fprintf(stderr, "fastpath: warm-up failed\n");
            return 1;
        }
    fflush(stdout);
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0) {
        perror("fastpath: prctl(PR_SET_SECCOMP)");
        return 1;
    }
    if (control)
        syscall(SYS_getppid);
    for (int i = 0; i < 4; i++)
        if (pairs(all[i], PAIRS) != 0) {
            say("fastpath: a lock call failed\n");
            leave(1);
        }
    for (int i = 0; i < 2; i++)
        if (rw_pairs(all_rw[i], PAIRS) != 0) {
            say("fastpath: an rwlock call failed\n");
            leave(1);
        }
    say("fastpath: ok\n");
    leave(0);
    return 0;
}
