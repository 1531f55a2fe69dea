/* The lock validator's cases (KLOCKS_LOCKDEP=1): each takes its orders on threads
 * that run one after another, so nothing deadlocks, and prints "lockdep CASE: ok".
 * The found cases take their orders in functions named for them, which the report
 * must name; the clean cases must report nothing. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define CHECK(call)                                                                \
    do {                                                                           \
        int rc_ = (call);                                                          \
        if (rc_ != 0) {                                                            \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #call, rc_);   \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

static pthread_mutex_t a, b, c;
static pthread_rwlock_t rw;
static pthread_spinlock_t spin_a, spin_b;

static void pause_ms(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Runs fn on a thread of its own, to its end. */
static void on_a_thread(void *(*fn)(void *)) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fn, NULL));
    CHECK(pthread_join(t, NULL));
}

static NOINLINE void *take_a_then_b(void *arg) {
    (void)arg;
    CHECK(pthread_mutex_lock(&a));
    CHECK(pthread_mutex_lock(&b));
    CHECK(pthread_mutex_unlock(&b));
    CHECK(pthread_mutex_unlock(&a));
    return NULL;
}

static NOINLINE void *take_b_then_a(void *arg) {
    (void)arg;
    CHECK(pthread_mutex_lock(&b));
    CHECK(pthread_mutex_lock(&a));
    CHECK(pthread_mutex_unlock(&a));
    CHECK(pthread_mutex_unlock(&b));
    return NULL;
}

static NOINLINE void *take_b_then_c(void *arg) {
    (void)arg;
    CHECK(pthread_mutex_lock(&b));
    CHECK(pthread_mutex_lock(&c));
    CHECK(pthread_mutex_unlock(&c));
    CHECK(pthread_mutex_unlock(&b));
    return NULL;
}

static NOINLINE void *take_c_then_a(void *arg) {
    (void)arg;
    CHECK(pthread_mutex_lock(&c));
    CHECK(pthread_mutex_lock(&a));
    CHECK(pthread_mutex_unlock(&a));
    CHECK(pthread_mutex_unlock(&c));
    return NULL;
}

static NOINLINE void *write_rw_then_a(void *arg) {
    (void)arg;
    CHECK(pthread_rwlock_wrlock(&rw));
    CHECK(pthread_mutex_lock(&a));
    CHECK(pthread_mutex_unlock(&a));
    CHECK(pthread_rwlock_unlock(&rw));
    return NULL;
}

static NOINLINE void *a_then_read_rw(void *arg) {
    (void)arg;
    CHECK(pthread_mutex_lock(&a));
    CHECK(pthread_rwlock_rdlock(&rw));
    CHECK(pthread_rwlock_unlock(&rw));
    CHECK(pthread_mutex_unlock(&a));
    return NULL;
}

static NOINLINE void *spin_a_then_b(void *arg) {
    (void)arg;
    CHECK(pthread_spin_lock(&spin_a));
    CHECK(pthread_spin_lock(&spin_b));
    CHECK(pthread_spin_unlock(&spin_b));
    CHECK(pthread_spin_unlock(&spin_a));
    return NULL;
}

static NOINLINE void *spin_b_then_a(void *arg) {
    (void)arg;
    CHECK(pthread_spin_lock(&spin_b));
    CHECK(pthread_spin_lock(&spin_a));
    CHECK(pthread_spin_unlock(&spin_a));
    CHECK(pthread_spin_unlock(&spin_b));
    return NULL;
}

/* Objects of one class: every node's lock is made at one site. */
struct node {
    pthread_mutex_t lock;
    long value;
};

static NOINLINE struct node *node_new(void) {
    struct node *n = calloc(1, sizeof *n);
    CHECK(pthread_mutex_init(&n->lock, NULL));
    return n;
}

static void node_free(struct node *n) {
    CHECK(pthread_mutex_destroy(&n->lock));
    free(n);
}

static struct node *first, *second;

static NOINLINE void *nest_two_nodes(void *arg) {
    (void)arg;
    CHECK(pthread_mutex_lock(&first->lock));
    CHECK(pthread_mutex_lock(&second->lock));
    CHECK(pthread_mutex_unlock(&second->lock));
    CHECK(pthread_mutex_unlock(&first->lock));
    return NULL;
}

/* Clean: a consistent order a -> b -> c, under contention. */
static void *ordered_worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        CHECK(pthread_mutex_lock(&a));
        CHECK(pthread_mutex_lock(&b));
        CHECK(pthread_mutex_lock(&c));
        CHECK(pthread_mutex_unlock(&c));
        CHECK(pthread_mutex_unlock(&b));
        CHECK(pthread_mutex_unlock(&a));
    }
    return NULL;
}

/* Clean: b then a by trylock, backing off when it fails. */
static void *backoff_worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        CHECK(pthread_mutex_lock(&b));
        if (pthread_mutex_trylock(&a) == 0)
            CHECK(pthread_mutex_unlock(&a));
        CHECK(pthread_mutex_unlock(&b));
    }
    return NULL;
}

/* Clean: many short-lived heap locks, each nested under the global a. */
static void *heap_worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 100000; i++) {
        struct node *n = node_new();
        CHECK(pthread_mutex_lock(&a));
        CHECK(pthread_mutex_lock(&n->lock));
        n->value++;
        CHECK(pthread_mutex_unlock(&n->lock));
        CHECK(pthread_mutex_unlock(&a));
        node_free(n);
    }
    return NULL;
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static NOINLINE void *exit_holding_a(void *arg) {
    (void)arg;
    CHECK(pthread_mutex_lock(&a));
    return NULL;
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "";
    CHECK(pthread_mutex_init(&a, NULL));
    CHECK(pthread_mutex_init(&b, NULL));
    CHECK(pthread_mutex_init(&c, NULL));
    CHECK(pthread_rwlock_init(&rw, NULL));
    CHECK(pthread_spin_init(&spin_a, PTHREAD_PROCESS_PRIVATE));
    CHECK(pthread_spin_init(&spin_b, PTHREAD_PROCESS_PRIVATE));
    if (!strcmp(name, "abba")) {
        on_a_thread(take_a_then_b);
        pause_ms(5);
        on_a_thread(take_b_then_a);
    } else if (!strcmp(name, "three")) {
        on_a_thread(take_a_then_b);
        on_a_thread(take_b_then_c);
        pause_ms(5);
        on_a_thread(take_c_then_a);
    } else if (!strcmp(name, "rwcycle")) {
        on_a_thread(write_rw_then_a);
        pause_ms(5);
        on_a_thread(a_then_read_rw);
    } else if (!strcmp(name, "spin")) {
        on_a_thread(spin_a_then_b);
        pause_ms(5);
        on_a_thread(spin_b_then_a);
    } else if (!strcmp(name, "recursive")) {
        first = node_new();
        second = node_new();
        on_a_thread(nest_two_nodes);
    } else if (!strcmp(name, "named")) {
        /* Two globals named as one class through the C API, nested. */
        int (*name_class)(const void *, const char *) =
            (int (*)(const void *, const char *))dlsym(RTLD_DEFAULT, "klocks_lockdep_class");
        if (!name_class)
            return 3;
        CHECK(name_class(&a, "pair of globals"));
        CHECK(name_class(&b, "pair of globals"));
        on_a_thread(take_a_then_b);
    } else if (!strcmp(name, "ordered")) {
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            CHECK(pthread_create(&t[i], NULL, ordered_worker, NULL));
        for (int i = 0; i < 2; i++)
            CHECK(pthread_join(t[i], NULL));
    } else if (!strcmp(name, "trylock")) {
        pthread_t t[2];
        CHECK(pthread_create(&t[0], NULL, ordered_worker, NULL));
        CHECK(pthread_create(&t[1], NULL, backoff_worker, NULL));
        for (int i = 0; i < 2; i++)
            CHECK(pthread_join(t[i], NULL));
    } else if (!strcmp(name, "heap")) {
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            CHECK(pthread_create(&t[i], NULL, heap_worker, NULL));
        for (int i = 0; i < 2; i++)
            CHECK(pthread_join(t[i], NULL));
    } else if (!strcmp(name, "churn")) {
        /* A million locks made at one site, 1000 live at a time, each taken once. */
        enum { LIVE = 1000 };
        static struct node *live[LIVE];
        long before = rss_kb();
        for (int i = 0; i < 1000000; i++) {
            if (live[i % LIVE])
                node_free(live[i % LIVE]);
            live[i % LIVE] = node_new();
            CHECK(pthread_mutex_lock(&live[i % LIVE]->lock));
            CHECK(pthread_mutex_unlock(&live[i % LIVE]->lock));
        }
        printf("lockdep churn: rss grew %ld kB\n", rss_kb() - before);
    } else if (!strcmp(name, "exit-held")) {
        on_a_thread(exit_holding_a);
    } else if (!strcmp(name, "destroy-held")) {
        struct node *n = node_new();
        CHECK(pthread_mutex_lock(&n->lock));
        if (pthread_mutex_destroy(&n->lock) == 0)
            return 1;
    } else {
        fprintf(stderr, "no case %s\n", name);
        return 2;
    }
    printf("lockdep %s: ok\n", name);
    return 0;
}
