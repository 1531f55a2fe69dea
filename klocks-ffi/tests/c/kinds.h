/* Every klocks_mutex_t kind, for the C API's test programs that run a check with each. */
#ifndef KLOCKS_TEST_KINDS_H
#define KLOCKS_TEST_KINDS_H

#include "klocks.h"

static const struct {
    klocks_kind kind;
    const char *name;
    int sleeps; /* survives more threads than CPUs */
} KINDS[] = {
    {KLOCKS_PVQSPINLOCK, "PVQSPINLOCK", 1}, {KLOCKS_QSPINLOCK, "QSPINLOCK", 0},
    {KLOCKS_TICKET, "TICKET", 0},           {KLOCKS_PVTICKET, "PVTICKET", 1},
    {KLOCKS_FUTEX, "FUTEX", 1},             {KLOCKS_SPINFUTEX, "SPINFUTEX", 1},
    {KLOCKS_DEFAULT, "DEFAULT", 1},
};
#define NKINDS (sizeof KINDS / sizeof KINDS[0])

#endif
