/* Watching a thread of the test program from the outside: the clock, a thread's
 * scheduler state from /proc, and a busy wait (the lock's holder must look as if it
 * runs). Shared by the programs that land signals on a waiter in a given role. */
#ifndef KLOCKS_TEST_WATCH_H
#define KLOCKS_TEST_WATCH_H

#include <stdio.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The scheduler state of thread `tid` ('R', 'S', ...), or 0. */
static char state(int tid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' ? paren[2] : 0;
}

/* Busy until `want` holds or `secs` pass: the holder must look as if it runs. */
static int busy_until(double secs, int (*want)(void)) {
    double end = now() + secs;
    while (now() < end)
        if (want())
            return 1;
    return want();
}

#endif
