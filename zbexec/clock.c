/* clock.c - the host clock of zbexec: monotonic milliseconds, sleeping to
 * an absolute deadline (synthetic passes) and the back-off of wait loops. */
#include <errno.h>
#include <sched.h>
#include <time.h>
#include "exec.h"

double exec_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* An absolute deadline, not a relative sleep: a late wake-up does not
 * push back the next pass's deadline computation. */
void exec_sleep_until(double ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = (time_t)(ms / 1e3);
    ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1e3) * 1e6);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
           EINTR)
        ;
}

/* Wait loops poll (MPI_Test, cudaEventQuery). Yield at first for a quick
 * answer, then sleep briefly: with more ranks than cores (the tests run 8
 * on 2) a spinning rank would steal the core its peer needs. */
void exec_pause(int spins)
{
    if (spins < 200) {
        sched_yield();
        return;
    }
    struct timespec ts = { 0, 20000 };
    nanosleep(&ts, NULL);
}
