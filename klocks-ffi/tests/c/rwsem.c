/* The C API's rwsem under every policy: errno answers, readers sharing, writers
 * excluding, and a reader/writer torture over an invariant. Exits 0 and prints
 * "rwsem: ok" when every check holds; a failed check prints its line and exits 1.
 * Run by tests/c_api.rs. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "klocks.h"

#include "check.h"

_Static_assert(sizeof(klocks_rwsem_t) == KLOCKS_RWSEM_SIZE, "rwsem size");
_Static_assert(_Alignof(klocks_rwsem_t) == 8, "rwsem alignment");

static const struct {
    klocks_rwsem_policy policy;
    const char *name;
} POLICIES[] = {
    {KLOCKS_RWSEM_ADAPTIVE, "ADAPTIVE"},
    {KLOCKS_RWSEM_ALWAYS, "ALWAYS"},
    {KLOCKS_RWSEM_NEVER, "NEVER"},
};
#define NPOLICIES (sizeof POLICIES / sizeof POLICIES[0])

static klocks_rwsem_t sem;
static pthread_barrier_t barrier;

static void *run(void *(*body)(void *), void *arg) {
    pthread_t t;
    void *ret;
    CHECK(pthread_create(&t, NULL, body, arg) == 0);
    CHECK(pthread_join(t, &ret) == 0);
    return ret;
}

/* ---- errno answers ---- */

static void *other_while_write_held(void *arg) {
    (void)arg;
    EXPECT(klocks_rwsem_unlock(&sem), EPERM); /* not the writer */
    EXPECT(klocks_rwsem_tryrdlock(&sem), EBUSY);
    EXPECT(klocks_rwsem_trywrlock(&sem), EBUSY);
    return NULL;
}

static void *other_while_read_held(void *arg) {
    (void)arg;
    EXPECT(klocks_rwsem_trywrlock(&sem), EBUSY);
    EXPECT(klocks_rwsem_tryrdlock(&sem), 0); /* readers share */
    EXPECT(klocks_rwsem_unlock(&sem), 0);
    return NULL;
}

static void single_thread(klocks_rwsem_policy policy) {
    EXPECT(klocks_rwsem_init(&sem, policy), 0);
    EXPECT(klocks_rwsem_unlock(&sem), EPERM); /* not locked */

    EXPECT(klocks_rwsem_wrlock(&sem), 0);
    EXPECT(klocks_rwsem_wrlock(&sem), EDEADLK);
    EXPECT(klocks_rwsem_rdlock(&sem), EDEADLK);
    EXPECT(klocks_rwsem_trywrlock(&sem), EBUSY);
    EXPECT(klocks_rwsem_tryrdlock(&sem), EBUSY);
    EXPECT(klocks_rwsem_destroy(&sem), EBUSY);
    run(other_while_write_held, NULL);
    EXPECT(klocks_rwsem_unlock(&sem), 0);
    EXPECT(klocks_rwsem_unlock(&sem), EPERM);

    EXPECT(klocks_rwsem_rdlock(&sem), 0);
    EXPECT(klocks_rwsem_tryrdlock(&sem), 0); /* a second read lock */
    EXPECT(klocks_rwsem_trywrlock(&sem), EBUSY);
    EXPECT(klocks_rwsem_destroy(&sem), EBUSY);
    run(other_while_read_held, NULL);
    EXPECT(klocks_rwsem_unlock(&sem), 0);
    EXPECT(klocks_rwsem_unlock(&sem), 0);
    EXPECT(klocks_rwsem_unlock(&sem), EPERM);

    EXPECT(klocks_rwsem_trywrlock(&sem), 0);
    EXPECT(klocks_rwsem_wrlock(&sem), EDEADLK); /* trywrlock records the writer */
    EXPECT(klocks_rwsem_unlock(&sem), 0);

    EXPECT(klocks_rwsem_destroy(&sem), 0);
    EXPECT(klocks_rwsem_rdlock(&sem), EINVAL);
    EXPECT(klocks_rwsem_tryrdlock(&sem), EINVAL);
    EXPECT(klocks_rwsem_wrlock(&sem), EINVAL);
    EXPECT(klocks_rwsem_trywrlock(&sem), EINVAL);
    EXPECT(klocks_rwsem_unlock(&sem), EINVAL);
    EXPECT(klocks_rwsem_destroy(&sem), EINVAL);
}

static void bad_objects(void) {
    klocks_rwsem_t r;
    EXPECT(klocks_rwsem_init(&r, (klocks_rwsem_policy)0), EINVAL);
    EXPECT(klocks_rwsem_init(&r, (klocks_rwsem_policy)4), EINVAL);
    EXPECT(klocks_rwsem_init(NULL, KLOCKS_RWSEM_ADAPTIVE), EINVAL);
    EXPECT(klocks_rwsem_rdlock(NULL), EINVAL);
    EXPECT(klocks_rwsem_unlock(NULL), EINVAL);
    memset(&r, 0, sizeof r);
    EXPECT(klocks_rwsem_wrlock(&r), EINVAL);
    EXPECT(klocks_rwsem_destroy(&r), EINVAL);
}

/* ---- readers share, writers exclude ---- */

/* Both threads hold a read lock at the barrier: a rwsem that serialised readers
 * would never let the second one reach it. */
static void *read_and_meet(void *arg) {
    (void)arg;
    EXPECT(klocks_rwsem_rdlock(&sem), 0);
    pthread_barrier_wait(&barrier);
    EXPECT(klocks_rwsem_trywrlock(&sem), EBUSY);
    pthread_barrier_wait(&barrier);
    EXPECT(klocks_rwsem_unlock(&sem), 0);
    return NULL;
}

static int writer_done;

static void *write_after_readers(void *arg) {
    (void)arg;
    EXPECT(klocks_rwsem_wrlock(&sem), 0);
    writer_done = 1;
    EXPECT(klocks_rwsem_unlock(&sem), 0);
    return NULL;
}

static void sharing(klocks_rwsem_policy policy) {
    pthread_t a, b, w;
    EXPECT(klocks_rwsem_init(&sem, policy), 0);
    CHECK(pthread_barrier_init(&barrier, NULL, 2) == 0);
    CHECK(pthread_create(&a, NULL, read_and_meet, NULL) == 0);
    CHECK(pthread_create(&b, NULL, read_and_meet, NULL) == 0);
    CHECK(pthread_join(a, NULL) == 0);
    CHECK(pthread_join(b, NULL) == 0);
    CHECK(pthread_barrier_destroy(&barrier) == 0);

    /* A writer waits for the reader; the reader sees no write while it reads. */
    writer_done = 0;
    EXPECT(klocks_rwsem_rdlock(&sem), 0);
    CHECK(pthread_create(&w, NULL, write_after_readers, NULL) == 0);
    for (volatile int spin = 0; spin < 1000000; spin++)
        ;
    CHECK(writer_done == 0);
    EXPECT(klocks_rwsem_unlock(&sem), 0);
    CHECK(pthread_join(w, NULL) == 0);
    CHECK(writer_done == 1);
    EXPECT(klocks_rwsem_destroy(&sem), 0);
}

/* ---- torture: readers check a == b, writers move both ---- */

#define TORTURE_THREADS 8
#define TORTURE_ROUNDS 200000

static long field_a, field_b; /* plain: only the rwsem keeps them equal */
static long writes_done;

static void *torture(void *arg) {
    long id = (long)arg;
    unsigned seed = (unsigned)id * 2654435761u + 1;
    int writer_thread = id % 2 == 0;
    for (long i = 0; i < TORTURE_ROUNDS; i++) {
        seed = seed * 1103515245u + 12345u;
        /* Writer threads write one round in four, readers never. */
        if (writer_thread && (seed >> 16) % 4 == 0) {
            if ((seed >> 20) % 2)
                EXPECT(klocks_rwsem_wrlock(&sem), 0);
            else if (klocks_rwsem_trywrlock(&sem) != 0)
                continue;
            CHECK(field_a == field_b);
            field_a++;
            for (volatile int d = 0; d < 10; d++)
                ;
            field_b++;
            writes_done++;
            EXPECT(klocks_rwsem_unlock(&sem), 0);
        } else {
            if ((seed >> 20) % 2)
                EXPECT(klocks_rwsem_rdlock(&sem), 0);
            else if (klocks_rwsem_tryrdlock(&sem) != 0)
                continue;
            long a = field_a;
            for (volatile int d = 0; d < 10; d++)
                ;
            long b = field_b;
            if (a != b) {
                fprintf(stderr, "torture: reader saw a=%ld b=%ld\n", a, b);
                exit(1);
            }
            EXPECT(klocks_rwsem_unlock(&sem), 0);
        }
    }
    return NULL;
}

static void torture_test(klocks_rwsem_policy policy, const char *name) {
    pthread_t t[TORTURE_THREADS];
    EXPECT(klocks_rwsem_init(&sem, policy), 0);
    field_a = field_b = writes_done = 0;
    for (long i = 0; i < TORTURE_THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, torture, (void *)i) == 0);
    for (int i = 0; i < TORTURE_THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK(field_a == field_b && field_a == writes_done && writes_done > 0);
    EXPECT(klocks_rwsem_destroy(&sem), 0);
    printf("rwsem: %s torture %d threads, %ld writes, invariant held\n", name,
           TORTURE_THREADS, writes_done);
}

int main(void) {
    bad_objects();
    for (size_t p = 0; p < NPOLICIES; p++) {
        single_thread(POLICIES[p].policy);
        sharing(POLICIES[p].policy);
        printf("rwsem: %s errno answers and sharing ok\n", POLICIES[p].name);
    }
    for (size_t p = 0; p < NPOLICIES; p++)
        torture_test(POLICIES[p].policy, POLICIES[p].name);
    printf("rwsem: ok\n");
    return 0;
}
