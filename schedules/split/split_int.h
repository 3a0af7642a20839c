/* split_int.h - what the files of the layer-split planner share
 * (schedules/split/): the candidate splits, one evaluation of a split,
 * and the planner's vocabulary.
 *
 * A split is `counts`: layers per stage in stage order, each >= 1,
 * summing to the model's layer count. A shape is a placement and a vpp;
 * its pp*vpp stages map to ranks as profile.h says. Evaluating a split
 * builds the conservative profile of split.h, runs zb on it, and measures
 * the order exactly. */
#ifndef ZBSCHED_SPLIT_INT_H
#define ZBSCHED_SPLIT_INT_H

#include <stdbool.h>
#include "zbsched/split.h"

/* Per-stage memory constraint of a candidate (zbi_split_minmax()): stage
 * s may hold k[s] microbatches of its activations beside its model state
 * and buffers within budget[s] bytes; k NULL: compute only. */
struct zbi_split_memory {
    const double *k;
    const double *budget;
    double state_per_param;     /* zb_memory_state_per_param() */
};

/* torchtitan's default over nstages stages (docs/formats.md, "Plan"):
 * the blocks (kind layer) spread evenly over nstages with the first and
 * the last stage counted one block heavier, whatever precedes the first
 * block on the first stage and whatever follows the last on the last.
 * -1 where a stage would be empty. */
int zbi_split_even(const struct zb_model *m, int nstages, int *counts);

/* The contiguous split of least maximum stage work (F+B+W) into nstages
 * non-empty stages within mem (NULL: none): a binary search on that
 * maximum with a greedy fill, from the first stage (from_right false:
 * each stage takes as many layers as it may) or from the last. -1 when
 * no split meets mem. */
int zbi_split_minmax(const struct zb_model *m, int nstages,
                     const struct zbi_split_memory *mem, bool from_right,
                     int *counts);

/* Whether a stage may begin at layer `at`: the planner never cuts the
 * head group (consecutive head layers), which Megatron's L and
 * torchtitan's last stage keep whole and whose parts weigh nothing
 * apart. */
bool zbi_split_cut_ok(const struct zb_model *m, int at);

/* Work of every stage of a split (F+B+W per microbatch). */
void zbi_split_work(const struct zb_model *m, const int *counts,
                    int nstages, double *work);

/* The planner's state for one request. */
struct zbi_plan_ctx {
    const struct zb_model *m;
    const struct zb_plan_request *rq;
    double state_per_param;
    int evaluations;            /* zb runs so far */
};

/* The shape alone in a profile struct: pp, vpp, microbatches and
 * placement set, no arrays (nothing to release), for the placement maps
 * of profile.h, memory_model.h and the boundary comms. */
int zbi_plan_shape(const struct zbi_plan_ctx *c, enum zb_placement pl,
                   int vpp, struct zb_profile *out, struct zb_error *err);

/* Evaluate counts in a shape with zb at effort (options.h): out is
 * filled (and owned by the caller: zbi_plan_split_release()); a split
 * zb cannot schedule within the conservative limits is out->scheduled
 * false, not an error. limited false: no memory limit (the binding
 * check). Errors only for bugs and impossible shapes. */
int zbi_plan_evaluate(struct zbi_plan_ctx *c, enum zb_placement pl, int vpp,
                      const int *counts, double effort, bool limited,
                      struct zb_plan_split *out, struct zb_error *err);
void zbi_plan_split_release(struct zb_plan_split *s);

/* The split's step for comparisons (zb_plan_split.step: with dp >= 2
 * the schedule's step_time) when it fits, else INFINITY. */
double zbi_plan_score(const struct zb_plan_split *s);

#endif
