/* klocks_mutex_t across fork(), every kind, and klocks_rwlock_t's write lock, run
 * by tests/c_api.rs (glibc's pthread_mutex_t is the control): a lock that other
 * threads wait on at the fork (pending, queued, asleep, or, for KLOCKS_DEFAULT, a
 * handoff reserved for a sleeping claimant) is usable in the child when it was free
 * or held by the forking thread, and stays held when another thread held it
 * (fork-park.h). Prints "mutex-fork: ok" when every lock passes every state. */
#include "fork-park.h"
#include "kinds.h"

static klocks_mutex_t mutex;
static pthread_mutex_t control;

static int m_lock(void *m) { return klocks_mutex_lock(m); }
static int m_unlock(void *m) { return klocks_mutex_unlock(m); }
static int m_trylock(void *m) { return klocks_mutex_trylock(m); }
/* The lock word: the first 4 bytes of the body, after the 8-byte header. */
static uint32_t m_word(void *m) { return *(volatile uint32_t *)((char *)m + 8); }

static klocks_rwlock_t rwlock;
static int w_lock(void *r) { return klocks_rwlock_wrlock(r); }
static int w_unlock(void *r) { return klocks_rwlock_unlock(r); }
static int w_trylock(void *r) { return klocks_rwlock_trywrlock(r); }
static void reset_rwlock(void) {
    EXPECT(klocks_rwlock_init(&rwlock), 0);
}

static int g_lock(void *m) { return pthread_mutex_lock(m); }
static int g_unlock(void *m) { return pthread_mutex_unlock(m); }
static int g_trylock(void *m) { return pthread_mutex_trylock(m); }

/* KLOCKS_DEFAULT's word: HANDOFF, set by a claimant the next unlock reserves the
 * lock for. */
#define HANDOFF (1u << 29)

/* The caller holds the DEFAULT mutex and its waiters wait: hold it a few ms at a
 * time (a waiter falls asleep), release it and take it back at once (barging ahead
 * of the woken sleeper), until a sleeper woken to a held lock claims the handoff;
 * then park the waiters. The next unlock leaves the lock free but reserved for a
 * parked claimant. */
static void reserve(const struct lock_ops *ops, pthread_t *waiters, int n) {
    for (int tries = 0; tries < 500; tries++) {
        nap_ms(3);
        if (ops->word(ops->lock) & HANDOFF)
            break;
        EXPECT(ops->do_unlock(ops->lock), 0);
        EXPECT(ops->do_lock(ops->lock), 0);
    }
    if (!(ops->word(ops->lock) & HANDOFF)) {
        printf("%s: no waiter claimed a handoff (word %#x)\n", ops->name, ops->word(ops->lock));
        exit(1);
    }
    nap_ms(5);
    for (int i = 0; i < n; i++) {
        CHECK(pthread_kill(waiters[i], SIGURG) == 0);
        while (__atomic_load_n(&parked, __ATOMIC_SEQ_CST) <= i)
            nap_ms(1);
    }
}

static int every_state(struct lock_ops *ops, void (*reset)(void)) {
    int failed = 0;
    for (int at = FREE; at <= OTHER; at++) {
        for (int n = 1; n <= 2; n++) {
            if (at != FREE && n == 1)
                continue;
            reset();
            failed += fork_with_parked_waiters(ops, n, at);
        }
    }
    return failed;
}

static klocks_kind current_kind;
static void reset_mutex(void) {
    EXPECT(klocks_mutex_init(&mutex, current_kind), 0);
}
static void reset_control(void) {
    CHECK(pthread_mutex_init(&control, NULL) == 0);
}

int main(void) {
    install_park();
    int failed = 0;
    struct lock_ops glibc = {"glibc", &control, g_lock, g_unlock, g_trylock, NULL, NULL};
    failed += every_state(&glibc, reset_control);
    for (size_t k = 0; k < NKINDS; k++) {
        current_kind = KINDS[k].kind;
        struct lock_ops ops = {KINDS[k].name, &mutex, m_lock, m_unlock, m_trylock, m_word, NULL};
        failed += every_state(&ops, reset_mutex);
        if (KINDS[k].kind == KLOCKS_DEFAULT) {
            /* Free but reserved for a parked claimant (word 0xa0000000), and held by
             * the forking thread with a parked claimant. */
            ops.prepare = reserve;
            ops.name = "DEFAULT reserved";
            for (int at = FREE; at <= FORKER; at++) {
                reset_mutex();
                failed += fork_with_parked_waiters(&ops, 1, at);
            }
        }
    }
    struct lock_ops rw = {"rwlock", &rwlock, w_lock, w_unlock, w_trylock, m_word, NULL};
    failed += every_state(&rw, reset_rwlock);
    if (failed) {
        printf("mutex-fork: %d state(s) failed\n", failed);
        return 1;
    }
    printf("mutex-fork: ok\n");
    return 0;
}
