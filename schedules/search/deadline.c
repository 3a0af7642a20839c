/* deadline.c - a stop flag raised at a wall-clock deadline (deadline.h),
 * by a thread that looks at the clock every 10 ms. */
#include <time.h>
#include "search/deadline.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *watch(void *arg)
{
    struct deadline *d = arg;

    while (!d->done) {
        struct timespec nap = { 0, 10 * 1000 * 1000 };
        if (now() >= d->at || (d->follow && *d->follow)) {
            d->flag = 1;
            break;
        }
        nanosleep(&nap, NULL);
    }
    return NULL;
}

void zbi_deadline_start(struct deadline *d, double seconds,
                    const volatile sig_atomic_t *follow)
{
    d->flag = 0;
    d->done = 0;
    d->follow = follow;
    d->at = now() + seconds;
    d->started = pthread_create(&d->thread, NULL, watch, d) == 0;
}

void zbi_deadline_stop(struct deadline *d)
{
    d->done = 1;
    if (d->started)
        pthread_join(d->thread, NULL);
    d->started = false;
}
