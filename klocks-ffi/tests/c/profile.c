/* A program for the contention profile (KLOCKS_PROFILE): locks of known shapes.
 *
 *   profile ranks      one hot mutex (4 threads, short sections), one long-held mutex
 *                      (3 threads, 5 ms holds), one quiet mutex (one thread), one
 *                      read-mostly rwlock (3 readers, 1 writer)
 *   profile fork       the quiet mutex 100 times, then a child locks it 10 times
 *   profile reuse      a mutex used 5 times, destroyed, initialised again in the same
 *                      memory and used 7 times
 *   profile signal     the hot mutex, raise(SIGUSR2), then the quiet mutex
 *   profile overflow   5,000 mutexes, each locked once
 *   profile churn N    N mutexes, each initialised, contended once (its holder
 *                      lets go only once the other thread sleeps on it: glibc's lock
 *                      word is 2) and destroyed, at 200,000 addresses in turn; beside
 *                      them 8 long-lived locks (one global array), each waited for
 *                      HOT_WAITS times; prints its peak resident memory (VmHWM)
 *   profile tries      locks taken only by a try, a timed or a clock call
 *   profile close      the quiet mutex, then stderr closed at exit (as coreutils do)
 *   profile steal FILE the quiet mutex; FILE opened onto descriptors 100-109 (where
 *                      the profile keeps its copy of stderr), stderr closed at exit
 *   profile destroyed  the long-held mutex's shape (3 threads, 5 ms holds) on a mutex
 *                      made on the heap and destroyed before exit: its only
 *                      contended lock is counted at its site, as sysbench's are
 *   profile often      two mutexes, each waited for by one thread whose waits the
 *                      holder sees begin (glibc's word is 2): `rarely`, 2 waits of
 *                      250 ms; `often`, 100 waits that end as soon as they begin
 *                      (a wake-up each, tens of µs): more waits, far less wait time
 *
 * The lines marked SITE: are the sites the test expects the profile to name. */
#define _GNU_SOURCE

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOT_THREADS 4
#define HOT_PAIRS 20000
#define LONG_THREADS 3
#define LONG_HOLDS 8
#define QUIET_PAIRS 100
#define READERS 3
#define READS 2000
#define WRITES 50

static pthread_mutex_t hot;
static pthread_mutex_t held_long = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t quiet;
static pthread_rwlock_t table;
static long hot_count, long_count, quiet_count, table_value;

static void sleep_ms(long ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

static void *hot_worker(void *arg) {
    (void)arg;
    for (int i = 0; i < HOT_PAIRS; i++) {
        pthread_mutex_lock(&hot);
        hot_count++;
        pthread_mutex_unlock(&hot);
    }
    return NULL;
}

static void *long_worker(void *arg) {
    (void)arg;
    for (int i = 0; i < LONG_HOLDS; i++) {
        pthread_mutex_lock(&held_long); /* SITE:long */
        long_count++;
        sleep_ms(5);
        pthread_mutex_unlock(&held_long);
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    long sum = 0;
    for (int i = 0; i < READS; i++) {
        pthread_rwlock_rdlock(&table);
        sum += table_value;
        pthread_rwlock_unlock(&table);
    }
    return (void *)sum;
}

static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; i < WRITES; i++) {
        pthread_rwlock_wrlock(&table);
        table_value++;
        pthread_rwlock_unlock(&table);
        sleep_ms(1);
    }
    return NULL;
}

static void use_quiet(int times) {
    for (int i = 0; i < times; i++) {
        pthread_mutex_lock(&quiet);
        quiet_count++;
        pthread_mutex_unlock(&quiet);
    }
}

static void run(void *(*body)(void *), int threads) {
    pthread_t t[8];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, body, NULL) != 0) exit(2);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
}

static void init_all(void) {
    pthread_mutex_init(&hot, NULL);       /* SITE:hot */
    pthread_mutex_init(&quiet, NULL);     /* SITE:quiet */
    pthread_rwlock_init(&table, NULL);    /* SITE:table */
}

static void *all_readers(void *arg) {
    (void)arg;
    pthread_t t[READERS], w;
    for (int i = 0; i < READERS; i++) pthread_create(&t[i], NULL, reader, NULL);
    pthread_create(&w, NULL, writer, NULL);
    for (int i = 0; i < READERS; i++) pthread_join(t[i], NULL);
    pthread_join(w, NULL);
    return NULL;
}

static int ranks(void) {
    run(hot_worker, HOT_THREADS);
    run(long_worker, LONG_THREADS);
    use_quiet(QUIET_PAIRS);
    all_readers(NULL);
    if (hot_count != HOT_THREADS * HOT_PAIRS || long_count != LONG_THREADS * LONG_HOLDS ||
        quiet_count != QUIET_PAIRS || table_value != WRITES) {
        fprintf(stderr, "lost updates\n");
        return 1;
    }
    printf("ranks done\n");
    return 0;
}

static pthread_mutex_t *made;

static void *made_worker(void *arg) {
    (void)arg;
    for (int i = 0; i < LONG_HOLDS; i++) {
        pthread_mutex_lock(made);
        long_count++;
        sleep_ms(5);
        pthread_mutex_unlock(made);
    }
    return NULL;
}

static int destroyed(void) {
    made = malloc(sizeof *made);
    if (!made) return 2;
    pthread_mutex_init(made, NULL); /* SITE:made */
    run(made_worker, LONG_THREADS);
    pthread_mutex_destroy(made);
    free(made);
    if (long_count != LONG_THREADS * LONG_HOLDS) {
        fprintf(stderr, "lost updates\n");
        return 1;
    }
    printf("destroyed done\n");
    return 0;
}

static int fork_child(void) {
    use_quiet(QUIET_PAIRS);
    pid_t child = fork();
    if (child == 0) {
        use_quiet(10);
        exit(quiet_count == QUIET_PAIRS + 10 ? 0 : 1);
    }
    int status;
    waitpid(child, &status, 0);
    printf("child %d parent %d exited %d\n", (int)child, (int)getpid(), WEXITSTATUS(status));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static int reuse(void) {
    static pthread_mutex_t slot;
    pthread_mutex_init(&slot, NULL); /* SITE:first_use */
    for (int i = 0; i < 5; i++) {
        pthread_mutex_lock(&slot);
        pthread_mutex_unlock(&slot);
    }
    pthread_mutex_destroy(&slot);
    pthread_mutex_init(&slot, NULL); /* SITE:reused */
    for (int i = 0; i < 7; i++) {
        pthread_mutex_lock(&slot);
        pthread_mutex_unlock(&slot);
    }
    printf("reuse done\n");
    return 0;
}

static int on_signal(void) {
    run(hot_worker, HOT_THREADS);
    raise(SIGUSR2);
    use_quiet(QUIET_PAIRS);
    printf("signal done\n");
    return 0;
}

#define MANY 5000

static int overflow(void) {
    pthread_mutex_t *many = calloc(MANY, sizeof *many);
    if (!many) return 2;
    for (int i = 0; i < MANY; i++) {
        pthread_mutex_lock(&many[i]);
        pthread_mutex_unlock(&many[i]);
    }
    printf("overflow done\n");
    return 0;
}

static pthread_mutex_t tried = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t clocked = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t timed_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t tried_rw = PTHREAD_RWLOCK_INITIALIZER;

#define HOT_LOCKS 8
#define HOT_WAITS 20
#define CHURN_ADDRESSES 200000

static pthread_mutex_t hot_locks[HOT_LOCKS] = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
};
static pthread_mutex_t *churn_locks;
/* The lock the holder has taken (index + 1), and the last one the waiter got. */
static volatile long churn_held, churn_got;

/* Waits until glibc's word of the mutex says a thread sleeps on it. */
static void until_waited_for(pthread_mutex_t *m) {
    while (__atomic_load_n(&m->__data.__lock, __ATOMIC_ACQUIRE) != 2) sched_yield();
}

static void *churn_waiter(void *arg) {
    long n = (long)arg;
    for (long i = 0; i < n; i++) {
        while (__atomic_load_n(&churn_held, __ATOMIC_ACQUIRE) != i + 1) sched_yield();
        pthread_mutex_t *m = &churn_locks[i % CHURN_ADDRESSES];
        pthread_mutex_lock(m);
        pthread_mutex_unlock(m);
        __atomic_store_n(&churn_got, i + 1, __ATOMIC_RELEASE);
    }
    for (int h = 0; h < HOT_LOCKS; h++)
        for (int w = 0; w < HOT_WAITS; w++) {
            while (__atomic_load_n(&churn_held, __ATOMIC_ACQUIRE) != n + 1 + h * HOT_WAITS + w)
                sched_yield();
            pthread_mutex_lock(&hot_locks[h]); /* SITE:hot_wait */
            pthread_mutex_unlock(&hot_locks[h]);
            __atomic_store_n(&churn_got, n + 1 + h * HOT_WAITS + w, __ATOMIC_RELEASE);
        }
    return NULL;
}

/* Holds `m` until the waiter sleeps on it as handshake number `turn`, then lets go. */
static void hand_over(pthread_mutex_t *m, long turn, long hold_us) {
    pthread_mutex_lock(m);
    __atomic_store_n(&churn_held, turn, __ATOMIC_RELEASE);
    until_waited_for(m);
    if (hold_us) {
        struct timespec t = {0, hold_us * 1000L};
        nanosleep(&t, NULL);
    }
    pthread_mutex_unlock(m);
    while (__atomic_load_n(&churn_got, __ATOMIC_ACQUIRE) != turn) sched_yield();
}

static int churn(long n) {
    churn_locks = calloc(CHURN_ADDRESSES, sizeof *churn_locks);
    if (!churn_locks) return 2;
    pthread_t waiter;
    if (pthread_create(&waiter, NULL, churn_waiter, (void *)n) != 0) return 2;
    for (long i = 0; i < n; i++) {
        pthread_mutex_t *m = &churn_locks[i % CHURN_ADDRESSES];
        pthread_mutex_init(m, NULL); /* SITE:churn */
        hand_over(m, i + 1, 0);
        pthread_mutex_destroy(m);
    }
    for (int h = 0; h < HOT_LOCKS; h++)
        for (int w = 0; w < HOT_WAITS; w++) hand_over(&hot_locks[h], n + 1 + h * HOT_WAITS + w, 200);
    pthread_join(waiter, NULL);
    /* The peak resident memory so far (before the report at exit, which allocates to
     * read debug information). */
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    while (status && fgets(line, sizeof line, status))
        if (!strncmp(line, "VmHWM:", 6)) fputs(line, stdout);
    if (status) fclose(status);
    printf("churn done\n");
    return 0;
}

#define RARE_WAITS 2
#define RARE_HOLD_US 250000
#define OFTEN_WAITS 100
static pthread_mutex_t rarely = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t often = PTHREAD_MUTEX_INITIALIZER;

static void *often_waiter(void *arg) {
    (void)arg;
    for (long turn = 1; turn <= RARE_WAITS + OFTEN_WAITS; turn++) {
        pthread_mutex_t *m = turn <= RARE_WAITS ? &rarely : &often;
        while (__atomic_load_n(&churn_held, __ATOMIC_ACQUIRE) != turn) sched_yield();
        pthread_mutex_lock(m);
        pthread_mutex_unlock(m);
        __atomic_store_n(&churn_got, turn, __ATOMIC_RELEASE);
    }
    return NULL;
}

static int rarely_and_often(void) {
    pthread_t waiter;
    if (pthread_create(&waiter, NULL, often_waiter, NULL) != 0) return 2;
    for (long turn = 1; turn <= RARE_WAITS + OFTEN_WAITS; turn++) {
        if (turn <= RARE_WAITS)
            hand_over(&rarely, turn, RARE_HOLD_US);
        else
            hand_over(&often, turn, 0);
    }
    pthread_join(waiter, NULL);
    printf("often done\n");
    return 0;
}

static int tries(void) {
    struct timespec real, mono;
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    real.tv_sec += 10;
    mono.tv_sec += 10;
    for (int i = 0; i < 3; i++) {
        if (pthread_mutex_trylock(&tried) != 0) return 1; /* SITE:tried */
        pthread_mutex_unlock(&tried);
        if (pthread_mutex_clocklock(&clocked, CLOCK_MONOTONIC, &mono) != 0) return 1; /* SITE:clocked */
        pthread_mutex_unlock(&clocked);
        if (pthread_rwlock_timedwrlock(&timed_rw, &real) != 0) return 1; /* SITE:timed_rw */
        pthread_rwlock_unlock(&timed_rw);
        if (pthread_rwlock_tryrdlock(&tried_rw) != 0) return 1; /* SITE:tried_rw */
        pthread_rwlock_unlock(&tried_rw);
    }
    printf("tries done\n");
    return 0;
}

static void close_stderr(void) { close(2); }

static int close_at_exit(void) {
    use_quiet(QUIET_PAIRS);
    atexit(close_stderr);
    printf("close done\n");
    return 0;
}

static int steal(const char *file) {
    use_quiet(QUIET_PAIRS);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 2;
    for (int target = 100; target < 110; target++)
        if (dup2(fd, target) < 0) return 2;
    atexit(close_stderr);
    printf("steal done\n");
    return 0;
}

int main(int argc, char **argv) {
    init_all();
    const char *mode = argc > 1 ? argv[1] : "ranks";
    if (!strcmp(mode, "ranks")) return ranks();
    if (!strcmp(mode, "fork")) return fork_child();
    if (!strcmp(mode, "reuse")) return reuse();
    if (!strcmp(mode, "signal")) return on_signal();
    if (!strcmp(mode, "overflow")) return overflow();
    if (!strcmp(mode, "tries")) return tries();
    if (!strcmp(mode, "churn") && argc > 2) return churn(atol(argv[2]));
    if (!strcmp(mode, "close")) return close_at_exit();
    if (!strcmp(mode, "steal") && argc > 2) return steal(argv[2]);
    if (!strcmp(mode, "often")) return rarely_and_often();
    if (!strcmp(mode, "destroyed")) return destroyed();
    fprintf(stderr, "usage: profile ranks|fork|reuse|signal|overflow|tries|close|steal FILE|churn N|often|destroyed\n");
    return 2;
}
