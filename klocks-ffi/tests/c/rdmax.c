/* Too many readers of a pthread rwlock: EAGAIN, as POSIX and glibc answer, from
 * every read entry. Run by tests/preload.rs under LD_PRELOAD=libklocks.so with
 * KLOCKS_RWLOCK=default-rw, whose rwlock counts MAX_READERS (an environment
 * variable: 8388607) readers at once.
 *
 * One thread takes read locks with pthread_rwlock_tryrdlock (the fastest entry) until
 * the rwlock refuses, which must be EAGAIN after exactly MAX_READERS; then rdlock,
 * timedrdlock and clockrdlock answer EAGAIN at once, from this thread and another, a
 * writer is EBUSY, one release lets one reader in again, and MAX_READERS releases
 * free the rwlock. Prints "rdmax: ok" when every check holds; a failed check prints
 * its line and exits 1. */
#define _GNU_SOURCE

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static struct timespec in_ms(clockid_t clock, long ms) {
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

/* Every read entry answers EAGAIN at once (a waiting one would time out instead). */
static void *every_read_entry_refuses(void *arg) {
    (void)arg;
    EXPECT(pthread_rwlock_tryrdlock(&rw), EAGAIN);
    EXPECT(pthread_rwlock_rdlock(&rw), EAGAIN);
    struct timespec at = in_ms(CLOCK_REALTIME, 1000);
    EXPECT(pthread_rwlock_timedrdlock(&rw, &at), EAGAIN);
    at = in_ms(CLOCK_MONOTONIC, 1000);
    EXPECT(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &at), EAGAIN);
    EXPECT(pthread_rwlock_trywrlock(&rw), EBUSY);
    return NULL;
}

int main(void) {
    const char *max = getenv("MAX_READERS");
    CHECK(max != NULL);
    long want = atol(max);
    long taken = 0;
    int rc = 0;
    while (taken <= want && (rc = pthread_rwlock_tryrdlock(&rw)) == 0)
        taken++;
    EXPECT(rc, EAGAIN);
    CHECK(taken == want);
    every_read_entry_refuses(NULL);
    pthread_t other;
    CHECK(pthread_create(&other, NULL, every_read_entry_refuses, NULL) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    EXPECT(pthread_rwlock_unlock(&rw), 0);
    EXPECT(pthread_rwlock_rdlock(&rw), 0);
    EXPECT(pthread_rwlock_tryrdlock(&rw), EAGAIN);
    rc = 0;
    for (long i = 0; i < want && rc == 0; i++)
        rc = pthread_rwlock_unlock(&rw);
    EXPECT(rc, 0);
    EXPECT(pthread_rwlock_trywrlock(&rw), 0);
    EXPECT(pthread_rwlock_unlock(&rw), 0);
    EXPECT(pthread_rwlock_destroy(&rw), 0);
    printf("rdmax: %ld readers, then EAGAIN\n", taken);
    printf("rdmax: ok\n");
    return 0;
}
