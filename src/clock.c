/* clock.c - monotonic seconds (clock.h). */
#include <time.h>
#include "zbsched/clock.h"

double zb_clock_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
