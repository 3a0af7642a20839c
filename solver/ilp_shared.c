/* ilp_shared.c - the search's blackboard (ilp_shared.h): worker threads
 * (each with its own GLPK problem objects; libglpk keeps its environment
 * thread-local) share one best order and one proven bound under one
 * lock; the simulator judges every order offered. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "ilp_shared.h"

void zbi_ilp_shared_init(struct ilp_shared *sh, const struct ilp_inst *in,
                         const struct ilp_order *start)
{
    memset(sh, 0, sizeof(*sh));
    pthread_mutex_init(&sh->lock, NULL);
    sh->in = in;
    zbi_ilp_order_init(&sh->best, in);
    zbi_ilp_order_copy(&sh->best, start, in);
    sh->best_ev.t = NULL;
    zbi_ilp_order_eval(in, start, &sh->best_ev);
    atomic_init(&sh->stop, 0);
    sh->t0 = zb_clock_now();
    sh->deadline = sh->t0;
    sh->unit = 1;
}

void zbi_ilp_shared_release(struct ilp_shared *sh)
{
    zbi_ilp_order_release(&sh->best, sh->in);
    pthread_mutex_destroy(&sh->lock);
}

/* Under the lock: stop once the best is within the gap of the bound. */
static void check_done(struct ilp_shared *sh)
{
    double obj = sh->best_ev.obj;
    if (ilp_meets(obj, sh->bound * (1 + sh->gap)))
        atomic_store(&sh->stop, 1);
}

bool zbi_ilp_shared_offer(struct ilp_shared *sh, const struct ilp_order *o)
{
    struct ilp_eval ev = { .t = NULL };
    bool kept = false;

    /* Time it outside the lock: the simulator is the judge, whatever the
     * model claimed. */
    if (zbi_ilp_order_eval(sh->in, o, &ev) < 0)
        return false;
    pthread_mutex_lock(&sh->lock);
    if (ev.obj < sh->best_ev.obj * (1 - ILP_TOL) ||
        (sh->tiebreak && ev.obj <= sh->best_ev.obj &&
         ev.ends < sh->best_ev.ends - ILP_TOL * sh->best_ev.obj)) {
        zbi_ilp_order_copy(&sh->best, o, sh->in);
        sh->best_ev = ev;
        sh->version++;
        kept = true;
        check_done(sh);
    }
    pthread_mutex_unlock(&sh->lock);
    return kept;
}

void zbi_ilp_shared_bound(struct ilp_shared *sh, double bound)
{
    pthread_mutex_lock(&sh->lock);
    if (bound > sh->bound) {
        sh->bound = fmin(bound, sh->best_ev.obj);
        check_done(sh);
    }
    pthread_mutex_unlock(&sh->lock);
}

void zbi_ilp_shared_add_nodes(struct ilp_shared *sh, long n)
{
    pthread_mutex_lock(&sh->lock);
    sh->nodes += n;
    pthread_mutex_unlock(&sh->lock);
}

void zbi_ilp_shared_fail(struct ilp_shared *sh, const char *msg)
{
    pthread_mutex_lock(&sh->lock);
    if (!sh->failure[0])
        snprintf(sh->failure, sizeof(sh->failure), "%s", msg);
    pthread_mutex_unlock(&sh->lock);
}

bool zbi_ilp_shared_fetch(struct ilp_shared *sh, struct ilp_order *o,
                          long *version)
{
    bool changed;

    pthread_mutex_lock(&sh->lock);
    if ((changed = *version != sh->version)) {
        zbi_ilp_order_copy(o, &sh->best, sh->in);
        *version = sh->version;
    }
    pthread_mutex_unlock(&sh->lock);
    return changed;
}

bool zbi_ilp_shared_done(struct ilp_shared *sh)
{
    if (atomic_load(&sh->stop))
        return true;
    if (zb_clock_now() >= sh->deadline || (sh->interrupt && *sh->interrupt)) {
        atomic_store(&sh->stop, 1);
        return true;
    }
    return false;
}

bool zbi_ilp_shared_cancel(void *sh)
{
    return zbi_ilp_shared_done(sh);
}

double zbi_ilp_shared_best(struct ilp_shared *sh)
{
    double obj;
    pthread_mutex_lock(&sh->lock);
    obj = sh->best_ev.obj;
    pthread_mutex_unlock(&sh->lock);
    return obj;
}

double zbi_ilp_shared_lower(struct ilp_shared *sh)
{
    double b;
    pthread_mutex_lock(&sh->lock);
    b = sh->bound;
    pthread_mutex_unlock(&sh->lock);
    return b;
}

void zbi_ilp_shared_progress(struct ilp_shared *sh, struct zb_progress *pr)
{
    double t = zb_clock_now() - sh->t0;

    pthread_mutex_lock(&sh->lock);
    *pr = (struct zb_progress){
        .phase = ZB_PROGRESS_SEARCH, .elapsed = t, .wall = t,
        .objective = sh->best_ev.obj * sh->unit,
        .bound = sh->bound * sh->unit, .nodes = sh->nodes,
        .gap = sh->bound > 0 ? sh->best_ev.obj / sh->bound - 1 : INFINITY,
    };
    pthread_mutex_unlock(&sh->lock);
}
