/* search.h - the local search: in a legal compute order, out one never
 * worse (internal to schedules/, not part of the public API).
 *
 * Vocabulary. A *move* takes one pass out of its rank's list and puts it
 * back elsewhere; a *column move* shifts a pass and its counterparts on
 * the next ranks together. A *chain* is one annealing run of moves from a
 * seed; the *score* it minimises is the cost (with data parallelism the
 * step's end, improve_step.h), then the makespan. The *budget* is a fixed
 * amount of work (about one op re-timed per unit), derived from `effort`
 * seconds at IMPROVE_WORK_PER_SECOND, never the clock. The contract: the
 * search (improve.c) keeps every move legal (order, same-rank
 * dependencies, every rank's limit with timing.h's tolerance), re-times
 * only what a move can change (improve_eval.c, with the estimate of
 * improve_estimate.c; both private to this folder, improve_eval.h and
 * improve_step.h), and returns the best order found, timed by
 * zb_sim_run(). Deterministic: one seed and effort give one order on any
 * machine and under any load, with one thread or two. The default
 * budget's runs end early where they stagnate (a run's work without a
 * new best: a count, never the clock); otherwise only the
 * interrupt flag can stop it early, and a *deadline* (deadline.c) raises
 * that flag at a wall-clock time for a caller that must end in time (the
 * `ilp` row). */
#ifndef ZBSCHED_SEARCH_H
#define ZBSCHED_SEARCH_H

#include <signal.h>
#include "build/build.h"
#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* ---- The search (improve.c) ------------------------------------------- */

/* Work units (about one op re-timed each; the cost model is in
 * improve_eval.h) that one second buys: effort E seconds = E times this
 * many units per chain, whatever the machine. Measured on the project's
 * 2-core box (docs/tuning.md, "Search budget: work units and the
 * default"). */
#define IMPROVE_WORK_PER_SECOND 55e6

struct improve_opts {
    double effort;      /* seconds of budget per chain on the reference
                           machine; <= 0 leaves s as it is */
    unsigned seed;      /* same seed and effort: same order */
    int threads;        /* 1 or 2: two chains (seeds derived from seed),
                           the better kept, run one after the other or on
                           two threads; the result is the same */
    /* Nonzero stops the search within one move and keeps the best order
     * so far (then the result depends on when it was set); NULL: never. */
    const volatile sig_atomic_t *interrupt;
    /* Seconds of the search that the default effort would run here (a
     * caller that splits its budget passes its share of the default);
     * a larger effort first runs exactly that search, then restarts from
     * its best, so more effort never ends worse. 0: the default budget. */
    double base_effort;
};

struct improve_stats {
    long evals;         /* moves re-timed, all chains */
    long accepted;      /* of which kept by the acceptance rule */
    long skipped;       /* moves rejected on their estimate, unre-timed */
    long work;          /* work units spent, all chains */
    double cost_in, makespan_in;    /* the input order's measures */
    double cost_out, makespan_out;  /* the returned order's */
    int chain;          /* the chain whose order was kept (-1: input) */
};

/* Improve s's compute order for p (s->profile's values). s must hold a
 * legal compute order (F, B, W, BW; comm ops are dropped) that fits every
 * rank's limit p->mem_limit[r]. On return s holds an order that is never
 * worse (cost, then makespan), legal, within the limits and timed by
 * zb_sim_run(). stats may be NULL. ZB_EILLEGAL if s's order cannot run,
 * ZB_ENOMEM_LIMIT if it exceeds a limit, ZB_EINVAL on bad options. */
int zbi_improve_order(const struct zb_profile *p, struct zb_schedule *s,
                      const struct improve_opts *o,
                      struct improve_stats *stats, struct zb_error *err);

/* The default budget for p, in seconds: 0.2 at p 8, m 32 (768 passes per
 * chunk set: passes / vpp), growing as (passes / vpp)^(1/3), at most 0.5
 * (reached at about p 32, m 125), whatever the placement. */
double zbi_improve_default_effort(const struct zb_profile *p);

/* ---- The deadline (deadline.c) ---------------------------------------- */

/* A stop flag raised at a wall-clock deadline: the search counts work,
 * never the clock, so `ilp` bounds it in time by handing it this flag as
 * its interrupt. */
struct deadline {
    volatile sig_atomic_t flag;     /* raised at the deadline, or when
                                       *follow is (Ctrl-C) */
    const volatile sig_atomic_t *follow;    /* may be NULL */
    double at;                      /* zb_clock_now() seconds */
    volatile sig_atomic_t done;     /* zbi_deadline_stop() was called */
    struct side_thread watcher;
};

/* Raise d->flag `seconds` from now, or as soon as *follow is set, from a
 * watcher thread. If no thread can be had the flag stays down: the
 * search then ends by its own budget. */
void zbi_deadline_start(struct deadline *d, double seconds,
                        const volatile sig_atomic_t *follow);
/* End the watcher (the flag keeps its value). */
void zbi_deadline_stop(struct deadline *d);

#endif
