/* improve.h - the anytime local search that improves a compute order
 * (issue 9 item 3): moves passes within their rank, or a pass and its
 * counterparts on the next ranks together, re-times only what a move can
 * change, and keeps the best order found (by cost; with data parallelism
 * by the step, improve_step.h). Internal to schedules/;
 * `zb` runs it on its best constructive schedule.
 *
 * Deterministic: the budget is a fixed amount of work derived from
 * `effort`, never the clock, so one seed and effort give one order on any
 * machine and under any load. */
#ifndef ZBSCHED_IMPROVE_H
#define ZBSCHED_IMPROVE_H

#include <signal.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* Work units (about one op re-timed each; the cost model is in
 * improve_eval.h) that one second buys: effort E seconds = E times this
 * many units per chain, whatever the machine. Measured with the thread's
 * CPU clock on the project's shared 2-core x86 box, idle, one chain per
 * core: 52e6 to 65e6 units a second over whole searches on six profiles
 * of 768 to 17 472 ops. (Until the cost model was measured part by part,
 * the units weighted an op re-timed by the graph's size and undercharged
 * the estimates and the moves: a second of effort ran 0.2 s of search
 * at p 64, m 1024 and up to 2 s on small grid profiles.) */
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

#endif
