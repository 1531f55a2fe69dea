/* Checks shared by the C API's test programs: a failed check prints its line and
 * exits 1. */
#ifndef KLOCKS_TEST_CHECK_H
#define KLOCKS_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

/* The expected errno answer, with both numbers printed on failure. */
#define EXPECT(call, want)                                                           \
    do {                                                                             \
        int got_ = (call);                                                           \
        if (got_ != (want)) {                                                        \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n",        \
                    __FILE__, __LINE__, #call, got_, strerror(got_), (want),         \
                    strerror(want));                                                 \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#endif
