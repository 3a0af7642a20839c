/* side_thread.h - one piece of work on a second thread while the caller
 * does its own (internal to schedules/). Every user's result must not
 * depend on which thread ran what: when no thread can be had, the work
 * runs in zbi_side_thread_join() instead, and the result is the same. */
#ifndef ZBSCHED_SIDE_THREAD_H
#define ZBSCHED_SIDE_THREAD_H

#include <pthread.h>
#include <stdbool.h>

struct side_thread {
    void *(*fn)(void *);
    void *arg;
    pthread_t thread;
    bool started;
};

/* Start fn(arg) on a thread of its own, if one can be had. */
void zbi_side_thread_start(struct side_thread *t, void *(*fn)(void *),
                       void *arg);
/* Wait for fn(arg) to end, or run it here if no thread started. */
void zbi_side_thread_join(struct side_thread *t);

#endif
