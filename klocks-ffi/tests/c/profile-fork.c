/* What fork() costs under the contention profile, run by tests/profile.rs with a
 * large lock table (KLOCKS_PROFILE_LOCKS): a few locks are used, then the program
 * forks FORKS times (default 5), each child exiting at once, and prints the slowest
 * fork-to-reaped time in microseconds. The child's profile reset must cost the
 * entries in use, not the table's size. Prints "profile-fork: ok". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static long now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

int main(void) {
    const char *env = getenv("FORKS");
    long forks = env ? atol(env) : 5;
    static pthread_mutex_t locks[16];
    for (int i = 0; i < 16; i++) {
        CHECK(pthread_mutex_init(&locks[i], NULL) == 0);
        for (int j = 0; j < 100; j++) {
            CHECK(pthread_mutex_lock(&locks[i]) == 0);
            CHECK(pthread_mutex_unlock(&locks[i]) == 0);
        }
    }
    long slowest = 0;
    for (long i = 0; i < forks; i++) {
        long start = now_us();
        pid_t child = fork();
        CHECK(child >= 0);
        if (child == 0) {
            /* The child uses a lock too: its entry is reset, not the table. */
            CHECK(pthread_mutex_lock(&locks[0]) == 0);
            CHECK(pthread_mutex_unlock(&locks[0]) == 0);
            _exit(0);
        }
        int status;
        CHECK(waitpid(child, &status, 0) == child);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        long took = now_us() - start;
        if (took > slowest)
            slowest = took;
    }
    printf("profile-fork: slowest fork %ld us\n", slowest);
    printf("profile-fork: ok\n");
    return 0;
}
