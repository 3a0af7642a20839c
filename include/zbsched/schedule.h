/* schedule.h - a schedule: per-rank op lists for one profile, with the
 * measures the simulator predicts for it.
 *
 * Generators fill only compute ops (F, B, W, BW); lower.h adds the
 * communication and the optimizer step; sim.h times the compute ops and
 * fills `predicted`; validate.h is the one executable definition of a
 * legal schedule. Ownership: a schedule owns its profile copy and op
 * arrays; zb_schedule_release() frees them. */
#ifndef ZBSCHED_SCHEDULE_H
#define ZBSCHED_SCHEDULE_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/measures.h"
#include "zbsched/op.h"
#include "zbsched/profile.h"

#define ZB_SOLVER_STATUS_MAX 16
#define ZB_SOLVER_WARNING_MAX 192

struct zb_solver_info {
    bool present;             /* only solver-made schedules carry it */
    char status[ZB_SOLVER_STATUS_MAX]; /* optimal/feasible/heuristic/
                                          interrupted */
    double objective, bound, gap, seconds;
    long nodes;
    /* What weakened the search ("GLPK failed: ..."), or "". */
    char warning[ZB_SOLVER_WARNING_MAX];
};

#define ZB_SCHEDULE_NAME_MAX 32

struct zb_schedule {
    char name[ZB_SCHEDULE_NAME_MAX];
    /* A chooser's row (zb): the candidate its order came from, e.g.
     * "zb-construct" or "zb-construct+search"; "" otherwise. Not part of
     * the file format. */
    char origin[2 * ZB_SCHEDULE_NAME_MAX];
    struct zb_profile profile;       /* owned copy */
    struct zb_op_list *ranks;        /* pp lists */
    bool post_validation;            /* STEP checked after the fact */
    struct zb_measures predicted;    /* valid after zb_sim_run() */
    struct zb_solver_info solver;
};

/* Empty op lists for a copy of prof. */
int zb_schedule_init(struct zb_schedule *s, const char *name,
                     const struct zb_profile *prof);

/* The same order on another profile of its shape (a copy of prof
 * replaces s's): its times are then stale until it is simulated. */
void zb_schedule_set_profile(struct zb_schedule *s,
                             const struct zb_profile *prof);
void zb_schedule_release(struct zb_schedule *s);

/* Append an op to rank's list (peer -1, times 0). */
void zb_schedule_push(struct zb_schedule *s, int rank, enum zb_op_kind kind,
                      int stage, int mb);

/* Drop all but the compute ops (undoes zb_lower_run()). */
void zb_schedule_strip_comm(struct zb_schedule *s);

/* Copy the compute order of src into dst (same pp), replacing dst's. */
void zb_schedule_copy_order(struct zb_schedule *dst,
                            const struct zb_schedule *src);

#endif
