/* ilp_search.c - the search's coordinator: starts the worker threads
 * (ilp_workers.h) on the blackboard (ilp_shared.c); the calling thread
 * watches the clock and the interrupt flag and reports progress at most
 * once a second. */
#include <stdlib.h>
#include <time.h>
#include "ilp_search.h"
#include "ilp_workers.h"
#include "zbsched/xalloc.h"

struct worker {
    struct ilp_shared *sh;
    struct ilp_rel *full;   /* prove on this (branch and cut), or NULL */
    int lane, lanes;        /* else this lane of the window search */
    atomic_int *running;
    pthread_t thread;
    bool started;
};

static void *work(void *arg)
{
    struct worker *w = arg;

    zbi_ilp_glpk_quiet();
    if (w->full)
        zbi_ilp_bnb_run(w->sh, w->full);
    else if (zbi_ilp_inst_searchable(w->sh->in))
        zbi_ilp_lns_run(w->sh, w->lane, w->lanes);
    else
        zbi_ilp_band_run(w->sh, w->lane, w->lanes);
    zbi_ilp_glpk_done();
    atomic_fetch_sub(w->running, 1);
    return NULL;
}

static void report(struct ilp_shared *sh, const struct zb_options *opt)
{
    struct zb_progress pr;

    zbi_ilp_shared_progress(sh, &pr);
    opt->progress(&pr, opt->progress_ctx);
}

void zbi_ilp_search(struct ilp_shared *sh, const struct zb_options *opt)
{
    const int nw = opt->threads;
    struct worker *w = zb_xcalloc((size_t)nw, sizeof(*w));
    struct ilp_rel full = { .reach = NULL };
    atomic_int running;
    double last = zb_clock_now();
    int started = 0;
    /* One worker proves when the full model is small enough to pay; the
     * others (all, when it is not) search windows. */
    bool prove = zbi_ilp_inst_searchable(sh->in) &&
                 zbi_ilp_bnb_prepare(sh, &full);

    atomic_init(&running, 0);
    for (int i = 0; i < nw; i++) {
        w[i] = (struct worker){ .sh = sh, .running = &running,
                                .full = prove && i == 0 ? &full : NULL,
                                .lane = i - prove, .lanes = nw - prove };
        atomic_fetch_add(&running, 1);
        /* If a thread cannot be had, its lane's windows go unvisited:
         * a weaker search, not a wrong one. */
        if (pthread_create(&w[i].thread, NULL, work, &w[i]) != 0) {
            atomic_fetch_sub(&running, 1);
            break;
        }
        w[i].started = true;
        started++;
    }
    if (!started) {
        /* No thread to be had: search in this one, without progress
         * reports (the workers watch the clock and the flag themselves). */
        atomic_fetch_add(&running, 1);
        work(&w[0]);
    }
    while (atomic_load(&running) > 0) {
        struct timespec nap = { 0, 50 * 1000 * 1000 };
        double now;
        nanosleep(&nap, NULL);
        now = zb_clock_now();
        zbi_ilp_shared_done(sh);    /* raises stop on time and interrupt */
        if (opt->progress && now - last >= 1.0) {
            report(sh, opt);
            last = now;
        }
    }
    for (int i = 0; i < nw; i++)
        if (w[i].started)
            pthread_join(w[i].thread, NULL);
    zbi_ilp_rel_release(&full);
    free(w);
}
