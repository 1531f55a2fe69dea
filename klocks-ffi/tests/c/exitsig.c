/* exit() from a SIGALRM handler while the main thread is inside malloc or free: the
 * contention profile's at-exit report runs inside that handler, on a thread that may
 * hold the allocator's lock. Run by tests/profile.rs under LD_PRELOAD=libklocks.so
 * with KLOCKS_PROFILE=1 (and without the profile, the control), 20 times, each with a
 * deadline: every run must end, printing the report or the profile's note that it
 * left sites unresolved.
 *
 * A mutex is contended first (two threads), so that the report has a lock whose site
 * it would resolve; then a timer fires SIGALRM after 20 ms while the main thread
 * allocates and frees in a loop. */
#define _GNU_SOURCE

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"

static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;

static void *hammer(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&contended); /* SITE: exitsig-lock */
        pthread_mutex_unlock(&contended);
    }
    return NULL;
}

static void on_alarm(int sig) {
    (void)sig;
    exit(0);
}

int main(void) {
    pthread_t other;
    EXPECT(pthread_create(&other, NULL, hammer, NULL), 0);
    hammer(NULL);
    EXPECT(pthread_join(other, NULL), 0);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_alarm;
    sigemptyset(&action.sa_mask);
    CHECK(sigaction(SIGALRM, &action, NULL) == 0);
    struct itimerval timer = {.it_value = {.tv_sec = 0, .tv_usec = 20000}};
    CHECK(setitimer(ITIMER_REAL, &timer, NULL) == 0);
    volatile size_t kept = 0;
    for (size_t n = 0;; n++) {
        char *block = malloc(16 + (n % 4096));
        CHECK(block != NULL);
        block[0] = (char)n;
        kept += (size_t)block[0];
        free(block);
    }
}
