/* A rwlock's memory made a new rwlock while a read lock of the old one was never
 * released (its thread exited holding it): the new lock's writer must get it. Run by
 * tests/preload.rs with pthread rwlocks (against glibc, the control, and under
 * LD_PRELOAD=libklocks.so with KLOCKS_RWLOCK=default-rw, whose read locks go through
 * the reader bias's table of visible readers), and with the C API's klocks_rwlock_t.
 *
 * Each reads the lock often enough for its reader bias to turn on, then a thread
 * read-locks it and exits; destroy (its answer ignored: POSIX leaves destroying a
 * locked rwlock undefined, glibc answers 0, klocks EBUSY), init in the same place, and
 * a writer with a 2-second deadline must get the new lock. Prints "rwreuse: ok". */
#define _GNU_SOURCE

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "klocks.h"

static pthread_rwlock_t rw;
static klocks_rwlock_t krw;

static struct timespec in_ms(long ms) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

static void *leave_pthread_read_lock(void *arg) {
    (void)arg;
    EXPECT(pthread_rwlock_rdlock(&rw), 0);
    return NULL;
}

static void *leave_klocks_read_lock(void *arg) {
    (void)arg;
    EXPECT(klocks_rwlock_rdlock(&krw), 0);
    return NULL;
}

static void pthread_reuse(void) {
    EXPECT(pthread_rwlock_init(&rw, NULL), 0);
    for (int i = 0; i < 64; i++) {
        EXPECT(pthread_rwlock_rdlock(&rw), 0);
        EXPECT(pthread_rwlock_unlock(&rw), 0);
    }
    pthread_t reader;
    EXPECT(pthread_create(&reader, NULL, leave_pthread_read_lock, NULL), 0);
    EXPECT(pthread_join(reader, NULL), 0);
    (void)pthread_rwlock_destroy(&rw);
    memset(&rw, 0xa5, sizeof rw);
    EXPECT(pthread_rwlock_init(&rw, NULL), 0);
    for (int i = 0; i < 64; i++) {
        EXPECT(pthread_rwlock_rdlock(&rw), 0);
        EXPECT(pthread_rwlock_unlock(&rw), 0);
    }
    struct timespec at = in_ms(2000);
    EXPECT(pthread_rwlock_timedwrlock(&rw, &at), 0);
    EXPECT(pthread_rwlock_unlock(&rw), 0);
    EXPECT(pthread_rwlock_destroy(&rw), 0);
}

static void klocks_reuse(void) {
    EXPECT(klocks_rwlock_init(&krw), 0);
    for (int i = 0; i < 64; i++) {
        EXPECT(klocks_rwlock_rdlock(&krw), 0);
        EXPECT(klocks_rwlock_unlock(&krw), 0);
    }
    pthread_t reader;
    EXPECT(pthread_create(&reader, NULL, leave_klocks_read_lock, NULL), 0);
    EXPECT(pthread_join(reader, NULL), 0);
    (void)klocks_rwlock_destroy(&krw);
    memset(&krw, 0xa5, sizeof krw);
    EXPECT(klocks_rwlock_init(&krw), 0);
    for (int i = 0; i < 64; i++) {
        EXPECT(klocks_rwlock_rdlock(&krw), 0);
        EXPECT(klocks_rwlock_unlock(&krw), 0);
    }
    struct timespec at = in_ms(2000);
    EXPECT(klocks_rwlock_timedwrlock(&krw, &at), 0);
    EXPECT(klocks_rwlock_unlock(&krw), 0);
    EXPECT(klocks_rwlock_destroy(&krw), 0);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "klocks") == 0) {
        klocks_reuse();
    } else {
        pthread_reuse();
    }
    printf("rwreuse: ok\n");
    return 0;
}
