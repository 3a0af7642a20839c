/* best.h - the "best of candidates" chooser (internal to schedules/): the
 * orders `zb` picks from, each generated and timed once, and the rule
 * that picks among them. `zb` keeps the winner; `ilp` hands the same
 * orders to the solver as its warm start. */
#ifndef ZBSCHED_BEST_H
#define ZBSCHED_BEST_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/options.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* Timed compute orders (not lowered; simulated, or measured from their
 * builder's own times by zb_sim_measure(), which leaves seq unset), each
 * named after its origin: the list scheduler's best policy
 * ("list-scheduler", when it does not stall), under V below 1F1B's
 * memory and under interleaved placement the same
 * with searched in-flight caps or held to 1F1B's memory ("capped-list",
 * families.h), the paper's construction ("zb-construct", loop placement
 * with one chunk, then "warm-depth", the list scheduler braked by a
 * warm-up depth per stage; "zb-v-construct", V placement with two, then
 * "zb-v-b-room", the same with full ranks making room with a B, up to
 * a size: construct_v.h), then every fixed family that serves the
 * profile and does not overlap passes (zb_generator.overlaps), in table
 * order (named after the family), but for those outclassed by a
 * candidate already kept; the collection stops at the first that
 * meets its lower bounds (settled). */
struct best_candidates {
    struct zb_schedule *s;
    int n;
    int fixed;              /* index of the first fixed family's order */
    int extra;              /* index of "warm-depth" (loop) or
                               "zb-v-b-room" (V), which `zb` searches
                               as a start of its own; -1: none */
    int capped;             /* index of "capped-list", the other start
                               of its own; -1: none */
    bool *outclassed;       /* per zb_generators entry: a fixed family
                               left out because a candidate already
                               costs less than any order it could build
                               (zb_generator.peak_cap, best.c) */
    bool settled;           /* a candidate met its lower bounds on cost
                               and makespan (no data parallelism; best.c,
                               settles()): the collection stopped there,
                               as every later one could at best tie it */
};

void zbi_best_candidates_collect(const struct zb_profile *p,
                             const struct zb_options *opt,
                             struct best_candidates *out);
void zbi_best_candidates_release(struct best_candidates *c);

/* Whether s's cost meets its lower bound (within 1e-9): s is optimal,
 * and no search or other start can improve on it. */
bool zbi_best_meets_bound(const struct zb_schedule *s);

/* The best candidate that fits the limit: cost, then makespan, then
 * memory (zb_measures_better()); the first of equals. Over-limit
 * candidates only tell how far over the leanest one is. */
struct best {
    const struct zb_schedule *sched;    /* borrowed; NULL: none fits */
    double least_over;  /* smallest max over ranks of peak/limit */
    int over_rank;
    double over_peak;
};

void zbi_best_init(struct best *b);
void zbi_best_consider(struct best *b, const struct zb_schedule *cand);

/* 0 when a candidate fits, else ZB_ENOMEM_LIMIT naming what the leanest
 * candidate needs. */
int zbi_best_result(const struct best *b, const struct zb_profile *p,
                struct zb_error *err);

/* `zb`'s order from candidates collected for p (zb.c): the best that
 * fits, searched (with its runner-up and the extra start), into
 * s (initialised for p); ZB_ENOMEM_LIMIT when none fits. `zb` is this on
 * its own collection; generate's pick (frontier.c) hands it the
 * collection whose fixed families it then weighs itself, so each is
 * built once. opt is never NULL. */
int zb_from_candidates(const struct zb_profile *p,
                       const struct zb_options *opt,
                       const struct best_candidates *c, struct zb_schedule *s,
                       struct zb_error *err);

#endif
