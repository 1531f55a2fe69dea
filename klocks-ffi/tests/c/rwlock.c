/* The C API's default rwlock (klocks_rwlock_t): every errno answer, timed locks,
 * the static initialiser with its first use raced by readers and writers, sharing
 * and exclusion, EAGAIN past the most readers. Exits 0 and prints "rwlock: ok" when every check holds; a failed
 * check prints its line and exits 1. Run by tests/c_api.rs. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "klocks.h"

#include "check.h"

_Static_assert(sizeof(klocks_rwlock_t) == KLOCKS_RWLOCK_SIZE, "rwlock size");
_Static_assert(_Alignof(klocks_rwlock_t) == 8, "rwlock alignment");

static struct timespec in_ms(long ms) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

static long ms_since(struct timespec start) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L;
}

/* ---- errno answers ---- */

static klocks_rwlock_t shared;

static void *while_write_held(void *arg) {
    (void)arg;
    struct timespec soon = in_ms(30), start;
    EXPECT(klocks_rwlock_unlock(&shared), EPERM); /* another thread's write lock */
    EXPECT(klocks_rwlock_tryrdlock(&shared), EBUSY);
    EXPECT(klocks_rwlock_trywrlock(&shared), EBUSY);
    clock_gettime(CLOCK_REALTIME, &start);
    EXPECT(klocks_rwlock_timedrdlock(&shared, &soon), ETIMEDOUT);
    CHECK(ms_since(start) >= 25);
    soon = in_ms(30);
    EXPECT(klocks_rwlock_timedwrlock(&shared, &soon), ETIMEDOUT);
    struct timespec bad = in_ms(30);
    bad.tv_nsec = 1000000000L;
    EXPECT(klocks_rwlock_timedwrlock(&shared, &bad), EINVAL);
    EXPECT(klocks_rwlock_timedrdlock(&shared, &bad), EINVAL);
    return NULL;
}

static void *while_read_held(void *arg) {
    (void)arg;
    struct timespec soon = in_ms(30);
    EXPECT(klocks_rwlock_tryrdlock(&shared), 0); /* readers share */
    EXPECT(klocks_rwlock_unlock(&shared), 0);
    EXPECT(klocks_rwlock_timedrdlock(&shared, &soon), 0);
    EXPECT(klocks_rwlock_unlock(&shared), 0);
    EXPECT(klocks_rwlock_trywrlock(&shared), EBUSY);
    EXPECT(klocks_rwlock_timedwrlock(&shared, &soon), ETIMEDOUT);
    return NULL;
}

static void errno_answers(void) {
    pthread_t other;
    struct timespec soon = in_ms(10);
    EXPECT(klocks_rwlock_init(&shared), 0);
    EXPECT(klocks_rwlock_unlock(&shared), EPERM); /* not locked */
    /* Write-held by this thread. */
    EXPECT(klocks_rwlock_wrlock(&shared), 0);
    EXPECT(klocks_rwlock_wrlock(&shared), EDEADLK);
    EXPECT(klocks_rwlock_rdlock(&shared), EDEADLK);
    EXPECT(klocks_rwlock_timedwrlock(&shared, &soon), EDEADLK);
    EXPECT(klocks_rwlock_timedrdlock(&shared, &soon), EDEADLK);
    EXPECT(klocks_rwlock_trywrlock(&shared), EBUSY);
    EXPECT(klocks_rwlock_tryrdlock(&shared), EBUSY);
    EXPECT(klocks_rwlock_destroy(&shared), EBUSY);
    CHECK(pthread_create(&other, NULL, while_write_held, NULL) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    EXPECT(klocks_rwlock_unlock(&shared), 0); /* still ours after the refusals */
    EXPECT(klocks_rwlock_unlock(&shared), EPERM);
    /* Read-held by this thread. */
    EXPECT(klocks_rwlock_rdlock(&shared), 0);
    EXPECT(klocks_rwlock_destroy(&shared), EBUSY);
    CHECK(pthread_create(&other, NULL, while_read_held, NULL) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    EXPECT(klocks_rwlock_unlock(&shared), 0);
    EXPECT(klocks_rwlock_unlock(&shared), EPERM);
    /* Timed calls on a free lock, the deadline past or malformed: taken. */
    struct timespec past = in_ms(-1000);
    EXPECT(klocks_rwlock_timedwrlock(&shared, &past), 0);
    EXPECT(klocks_rwlock_unlock(&shared), 0);
    past.tv_nsec = -1;
    EXPECT(klocks_rwlock_timedrdlock(&shared, &past), 0);
    EXPECT(klocks_rwlock_unlock(&shared), 0);
    EXPECT(klocks_rwlock_timedrdlock(&shared, NULL), EINVAL);
    EXPECT(klocks_rwlock_timedwrlock(&shared, NULL), EINVAL);
    /* Destroyed: EINVAL everywhere until init. */
    EXPECT(klocks_rwlock_destroy(&shared), 0);
    EXPECT(klocks_rwlock_rdlock(&shared), EINVAL);
    EXPECT(klocks_rwlock_tryrdlock(&shared), EINVAL);
    EXPECT(klocks_rwlock_timedrdlock(&shared, &soon), EINVAL);
    EXPECT(klocks_rwlock_wrlock(&shared), EINVAL);
    EXPECT(klocks_rwlock_trywrlock(&shared), EINVAL);
    EXPECT(klocks_rwlock_timedwrlock(&shared, &soon), EINVAL);
    EXPECT(klocks_rwlock_unlock(&shared), EINVAL);
    EXPECT(klocks_rwlock_destroy(&shared), EINVAL);
    EXPECT(klocks_rwlock_init(&shared), 0);
    EXPECT(klocks_rwlock_destroy(&shared), 0);
    /* Null, misaligned, garbage. */
    EXPECT(klocks_rwlock_init(NULL), EINVAL);
    EXPECT(klocks_rwlock_rdlock(NULL), EINVAL);
    EXPECT(klocks_rwlock_unlock(NULL), EINVAL);
    _Alignas(8) unsigned char raw[sizeof(klocks_rwlock_t) + 8];
    EXPECT(klocks_rwlock_init((klocks_rwlock_t *)(void *)(raw + 4)), EINVAL);
    klocks_rwlock_t garbage;
    memset(&garbage, 0x5A, sizeof garbage);
    EXPECT(klocks_rwlock_wrlock(&garbage), EINVAL);
    /* Zero-filled: an unlocked rwlock. */
    klocks_rwlock_t zero;
    memset(&zero, 0, sizeof zero);
    EXPECT(klocks_rwlock_wrlock(&zero), 0);
    EXPECT(klocks_rwlock_unlock(&zero), 0);
    EXPECT(klocks_rwlock_destroy(&zero), 0);
    printf("rwlock: errno answers ok\n");
}

/* ---- the static initialiser, raced by readers and writers; exclusion ---- */

static klocks_rwlock_t table = KLOCKS_RWLOCK_INITIALIZER;
static long left, right; /* writers keep them equal, readers check it */
static int go;

#define WRITES 5000
#define READS 20000

static void *writer(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
        ;
    for (int i = 0; i < WRITES; i++) {
        EXPECT(klocks_rwlock_wrlock(&table), 0);
        left++;
        right++;
        EXPECT(klocks_rwlock_unlock(&table), 0);
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
        ;
    for (int i = 0; i < READS; i++) {
        EXPECT(klocks_rwlock_rdlock(&table), 0);
        long l = left, r = right;
        EXPECT(klocks_rwlock_unlock(&table), 0);
        if (l != r) {
            fprintf(stderr, "reader saw a half-done write: %ld != %ld\n", l, r);
            exit(1);
        }
    }
    return NULL;
}

static void static_initializer(void) {
    enum { WRITERS = 4, READERS = 8 };
    pthread_t tid[WRITERS + READERS];
    for (int t = 0; t < WRITERS + READERS; t++)
        CHECK(pthread_create(&tid[t], NULL, t < WRITERS ? writer : reader, NULL) == 0);
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    for (int t = 0; t < WRITERS + READERS; t++)
        CHECK(pthread_join(tid[t], NULL) == 0);
    CHECK(left == (long)WRITERS * WRITES && right == left);
    EXPECT(klocks_rwlock_destroy(&table), 0);
    printf("rwlock: static initialiser, first use by %d writers and %d readers at once\n",
           WRITERS, READERS);
}

/* ---- too many readers ---- */

/* One thread takes read locks until the rwlock refuses: EAGAIN after exactly
 * KLOCKS_RWLOCK_MAX_READERS (tries, the fastest entry: 8.4M of them take well under
 * a second), then from every read entry, and the rwlock is as it was (one release
 * lets one reader in again, and as many releases as readers free it). */
static void too_many_readers(void) {
    klocks_rwlock_t r = KLOCKS_RWLOCK_INITIALIZER;
    long taken = 0;
    int rc;
    while (taken <= KLOCKS_RWLOCK_MAX_READERS && (rc = klocks_rwlock_tryrdlock(&r)) == 0)
        taken++;
    EXPECT(rc, EAGAIN);
    CHECK(taken == KLOCKS_RWLOCK_MAX_READERS);
    EXPECT(klocks_rwlock_rdlock(&r), EAGAIN);
    struct timespec at = in_ms(1000);
    EXPECT(klocks_rwlock_timedrdlock(&r, &at), EAGAIN);
    EXPECT(klocks_rwlock_trywrlock(&r), EBUSY);
    EXPECT(klocks_rwlock_unlock(&r), 0);
    EXPECT(klocks_rwlock_rdlock(&r), 0);
    EXPECT(klocks_rwlock_tryrdlock(&r), EAGAIN);
    for (long i = 0; i < KLOCKS_RWLOCK_MAX_READERS; i++) {
        rc = klocks_rwlock_unlock(&r);
        if (rc != 0)
            break;
    }
    EXPECT(rc, 0);
    EXPECT(klocks_rwlock_unlock(&r), EPERM);
    EXPECT(klocks_rwlock_destroy(&r), 0);
    printf("rwlock: %ld readers, then EAGAIN\n", taken);
}

int main(void) {
    errno_answers();
    static_initializer();
    too_many_readers();
    printf("rwlock: ok\n");
    return 0;
}
