/* side_thread.c - work on a second thread, or later on this one (see
 * build.h). */
#include "build/build.h"

void zbi_side_thread_start(struct side_thread *t, void *(*fn)(void *),
                           void *arg)
{
    t->fn = fn;
    t->arg = arg;
    t->started = pthread_create(&t->thread, NULL, fn, arg) == 0;
}

void zbi_side_thread_join(struct side_thread *t)
{
    if (t->started)
        pthread_join(t->thread, NULL);
    else
        t->fn(t->arg);
}
