/* deadline.c - a stop flag raised at a wall-clock deadline (search.h), by
 * a watcher on the side thread that looks at the clock every 10 ms. */
#include <time.h>
#include "search/search.h"
#include "zbsched/clock.h"

/* With no thread to be had, the side thread runs this in
 * zbi_deadline_stop(), after done is set: it returns at once and the flag
 * stays down, as search.h promises. */
static void *watch(void *arg)
{
    struct deadline *d = arg;

    while (!d->done) {
        struct timespec nap = { 0, 10 * 1000 * 1000 };
        if (zb_clock_now() >= d->at || (d->follow && *d->follow)) {
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
    d->at = zb_clock_now() + seconds;
    zbi_side_thread_start(&d->watcher, watch, d);
}

void zbi_deadline_stop(struct deadline *d)
{
    d->done = 1;
    zbi_side_thread_join(&d->watcher);
}
