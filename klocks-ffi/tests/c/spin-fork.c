/* pthread spinlocks across fork(), run by tests/preload.rs under the preload with
 * KLOCKS_SPIN=pvqspinlock and qspinlock, and without it (glibc, the control): a
 * spinlock that other threads wait on at the fork is usable in the child when it was
 * free or held by the forking thread, and stays held when another thread held it
 * (fork-park.h). Prints "spin-fork: ok" when every state holds. */
#include "fork-park.h"

static pthread_spinlock_t spin;

static int spin_lock(void *l) { return pthread_spin_lock(l); }
static int spin_unlock(void *l) { return pthread_spin_unlock(l); }
static int spin_trylock(void *l) { return pthread_spin_trylock(l); }
static uint32_t spin_word(void *l) { return *(volatile uint32_t *)l; }

int main(void) {
    install_park();
    struct lock_ops ops = {"spin", (void *)&spin, spin_lock, spin_unlock, spin_trylock, spin_word, NULL};
    int failed = 0;
    for (int at = FREE; at <= OTHER; at++) {
        for (int n = 1; n <= 2; n++) {
            if (at != FREE && n == 1)
                continue;
            EXPECT(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE), 0);
            failed += fork_with_parked_waiters(&ops, n, at);
            EXPECT(pthread_spin_destroy(&spin), 0);
        }
    }
    if (failed) {
        printf("spin-fork: %d state(s) failed\n", failed);
        return 1;
    }
    printf("spin-fork: ok\n");
    return 0;
}
