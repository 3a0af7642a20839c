/* deadline.h - a stop flag raised at a wall-clock deadline (internal to
 * schedules/): the local search (improve.h) counts work, never the clock,
 * so `ilp` bounds it in time by handing it this flag as its interrupt. */
#ifndef ZBSCHED_DEADLINE_H
#define ZBSCHED_DEADLINE_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

struct deadline {
    volatile sig_atomic_t flag;     /* raised at the deadline, or when
                                       *follow is (Ctrl-C) */
    const volatile sig_atomic_t *follow;    /* may be NULL */
    double at;                      /* CLOCK_MONOTONIC seconds */
    volatile sig_atomic_t done;     /* zbi_deadline_stop() was called */
    pthread_t thread;
    bool started;
};

/* Raise d->flag `seconds` from now, or as soon as *follow is set, from a
 * watcher thread. If no thread can be had the flag stays down: the
 * search then ends by its own budget. */
void zbi_deadline_start(struct deadline *d, double seconds,
                    const volatile sig_atomic_t *follow);
/* End the watcher (the flag keeps its value). */
void zbi_deadline_stop(struct deadline *d);

#endif
