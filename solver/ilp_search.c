/* ilp_search.c - the search's shared state and its coordinator: worker
 * threads (each with its own GLPK problem objects; libglpk keeps its
 * environment thread-local) share one best order and one proven bound;
 * the calling thread watches the clock, the interrupt flag and reports
 * progress at most once a second. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ilp.h"
#include "zbsched/xalloc.h"

double ilp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void ilp_shared_init(struct ilp_shared *sh, const struct ilp_inst *in,
                     const struct ilp_order *start)
{
    memset(sh, 0, sizeof(*sh));
    pthread_mutex_init(&sh->lock, NULL);
    sh->in = in;
    ilp_order_init(&sh->best, in);
    ilp_order_copy(&sh->best, start, in);
    sh->best_ev.t = NULL;
    ilp_order_eval(in, start, &sh->best_ev);
    atomic_init(&sh->stop, 0);
    sh->t0 = ilp_now();
    sh->deadline = sh->t0;
}

void ilp_shared_release(struct ilp_shared *sh)
{
    ilp_order_release(&sh->best, sh->in);
    pthread_mutex_destroy(&sh->lock);
}

/* Under the lock: stop once the best is within the gap of the bound. */
static void check_done(struct ilp_shared *sh)
{
    double obj = sh->best_ev.obj;
    if (ilp_meets(obj, sh->bound * (1 + sh->gap)))
        atomic_store(&sh->stop, 1);
}

bool ilp_shared_offer(struct ilp_shared *sh, const struct ilp_order *o)
{
    struct ilp_eval ev = { .t = NULL };
    bool kept = false;

    /* Time it outside the lock: the simulator is the judge, whatever the
     * model claimed. */
    if (ilp_order_eval(sh->in, o, &ev) < 0)
        return false;
    pthread_mutex_lock(&sh->lock);
    if (ev.obj < sh->best_ev.obj * (1 - ILP_TOL)) {
        ilp_order_copy(&sh->best, o, sh->in);
        sh->best_ev = ev;
        sh->version++;
        kept = true;
        check_done(sh);
    }
    pthread_mutex_unlock(&sh->lock);
    return kept;
}

void ilp_shared_bound(struct ilp_shared *sh, double bound)
{
    pthread_mutex_lock(&sh->lock);
    if (bound > sh->bound) {
        sh->bound = fmin(bound, sh->best_ev.obj);
        check_done(sh);
    }
    pthread_mutex_unlock(&sh->lock);
}

void ilp_shared_add_nodes(struct ilp_shared *sh, long n)
{
    pthread_mutex_lock(&sh->lock);
    sh->nodes += n;
    pthread_mutex_unlock(&sh->lock);
}

void ilp_shared_fail(struct ilp_shared *sh, const char *msg)
{
    pthread_mutex_lock(&sh->lock);
    if (!sh->failure[0])
        snprintf(sh->failure, sizeof(sh->failure), "%s", msg);
    pthread_mutex_unlock(&sh->lock);
}

bool ilp_shared_fetch(struct ilp_shared *sh, struct ilp_order *o,
                      long *version)
{
    bool changed;

    pthread_mutex_lock(&sh->lock);
    if ((changed = *version != sh->version)) {
        ilp_order_copy(o, &sh->best, sh->in);
        *version = sh->version;
    }
    pthread_mutex_unlock(&sh->lock);
    return changed;
}

bool ilp_shared_done(struct ilp_shared *sh)
{
    if (atomic_load(&sh->stop))
        return true;
    if (ilp_now() >= sh->deadline || (sh->interrupt && *sh->interrupt)) {
        atomic_store(&sh->stop, 1);
        return true;
    }
    return false;
}

double ilp_shared_best(struct ilp_shared *sh)
{
    double obj;
    pthread_mutex_lock(&sh->lock);
    obj = sh->best_ev.obj;
    pthread_mutex_unlock(&sh->lock);
    return obj;
}

double ilp_shared_lower(struct ilp_shared *sh)
{
    double b;
    pthread_mutex_lock(&sh->lock);
    b = sh->bound;
    pthread_mutex_unlock(&sh->lock);
    return b;
}

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

    ilp_glpk_quiet();
    if (w->full)
        ilp_bnb_run(w->sh, w->full);
    else
        ilp_lns_run(w->sh, w->lane, w->lanes);
    ilp_glpk_done();
    atomic_fetch_sub(w->running, 1);
    return NULL;
}

static void report(struct ilp_shared *sh, const struct zb_options *opt)
{
    struct zb_progress pr;

    pthread_mutex_lock(&sh->lock);
    pr = (struct zb_progress){
        .elapsed = ilp_now() - sh->t0, .objective = sh->best_ev.obj,
        .bound = sh->bound, .nodes = sh->nodes,
        .gap = sh->bound > 0 ? sh->best_ev.obj / sh->bound - 1 : INFINITY,
    };
    pthread_mutex_unlock(&sh->lock);
    opt->progress(&pr, opt->progress_ctx);
}

void ilp_search(struct ilp_shared *sh, const struct zb_options *opt)
{
    const int nw = opt->threads;
    struct worker *w = zb_xcalloc((size_t)nw, sizeof(*w));
    struct ilp_rel full;
    atomic_int running;
    double last = ilp_now();
    int started = 0;
    /* One worker proves when the full model is small enough to pay; the
     * others (all, when it is not) search windows. */
    bool prove = ilp_bnb_prepare(sh, &full);

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
        now = ilp_now();
        ilp_shared_done(sh);    /* raises stop on time and interrupt */
        if (opt->progress && now - last >= 1.0) {
            report(sh, opt);
            last = now;
        }
    }
    for (int i = 0; i < nw; i++)
        if (w[i].started)
            pthread_join(w[i].thread, NULL);
    ilp_rel_release(&full);
    free(w);
}
