/* ilp_shared.h - the blackboard of the search (ilp_shared.c): one best
 * order and one proven bound that every worker thread reads and offers
 * to under one lock, the node count, the deadline and the stop flag.
 * It calls nothing of the search; the workers (ilp_workers.h) and the
 * coordinator (ilp_search.h) call it. */
#ifndef ZBSCHED_SOLVER_ILP_SHARED_H
#define ZBSCHED_SOLVER_ILP_SHARED_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include "ilp.h"

struct ilp_shared {
    pthread_mutex_t lock;
    const struct ilp_inst *in;
    struct ilp_order best;  /* guarded by lock */
    struct ilp_eval best_ev;
    long version;           /* bumped on every improvement */
    double bound;           /* best proven lower bound on the objective */
    double gap;             /* stop within this relative gap */
    long nodes;
    double t0, deadline;    /* monotonic seconds */
    double unit;            /* the profile's time per model unit
                               (zbi_ilp_scale_profile): progress reports in
                               the profile's unit */
    atomic_int stop;        /* read without the lock by the workers */
    const volatile sig_atomic_t *interrupt;   /* see solver.h */
    bool independent;       /* no closed-form bound (see solver.h) */
    /* Also keep an order with the same objective and a lower sum of pass
     * ends (the window search of large instances, ilp_band.c). */
    bool tiebreak;
    char failure[ILP_GLPK_MSG_MAX];  /* first GLPK failure, or "" */
};

void zbi_ilp_shared_init(struct ilp_shared *sh, const struct ilp_inst *in,
                         const struct ilp_order *start);
void zbi_ilp_shared_release(struct ilp_shared *sh);

/* Offer an order; kept if better than the best (or, with tiebreak, as
 * good with earlier ends). Returns true if kept. */
bool zbi_ilp_shared_offer(struct ilp_shared *sh, const struct ilp_order *o);
/* Raise the proven bound (capped at the best objective). */
void zbi_ilp_shared_bound(struct ilp_shared *sh, double bound);
void zbi_ilp_shared_add_nodes(struct ilp_shared *sh, long n);
/* Record a failure of GLPK (the first one is kept for the report). */
void zbi_ilp_shared_fail(struct ilp_shared *sh, const char *msg);
/* Copy the best order if its version differs from *version. */
bool zbi_ilp_shared_fetch(struct ilp_shared *sh, struct ilp_order *o,
                          long *version);
/* Stop requested, proven, out of time or interrupted. */
bool zbi_ilp_shared_done(struct ilp_shared *sh);
/* The same as a relation's cancel callback (arg: the blackboard). */
bool zbi_ilp_shared_cancel(void *sh);
double zbi_ilp_shared_best(struct ilp_shared *sh);
double zbi_ilp_shared_lower(struct ilp_shared *sh);     /* the proven bound */
/* A snapshot for the progress callback. */
void zbi_ilp_shared_progress(struct ilp_shared *sh, struct zb_progress *pr);

#endif
